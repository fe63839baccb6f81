import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DEPLOYBENCH = [sys.executable, "-m", "deploybench.cli"]


def run_cli(*args, env=None, check=True, timeout=600, **kwargs):
    """Run the real `deploybench` command in a subprocess, as a user would."""
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run(
        [*DEPLOYBENCH, *map(str, args)],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        cwd=kwargs.pop("cwd", REPO),
        **kwargs,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"deploybench {' '.join(map(str, args))} exited {proc.returncode}\n"
            f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        )
    return proc


def require(present: bool, what: str) -> None:
    """A test whose tool is missing fails and says what to install; it is never skipped, so a
    green run means everything ran (`make test` and CI install what the tests need)."""
    if not present:
        pytest.fail(f"this test needs {what}", pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test that ran attempts shows why each infrastructure error happened (the run
    folder's infra_errors.jsonl): a CI log keeps only the report, never the test's folder."""
    report = yield
    tmp = getattr(item, "funcargs", {}).get("tmp_path")
    if report.failed and call.when == "call" and isinstance(tmp, Path) and tmp.is_dir():
        logs = [*tmp.glob("runs/*/infra_errors.jsonl"), *tmp.glob("*/runs/*/infra_errors.jsonl")]
        for log in sorted(logs)[:5]:
            text = log.read_text(errors="replace")[-4000:]
            report.sections.append((f"infra errors: {log.relative_to(tmp)}", text))
    return report


@pytest.fixture(scope="session")
def root_host():
    """Local machines need root, mmdebstrap and unshare: say so plainly instead of skipping."""
    missing = [t for t in ("mmdebstrap", "unshare", "terraform") if shutil.which(t) is None]
    if os.geteuid() != 0 or missing:
        pytest.fail(
            f"this test needs root and {', '.join(missing) or 'nothing else'}: "
            "run `make test` as root (it installs what is missing)"
        )


@pytest.fixture
def state_home(tmp_path, monkeypatch):
    """A private state folder per test; the image cache stays shared on the host."""
    home = tmp_path / "state"
    monkeypatch.setenv("DEPLOYBENCH_HOME", str(home))
    yield home
    if home.exists():
        # Whatever a failed test left running is ended here, not leaked to the next test.
        subprocess.run(
            [*DEPLOYBENCH, "destroy", "--all"],
            capture_output=True,
            env={**os.environ, "DEPLOYBENCH_HOME": str(home)},
            cwd=REPO,
        )


@pytest.fixture
def runs(tmp_path, monkeypatch, state_home):
    """A private runs/ folder (DEPLOYBENCH_RUNS) beside the private state folder."""
    folder = tmp_path / "runs"
    monkeypatch.setenv("DEPLOYBENCH_RUNS", str(folder))
    return folder


def start_run(*args, quiet: bool = False) -> subprocess.Popen:
    """A `deploybench` command in a session of its own, to be signalled or killed mid-run; its
    output (stdout and stderr in one) is read from the process unless `quiet`."""
    out = subprocess.DEVNULL if quiet else subprocess.PIPE
    return subprocess.Popen(
        [*DEPLOYBENCH, *args],
        cwd=REPO,
        start_new_session=True,
        # As from a terminal: Ctrl-C's signal handled. A child inherits an ignored SIGINT (a
        # test worker or a background job may ignore it), and Python then keeps ignoring it:
        # a run signalled by a test went on to its end and exited 0 (two full runs, 2026-12-05).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        stdout=out,
        stderr=subprocess.DEVNULL if quiet else subprocess.STDOUT,
        text=True,
    )


def run_results(run_dir: Path) -> list[dict]:
    """The rows of a run's results.jsonl (none before its first attempt ends)."""
    path = run_dir / "results.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def host_processes() -> list[str]:
    """The command line of every process on the host, the local machines' own included."""
    out = subprocess.run(["ps", "-eww", "-o", "args"], capture_output=True, text=True).stdout
    return out.splitlines()


def machine_processes(state_home: Path) -> list[str]:
    """Processes of machines kept under state_home (their command lines name it)."""
    return [line for line in host_processes() if str(state_home) in line]


@pytest.fixture(scope="module")
def moto(tmp_path_factory):
    """A moto server on loopback for the tests of one module; yields its URL."""
    from tests import moto_server

    proc, url = moto_server.start(tmp_path_factory.mktemp("moto") / "moto.log")
    yield url
    proc.terminate()
    proc.wait(timeout=10)


# The tests that wait longest, started first: `make test` runs over two workers (pytest-xdist,
# --dist worksteal), and a long test taken up last would run alone at the end. Most of their
# time is waiting (an agent's budget, a model server's script), so the other worker goes on
# meanwhile. Measured times (2 cores): OpenHands 400 s, mini-swe-agent 63 s, Codex and Claude
# Code 57 s, a verifier's overrun 64 s.
LONGEST_FIRST = (
    "tests/test_openhands.py",
    "tests/test_run_pipeline.py",
    "tests/test_real_agent.py",
    "tests/test_cli_agents.py",
)


def pytest_collection_modifyitems(config, items):
    def rank(item):
        path = item.nodeid.split("::")[0]
        return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)


def own_checkout(tmp_path: Path, task: str) -> Path:
    """A git checkout of the harness's own for commands that write task files (validate-
    references records into task.yaml): the playbooks, roles and verifiers as they are, the
    task's file, role and verifier copied with no validation record, so the repository's own
    tasks/ is never written by a test. Use it with env={"DEPLOYBENCH_REPO": str(root)}."""
    root = tmp_path / "repo"
    root.mkdir()
    for name in ("playbooks", "roles", "agents", "terraform", "ansible.cfg", "verifiers"):
        (root / name).symlink_to(REPO / name)
    (root / "tasks").mkdir()
    shutil.copy(REPO / "tasks/schema.json", root / "tasks/schema.json")
    shutil.copytree(REPO / "tasks" / task, root / "tasks" / task)
    shutil.copytree(REPO / "reference_setups" / task, root / "reference_setups" / task)
    task_file = root / "tasks" / task / "task.yaml"
    task_file.write_text(task_file.read_text().split("\nvalidated:")[0] + "\nvalidated: null\n")
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "checkout"], check=True)
    return root
