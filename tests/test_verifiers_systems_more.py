"""Verifiers of more systems tasks (silt_sosp11): their checks judged on recorded final states
(tests/fixtures/verifier_states/<id>/{pass,untouched,shallow}/, each with a README saying how it was
made). What every verifier and reference role must have is tested in test_verifiers_all.py."""

import pytest

from deploybench.catalog import checks
from deploybench.verify import verification
from tests.conftest import REPO

TASKS = ["silt_sosp11"]
STATES = REPO / "tests" / "fixtures" / "verifier_states"
FAILING = ["untouched", "shallow"]


def judged(task_id, state):
    folder = STATES / task_id / state
    assert (folder / "README.md").is_file(), f"{folder} says nowhere how it was made"
    return checks.judge_all(verification.load_checks(task_id), folder)


def test_silt_failing_states_fail_on_the_expected_checks():
    failed = {s: {r["name"] for r in judged("silt_sosp11", s) if not r["passed"]} for s in FAILING}
    assert "binaries_built" in failed["untouched"]
    # The shallow state's binaries are ELF files that print a replayed log: the seed gives it away.
    assert "testcombi_seed" in failed["shallow"]


@pytest.mark.parametrize("task_id", TASKS)
def test_checks_weakened_to_the_binary_exists_pass_a_failing_state(task_id):
    # Were checks.yaml cut down to "the experiment collected its binary facts", the shallow
    # state would pass, so the real checks are what reject it.
    weak = [{"name": "binary_exists", "kind": "exists", "file": "binary.txt"}]
    assert all(r["passed"] for r in checks.judge_all(weak, STATES / task_id / "shallow"))


@pytest.mark.parametrize("task_id", TASKS)
def test_the_pass_state_fails_when_a_number_is_out_of_range(task_id, tmp_path):
    src = STATES / task_id / "pass"
    for path in src.iterdir():
        text = path.read_text(errors="replace")
        if path.name.endswith((".rc", "binary.txt", "seed.txt")):
            (tmp_path / path.name).write_text(text)
        else:
            (tmp_path / path.name).write_text("".join("0" if ch.isdigit() else ch for ch in text))
    results = checks.judge_all(verification.load_checks(task_id), tmp_path)
    assert not all(r["passed"] for r in results)
