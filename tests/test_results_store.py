import json

import pytest

from deploybench.errors import DeployBenchError
from deploybench.runfolder import ResultsStore

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


def test_the_report_reads_a_cut_off_line_as_the_store_does(tmp_path):
    """One reading of a half-written last line everywhere: the store and the report's reader
    (through deploybench.runfolder) both leave it out, and the report says so."""
    from deploybench.analysis.load import read_results

    store = ResultsStore(tmp_path)
    store.append(ROW)
    with open(store.path, "a") as f:
        f.write(json.dumps({**ROW, "attempt": 2})[:40])
    notes: list[str] = []
    assert [r["attempt"] for r in read_results(tmp_path, notes)] == [1]
    assert notes and "cut off" in notes[0]
    assert [r["attempt"] for r in store.load()] == [1]


def test_a_complete_last_line_without_its_newline_is_kept(tmp_path):
    store = ResultsStore(tmp_path)
    store.append(ROW)
    with open(store.path, "a") as f:
        f.write(json.dumps({**ROW, "attempt": 2}))  # cut just before the newline
    assert [r["attempt"] for r in store.load()] == [1, 2]
    store.append({**ROW, "attempt": 3})
    assert [r["attempt"] for r in store.load()] == [1, 2, 3]
