"""The demo tasks: staging, their parts, and their verifiers on this host. Their runs on fresh
local machines are in test_run_pipeline.py."""

import math
import shutil
import subprocess
import sys

import pytest
import yaml

from deploybench import catalog
from deploybench.catalog import demo
from deploybench.errors import DeployBenchError
from deploybench.verify import toolkit, verification
from tests.conftest import REPO

DEMOS = sorted(t for t, d in catalog.load_tasks().items() if d.get("demo"))
HOST_PIP = shutil.which("python3") is not None


def test_three_demo_tasks():
    assert len(DEMOS) >= 3
    assert {"legacycalc_demo24", "tinytrain_demo24", "kvservice_demo24"} <= set(DEMOS)


@pytest.mark.parametrize("task_id", DEMOS)
def test_commit_is_what_staging_produces(task_id, tmp_path):
    task = catalog.load_tasks()[task_id]
    artifact = demo.demo_artifact_dir(task["repo"]["url"])
    assert artifact == REPO / "tasks" / task_id / "artifact"
    commit = demo.make_demo_repo(artifact, tmp_path / "repo")
    assert commit == task["repo"]["commit"]
    assert demo.demo_repo_commit(artifact) == commit
    log = subprocess.run(
        ["git", "-C", tmp_path / "repo", "log", "--format=%an <%ae> %aI %cI"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    date = "2024-01-01T00:00:00+00:00"
    assert log == f"DeployBench <demo@deploybench.invalid> {date} {date}"
    status = subprocess.run(
        ["git", "-C", tmp_path / "repo", "status", "--porcelain"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert status == ""


def test_staging_refuses_a_non_empty_destination(tmp_path):
    (tmp_path / "dest").mkdir()
    (tmp_path / "dest" / "x").write_text("x")
    with pytest.raises(DeployBenchError, match="not empty"):
        demo.make_demo_repo(REPO / "tasks" / "tinytrain_demo24" / "artifact", tmp_path / "dest")
    with pytest.raises(DeployBenchError, match="not a demo repository url"):
        demo.demo_artifact_dir("https://github.com/x/y")


def test_staging_skips_build_leftovers(tmp_path):
    src = tmp_path / "art"
    shutil.copytree(REPO / "tasks" / "tinytrain_demo24" / "artifact", src)
    clean = demo.demo_repo_commit(src)
    (src / "__pycache__").mkdir()
    (src / "__pycache__" / "train.cpython-311.pyc").write_bytes(b"\0")
    (src / "env").mkdir()
    (src / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert demo.demo_repo_commit(src) == clean
    (src / "train.py").write_text((src / "train.py").read_text() + "\n# changed\n")
    assert demo.demo_repo_commit(src) != clean


@pytest.mark.parametrize("task_id", DEMOS)
def test_demo_task_parts(task_id):
    task = catalog.load_tasks()[task_id]
    assert task["demo"] is True
    assert task["entry_points"]
    assert (REPO / "tasks" / task_id / "paper.md").read_text().startswith("# ")
    assert (REPO / "tasks" / task_id / "artifact" / "README.md").is_file()
    role = REPO / "reference_setups" / task_id
    for part in ("tasks/main.yml", "defaults/main.yml", "meta/main.yml", "meta/argument_specs.yml"):
        assert (role / part).is_file(), part
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text())
    assert all(name.startswith(f"{task_id}_") for name in defaults)
    spec = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())
    options = spec["argument_specs"]["main"]["options"]
    assert options[f"{task_id}_workdir"]["required"] is True
    assert set(defaults) <= set(options)
    runbook = next((role / "templates").glob("RUNBOOK.MD.j2")).read_text()
    assert verification.runbook_status(runbook) == "SUCCESS"
    assert runbook.splitlines()[0] == "STATUS: SUCCESS"
    experiment = REPO / "verifiers" / task_id / "experiment.sh"
    assert "RUNBOOK" not in experiment.read_text().replace("RUNBOOK.MD is never read", "")
    assert verification.load_checks(task_id)
    script = verification.machine_script(task_id)
    subprocess.run([str(toolkit.busybox()), "sh", "-n", "-c", script], check=True)


def test_legacycalc_expected_values_are_an_independent_evaluation():
    # The expected values in checks.yaml, recomputed from the formulas in experiment.sh.
    text = (REPO / "verifiers/legacycalc_demo24/experiment.sh").read_text()
    formulas = text.split("<<'FORMULAS'\n", 1)[1].split("\nFORMULAS\n", 1)[0].splitlines()
    expected = {}
    for n, line in enumerate(formulas, 1):
        if line and not line.startswith("#"):
            try:
                expected[str(n)] = _rpn(line)
            except ValueError:
                expected[str(n)] = "invalid"
    declared = {}
    for check in verification.load_checks("legacycalc_demo24"):
        declared.update(check.get("expected", {}))
    assert declared.keys() == expected.keys()
    for key, value in expected.items():
        assert declared[key] == value or abs(declared[key] - value) < 1e-9, key


def _rpn(line):
    stack = []

    def pop():
        if not stack:
            raise ValueError("stack underflow")
        return stack.pop()

    binary = {"+": float.__add__, "-": float.__sub__, "*": float.__mul__, "^": float.__pow__}
    for tok in line.split():
        try:
            stack.append(float(tok))
            continue
        except ValueError:
            pass
        if tok == "sqrt":
            a = pop()
            if a < 0:
                raise ValueError("sqrt of a negative number")
            stack.append(math.sqrt(a))
        elif tok == "neg":
            stack.append(-pop())
        elif tok == "dup":
            a = pop()
            stack += [a, a]
        elif tok == "swap":
            b, a = pop(), pop()
            stack += [b, a]
        elif tok == "/":
            b, a = pop(), pop()
            if b == 0:
                raise ValueError("division by zero")
            stack.append(a / b)
        elif tok in binary:
            b, a = pop(), pop()
            stack.append(binary[tok](a, b))
        else:
            raise ValueError("unknown operator")
    if len(stack) != 1:
        raise ValueError("not one value")
    return stack[0]


def stage(task_id, dest):
    task = catalog.load_tasks()[task_id]
    demo.make_demo_repo(demo.demo_artifact_dir(task["repo"]["url"]), dest)
    shutil.copy(REPO / "tasks" / task_id / "paper.md", dest / "paper.md")
    return dest


def verify(task_id, workdir, log_dir):
    """The task's machine side on this host as the verify_hidden role runs it on a machine: the
    trusted busybox shell, a clean environment, a tools folder; then the checks judged here."""
    bb = toolkit.busybox()
    tools = log_dir.parent / f"{log_dir.name}-tools"
    scratch = log_dir.parent / f"{log_dir.name}-scratch"
    for folder in (log_dir, tools, scratch):
        folder.mkdir(parents=True)
    (tools / "busybox").symlink_to(bb)
    (tools / "sh").symlink_to(bb)
    script = tools / "experiment.sh"
    script.write_text(verification.machine_script(task_id))
    env = {
        "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
        "WORKDIR": str(workdir),
        "LOG_DIR": str(log_dir),
        "SCRATCH": str(scratch),
        "TOOLS": str(tools),
    }
    proc = subprocess.run(
        [bb, "timeout", "300", bb, "sh", script], env=env, capture_output=True, timeout=330
    )
    assert proc.returncode == 0, (log_dir / "verifier_stdout.log").read_text()
    checks = verification.load_checks(task_id)
    return verification.verdict_from_logs(log_dir, 1.0, checks)


@pytest.mark.parametrize("task_id", DEMOS)
def test_untouched_repository_fails_on_this_host(task_id, tmp_path):
    workdir = stage(task_id, tmp_path / task_id)
    verdict = verify(task_id, workdir, tmp_path / "logs")
    assert verdict["passed"] is False
    assert verdict["layer2"]["passed"] is False
    layer, category = verification.failure_of(verdict, False)
    assert layer == 1
    if task_id == "legacycalc_demo24" and shutil.which("g++") and shutil.which("make"):
        # This host has a compiler: the diagnostic build shows the C++17 errors.
        assert category == "compilation"
        assert any("dynamic exception specifications" in e for e in verdict["layer1"]["evidence"])
    else:
        assert category == "dependency"


def test_legacycalc_passes_when_built_with_an_older_standard(tmp_path):
    if not (shutil.which("g++") and shutil.which("make")):
        pytest.fail("this test needs g++ and make on the host (apt-get install g++ make)")
    workdir = stage("legacycalc_demo24", tmp_path / "wd")
    plain = subprocess.run(["make"], cwd=workdir, capture_output=True, text=True)
    assert plain.returncode != 0 and "ISO C++17 does not allow" in plain.stderr
    subprocess.run(
        ["make", "CXXFLAGS=-O2 -std=gnu++11"], cwd=workdir, check=True, capture_output=True
    )
    verdict = verify("legacycalc_demo24", workdir, tmp_path / "logs")
    assert verdict["passed"] is True, verdict
    assert {c["name"] for c in verdict["layer2"]["checks"]} >= {
        "binary_built",
        "exit_code",
        "formulas_evaluated",
        "invalid_formulas_reported",
        "binary_is_the_repositorys",
        "binary_unchanged_by_its_run",
    }


def test_legacycalc_catches_a_fake_binary(tmp_path):
    workdir = stage("legacycalc_demo24", tmp_path / "wd")
    fake = workdir / "legacycalc"
    fake.write_text("#!/bin/sh\necho '2 59.000000'\n")
    fake.chmod(0o755)
    verdict = verify("legacycalc_demo24", workdir, tmp_path / "logs")
    assert verdict["passed"] is False
    built = next(c for c in verdict["layer2"]["checks"] if c["name"] == "binary_built")
    assert built["passed"] is False


def _venv(workdir, *requirements, python=sys.executable):
    subprocess.run([python, "-m", "venv", workdir / "env"], check=True)
    subprocess.run(
        [workdir / "env" / "bin" / "pip", "install", "-q", *requirements],
        check=True,
        capture_output=True,
    )


@pytest.mark.slow
def test_tinytrain_on_this_host_new_numpy_fails_pinned_passes(tmp_path):
    workdir = stage("tinytrain_demo24", tmp_path / "wd")
    _venv(workdir, "numpy>=1.26")
    verdict = verify("tinytrain_demo24", workdir, tmp_path / "logs1")
    assert verification.failure_of(verdict) == (1, "dependency")
    assert any("has no attribute 'float'" in e for e in verdict["layer1"]["evidence"])
    _venv(workdir, "-r", str(workdir / "requirements.txt"))
    subprocess.run(
        [workdir / "env/bin/pip", "install", "-q", "numpy==1.23.5"], check=True, capture_output=True
    )
    verdict = verify("tinytrain_demo24", workdir, tmp_path / "logs2")
    assert verdict["passed"] is True, verdict


@pytest.mark.slow
def test_kvservice_on_this_host_unpinned_werkzeug_fails_pinned_passes(tmp_path):
    workdir = stage("kvservice_demo24", tmp_path / "wd")
    (workdir / "kvservice.ini").write_text(
        f"[storage]\ndata_dir = {workdir}/data\n[auth]\ntoken = t0k\n"
    )
    # Debian's python, as the machines' reference venv has it: the verifier vouches for it.
    _venv(workdir, "-r", str(workdir / "requirements.txt"), python="/usr/bin/python3")
    verdict = verify("kvservice_demo24", workdir, tmp_path / "logs1")
    assert verification.failure_of(verdict) == (1, "dependency")
    assert any("url_quote" in e for e in verdict["layer1"]["evidence"])
    subprocess.run(
        [workdir / "env/bin/pip", "install", "-q", "werkzeug==2.0.3"],
        check=True,
        capture_output=True,
    )
    verdict = verify("kvservice_demo24", workdir, tmp_path / "logs2")
    assert verdict["passed"] is True, verdict
    assert "value_persisted_after_restart" in {c["name"] for c in verdict["layer2"]["checks"]}


# On fresh local machines, through the real pipeline: tests/test_run_pipeline.py runs every demo
# task with the reference, nop and overclaim agents (what `make demo` runs).
