"""The run pipeline for real on the local backend: agents, hidden verification, evidence,
infrastructure failures and resuming."""

import json
import os
import re
import signal
import threading
import time

import pytest
import yaml

from deploybench.catalog import load_tasks
from deploybench.local.machine import machines_dir
from deploybench.run import live
from tests.conftest import (
    REPO,
    host_processes,
    machine_processes,
    run_cli,
    run_results,
    start_run,
)

pytestmark = [pytest.mark.slow, pytest.mark.privileged]

TASK = "legacycalc_demo24"


def test_demo_reference_passes_nop_fails_overclaim_is_caught(root_host, runs, state_home):
    # What `make demo` runs: every demo task with the three built-in agents.
    out = run_cli(
        "run",
        "--demo",
        "--agent",
        "reference,nop,overclaim",
        "--parallel",
        "2",
        "--run-id",
        "demo",
        timeout=1200,
    ).stdout
    assert "SUCCESS (overclaim)" in out
    # run.json names the image the machines started from, down to its package set.
    image = json.loads((runs / "demo" / "run.json").read_text())["provenance"]["image"]
    assert image["image"] == "debian12" and len(image["packages_sha256"]) == 64, image
    rows = run_results(runs / "demo")
    demos = sorted(t for t, d in load_tasks().items() if d.get("demo"))
    assert len(demos) >= 3
    assert sorted((r["task_id"], r["agent"]) for r in rows) == sorted(
        (t, a) for t in demos for a in ("nop", "overclaim", "reference")
    )
    for row in rows:
        assert row["status"] == "completed", row
        assert row["stop_type"] == "self_stop"
        if row["agent"] == "reference":
            assert row["passed"] is True, row
            assert row["runbook_status"] == "SUCCESS"
        else:
            assert row["passed"] is False, row
            assert row["failure_layer"] in (1, 2) and row["failure_category"], row
    for row in rows:
        # Each attempt's outcome is one line (never wrapped) as it ends, also when stdout is a
        # file: the overclaim lines are longer than a console's default 80 columns.
        verdict = "PASS" if row["passed"] else f"FAIL at layer {row['failure_layer']} "
        who = f"{row['task_id']} {row['agent']} #1: {verdict}"
        line = rf"^{re.escape(who)}.*; agent \d+ s, verifier \d+ s$"
        assert re.search(line, out, re.M), out
        if row["agent"] == "nop":
            assert row["runbook_status"] is None
        if row["agent"] == "overclaim":
            assert row["runbook_status"] == "SUCCESS"

    attempt = runs / "demo" / TASK / "overclaim" / "1"
    trajectory = [json.loads(x) for x in (attempt / "trajectory.jsonl").read_text().splitlines()]
    assert any("sleep 7777" in (e.get("command") or "") for e in trajectory)
    # The background sleep was running after the agent returned, and is gone before verify.
    assert json.loads((attempt / "stop.json").read_text())["killed_processes"] >= 1
    assert "sleep 7777" not in (attempt / "verifier/processes_before_verify.txt").read_text()
    verdict = json.loads((attempt / "verdict.json").read_text())
    assert verdict["passed"] is False and verdict["layer2"]["checks"]
    # Judged from the host (local machines): the workdir's changes come from the layers, not git.
    for name in ("workdir_changes.txt", "dpkg.txt", "changed_files.txt"):
        assert (attempt / "state" / name).is_file(), name
    changes = (attempt / "state/workdir_changes.txt").read_text()
    assert f"added\t/home/vm/Desktop/{TASK}/RUNBOOK.MD" in changes, changes
    reference = runs / "demo" / TASK / "reference" / "1"
    changed = (reference / "state/changed_files.txt").read_text()
    assert "/usr/bin/g++" in changed or "g++" in changed  # the toolchain it installed
    commands = [
        json.loads(x).get("command") or ""
        for x in (reference / "trajectory.jsonl").read_text().splitlines()
    ]
    assert any("make" in c for c in commands)
    assert not machine_processes(state_home), "a machine outlived its attempt"


def test_nothing_hidden_is_on_the_machine_while_the_agent_runs(root_host, runs, tmp_path):
    # A command agent that searches the whole machine for the verifier, the reference setups,
    # the Layer-1 rules and the controller's folders, and prints what it found.
    probe = (
        "found=$(sudo find / -xdev \\( -name experiment.sh -o -name checks.yaml "
        "-o -name rules.yaml -o -name "
        f"'reference_setups' -o -path '*verifiers*' -o -path '{REPO}' -o -path '{runs}' \\) "
        "-print 2>/dev/null | head -20); "
        'echo PROBE-BEGIN; echo "$found"; echo PROBE-END; '
        f"for p in {REPO} {runs} {REPO}/verifiers; do test -e $p && echo REACHABLE $p; done; true"
    )
    config = tmp_path / "agents.yaml"
    config.write_text(json.dumps({"probe": {"command": probe}}))
    run_cli(
        "run", "--agent", "probe", "--agent-config", config, "--tasks", TASK, "--run-id", "probe"
    )
    log = (runs / "probe" / TASK / "probe" / "1" / "agent.log").read_text()
    assert "PROBE-BEGIN" in log and "PROBE-END" in log
    found = log.split("PROBE-BEGIN", 1)[1].split("PROBE-END", 1)[0].strip()
    assert found == "", f"hidden files visible to the agent:\n{found}"
    assert "REACHABLE" not in log
    (row,) = run_results(runs / "probe")
    assert row["status"] == "completed" and row["passed"] is False


def kill_first_machine(state_home, killed, seconds):
    """Pull the plug of the first machine whose agent runs (its log appears in the machine's
    overlay): its PID 1 SIGKILLed, its name added to `killed`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for log in machines_dir(state_home).glob("*/layer/upper/home/vm/.deploybench/agent.log"):
            info = json.loads((log.parents[5] / "machine.json").read_text())
            time.sleep(1)
            os.kill(info["init_pid"], signal.SIGKILL)
            killed.append(info["name"])
            return
        time.sleep(0.1)


def test_a_machine_that_dies_is_an_infra_error_retried_once(root_host, runs, tmp_path, state_home):
    config = tmp_path / "agents.yaml"
    config.write_text(json.dumps({"sleeper": {"command": "sleep 12"}}))
    killed = []
    watcher = threading.Thread(target=kill_first_machine, args=(state_home, killed, 120))
    watcher.start()
    run_cli(
        "run", "--agent", "sleeper", "--agent-config", config, "--tasks", TASK, "--run-id", "dies"
    )
    watcher.join()
    assert killed
    rows = run_results(runs / "dies")
    assert len(rows) == 1 and rows[0]["status"] == "completed"
    infra = (runs / "dies" / "infra_errors.jsonl").read_text().splitlines()
    assert len(infra) == 1 and json.loads(infra[0])["try"] == 1
    assert not machine_processes(state_home)


def test_killed_then_resumed_with_retry_infra_reruns_only_the_infra_rows(
    root_host, runs, tmp_path, state_home
):
    # A run of three attempts, one at a time: the first's machine dies under its agent (an
    # infrastructure error, no retry), the second completes, the controller is SIGKILLed
    # while the third runs. `--resume --retry infra` then reruns the infra attempt once (its
    # row kept, superseded), runs the interrupted one once, and never reruns the finished one.
    config = tmp_path / "agents.yaml"
    config.write_text(json.dumps({"sleeper": {"command": "sleep 12"}}))
    args = [
        "run", "--agent", "sleeper,nop,overclaim", "--agent-config", config, "--tasks", TASK,
        "--run-id", "repair", "--infra-retries", "0",
    ]  # fmt: skip
    killed = []
    watcher = threading.Thread(target=kill_first_machine, args=(state_home, killed, 180))
    watcher.start()
    proc = start_run(*args, quiet=True)
    run_dir = runs / "repair"
    deadline = time.monotonic() + 400
    # The controller dies once the third attempt (overclaim) is under way.
    while time.monotonic() < deadline and not any(
        r["agent"] == "overclaim" and r["stage"] in ("stage", "install", "agent")
        for r in live.running(run_dir)
    ):
        time.sleep(0.1)
    watcher.join()
    assert killed, "the first attempt's machine was never killed"
    assert proc.poll() is None, "the run ended before its third attempt could be caught"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    first = run_results(run_dir)
    assert [(r["agent"], r["status"]) for r in first] == [
        ("sleeper", "infra_error"), ("nop", "completed")
    ], first  # fmt: skip

    resume = ["run", "--run-id", "repair", "--resume", "--retry", "infra"]
    out = run_cli(*resume, timeout=900).stdout
    assert "--retry infra: 1 attempt(s) to run again" in out, out
    rows = run_results(run_dir)
    seen = [(r["agent"], r["status"], r.get("superseded")) for r in rows]
    assert len(rows) == 4, rows
    assert seen[:2] == [("sleeper", "infra_error", True), ("nop", "completed", None)], seen
    assert sorted(seen[2:]) == [("overclaim", "completed", None), ("sleeper", "completed", None)]
    # Each attempt has exactly one row that counts.
    counted = [(r["agent"], r["attempt"]) for r in rows if not r.get("superseded")]
    assert sorted(counted) == [("nop", 1), ("overclaim", 1), ("sleeper", 1)], rows
    assert not machine_processes(state_home), "the killed run's machine was not destroyed"
    # Nothing is left to repair.
    again = run_cli(*resume).stdout
    assert "0 attempt(s) to run again" in again and len(run_results(run_dir)) == 4, again


def test_ctrl_c_leaves_no_machine_and_resume_runs_each_attempt_once(
    root_host, runs, state_home, tmp_path
):
    # A third agent that waits in its agent stage: the controller is killed while one of its
    # attempts is there. Killed in a nop attempt (3 s from machine to destroy), a loaded host
    # let the attempt end first (a full run of 2026-12-06).
    config = tmp_path / "agents.yaml"
    config.write_text(json.dumps({"waiter": {"command": "sleep 30"}}))
    args = [
        "run",
        "--agent",
        "nop,overclaim,waiter",
        "--agent-config",
        config,
        "--tasks",
        TASK,
        "--attempts",
        "2",
        "--run-id",
        "resumable",
    ]
    proc = start_run(*args)
    run_dir = runs / "resumable"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(run_results(run_dir)) < 1:
        time.sleep(0.5)
    assert run_results(run_dir), "no attempt finished in time"
    # Signalled while the next attempt is under way (its live.json says so), whatever the
    # load: a fixed sleep let a loaded host finish the whole run first (seen in a full run).
    while time.monotonic() < deadline and not any(
        r["stage"] in ("stage", "install", "agent") for r in live.running(run_dir)
    ):
        time.sleep(0.1)
    assert proc.poll() is None, "the run ended before an attempt could be caught mid-flight"
    os.killpg(proc.pid, signal.SIGINT)
    proc.wait(timeout=120)
    assert proc.returncode != 0
    assert not machine_processes(state_home), "Ctrl-C left a machine behind"
    before = len(run_results(run_dir))
    assert before < 6

    # Then the controller is killed outright mid-attempt: no clean-up can run.
    proc = start_run("run", "--run-id", "resumable", "--resume")
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not any(
        r["agent"] == "waiter" and r["stage"] == "agent" for r in live.running(run_dir)
    ):
        time.sleep(0.2)
    assert machine_processes(state_home), "the resumed run started no waiter's machine"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    assert machine_processes(state_home), "the machine should outlive a killed controller"

    run_cli("run", "--run-id", "resumable", "--resume")
    rows = run_results(run_dir)
    keys = [(r["task_id"], r["agent"], r["attempt"]) for r in rows]
    assert len(keys) == 6 and len(set(keys)) == 6
    assert all(r["status"] == "completed" for r in rows)
    assert not machine_processes(state_home), "the killed run's machine was not destroyed"
    assert not [p for p in host_processes() if str(run_dir) in p], "a killed run's playbook runs"


def test_sigterm_mid_agent_cancels_the_attempt_and_leaves_no_machine(
    root_host, runs, tmp_path, state_home
):
    # `kill`, `timeout` and schedulers stop with SIGTERM, sent to the controller alone: by
    # default Python dies at once and the machine and its playbook (in a session of its own)
    # go on running. It must take the Ctrl-C path instead.
    config = tmp_path / "agents.yaml"
    config.write_text(json.dumps({"stuck": {"command": "sleep 900"}}))
    args = ["run", "--agent", "stuck", "--agent-config", config, "--tasks", TASK]
    proc = start_run(*args, "--run-id", "terminated")
    run_dir = runs / "terminated"

    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and "sleep 900" not in host_processes():
        time.sleep(0.5)
    assert "sleep 900" in host_processes(), "the agent never started"
    assert machine_processes(state_home)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, out
    assert "stopped by SIGTERM" in out
    assert not machine_processes(state_home), "SIGTERM left a machine behind"
    assert not [p for p in host_processes() if str(run_dir) in p], "SIGTERM left its playbook"
    # Cancelled, not failed: nothing is recorded against the agent or the infrastructure.
    assert run_results(run_dir) == []
    assert not (run_dir / "infra_errors.jsonl").exists()


def test_a_hung_agent_install_is_an_infra_error_and_leaves_no_machine(
    root_host, runs, tmp_path, state_home
):
    # The install runs before the agent's budget: only its own limit can end one that hangs.
    config = tmp_path / "agents.yaml"
    config.write_text(
        json.dumps({"hangs": {"command": "true", "install": "sleep 900", "install_seconds": 3}})
    )
    started = time.monotonic()
    run_cli(
        "run", "--agent", "hangs", "--agent-config", config, "--tasks", TASK, "--run-id", "hung"
    )
    assert time.monotonic() - started < 240
    rows = run_results(runs / "hung")
    assert [r["status"] for r in rows] == ["infra_error"]  # never counted against the agent
    tries = (runs / "hung" / "infra_errors.jsonl").read_text().splitlines()
    assert len(tries) == 3  # tried again twice, on fresh machines
    for line in tries:
        reason = json.loads(line)["reason"]
        assert "the scaffold's install failed" in reason and "Timed out after 3 s" in reason, reason
    assert not machine_processes(state_home)
    assert "sleep 900" not in host_processes()


def test_bad_run_input_is_one_line(runs):
    proc = run_cli("run", "--agent", "nop", "--tasks", "no_such_task", check=False)
    assert proc.returncode != 0 and "unknown task(s): no_such_task" in proc.stderr
    proc = run_cli("run", "--agent", "gpt", "--tasks", TASK, check=False)
    assert "unknown agent 'gpt'" in proc.stderr
    assert not runs.exists() or not any(runs.iterdir())


def test_budget_and_step_limit_end_a_command_agent(root_host, runs, tmp_path, state_home):
    # `stuck` never ends by itself: the budget must stop it (and the background child it left).
    # `stepper` writes a contract-5 trajectory that hits its step limit without finishing.
    steps = "".join(
        f'{{"step": {i}, "t": {i}, "kind": "command", "command": "ls", "exit_code": 0}}\\n'
        for i in range(1, 4)
    )
    config = tmp_path / "agents.yaml"
    config.write_text(
        json.dumps(
            {
                "stuck": {"command": "(sleep 900 &) ; sleep 900"},
                "stepper": {"command": f"printf '{steps}' > {{trajectory_file}}", "max_steps": 3},
            }
        )
    )
    run_cli(
        "run",
        "--agent",
        "stuck,stepper",
        "--agent-config",
        config,
        "--tasks",
        TASK,
        "--agent-seconds",
        "5",
        "--parallel",
        "2",
        "--run-id",
        "limits",
    )
    rows = {r["agent"]: r for r in run_results(runs / "limits")}
    assert rows["stuck"]["stop_type"] == "timeout"
    assert 5 <= rows["stuck"]["agent_seconds"] < 30
    stuck = runs / "limits" / TASK / "stuck" / "1"
    assert "sleep 900" not in (stuck / "verifier/processes_before_verify.txt").read_text()
    assert rows["stepper"]["stop_type"] == "max_steps"
    assert rows["stepper"]["steps"] == 3


def test_a_verifier_that_overruns_its_budget_is_a_verifier_timeout(root_host, runs, tmp_path):
    # A checkout whose one task has a verifier that never ends, and a 1-minute verify budget.
    repo = tmp_path / "checkout"
    repo.mkdir()
    for name in (
        "playbooks",
        "roles",
        "reference_setups",
        "terraform",
        "ansible.cfg",
        "run_task.yml",
    ):
        (repo / name).symlink_to(REPO / name)
    task = yaml.safe_load((REPO / "tasks" / TASK / "task.yaml").read_text())
    task.update(id="slowverify_demo24", verify_minutes=1)
    task["repo"]["url"] = "demo:tasks/slowverify_demo24/artifact"
    (repo / "tasks/slowverify_demo24").mkdir(parents=True)
    (repo / "tasks/schema.json").symlink_to(REPO / "tasks/schema.json")
    (repo / "tasks/slowverify_demo24/task.yaml").write_text(yaml.safe_dump(task))
    (repo / "tasks/slowverify_demo24/artifact").symlink_to(REPO / "tasks" / TASK / "artifact")
    (repo / "verifiers/slowverify_demo24").mkdir(parents=True)
    (repo / "verifiers/global").symlink_to(REPO / "verifiers/global")
    (repo / "verifiers/slowverify_demo24/experiment.sh").write_text("sleep 600\n")
    (repo / "verifiers/slowverify_demo24/checks.yaml").write_text(
        "checks:\n  - {name: slept, kind: exists, file: never.txt}\n"
    )

    run_cli(
        "run",
        "--agent",
        "nop",
        "--tasks",
        "slowverify_demo24",
        "--run-id",
        "slow",
        env={"DEPLOYBENCH_REPO": str(repo)},
        timeout=400,
    )
    (row,) = run_results(runs / "slow")
    assert row["status"] == "completed" and row["passed"] is False
    assert (row["failure_layer"], row["failure_category"]) == (2, "verifier_timeout")
    assert 60 <= row["verify_seconds"] < 120
