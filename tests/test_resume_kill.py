"""Runs keep their promises: a controller SIGKILLed at any point of provisioning leaves
nothing that `machines`, `destroy` and `--resume` cannot see, and `--resume` runs every
attempt exactly once with the run's own options."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from deploybench.backends import MachineRequest
from tests.conftest import REPO, machine_processes, run_cli, run_results, start_run

pytestmark = [pytest.mark.slow, pytest.mark.privileged]

TASK = "legacycalc_demo24"


def _wait_for(condition, what: str, seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.01)
    pytest.fail(f"timed out waiting for {what}")


def _nothing_left(state_home: Path) -> None:
    assert run_cli("machines").stdout.strip() == "no machines"
    assert not machine_processes(state_home), "a machine process is left"
    mounts = Path("/proc/self/mountinfo").read_text()
    assert str(state_home) not in mounts, "a machine's mount is left"
    deployments = state_home / "deployments"
    assert not deployments.exists() or not any(deployments.iterdir())


def _deployments(state_home: Path) -> list[Path]:
    folder = state_home / "deployments"
    return sorted(folder.iterdir()) if folder.is_dir() else []


def _recorded(state_home: Path) -> bool:
    return any((d / "deployment.json").is_file() for d in _deployments(state_home))


def _booting(state_home: Path) -> bool:
    machines = state_home / "machines"
    return machines.is_dir() and any(machines.iterdir())


def _up(state_home: Path) -> bool:
    return any((d / "machines.json").is_file() for d in _deployments(state_home))


# (name, when to kill, kill the whole process group or only the controller)
KILL_POINTS = [
    ("before-apply", _recorded, True),
    ("while-booting", _booting, False),
    ("while-booting-group", _booting, True),
    ("machine-up", _up, True),
]


@pytest.mark.parametrize("name,point,group", KILL_POINTS, ids=[k[0] for k in KILL_POINTS])
def test_sigkill_during_provisioning_then_resume(name, point, group, root_host, runs, state_home):
    args = ["run", "--agent", "nop", "--tasks", TASK, "--attempts", "2", "--agent-seconds", "20"]
    proc = start_run(*args, "--run-id", name, quiet=True)
    _wait_for(lambda: point(state_home), name)
    if group:
        os.killpg(proc.pid, signal.SIGKILL)
    else:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    assert run_results(runs / name) == []
    # Whatever the killed controller left is recorded, and a machine it started is listed.
    assert _deployments(state_home), "the killed attempt's deployment was not recorded"
    if point is _up:
        assert json.loads(run_cli("machines", "--json").stdout), "a live machine is not listed"

    run_cli("run", "--run-id", name, "--resume", timeout=900)
    rows = run_results(runs / name)
    assert sorted(r["attempt"] for r in rows) == [1, 2], rows
    assert all(r["status"] == "completed" for r in rows), rows
    _nothing_left(state_home)


def test_resume_restores_the_runs_options(root_host, runs, state_home, tmp_path):
    # An agent that never ends: only the run's own --agent-seconds (3 s, not the task's 10
    # minutes) lets the resumed attempts end in time.
    config = tmp_path / "agents.yaml"
    config.write_text(json.dumps({"stuck": {"command": "sleep 3600"}}))
    args = ["--agent", "stuck", "--agent-config", str(config), "--tasks", TASK]
    proc = start_run(
        "run", *args, "--attempts", "2", "--agent-seconds", "3", "--image", "debian12",
        "--run-id", "opts", "--bank-dir", str(tmp_path / "banks"), quiet=True,
    )  # fmt: skip
    run_dir = runs / "opts"
    _wait_for(lambda: len(run_results(run_dir)) >= 1, "the first attempt")
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    config.unlink()  # the specs are the run's, not the file's

    # Options given again must be the run's own.
    proc = run_cli("run", "--run-id", "opts", "--resume", "--attempts", "3", check=False)
    assert proc.returncode != 0 and "--attempts 3 differs from the run's 2" in proc.stderr
    assert "Traceback" not in proc.stderr
    # The bank folder too: the attempts of one run draw their variants from one folder.
    other = tmp_path / "other-banks"
    proc = run_cli("run", "--run-id", "opts", "--resume", "--bank-dir", other, check=False)
    assert proc.returncode != 0 and "--bank-dir" in proc.stderr and "differs" in proc.stderr
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["bank_dir"] == str((tmp_path / "banks").resolve())
    # Resumed without --bank-dir, with $DEPLOYBENCH_BANK naming another folder: the run's own.
    run_cli(
        "run", "--run-id", "opts", "--resume", env={"DEPLOYBENCH_BANK": str(other)}, timeout=900
    )
    assert json.loads((run_dir / "run.json").read_text())["bank_dir"] == meta["bank_dir"]
    rows = run_results(run_dir)
    assert sorted(r["attempt"] for r in rows) == [1, 2], rows
    for row in rows:
        assert row["status"] == "completed" and row["stop_type"] == "timeout", row
        # Far below the task's own 600 s (a loaded host adds some seconds of polling).
        assert row["agent_seconds"] < 120, row
    second = json.loads((run_dir / TASK / "stuck/2/machine/deployment.json").read_text())
    assert second["request"]["image"] == "debian12"
    _nothing_left(state_home)


_STOPPED_IN_OPEN_FOR = """
import json, os, signal, sys
from deploybench.backends import MachineRequest, deployments

def stop_here(*args, **kwargs):  # owner.json is about to be written: stop, to be killed
    os.kill(os.getpid(), signal.SIGSTOP)

deployments.json.dumps = stop_here
deployments.open_for(MachineRequest(run_id=sys.argv[1]), owner={"run_dir": "/nowhere"})
"""


def test_a_controller_killed_while_making_a_deployments_folder_leaves_nothing_listed(state_home):
    """The instant the resume test once hit in CI: the attempt's deployment folder made, its
    owner.json not yet there, the controller SIGKILLed. No run could claim such a folder, so
    it stayed for good. Now it is made hidden and renamed when whole; a dead maker's hidden
    folder is forgotten by the next listing, a living maker's is left alone."""
    from deploybench.backends import deployments

    procs = []
    for run_id in ("dead-maker", "live-maker"):
        proc = subprocess.Popen([sys.executable, "-c", _STOPPED_IN_OPEN_FOR, run_id], cwd=REPO)
        _wait_for(lambda pid=proc.pid: _stopped(pid), f"{run_id} stopped in open_for", 60)
        procs.append(proc)
    made = sorted(p.name for p in _deployments(state_home))
    assert made == sorted(
        f".{r}.{p.pid}.making" for r, p in zip(("dead-maker", "live-maker"), procs, strict=True)
    )
    procs[0].kill()
    procs[0].wait(timeout=30)

    assert deployments.listed() == []
    assert [p.name for p in _deployments(state_home)] == [f".live-maker.{procs[1].pid}.making"]
    assert run_cli("machines").stdout.strip() == "no machines"
    procs[1].kill()
    procs[1].wait(timeout=30)
    assert deployments.listed() == [] and _deployments(state_home) == []

    # Not stopped, open_for makes the folder whole, owner and all, under its own name.
    folder = deployments.open_for(MachineRequest(run_id="whole"), owner={"run_dir": "/r"})
    assert [p.name for p in _deployments(state_home)] == ["whole"]
    assert deployments.owner(folder) == {"run_dir": "/r"}
    with pytest.raises(FileExistsError):
        deployments.open_for(MachineRequest(run_id="whole"))


def _stopped(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"
    except (OSError, IndexError):
        return False


def test_resume_refuses_a_run_that_does_not_exist(runs, state_home):
    proc = run_cli("run", "--run-id", "never-started", "--resume", check=False)
    assert proc.returncode != 0
    assert "no run never-started to resume" in proc.stderr, proc.stderr
    assert not (runs / "never-started").exists()
