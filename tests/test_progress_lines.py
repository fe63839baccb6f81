"""The line `deploybench run` prints as each attempt ends (the demo test sees it in a real run)."""

from deploybench import contracts
from deploybench.runner import finished_line


def row(**fields):
    return {
        **dict.fromkeys(contracts.RESULT["required"]),
        "task_id": "t",
        "agent": "a",
        "attempt": 2,
        **fields,
    }


def test_a_pass_a_fail_and_an_infra_error_each_read_as_one_line():
    passed = row(status="completed", passed=True, agent_seconds=61.4, verify_seconds=9.6)
    assert finished_line(passed) == "t a #2: PASS; agent 61 s, verifier 10 s"
    failed = row(
        status="completed",
        passed=False,
        failure_layer=1,
        failure_category="dependency",
        agent_seconds=1.0,
    )
    assert finished_line(failed) == "t a #2: FAIL at layer 1 (dependency); agent 1 s"
    infra = finished_line(row(status="infra_error"))
    assert infra.startswith("t a #2: infrastructure error") and "\n" not in infra
