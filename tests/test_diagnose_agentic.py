"""The agentic diagnosis (`deploybench diagnose RUN --agentic`) of failed attempts whose machines
were kept (`run --keep-failed`): a real scaffold (mini-swe-agent, pinned in
agents/mini-swe-agent.yaml) driven by a scripted model enters the kept machine over SSH with the
diagnosis's own key, runs `pip freeze` and the failing command there, and writes its report;
the machine is destroyed after, the verdict and the results row untouched."""

import json
import os
import signal
import time
from pathlib import Path

import pytest

from deploybench.backends import kept
from deploybench.run import diagnosis as diagnose_agentic
from tests.conftest import REPO, run_cli, start_run
from tests.fresh_env import ENV_COMMAND, fresh_login, seen
from tests.scripted_llm import MINI_SUBMIT, Reply, ScriptedLLM
from tests.test_real_agent import DUMMY_KEY, agent_config

TASK = "tinytrain_demo24"
STORED_PROMPT = REPO / "tests" / "fixtures" / "diagnose_agent_prompt.tinytrain.md"
KEY = "/home/vm/deploybench-diagnosis/id_ed25519"
WORKDIR = f"/home/vm/Desktop/{TASK}"
REPORT = "/home/vm/deploybench-diagnosis/diagnosis.md"
VERDICT = "/home/vm/deploybench-diagnosis/verifier/verdict.json"
TRAIN = "env/bin/python train.py --data data/stations.csv --epochs 1 --out /tmp/diag 2>&1"


def wrong_pin() -> list[Reply]:
    """An agent that installs what tinytrain needs but lets numpy float to the newest (the task
    says below 1.24), runs nothing, and claims success."""
    return [
        Reply("First, what this machine has.", ENV_COMMAND),
        Reply(
            "I need python3-venv.",
            "sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive "
            "apt-get install -y -qq python3-venv > /tmp/apt.log 2>&1; echo apt=$?",
        ),
        Reply(
            "The environment, with a recent numpy.",
            "python3 -m venv env && env/bin/pip install -q 'numpy>=1.24' && env/bin/pip freeze",
        ),
        Reply("Done.", "printf 'STATUS: SUCCESS\\n\\nsource env/bin/activate\\n' > RUNBOOK.MD"),
        Reply("Done.", MINI_SUBMIT),
    ]


def diagnostician(port: int) -> list[Reply]:
    """A diagnostic agent that reads the verdict, SSHes in (the machine's sshd on PORT, as the
    prompt says), freezes the agent's environment, runs the failing command and writes a
    report naming what it found there."""
    ssh = f"ssh -i {KEY} -p {port} -o StrictHostKeyChecking=no -o BatchMode=yes vm@127.0.0.1"
    freeze = f"{ssh} 'cd {WORKDIR} && env/bin/pip freeze'"
    return [
        Reply(
            "The verdict first.",
            f"head -c 3000 {VERDICT}",
        ),
        Reply("The agent's environment, on the machine.", freeze),
        Reply(
            "The failing command, as the verifier ran it.",
            f"{ssh} 'cd {WORKDIR} && {TRAIN} | tail -n 3'",
        ),
        Reply(
            "What the reference installs.",
            "grep -rn numpy /home/vm/deploybench-diagnosis/reference_setup | head -n 5",
        ),
        Reply(
            "Writing the report from what the machine showed.",
            f"""pkg=$({freeze} | grep -i '^numpy==')
err=$({ssh} 'cd {WORKDIR} && {TRAIN} | grep -m 1 ^AttributeError')
cat > {REPORT} <<EOF
## Root cause
The agent's environment has \\`$pkg\\`: the package version is 1.24 or later, which removed
np.float, so train.py stops at once; the task pins numpy below 1.24.
## Evidence
- pip freeze in env: $pkg
- train.py: $err
## Secondary issues
- none
## Recommended fix
pip install 'numpy<1.24' in env, as the reference setup does.
EOF
cat {REPORT}""",
        ),
        Reply("Done.", MINI_SUBMIT),
    ]


def test_the_rendered_prompt_equals_the_stored_copy():
    # The stored copy is the prompt as a reviewer read it, placeholders filled for tinytrain:
    # any change of the prompt shows here first.
    assert diagnose_agentic.render_prompt(TASK) == STORED_PROMPT.read_text()
    for filled in (KEY, WORKDIR, REPORT, "/home/vm/deploybench-diagnosis/reference_setup"):
        assert filled in STORED_PROMPT.read_text()


def test_a_report_is_read_by_its_sections():
    found = diagnose_agentic.parse_report(
        "intro\n## Root cause\nnumpy 2.1 removed np.float.\n## Evidence\n- `pip freeze`: "
        "numpy==2.1.0\n- AttributeError\n## Secondary issues\nnone\n### Recommended fix:\n"
        "pin it\n"
    )
    assert found == {
        "root_cause": "numpy 2.1 removed np.float.",
        "evidence": ["`pip freeze`: numpy==2.1.0", "AttributeError"],
        "secondary_issues": ["none"],
        "recommended_fix": "pin it",
    }


def test_a_kept_machine_is_abandoned_when_its_time_or_its_diagnosis_ends(tmp_path):
    now = time.time()
    assert kept.abandoned({"expires_at": now + 60}) is None
    assert "time to live" in kept.abandoned({"expires_at": now - 1})
    gone = os.fork()
    if gone == 0:
        os._exit(0)
    os.waitpid(gone, 0)
    assert "lost its controller" in kept.abandoned({"expires_at": now + 60, "diagnosis_pid": gone})
    mine = {"expires_at": now + 60, "diagnosis_pid": os.getpid()}
    assert kept.abandoned(mine) is None


def kept_failure(script: list[Reply], run_dir: Path, tmp_path: Path) -> None:
    """A run of one mini-swe-agent attempt on TASK, scripted by `script`, that fails and whose
    machine is kept (--keep-failed 1) for a diagnosis."""
    with ScriptedLLM(script) as llm:
        config = agent_config(tmp_path, {"mini-swe-agent": {"base_url": llm.base_url}})
        run_cli(
            "run", "--agent", "mini-swe-agent", "--agent-config", config, "--tasks", TASK,
            "--run-id", run_dir.name, "--keep-failed", "1", "--keep-hours", "1",
            env={"OPENAI_API_KEY": DUMMY_KEY},
        )  # fmt: skip
    [row] = [json.loads(x) for x in (run_dir / "results.jsonl").read_text().splitlines()]
    assert row["status"] == "completed" and not row["passed"], row


def diagnose_with(script: list[Reply], run_dir: Path, tmp_path: Path):
    """`diagnose RUN --agentic` with mini-swe-agent on this script of the scripted model:
    (the command's result, the model server, the wall seconds it took)."""
    with ScriptedLLM(script) as doctor:
        config = agent_config(tmp_path, {"mini-swe-agent": {"base_url": doctor.base_url}})
        started = time.monotonic()
        done = run_cli(
            "diagnose", run_dir, "--agentic", "--agent", "mini-swe-agent",
            "--agent-config", config, "--minutes", "5",
            env={"OPENAI_API_KEY": DUMMY_KEY},
        )  # fmt: skip
    return done, doctor, time.monotonic() - started


def _snapshot(run_dir: Path) -> dict[str, bytes]:
    attempt = run_dir / TASK / "mini-swe-agent" / "1"
    return {
        "results": (run_dir / "results.jsonl").read_bytes(),
        "verdict": (attempt / "verdict.json").read_bytes(),
    }


@pytest.mark.slow
@pytest.mark.privileged
def test_a_failed_attempt_is_kept_diagnosed_on_its_machine_and_ended(
    root_host, runs, state_home, tmp_path
):
    run_dir = runs / "diag"
    attempt = run_dir / TASK / "mini-swe-agent" / "1"
    # What a login shell of vm sees on a fresh machine (made and destroyed before the run, whose
    # machine is kept).
    fresh = seen(fresh_login("debian12"))
    kept_failure(wrong_pin(), run_dir, tmp_path)
    before = _snapshot(run_dir)
    # The agent's commands ran in the machine's own environment, not its scaffold's: the same
    # python3, pip3 and node, the same sys.prefix, the same deciding variables.
    events = [json.loads(x) for x in (attempt / "trajectory.jsonl").read_text().splitlines()]
    first = next(e for e in events if e["kind"] == "command")
    assert first["command"] == ENV_COMMAND
    print("fresh:", fresh, "\nagent:", seen(first["output"]))
    assert seen(first["output"]) == fresh
    print(run_cli("machines").stdout)
    [machine] = json.loads(run_cli("machines", "--json").stdout).values()
    assert machine["kept"].startswith("until ") and str(attempt) in machine["kept"]

    done, doctor, wall = diagnose_with(diagnostician(machine["port"]), run_dir, tmp_path)
    print(done.stdout)
    assert (
        "1 failed attempt(s) diagnosed (agentic (mini-swe-agent) on 1 kept machine" in done.stdout
    )

    found = json.loads((attempt / "diagnosis.json").read_text())
    print(json.dumps(found, indent=2))
    # What the machine answered each command, as the diagnostic agent saw it.
    for message in doctor.requests[-1]["messages"][-8:]:
        print(str(message.get("content"))[:600])
    print(f"diagnosis: {wall:.0f} s wall, machine kept {found['machine_seconds_kept']:.0f} s")
    assert found["source"] == "agentic" and found["error"] is None, found
    # The report holds what the machine showed: numpy's version from pip freeze there, and
    # the failing command's own error.
    assert "numpy==2." in found["root_cause"] or "numpy==1.2" in found["root_cause"], found
    assert any("has no attribute 'float'" in e for e in found["evidence"]), found
    assert "dependency/package/version" in found["patterns"]
    assert found["calls"] == len(doctor.requests) and found["tokens_in"] > 0
    # The model saw the prompt with the placeholders filled, and the key was the gateway's.
    first = json.dumps(doctor.requests[0])
    assert "/home/vm/deploybench-diagnosis/reference_setup" in first
    assert f"-p {machine['port']} " in first
    assert DUMMY_KEY not in first

    # Table 9 counts it.
    table9 = (run_dir / "diagnosis" / "table9_failure_patterns.csv").read_text()
    print(table9)
    assert "dependency" in table9.splitlines()[0]
    # The report counts it in Table 9 and says how it was diagnosed; its attempt page shows it.
    report = tmp_path / "report"
    run_cli("report", run_dir, "--out", report)
    assert "Diagnoses of the failed attempts: agentic 1." in (report / "report.md").read_text()
    assert "numpy==2." in (report / "attempts" / "1.html").read_text()
    # Nothing of the verdict or the results changed; the machine is gone.
    assert _snapshot(run_dir) == before
    assert run_cli("machines").stdout.strip() == "no machines"
    assert kept.listed() == []


@pytest.mark.slow
@pytest.mark.privileged
def test_a_controller_killed_during_a_diagnosis_leaves_nothing_after_sweep(
    root_host, runs, state_home, tmp_path, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", DUMMY_KEY)
    run_dir = runs / "diagkill"
    run_cli("run", "--agent", "nop", "--tasks", TASK, "--run-id", "diagkill", "--keep-failed", "1")
    [machine] = json.loads(run_cli("machines", "--json").stdout).values()
    assert machine["kept"].startswith("until ")

    # A diagnostic agent that never finishes; the controller is killed once it is at work.
    with ScriptedLLM([Reply("Looking.", "sleep 5; ls")]) as doctor:
        config = agent_config(tmp_path, {"mini-swe-agent": {"base_url": doctor.base_url}})
        proc = start_run(
            "diagnose", str(run_dir), "--agentic", "--agent", "mini-swe-agent",
            "--agent-config", str(config), "--minutes", "10", quiet=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 400
            while not doctor.requests and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(1)
            assert doctor.requests, "the diagnostic agent never called its model"
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    [machine] = json.loads(run_cli("machines", "--json").stdout).values()
    assert "ENDED BY THE NEXT SWEEP: its diagnosis lost its controller" in machine["kept"]
    swept = run_cli("sweep", "--backend", "local").stdout
    print(swept)
    assert "its diagnosis lost its controller" in swept
    assert run_cli("machines").stdout.strip() == "no machines"
    machines_dir = state_home / "machines"
    assert not machines_dir.exists() or list(machines_dir.iterdir()) == []
