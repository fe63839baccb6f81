"""Verifiers of the AI/ML tasks timemixer_iclr24, maml_icml17_cpu and hyena_icml23: their checks
judged on recorded final states (tests/fixtures/verifier_states/<id>/<state>/, each with a README.md
saying how it was made), cheats made from the recorded pass states (what every verifier and
reference role must have is tested in test_verifiers_all.py)."""

import pytest

from deploybench.catalog import checks
from deploybench.verify import bank
from tests.verifier_states import STATES, copy_state, edit, failed, judged

TASKS = ["timemixer_iclr24", "maml_icml17_cpu"]


# What a verifier cut down to "the experiment's entry point ran" would still ask: the environment
# answered (its python exists and imports the framework).
ENTRY_POINT_RAN = {"name": "entry_point", "kind": "value", "pattern": r"^(\d+)$", "equals": 0}


@pytest.mark.parametrize("task_id", TASKS)
def test_checks_weakened_to_the_entry_point_pass_the_shallow_state(task_id):
    # The shallow states have a working environment: a verifier cut down to "it imports" would
    # pass them, and test_recorded_failing_states_fail would catch that.
    weak = [{**ENTRY_POINT_RAN, "file": "environment.rc"}]
    assert all(r["passed"] for r in checks.judge_all(weak, STATES / task_id / "shallow"))
    assert all(r["passed"] for r in checks.judge_all(weak, STATES / task_id / "pass"))


def test_maml_judges_adaptation_and_checkpoints(tmp_path):
    # A test pass whose loss after ten steps is an untrained network's (4.17 measured here), a
    # run that stopped before its last checkpoint, and a NaN loss each fail alone.
    untrained = copy_state("maml_icml17_cpu", "pass", tmp_path / "untrained")
    # csv.writer ends its rows with CRLF; the checks must read them as written.
    lines = (untrained / "test_losses.csv").read_bytes().decode().split("\r\n")
    means = lines[1].split(",")
    lines[1] = ",".join([*means[:10], "4.168385"])
    (untrained / "test_losses.csv").write_bytes("\r\n".join(lines).encode())
    assert failed(judged("maml_icml17_cpu", untrained)) == ["test_post_update_loss"]
    short = copy_state("maml_icml17_cpu", "pass", tmp_path / "short")
    edit(short / "checkpoints.txt", "model1999.", "model1000.")
    assert failed(judged("maml_icml17_cpu", short)) == [
        "checkpoint_data_written",
        "checkpoint_written",
    ]
    nan = copy_state("maml_icml17_cpu", "pass", tmp_path / "nan")
    text = (nan / "train_output.txt").read_text()
    line = next(x for x in text.splitlines() if x.startswith("Iteration 1000: "))
    edit(nan / "train_output.txt", line, line.rsplit(", ", 1)[0] + ", nan")
    assert failed(judged("maml_icml17_cpu", nan)) == ["iteration_1000_post_update_loss"]


# The pass state's own losses as a bank variant (a made-up pairing for the test: the state is an
# unseeded run of 2026-12-01, no bank's variant).
MAML_RECORDED = {
    "id": "vrecorded",
    "inputs": {"seed": 7},
    "expected": {
        "pre_update_loss": 3.8769026,
        "post_update_loss": 3.8122709,
        "test_pre_update_loss": 3.2464552,
        "test_post_update_loss": 2.9239242,
    },
    "spread": {},
}


def _with_bank(task_id, folder, variant):
    """The checks of the task's verdict that fail, its bank's variant checks with them."""
    spec = bank.spec_of(task_id)
    return failed(judged(task_id, folder) + bank.judge(spec, variant, folder))


def test_maml_pass_state_passes_against_a_bank_and_another_seeds_losses_fail(tmp_path):
    assert _with_bank("maml_icml17_cpu", STATES / "maml_icml17_cpu" / "pass", MAML_RECORDED) == []
    # A loss a thousandth off (another seed moves them by tenths) fails its variant check
    # alone: every range check still passes.
    off = copy_state("maml_icml17_cpu", "pass", tmp_path / "off")
    edit(off / "test_losses.csv", ",2.9239242", ",2.9268481")
    assert _with_bank("maml_icml17_cpu", off, MAML_RECORDED) == ["variant_test_post_update_loss"]
    moved = {**MAML_RECORDED, "expected": {**MAML_RECORDED["expected"], "pre_update_loss": 3.88}}
    maml_pass = STATES / "maml_icml17_cpu" / "pass"
    assert _with_bank("maml_icml17_cpu", maml_pass, moved) == ["variant_pre_update_loss"]


def test_maml_shallow_state_fails_on_the_unported_code():
    assert failed(judged("maml_icml17_cpu", STATES / "maml_icml17_cpu" / "shallow")) == [
        "checkpoint_data_written",
        "checkpoint_written",
        "iteration_1000_post_update_loss",
        "iteration_1000_pre_update_loss",
        "test_exit_code",
        "test_post_update_loss",
        "test_pre_update_loss",
        "train_exit_code",
        "training_started",
    ]


def test_timemixer_judges_the_run_of_this_nonce_and_its_error(tmp_path):
    # A diverged run (MSE above the series' variance), a train split of another size than
    # ETTh1's, and artifacts of an earlier run (no entry under this run's nonce) each fail alone.
    diverged = copy_state("timemixer_iclr24", "pass", tmp_path / "diverged")
    edit(diverged / "run_output.txt", "mse:0.0499", "mse:1.0499")
    assert failed(judged("timemixer_iclr24", diverged)) == ["test_mse"]
    small = copy_state("timemixer_iclr24", "pass", tmp_path / "small")
    edit(small / "run_output.txt", "train 8449", "train 849")
    assert failed(judged("timemixer_iclr24", small)) == ["train_split"]
    stale = copy_state("timemixer_iclr24", "pass", tmp_path / "stale")
    (stale / "result_entry.txt").write_text("")
    (stale / "artifacts.txt").write_text("")
    assert failed(judged("timemixer_iclr24", stale)) == [
        "checkpoint_written",
        "metrics_written",
        "result_entry",
    ]


def test_timemixer_shallow_state_fails_on_the_run():
    assert failed(judged("timemixer_iclr24", STATES / "timemixer_iclr24" / "shallow")) == [
        "checkpoint_written",
        "epoch_steps",
        "metrics_written",
        "result_entry",
        "run_exit_code",
        "test_mae",
        "test_mse",
        "train_loss",
        "train_split",
    ]


# The recorded pass state's own run as a bank variant: its real results (its README says how it
# was made), on the series the verifier wrote before the series was drawn per attempt (awk's
# fixed seed then, so no point of today's input space).
TIMEMIXER_RECORDED = {
    "id": "vrecorded",
    "inputs": {"data_seed": 424242},
    "expected": {
        "test_mse": 0.04993107542395592,
        "test_mae": 0.17700152099132538,
        "train_loss": 0.164458,
    },
    "spread": {},
}


def test_timemixer_pass_state_passes_its_variant_and_no_other(tmp_path):
    # Against its own run's results the pass state passes every check; the errors of another
    # series (here 0.2% off, twice the tolerance) fail each result alone, and a run that lands
    # within 0.05% of the bank's passes.
    state = STATES / "timemixer_iclr24" / "pass"
    assert _with_bank("timemixer_iclr24", state, TIMEMIXER_RECORDED) == []
    for name in ("test_mse", "test_mae", "train_loss"):
        expected = TIMEMIXER_RECORDED["expected"]
        off = {**TIMEMIXER_RECORDED, "expected": {**expected, name: expected[name] * 1.002}}
        assert _with_bank("timemixer_iclr24", state, off) == [f"variant_{name}"]
        near = {**TIMEMIXER_RECORDED, "expected": {**expected, name: expected[name] * 1.0005}}
        assert _with_bank("timemixer_iclr24", state, near) == []
    # Without its results (a run that printed none) each variant check fails.
    short = copy_state("timemixer_iclr24", "pass", tmp_path / "short")
    (short / "run_output.txt").write_text("train 8449\n")
    assert {"variant_test_mse", "variant_test_mae", "variant_train_loss"} <= set(
        _with_bank("timemixer_iclr24", short, TIMEMIXER_RECORDED)
    )
