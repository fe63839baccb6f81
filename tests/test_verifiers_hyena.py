"""The verifier of hyena_icml23 on its recorded states (tests/fixtures/verifier_states/
hyena_icml23/): the real CPU-validation run (`shallow`: trained for real, on the wrong device),
the real untouched machine, and a pass state made by hand from the CPU run plus GPU evidence
(its README says so)."""

from deploybench.catalog import checks
from deploybench.verify import verification
from tests.verifier_states import STATES, failed, judged, verdict

TASK = "hyena_icml23"
GPU_CHECKS = ["cuda_available", "gpu_listed", "gpu_used", "lightning_used_gpu"]


def test_the_real_cpu_run_fails_on_the_gpu_evidence_only():
    # Everything but the device holds in the real run: 10 epochs, accuracy, the checkpoint.
    assert failed(judged(TASK, STATES / TASK / "shallow")) == GPU_CHECKS
    assert verdict(TASK, STATES / TASK / "shallow")["passed"] is False


def test_the_real_cpu_run_passes_only_the_cpu_judgment():
    spec = verification.load_checks(TASK)
    run = verdict(TASK, STATES / TASK / "shallow")
    assert verification.cpu_judgment(run, spec)["passed"] is True
    assert (
        verification.cpu_judgment(verdict(TASK, STATES / TASK / "untouched"), spec)["passed"]
        is False
    )


def test_the_untouched_machine_fails_every_check():
    spec = verification.load_checks(TASK)
    assert failed(judged(TASK, STATES / TASK / "untouched")) == sorted(c["name"] for c in spec)


def test_checks_weakened_to_the_entry_point_exists_pass_the_shallow_state():
    weak = [{"name": "trained", "kind": "exists", "file": "train_output.txt"}]
    assert all(r["passed"] for r in checks.judge_all(weak, STATES / TASK / "shallow"))


def test_a_run_that_stopped_before_its_last_epoch_fails(tmp_path):
    import shutil

    state = shutil.copytree(STATES / TASK / "pass", tmp_path / "early")
    ckpt = state / "checkpoints.txt"
    ckpt.write_text(ckpt.read_text().replace("epoch=9-step=1250", "epoch=4-step=625"))
    assert failed(judged(TASK, state)) == ["final_checkpoint"]
