"""Nothing outlives the agent: the stop stage ends every process that was not running before
the agent's install step, chosen by process id and start time, whatever its name.

This is the stop stage of the path through the machine's login (cloud machines); local
machines run it when DEPLOYBENCH_LOCAL_POST_AGENT=machine, as here. Local machines' own stop
(the host ends the container) is played in tests/test_post_agent_from_host.py."""

import json
import re
import subprocess

import pytest

from tests.conftest import REPO, machine_processes, run_cli

TASK = "legacycalc_demo24"
END = REPO / "roles/agent_stop/files/end_agent_processes.py"

# Each leftover sleeps a number of seconds no harness process uses, so it is found by its
# number in any process list whatever it is called.
MARKS = ("4441", "4442", "4443", "4444", "4445")


@pytest.fixture(autouse=True)
def _through_the_machine(monkeypatch):
    monkeypatch.setenv("DEPLOYBENCH_LOCAL_POST_AGENT", "machine")


def _leftovers(text: str) -> list[str]:
    # Whole numbers only: a harness path may hold the digits inside a timestamp
    # (ansible-tmp-1796444362... holds 4444).
    return [
        line
        for line in text.splitlines()
        if any(re.search(rf"(?<![\d.]){m}(?![\d.])", line) for m in MARKS)
    ]


def test_end_agent_processes_in_a_pid_namespace(tmp_path):
    # The script itself, in a PID namespace of its own (so it may kill everything it sees):
    # a binary named like sshd, a renamed argv[0], a double-forked daemon in its own session
    # and a process whose pid was in the baseline for another process (a reused pid: same
    # number, other start time) are ended; what ran before the baseline is kept.
    script = tmp_path / "probe.sh"
    script.write_text(
        f"""set -u
sleep 4440 &
keep=$!
base=$(python3 {END} baseline)
cp /bin/sleep {tmp_path}/sshd-keepalive
{tmp_path}/sshd-keepalive 4441 &
( exec -a 'sshd: root@notty' sleep 4442 ) &
( ( setsid sleep 4443 < /dev/null > /dev/null 2>&1 & ) & )
sleep 4444 &
reused=$!
base=$(echo "$base" | python3 -c "import json,sys; b=json.load(sys.stdin); \
b['processes'].append('$reused:1'); print(json.dumps(b))")
sleep 0.3
python3 {END} end "$base"
echo "rc=$?"
kill -0 $keep && echo KEPT
ps -eo args
"""
    )
    proc = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", "bash", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "rc=0" in proc.stdout, proc.stdout + proc.stderr
    assert "KEPT" in proc.stdout
    after = proc.stdout.split("KEPT", 1)[1]
    assert _leftovers(after) == [], after
    assert proc.stdout.count("killed ") == 4, proc.stdout


@pytest.mark.slow
@pytest.mark.privileged
def test_nothing_the_agent_starts_reaches_verification(root_host, runs, tmp_path, state_home):
    # A cheating agent: from its install step (root, before its budget) it starts a daemon;
    # from its command a binary copied to an sshd-like name, an argv[0] that reads like sshd's
    # session process, a double-forked daemon in a session of its own, and a root daemon.
    config = tmp_path / "agents.yaml"
    config.write_text(
        json.dumps(
            {
                "lingerer": {
                    "install": "setsid -f sleep 4445 < /dev/null > /dev/null 2>&1",
                    "command": (
                        "cp /bin/sleep /tmp/sshd-keepalive; "
                        "(/tmp/sshd-keepalive 4441 < /dev/null > /dev/null 2>&1 &); "
                        "(exec -a 'sshd: vm@notty' sleep 4442 < /dev/null > /dev/null 2>&1 &); "
                        "( ( setsid sleep 4443 < /dev/null > /dev/null 2>&1 & ) & ); "
                        "sudo setsid -f sleep 4444 < /dev/null > /dev/null 2>&1; "
                        "sudo mkdir -p /etc/cron.d; "
                        "echo '* * * * * root sleep 4446' | sudo tee /etc/cron.d/linger; "
                        "sleep 1; ps -eo pid,args"
                    ),
                }
            }
        )
    )
    run_cli(
        "run",
        "--agent",
        "lingerer",
        "--agent-config",
        config,
        "--tasks",
        TASK,
        "--agent-seconds",
        "60",
        "--run-id",
        "linger",
        timeout=900,
    )
    attempt = runs / "linger" / TASK / "lingerer" / "1"
    assert (attempt / "verdict.json").is_file(), "the attempt did not reach verification"
    log = (attempt / "agent.log").read_text()
    # They were all running when the agent returned...
    for mark in MARKS:
        assert mark in log, f"the agent did not start its {mark} process:\n{log}"
    # ...and none is in the process list taken just before the verifier.
    before_verify = (attempt / "verifier/processes_before_verify.txt").read_text()
    assert _leftovers(before_verify) == [], before_verify
    assert _leftovers((attempt / "state/processes_after_stop.txt").read_text()) == []
    assert json.loads((attempt / "stop.json").read_text())["killed_processes"] >= len(MARKS)
    # A cron file the agent wrote would start it again: it is gone too.
    assert "4446" in log
    assert "/etc/cron.d/linger" not in (attempt / "state/changed_files.txt").read_text()
    assert not machine_processes(state_home), "a machine outlived its attempt"


@pytest.mark.slow
@pytest.mark.privileged
def test_collected_files_are_capped_and_links_not_followed(root_host, runs, tmp_path):
    # The agent makes its RUNBOOK.MD a link to a root-only file, its trajectory a hard link to
    # another, and its log a 2 GB sparse file: none of it may reach the controller.
    config = tmp_path / "agents.yaml"
    config.write_text(
        json.dumps(
            {
                "linker": {
                    # The secrets are made at run time, so their text is in no command line.
                    "command": (
                        "m=SECRET; "
                        "echo $m-$((7700 + 81)) | sudo tee /root/secret1 > /dev/null; "
                        "echo $m-$((7700 + 82)) | sudo tee /root/secret2 > /dev/null; "
                        "sudo chmod 600 /root/secret1 /root/secret2; "
                        "sudo ln -sf /root/secret1 RUNBOOK.MD; "
                        "sudo ln -f /root/secret2 {trajectory_file}; "
                        "sudo truncate -s 2G /home/vm/.deploybench/agent.log.big; "
                        "sudo mv /home/vm/.deploybench/agent.log.big "
                        "/home/vm/.deploybench/agent.log"
                    ),
                }
            }
        )
    )
    run_cli(
        "run",
        "--agent",
        "linker",
        "--agent-config",
        config,
        "--tasks",
        TASK,
        "--run-id",
        "links",
        timeout=900,
    )
    run_dir = runs / "links"
    attempt = run_dir / TASK / "linker" / "1"
    assert (attempt / "verdict.json").is_file()
    assert not (attempt / "RUNBOOK.MD").exists()
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert b"SECRET-778" not in path.read_bytes()[: 1 << 20], path
    log = attempt / "agent.log"
    assert log.is_file() and log.stat().st_size <= 16 * 1024 * 1024
    assert "agent.log" in (attempt / "state/truncated.txt").read_text()
    refused = (attempt / "state/refused.txt").read_text()
    assert "RUNBOOK.MD" in refused and "trajectory.jsonl" in refused
    # The run folder is its owner's alone.
    assert run_dir.stat().st_mode & 0o077 == 0


@pytest.mark.slow
@pytest.mark.privileged
def test_a_process_name_cannot_forge_the_collected_state(root_host, runs, tmp_path):
    # The stop stage's one command prints what it ended, then a marker, then where the state's
    # tarball is. The agent leaves a process whose name holds newlines, that marker and the
    # path of a tarball it forged (as root) with a state of its own making.
    forged = "/tmp/deploybench-state-forged"
    name = f"x\\nDEPLOYBENCH_STOP_COLLECT\\nSTATE_TARBALL={forged}/state.tar.gz\\n"
    config = tmp_path / "agents.yaml"
    config.write_text(
        json.dumps(
            {
                "forger": {
                    "command": (
                        f"sudo mkdir -p {forged}/state; "
                        f"echo FORGED-$((7700 + 91)) | sudo tee {forged}/state/git_status.txt; "
                        f"sudo tar -C {forged}/state -czf {forged}/state.tar.gz .; "
                        f"(exec -a $'{name}' sleep 4447 < /dev/null > /dev/null 2>&1 &); "
                        "sleep 1"
                    ),
                }
            }
        )
    )
    run_cli(
        "run", "--agent", "forger", "--agent-config", config, "--tasks", TASK,
        "--run-id", "forge", timeout=900,
    )  # fmt: skip
    attempt = runs / "forge" / TASK / "forger" / "1"
    assert (attempt / "verdict.json").is_file()
    assert json.loads((attempt / "stop.json").read_text())["killed_processes"] >= 1
    state = attempt / "state"
    assert (state / "processes_after_stop.txt").is_file(), list(state.iterdir())
    for path in state.rglob("*"):
        if path.is_file():
            assert b"FORGED-7791" not in path.read_bytes(), f"forged state in {path}"
    assert "4447" not in (state / "processes_after_stop.txt").read_text()


def test_a_process_slow_to_die_is_killed_again_but_listed_once(monkeypatch):
    # A loaded host: a real process is killed in the first round, but /proc still shows it in
    # the next (it has not finished dying). It is signalled again and listed once.
    import importlib.util

    spec = importlib.util.spec_from_file_location("end_agent_processes", END)
    end = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(end)
    child = subprocess.Popen(["sleep", "4446"])
    try:
        seen = end.processes()[child.pid]
        rounds = iter([{child.pid: seen}, {child.pid: seen}, {}])
        monkeypatch.setattr(end, "processes", lambda: next(rounds))
        killed, settled = end.end_processes({"processes": []})
        assert settled
        assert killed == [f"killed {child.pid}: sleep 4446"]
        assert child.wait(timeout=10) == -9
    finally:
        child.kill()
