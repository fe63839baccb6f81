"""The fakes of group c5-sys37 (tests/fakes_c5_sys37.py) that no check stops yet, played against
the real machine side: each must still pass, so the day a verifier stops one this test fails and
the case moves to that module's CASES (played by tests/test_verifier_fakes.py). The fakes that
fail are played there, not here."""

import pytest

from tests.fakes_c5_sys37 import STILL_PASSING
from tests.verifier_states import run_experiment


@pytest.mark.parametrize(("task_id", "fake"), sorted(STILL_PASSING))
def test_a_fake_that_still_passes(task_id, fake, tmp_path):
    workdir = STILL_PASSING[(task_id, fake)](tmp_path)
    verdict = run_experiment(task_id, workdir, tmp_path / "logs", seconds=240)
    assert verdict["passed"] is True, [
        c["name"] for c in verdict["layer2"]["checks"] if not c["passed"]
    ]
