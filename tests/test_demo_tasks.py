"""The demo tasks: staging, their parts, and their verifiers on this host. Their runs on fresh
local machines are in test_run_pipeline.py."""

import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from deploybench import catalog, staging, verification
from deploybench.errors import DeployBenchError
from tests.conftest import REPO

DEMOS = sorted(t for t, d in catalog.load_tasks().items() if d.get("demo"))
HOST_PIP = shutil.which("python3") is not None


def test_three_demo_tasks():
    assert len(DEMOS) >= 3
    assert {"legacycalc_demo24", "tinytrain_demo24", "kvservice_demo24"} <= set(DEMOS)


@pytest.mark.parametrize("task_id", DEMOS)
def test_commit_is_what_staging_produces(task_id, tmp_path):
    task = catalog.load_tasks()[task_id]
    artifact = staging.demo_artifact_dir(task["repo"]["url"])
    assert artifact == REPO / "tasks" / task_id / "artifact"
    commit = staging.make_demo_repo(artifact, tmp_path / "repo")
    assert commit == task["repo"]["commit"]
    assert staging.demo_repo_commit(artifact) == commit
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
        staging.make_demo_repo(REPO / "tasks" / "tinytrain_demo24" / "artifact", tmp_path / "dest")
    with pytest.raises(DeployBenchError, match="not a demo repository url"):
        staging.demo_artifact_dir("https://github.com/x/y")


def test_staging_skips_build_leftovers(tmp_path):
    src = tmp_path / "art"
    shutil.copytree(REPO / "tasks" / "tinytrain_demo24" / "artifact", src)
    clean = staging.demo_repo_commit(src)
    (src / "__pycache__").mkdir()
    (src / "__pycache__" / "train.cpython-311.pyc").write_bytes(b"\0")
    (src / "env").mkdir()
    (src / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert staging.demo_repo_commit(src) == clean
    (src / "train.py").write_text((src / "train.py").read_text() + "\n# changed\n")
    assert staging.demo_repo_commit(src) != clean


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
    verify = REPO / "verifiers" / task_id / "verify.sh"
    assert os.access(verify, os.X_OK)
    assert "RUNBOOK" not in verify.read_text().replace("RUNBOOK.MD is never read", "")
    subprocess.run(["bash", "-n", verify], check=True)


def stage(task_id, dest):
    task = catalog.load_tasks()[task_id]
    staging.make_demo_repo(staging.demo_artifact_dir(task["repo"]["url"]), dest)
    shutil.copy(REPO / "tasks" / task_id / "paper.md", dest / "paper.md")
    return dest


def verify(task_id, workdir, log_dir):
    proc = subprocess.run(
        ["bash", REPO / "verifiers" / task_id / "verify.sh"],
        env={**os.environ, "WORKDIR": str(workdir), "LOG_DIR": str(log_dir)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    verdict = verification.verdict_from_logs(log_dir, 1.0)
    checks = json.loads((log_dir / "checks.json").read_text())
    assert checks and all(set(c) == {"name", "passed", "detail"} for c in checks)
    return verdict


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
        "formulas_evaluated",
        "invalid_formulas_reported",
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


def _venv(workdir, *requirements):
    subprocess.run([sys.executable, "-m", "venv", workdir / "env"], check=True)
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
    _venv(workdir, "-r", str(workdir / "requirements.txt"))
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
