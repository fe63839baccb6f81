"""Verifiers of the systems tasks silo_sosp13, ward_osdi20 and eet_osdi24: their checks judged on
recorded final states (tests/fixtures/verifier_states/<id>/{pass,untouched,shallow}/, each with a
README saying how it was made). What every verifier and reference role must have is tested in
test_verifiers_all.py."""

import shutil

import pytest

from deploybench.catalog import checks
from deploybench.verify import verification
from tests.conftest import REPO

TASKS = ["silo_sosp13", "ward_osdi20", "eet_osdi24"]
STATES = REPO / "tests" / "fixtures" / "verifier_states"
FAILING = ["untouched", "shallow"]


def judged(task_id, state):
    folder = STATES / task_id / state
    assert (folder / "README.md").is_file(), f"{folder} says nowhere how it was made"
    return checks.judge_all(verification.load_checks(task_id), folder)


def passing_states(task_id):
    # "pass" and its variants (pass_*): real runs that must all pass, e.g. eet's two endings.
    return sorted(p.name for p in (STATES / task_id).glob("pass*"))


@pytest.mark.parametrize("task_id", TASKS)
def test_recorded_pass_states_pass(task_id):
    assert "pass" in passing_states(task_id)
    for state in passing_states(task_id):
        results = judged(task_id, state)
        assert all(r["passed"] for r in results), (state, [r for r in results if not r["passed"]])


@pytest.mark.parametrize("task_id", TASKS)
def test_checks_weakened_to_the_binary_exists_pass_a_failing_state(task_id):
    # The recorded states discriminate: were checks.yaml cut down to "the experiment collected
    # its binary facts", a failing state would pass and the test above would catch it.
    weak = [{"name": "binary_exists", "kind": "exists", "file": "binary.txt"}]
    assert any(
        all(r["passed"] for r in checks.judge_all(weak, STATES / task_id / s)) for s in FAILING
    )


@pytest.mark.parametrize("task_id", TASKS)
def test_the_pass_state_fails_when_a_number_is_out_of_range(task_id, tmp_path):
    # Each verifier judges the experiment's numbers, not only that it printed something: the
    # pass state with its figures replaced by zeros fails.
    src = STATES / task_id / "pass"
    for path in src.iterdir():
        text = path.read_text(errors="replace")
        if path.name.endswith((".rc", "binary.txt")):
            (tmp_path / path.name).write_text(text)
        else:
            (tmp_path / path.name).write_text("".join("0" if ch.isdigit() else ch for ch in text))
    results = checks.judge_all(verification.load_checks(task_id), tmp_path)
    assert not all(r["passed"] for r in results)


def test_ward_a_replayed_serial_log_or_a_qemu_of_the_agents_fails(tmp_path):
    # A log of another verification has another drawn marker; a qemu-system-x86_64 that is a
    # script (printing a recorded serial log) shows in what vouch says of it. Neither can be
    # played on this host (no QEMU; a fake one would go in the system's PATH), so the pass
    # state is edited.
    replay = tmp_path / "replay"
    shutil.copytree(STATES / "ward_osdi20" / "pass", replay)
    (replay / "marker.txt").write_text("marker: ward-verifier-42517\n")
    results = checks.judge_all(verification.load_checks("ward_osdi20"), replay)
    assert [r["name"] for r in results if not r["passed"]] == ["ran_verifier_command_line"]
    fake_qemu = tmp_path / "fake_qemu"
    shutil.copytree(STATES / "ward_osdi20" / "pass", fake_qemu)
    runtime = fake_qemu / "runtime.txt"
    runtime.write_text(
        runtime.read_text().replace(
            "-> /usr/bin/qemu-system-x86_64 dpkg qemu-system-x86",
            "-> /usr/local/bin/qemu-system-x86_64 script #!/bin/sh",
        )
    )
    results = checks.judge_all(verification.load_checks("ward_osdi20"), fake_qemu)
    assert sorted(r["name"] for r in results if not r["passed"]) == ["qemu_vouched"]
