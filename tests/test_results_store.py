import json

import pytest

from deploybench.errors import DeployBenchError
from deploybench.results import ResultsStore

ROW = {
    "run_id": "r",
    "task_id": "a_b",
    "agent": "nop",
    "model": None,
    "backend": "local",
    "attempt": 1,
    "status": "completed",
    "stop_type": "self_stop",
    "runbook_status": None,
    "passed": False,
    "failure_layer": 2,
    "failure_category": "task_check",
    "agent_seconds": 1.0,
    "verify_seconds": 2.0,
    "steps": 1,
    "tokens_in": None,
    "tokens_out": None,
    "cost_usd": None,
    "started_at": "t0",
    "finished_at": "t1",
}


def test_a_crash_mid_line_loses_only_that_line(tmp_path):
    store = ResultsStore(tmp_path)
    store.append(ROW)
    with open(store.path, "a") as f:
        f.write(json.dumps({**ROW, "attempt": 2})[:40])  # the crash
    assert [r["attempt"] for r in store.load()] == [1]
    store.append({**ROW, "attempt": 2})
    assert [r["attempt"] for r in store.load()] == [1, 2]
    assert store.finished() == {("a_b", "nop", 1), ("a_b", "nop", 2)}


def test_a_line_breaking_contract_3_is_refused(tmp_path):
    store = ResultsStore(tmp_path)
    with pytest.raises(DeployBenchError, match="status"):
        store.append({**ROW, "status": "done"})
    assert not store.path.exists()
