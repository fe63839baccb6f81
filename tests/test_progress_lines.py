"""The line `deploybench run` prints as each attempt ends (the demo test sees it in a real run)."""

import threading
import time

from deploybench import contracts
from deploybench.backends import local
from deploybench.backends.base import MachineRequest
from deploybench.run.runner import finished_line


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


def test_parallel_workers_show_one_base_image_build(monkeypatch, capsys):
    """Two workers of one run that both find the image missing print one build line between
    them: the second waits for the first's build and then finds the image there."""
    built = threading.Event()
    builds = []

    def build(name, on_line=None):
        builds.append(name)
        time.sleep(0.3)
        built.set()

    monkeypatch.setattr(local.images, "is_built", lambda name: built.is_set())
    monkeypatch.setattr(local.images, "ensure_image", build)
    backend = local.LocalBackend()
    request = MachineRequest(run_id="r", count=1, image="debian12")
    workers = [
        threading.Thread(target=backend.before_apply, args=(request, None)) for _ in range(2)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert builds == ["debian12"]
    assert capsys.readouterr().err.count("building the debian12 base image") == 1
