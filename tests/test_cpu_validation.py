"""The CPU validation of GPU tasks (run / validate-references --cpu-only): which checks are GPU
evidence comes from checks.yaml data only; the normal verdict keeps them, so a GPU task's real CPU
run fails it and passes only the CPU judgment; its record in task.yaml says it was CPU only.

The GPU task's CPU run is lightgcn_sigir20's recorded `shallow` state: a real run of its
experiment here on the CPU (see that state's README.md). A run with --keep-failed keeps the
machines of attempts failed by the judgment it scores: under --cpu-only the CPU judgment."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from deploybench import catalog, runfolder
from deploybench.backends import get_backend
from deploybench.catalog import checks
from deploybench.commands import run as run_cmd
from deploybench.errors import DeployBenchError
from deploybench.run.runner import Attempt, Runner, RunOptions
from deploybench.verify import toolkit, verification
from tests.conftest import REPO
from tests.verifier_states import copy_state, edit, failed, verdict

LIGHTGCN = "lightgcn_sigir20"
LIGHTGCN_GPU = ["gpu_listed", "gpu_used", "tensorflow_sees_gpu"]


def cpu(task_id, folder):
    return verification.cpu_judgment(verdict(task_id, folder), verification.load_checks(task_id))


def test_a_real_cpu_run_fails_the_normal_verdict_and_passes_only_the_cpu_judgment(tmp_path):
    state = copy_state(LIGHTGCN, "shallow", tmp_path / "cpu_run")
    normal = verdict(LIGHTGCN, state)
    assert normal["passed"] is False
    assert failed(normal["layer2"]["checks"]) == LIGHTGCN_GPU
    judgment = cpu(LIGHTGCN, state)
    assert judgment["passed"] is True, judgment["problems"]
    assert sorted(judgment["left_out"]) == LIGHTGCN_GPU
    assert judgment["cpu_only"] is True and "not a full validation" in judgment["note"]


def test_the_cpu_judgment_still_fails_what_did_not_run_or_learn(tmp_path):
    assert (
        cpu(LIGHTGCN, copy_state(LIGHTGCN, "untouched", tmp_path / "untouched"))["passed"] is False
    )
    unlearned = copy_state(LIGHTGCN, "shallow", tmp_path / "unlearned")
    edit(unlearned / "train_output.txt", "recall=[0.9", "recall=[0.0")
    judgment = cpu(LIGHTGCN, unlearned)
    assert judgment["passed"] is False
    assert any(p.startswith("test_recall_at_epoch_20:") for p in judgment["problems"])


def test_the_cpu_judgment_fails_layer1_a_timeout_and_an_experiment_that_did_not_run(tmp_path):
    state = copy_state(LIGHTGCN, "shallow", tmp_path / "crash")
    (state / "03_more.log").write_text("Traceback (most recent call last):\n")
    assert cpu(LIGHTGCN, state)["passed"] is False
    spec = verification.load_checks(LIGHTGCN)
    shallow = copy_state(LIGHTGCN, "shallow", tmp_path / "late")
    late = verification.verdict_from_logs(shallow, 1.0, spec, timed_out=True)
    assert verification.cpu_judgment(late, spec)["passed"] is False
    assert verification.cpu_judgment(verdict(LIGHTGCN, shallow), spec, timed_out=True)[
        "problems"
    ] == ["the verifier did not finish within its budget"]
    not_run = verification.verdict_from_logs(tmp_path / "late", 1.0, None)
    assert verification.cpu_judgment(not_run, spec)["passed"] is False


def test_gpu_evidence_is_data_in_checks_yaml_checked_by_its_schema(tmp_path):
    assert checks.is_gpu_evidence({"name": "x", "kind": "gpu_used", "file": "a"})
    assert checks.is_gpu_evidence({"name": "x", "kind": "contains", "file": "a", "gpu": True})
    assert not checks.is_gpu_evidence({"name": "gpu_listed", "kind": "contains", "file": "a"})
    spec = tmp_path / "checks.yaml"
    spec.write_text(
        "checks:\n  - {name: gpu_listed, kind: contains, file: a, pattern: x, gpu: false}\n"
    )
    with pytest.raises(DeployBenchError, match="gpu"):
        checks.load(spec)
    spec.write_text("checks:\n  - {name: a, kind: exists, file: a, gpu: yes-please}\n")
    with pytest.raises(DeployBenchError):
        checks.load(spec)
    # Both GPU tasks given a CPU validation mark their GPU checks, and keep others to judge.
    for task_id, gpu in [
        (LIGHTGCN, LIGHTGCN_GPU),
        ("hyena_icml23", ["cuda_available", "gpu_listed", "gpu_used", "lightning_used_gpu"]),
    ]:
        spec = verification.load_checks(task_id)
        assert sorted(c["name"] for c in spec if checks.is_gpu_evidence(c)) == gpu
        assert len(spec) - len(gpu) >= 5


def test_a_task_without_marked_gpu_checks_cannot_pass_a_cpu_judgment(tmp_path):
    state = copy_state(LIGHTGCN, "shallow", tmp_path / "s")
    spec = [
        {k: v for k, v in c.items() if k != "gpu"}
        for c in verification.load_checks(LIGHTGCN)
        if c["kind"] != "gpu_used"
    ]
    judgment = verification.cpu_judgment(verification.verdict_from_logs(state, 1.0, spec), spec)
    assert judgment["passed"] is False
    assert judgment["left_out"] == []


def test_only_the_cpu_validation_gets_cpu_only_1_and_hyena_then_asks_for_the_cpu(tmp_path):
    assert "\nCPU_ONLY=0\n" in verification.machine_script("hyena_icml23")
    script = verification.machine_script("hyena_icml23", cpu_only=True)
    assert "\nCPU_ONLY=1\n" in script
    bb = toolkit.busybox()
    for cpu_only, device in [(False, "gpu"), (True, "cpu")]:
        root = tmp_path / device
        logs, scratch, tools, workdir = (root / n for n in ("logs", "scratch", "tools", "w"))
        for folder in (logs, scratch, tools, workdir):
            folder.mkdir(parents=True)
        (tools / "sh").symlink_to(bb)
        (tools / "busybox").symlink_to(bb)
        (tools / "x.sh").write_text(verification.machine_script("hyena_icml23", cpu_only=cpu_only))
        env = {
            "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
            "WORKDIR": str(workdir),
            "LOG_DIR": str(logs),
            "SCRATCH": str(scratch),
            "TOOLS": str(tools),
            "CPU_ONLY": "1",  # from the machine's environment: never heeded
        }
        subprocess.run([bb, "sh", tools / "x.sh"], env=env, capture_output=True, timeout=120)
        log = (logs / "02_experiment.log").read_text()
        assert f"trainer.accelerator={device} wandb=null" in log


def _cpu_record_attempt(tmp_path, state="shallow"):
    run_dir = tmp_path / f"run-{state}"
    attempt = runfolder.attempt_dir(run_dir, LIGHTGCN, "reference", 1)
    attempt.mkdir(parents=True)
    judged = cpu(LIGHTGCN, copy_state(LIGHTGCN, state, tmp_path / f"logs-{state}"))
    runfolder.write_cpu_judgment(attempt, judged)
    row = {
        "run_id": "run",
        "task_id": LIGHTGCN,
        "agent": "reference",
        "attempt": 1,
        "backend": "local",
        "status": "completed",
        "passed": False,
        "failure_layer": 2,
        "failure_category": "task_check",
        "runbook_status": "SUCCESS",
        "stop_type": "self_stop",
        "agent_seconds": 1.0,
        "verify_seconds": 1.0,
        "finished_at": "2026-12-02T03:00:00Z",
    }
    return run_dir, row


def _tasks_copy(tmp_path, monkeypatch):
    tasks = tmp_path / "tasks"
    (tasks / LIGHTGCN).mkdir(parents=True)
    shutil.copy(REPO / "tasks" / "schema.json", tasks / "schema.json")
    shutil.copy(REPO / "tasks" / LIGHTGCN / "task.yaml", tasks / LIGHTGCN / "task.yaml")
    # Its reference setup and verifier beside it, as in the checkout (tasks validate wants both).
    for part in ("reference_setups", "verifiers"):
        (tmp_path / part).mkdir()
        (tmp_path / part / LIGHTGCN).symlink_to(REPO / part / LIGHTGCN)
    monkeypatch.setattr(run_cmd, "TASKS_DIR", tasks)
    return tasks / LIGHTGCN / "task.yaml"


def test_validate_references_cpu_only_records_a_plain_cpu_validation(tmp_path, monkeypatch):
    task = _tasks_copy(tmp_path, monkeypatch)
    run_dir, row = _cpu_record_attempt(tmp_path)
    # The run is the pipeline's (tested in test_run_pipeline.py); here what is recorded of it.
    monkeypatch.setattr(run_cmd, "execute", lambda *a, **k: (run_dir, [row]))
    result = CliRunner().invoke(run_cmd.validate_references, ["--tasks", LIGHTGCN, "--cpu-only"])
    assert result.exit_code == 0, result.output
    assert "validated on the CPU only" in result.output
    record = yaml.safe_load(task.read_text())["validated"]
    assert record["cpu_only"] is True and sorted(record["left_out"]) == LIGHTGCN_GPU
    assert "not a full validation" in task.read_text()
    assert catalog.validate_all(task.parent.parent, [task]) == []
    # The same outcome without --cpu-only is a failure and records nothing.
    task.write_text(task.read_text().replace("cpu_only: true", "cpu_only: true  # kept"))
    before = task.read_text()
    result = CliRunner().invoke(run_cmd.validate_references, ["--tasks", LIGHTGCN])
    assert result.exit_code != 0 and "NOT validated" in result.output
    assert task.read_text() == before


def test_a_failed_cpu_judgment_records_nothing_and_a_full_record_is_kept(tmp_path, monkeypatch):
    task = _tasks_copy(tmp_path, monkeypatch)
    run_dir, row = _cpu_record_attempt(tmp_path, "untouched")
    monkeypatch.setattr(run_cmd, "execute", lambda *a, **k: (run_dir, [row]))
    before = task.read_text()
    result = CliRunner().invoke(run_cmd.validate_references, ["--tasks", LIGHTGCN, "--cpu-only"])
    assert result.exit_code != 0 and "NOT validated on the CPU" in result.output
    assert task.read_text() == before
    full = {**row, "run_id": "full", "passed": True}
    run_cmd.record_validated(task, full, "ubuntu2204")
    before = task.read_text()
    run_dir, row = _cpu_record_attempt(tmp_path)
    result = CliRunner().invoke(run_cmd.validate_references, ["--tasks", LIGHTGCN, "--cpu-only"])
    assert result.exit_code == 0 and "full validation is kept" in result.output
    assert task.read_text() == before


def test_cpu_only_refuses_a_task_that_is_not_a_gpu_task(tmp_path, monkeypatch):
    monkeypatch.setenv("DEPLOYBENCH_HOME", str(tmp_path))
    with pytest.raises(DeployBenchError, match="not one"):
        run_cmd.execute(run_cmd.RunRequest(agent="nop", tasks="legacycalc_demo24", cpu_only=True))


def test_the_schema_refuses_a_cpu_record_without_what_it_left_out():
    task = yaml.safe_load((REPO / "tasks" / LIGHTGCN / "task.yaml").read_text())
    base = {"at": "2026-12-02T03:00:00Z", "backend": "local", "image": "d", "run_id": "r"}
    for bad in ({**base, "cpu_only": True}, {**base, "left_out": ["gpu_used"]}):
        problems = catalog.schema_problems({**task, "validated": bad}, "t", catalog.schema())
        assert problems, bad
    good = {**base, "cpu_only": True, "left_out": ["gpu_used"]}
    assert catalog.schema_problems({**task, "validated": good}, "t", catalog.schema()) == []
    assert json.loads(json.dumps(good)) == good


def _judged_attempt(run_dir: Path, state: str, tmp_path: Path) -> Path:
    """An attempt folder of lightgcn (a GPU task) judged from a recorded real CPU run's logs."""
    folder = runfolder.attempt_dir(run_dir, LIGHTGCN, "reference", 1)
    folder.mkdir(parents=True)
    logs = copy_state(LIGHTGCN, state, tmp_path / state)
    runfolder.write_verdict(folder, verdict(LIGHTGCN, logs))
    runfolder.write_verify(folder, runfolder.Verify(verifier_rc=0, seconds=1.0, timed_out=False))
    return folder


def test_under_cpu_only_a_failed_attempt_is_kept_by_the_judgment_the_run_scored(
    state_home, tmp_path
):
    run_dir = tmp_path / "runs" / "cpu"
    # lightgcn's recorded `shallow` state: a real CPU run that fails the normal verdict (its GPU
    # evidence) and passes the CPU judgment; `untouched` fails both.
    passing = _judged_attempt(run_dir, "shallow", tmp_path)
    attempt = Attempt(LIGHTGCN, "reference", 1)

    def runner(cpu_only: bool) -> Runner:
        options = RunOptions(
            run_dir=run_dir, backend=get_backend("local"), tasks={}, agents=[],
            cpu_only=cpu_only, keep_failed=1,
        )  # fmt: skip
        return Runner(options)

    assert runfolder.read_verdict(passing)["passed"] is False
    # A normal run scores the normal verdict: failed, so its machine may be kept.
    assert runner(cpu_only=False)._keeps(attempt, passing) is True
    # A CPU run scores the CPU judgment: passed, so its machine is destroyed like any pass.
    assert runner(cpu_only=True)._keeps(attempt, passing) is False
    shutil.rmtree(passing)
    failing = _judged_attempt(run_dir, "untouched", tmp_path)
    assert runner(cpu_only=True)._keeps(attempt, failing) is True
    # No slot left, nothing kept.
    cpu_run = runner(cpu_only=True)
    assert cpu_run._keeps(attempt, failing) is True
    assert cpu_run._keeps(attempt, failing) is False
