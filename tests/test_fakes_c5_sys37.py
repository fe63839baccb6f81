"""The fakes of group c5-sys37 (tests/fakes_c5_sys37.py) that no check stops yet, played against
the real machine side: each must still pass, so the day a verifier stops one this test fails and
the case moves to that module's CASES (played by tests/test_verifier_fakes.py). The fakes that
fail are played there, not here. None is left: the last, polyjuice_osdi21's echo, is stopped
since its verifier draws the scale factor from a bank (the loaded order lines) and looks for
source strings in the binary."""

from tests.fakes_c5_sys37 import CASES, STILL_PASSING
from tests.verifier_states import run_experiment


def test_the_fakes_that_still_pass_still_pass(tmp_path):
    # Played one after the other (a parametrized test over an empty set would be skipped).
    for n, ((task_id, fake), build) in enumerate(sorted(STILL_PASSING.items())):
        workdir = build(tmp_path / f"f{n}")
        verdict = run_experiment(task_id, workdir, tmp_path / f"f{n}" / "logs", seconds=240)
        assert verdict["passed"] is True, (task_id, fake)


def test_the_polyjuice_echo_moved_to_the_failing_fakes():
    assert ("polyjuice_osdi21", "echo") not in STILL_PASSING
    build, variant = CASES[("polyjuice_osdi21", "echo")]
    assert variant["inputs"] == {"scale_factor": 3}
