"""validate-references: a pass is recorded in task.yaml, a failure leaves it as it was."""

import shutil

import pytest
import yaml
from click.testing import CliRunner

from deploybench.commands import run as run_cmd
from tests.conftest import REPO

ROW = {
    "run_id": "r1",
    "task_id": "legacycalc_demo24",
    "agent": "reference",
    "model": None,
    "backend": "local",
    "attempt": 1,
    "status": "completed",
    "stop_type": "self_stop",
    "runbook_status": "SUCCESS",
    "passed": True,
    "failure_layer": None,
    "failure_category": None,
    "agent_seconds": 1.0,
    "verify_seconds": 1.0,
    "steps": 3,
    "tokens_in": None,
    "tokens_out": None,
    "cost_usd": None,
    "started_at": "2026-01-01T00:00:00Z",
    "finished_at": "2026-01-01T00:01:00Z",
}


def test_record_validated_rewrites_only_that_entry(tmp_path):
    path = tmp_path / "task.yaml"
    shutil.copy(REPO / "tasks/legacycalc_demo24/task.yaml", path)
    before = yaml.safe_load(path.read_text())
    run_cmd.record_validated(path, ROW, "debian12")
    after = yaml.safe_load(path.read_text())
    assert after["validated"] == {
        "at": "2026-01-01T00:01:00Z",
        "backend": "local",
        "image": "debian12",
        "run_id": "r1",
    }
    assert {k: v for k, v in after.items() if k != "validated"} == {
        k: v for k, v in before.items() if k != "validated"
    }


@pytest.mark.parametrize(
    "row",
    [
        {**ROW, "passed": False, "failure_layer": 2, "failure_category": "task_check"},
        {**ROW, "status": "infra_error", "passed": None},
    ],
)
def test_a_failure_leaves_the_record_and_says_why(tmp_path, monkeypatch, row):
    monkeypatch.setattr(run_cmd, "TASKS_DIR", tmp_path)
    (tmp_path / "legacycalc_demo24").mkdir()
    task = tmp_path / "legacycalc_demo24" / "task.yaml"
    shutil.copy(REPO / "tasks/legacycalc_demo24/task.yaml", task)
    original = task.read_text()
    # The run itself is the pipeline's (tested for real in test_run_pipeline.py); here only
    # what validate-references does with its outcome.
    monkeypatch.setattr(run_cmd, "execute", lambda *a, **k: (tmp_path / "run", [row]))
    result = CliRunner().invoke(run_cmd.validate_references, ["--tasks", "legacycalc_demo24"])
    assert result.exit_code != 0
    assert "NOT validated" in result.output
    assert ("task_check" in result.output) or ("infrastructure error" in result.output)
    assert task.read_text() == original
