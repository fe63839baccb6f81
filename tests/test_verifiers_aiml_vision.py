"""Verifiers of the GPU vision / robotics AI/ML tasks (yolov7, Grounding DINO, MMSegmentation,
cuda-convnet2, neural-style, equivariant grasping, Interaction Warping): their checks judged on
recorded final states (tests/fixtures/verifier_states/<id>/<state>/, each with a README.md saying
how it was made) and cheats made from the pass states (what every verifier and reference role
must have is tested in test_verifiers_all.py).

None of these tasks can run on this machine (no NVIDIA GPU; weights and data on hosts it cannot
reach), so every pass state is HAND-MADE from the repository's documented output format. The
untouched states, and yolov7's shallow state, are from real runs of experiment_lib.sh +
experiment.sh under busybox here; the other shallow states are hand-made."""

import pytest

from deploybench.catalog import checks
from deploybench.verify import verification
from tests.conftest import REPO
from tests.verifier_states import (
    FAILING,
    STATES,
    copy_state,
    edit,
    failed,
    judged,
    verdict,
)

TASKS = [
    "yolov7_cvpr23",
    "groundingdino_eccv24",
    "mmseg_github24",
    "alexnet_neurips12",
    "neuralstyle_cvpr16",
    "equigrasp_rss22",
    "interactionwarping_corl23",
]
# The tasks on which "checks weakened to the entry point exists" is tried: such a verifier would
# pass their shallow states, so the real checks are what rejects them.
WEAKENED_ON = {
    "yolov7_cvpr23": "detect_output.txt",
    "groundingdino_eccv24": "demo_output.txt",
    "mmseg_github24": "demo_output.txt",
}


@pytest.mark.parametrize("task_id", TASKS)
def test_pass_state_says_it_is_hand_made(task_id):
    assert "HAND-MADE" in (STATES / task_id / "pass" / "README.md").read_text()


@pytest.mark.parametrize("state", FAILING)
@pytest.mark.parametrize("task_id", TASKS)
def test_failing_states_fail_on_the_gpu(task_id, state):
    # Each fails for want of the GPU whatever else went wrong.
    assert "gpu_used" in failed(judged(task_id, STATES / task_id / state))


@pytest.mark.parametrize("task_id", sorted(WEAKENED_ON))
def test_checks_weakened_to_the_entry_point_pass_the_shallow_state(task_id):
    # "The experiment's entry point exists": its output file was collected. The shallow states
    # have that too, so a verifier cut down to it would pass them; the real checks fail them.
    weak = [{"name": "entry_point", "kind": "exists", "file": WEAKENED_ON[task_id]}]
    assert all(r["passed"] for r in checks.judge_all(weak, STATES / task_id / "shallow"))
    assert all(r["passed"] for r in checks.judge_all(weak, STATES / task_id / "pass"))
    assert failed(judged(task_id, STATES / task_id / "shallow"))


@pytest.mark.parametrize("task_id", TASKS)
def test_overclaim_runbook_changes_nothing(task_id, tmp_path):
    # The overclaim control: a RUNBOOK.MD that says SUCCESS beside an untouched machine's files.
    # The experiments never read it (only comments name it) and no check names it.
    state = copy_state(task_id, "untouched", tmp_path / "overclaim")
    (state / "RUNBOOK.MD").write_text("STATUS: SUCCESS\n\nEverything ran on the GPU.\n")
    assert verdict(task_id, state)["passed"] is False
    script = (REPO / "verifiers" / task_id / "experiment.sh").read_text()
    code = [x for x in script.splitlines() if not x.lstrip().startswith("#")]
    assert not [x for x in code if "RUNBOOK" in x]
    assert all("RUNBOOK" not in c["file"] for c in verification.load_checks(task_id))


@pytest.mark.parametrize("task_id", TASKS)
def test_cpu_fallback_fails_on_the_gpu_evidence(task_id, tmp_path):
    # The pass state with the GPU taken away: no nvidia-smi, no compute process (and, where the
    # framework reports it, torch without CUDA). Whatever the run printed, the GPU checks fail it.
    cpu = copy_state(task_id, "pass", tmp_path / "cpu")
    (cpu / "gpus.txt").write_text("")
    (cpu / "gpu_apps.txt").write_text("")
    expected = {"gpu_listed", "gpu_used"}
    if (cpu / "torch_device.txt").is_file():
        edit(cpu / "torch_device.txt", "cuda_available True", "cuda_available False")
        expected.add("cuda_available")
    assert expected <= set(failed(judged(task_id, cpu)))


def test_yolov7_judges_the_detections_of_this_run(tmp_path):
    # No horse found, boxes of another class only, and an annotated image of an earlier run
    # (another name) each fail alone; a run on the CPU (select_device's "CPU" line) fails too.
    none = copy_state("yolov7_cvpr23", "pass", tmp_path / "none")
    edit(none / "detect_output.txt", "5 horses, Done.", "Done.")
    assert failed(judged("yolov7_cvpr23", none)) == ["horses_counted"]
    other = copy_state("yolov7_cvpr23", "pass", tmp_path / "other")
    (other / "labels.txt").write_text(
        (other / "labels.txt").read_text().replace("17 0", "0 0").replace("\n17 ", "\n0 ")
    )
    assert failed(judged("yolov7_cvpr23", other)) == ["horse_boxes_written"]
    stale = copy_state("yolov7_cvpr23", "pass", tmp_path / "stale")
    edit(stale / "artifacts.txt", "./h3fa9c21b7e04.jpg", "./horses.jpg")
    assert failed(judged("yolov7_cvpr23", stale)) == ["annotated_image_written"]
    cpu = copy_state("yolov7_cvpr23", "pass", tmp_path / "cpu")
    edit(cpu / "detect_output.txt", "CUDA:0 (NVIDIA L4, 22478.5625MB)", "CPU")
    assert failed(judged("yolov7_cvpr23", cpu)) == ["detect_selected_cuda"]


def test_yolov7_shallow_state_fails_on_the_device():
    assert failed(judged("yolov7_cvpr23", STATES / "yolov7_cvpr23" / "shallow")) == [
        "annotated_image_written",
        "cuda_available",
        "detect_exit_code",
        "detect_selected_cuda",
        "gpu_listed",
        "gpu_used",
        "horse_boxes_written",
        "horses_counted",
    ]


def test_groundingdino_judges_the_op_and_both_objects(tmp_path):
    # The op's fallback warning, a run that grounded only the cat, a dog box below the box
    # threshold, and a model left on the CPU each fail alone.
    task = "groundingdino_eccv24"
    fallback = copy_state(task, "pass", tmp_path / "fallback")
    edit(
        fallback / "demo_output.txt",
        "final text_encoder_type",
        "UserWarning: Failed to load custom C++ ops. Running on CPU mode Only!\n"
        "final text_encoder_type",
    )
    assert failed(judged(task, fallback)) == ["demo_used_the_op"]
    cat_only = copy_state(task, "pass", tmp_path / "cat_only")
    edit(cat_only / "probe_output.txt", "box dog 0.846", "box cat 0.846")
    assert failed(judged(task, cat_only)) == ["dog_grounded"]
    weak = copy_state(task, "pass", tmp_path / "weak")
    edit(weak / "probe_output.txt", "box dog 0.846", "box dog 0.246")
    assert failed(judged(task, weak)) == ["dog_grounded"]
    cpu = copy_state(task, "pass", tmp_path / "cpu")
    edit(cpu / "probe_output.txt", "device cuda:0", "device cpu")
    assert failed(judged(task, cpu)) == ["model_on_gpu"]


def test_groundingdino_shallow_state_fails_on_the_device():
    task = "groundingdino_eccv24"
    assert failed(judged(task, STATES / task / "shallow")) == [
        "box_count",
        "cat_grounded",
        "cuda_available",
        "demo_exit_code",
        "demo_pred_image",
        "dog_grounded",
        "gpu_listed",
        "gpu_used",
        "model_on_gpu",
        "probe_exit_code",
    ]


def test_mmseg_judges_the_full_mmcv_and_the_segmentation(tmp_path):
    # mmcv-lite, a mask of another size than the image, a mask without road, and one that is a
    # single class each fail alone.
    task = "mmseg_github24"
    lite = copy_state(task, "pass", tmp_path / "lite")
    edit(lite / "probe_output.txt", "mmcv_ops loaded", "mmcv_ops missing ModuleNotFoundError")
    assert failed(judged(task, lite)) == ["full_mmcv"]
    small = copy_state(task, "pass", tmp_path / "small")
    edit(small / "probe_output.txt", "shape 1024 2048", "shape 512 1024")
    assert failed(judged(task, small)) == ["mask_covers_the_image"]
    no_road = copy_state(task, "pass", tmp_path / "no_road")
    edit(no_road / "probe_output.txt", "class road 0.3412\n", "")
    assert failed(judged(task, no_road)) == ["road_segmented"]
    flat = copy_state(task, "pass", tmp_path / "flat")
    text = (flat / "probe_output.txt").read_text()
    kept = [x for x in text.splitlines() if not x.startswith("class")]
    (flat / "probe_output.txt").write_text("\n".join([*kept, "class road 1.0000", "classes 1"]))
    assert failed(judged(task, flat)) == ["cars_segmented", "class_count", "road_segmented"]


def test_alexnet_judges_the_training_and_its_checkpoint(tmp_path):
    # A cost that blew up (convnet.py's own guard line), an epoch that stopped after its first
    # batch, and a checkpoint of another run's folder name each fail.
    task = "alexnet_neurips12"
    nan = copy_state(task, "pass", tmp_path / "nan")
    edit(
        nan / "train_output.txt",
        "1.4 (100.00%)... logprob:  1.968244, 0.595703 ",
        "1.4 (100.00%)... logprob:  nan, 0.900000 <- error nan or inf!",
    )
    assert failed(judged(task, nan)) == ["cost_finite", "last_batch_trained"]
    short = copy_state(task, "pass", tmp_path / "short")
    text = (short / "train_output.txt").read_text()
    (short / "train_output.txt").write_text(text.split("1.2 (50.00%)")[0])
    assert failed(judged(task, short)) == [
        "checkpoint_saved",
        "last_batch_trained",
        "test_output",
    ]
    other = copy_state(task, "pass", tmp_path / "other")
    edit(other / "checkpoints.txt", "./ConvNet__2026-12-01_21.06.11/1.4", "./1.4")
    assert failed(judged(task, other)) == ["checkpoint_file"]


def test_neuralstyle_judges_the_losses_and_the_image(tmp_path):
    # A NaN total loss, a run that stopped before its 50th iteration, and an image of the wrong
    # size (the content image's own 1024 px) each fail alone.
    task = "neuralstyle_cvpr16"
    nan = copy_state(task, "pass", tmp_path / "nan")
    text = (nan / "style_output.txt").read_text()
    last = text.rsplit("  Total loss: ", 1)
    (nan / "style_output.txt").write_text(last[0] + "  Total loss: nan\t\n")
    assert failed(judged(task, nan)) == ["total_loss"]
    short = copy_state(task, "pass", tmp_path / "short")
    text = (short / "style_output.txt").read_text()
    (short / "style_output.txt").write_text(text.split("Iteration 50 / 50")[0])
    assert failed(judged(task, short)) == ["last_iteration"]
    big = copy_state(task, "pass", tmp_path / "big")
    edit(big / "output_image.txt", "256 192", "1024 768")
    assert failed(judged(task, big)) == ["output_png"]


def test_equigrasp_judges_the_episodes_the_loss_and_the_logs(tmp_path):
    # A run that stopped at 59 episodes, a NaN loss at the end, and a run whose logger wrote no
    # checkpoint each fail.
    task = "equigrasp_rss22"
    short = copy_state(task, "pass", tmp_path / "short")
    text = (short / "train_output.txt").read_text()
    (short / "train_output.txt").write_text(text.rsplit("Steps:60;", 1)[0])
    assert failed(judged(task, short)) == ["sixty_episodes"]
    nan = copy_state(task, "pass", tmp_path / "nan")
    edit(nan / "train_output.txt", "Loss:0.028; Time", "Loss:nan; Time")
    assert failed(judged(task, nan)) == ["final_loss", "sixty_episodes"]
    nockpt = copy_state(task, "pass", tmp_path / "nockpt")
    text = (nockpt / "artifacts.txt").read_text()
    kept = [x for x in text.splitlines() if "/checkpoint/" not in x]
    (nockpt / "artifacts.txt").write_text("\n".join(kept) + "\n")
    assert failed(judged(task, nockpt)) == ["checkpoint_saved"]


def test_interactionwarping_judges_the_three_trials(tmp_path):
    # A run cut short after two trials (no third log line, record or result) and a success rate
    # out of range each fail.
    task = "interactionwarping_corl23"
    two = copy_state(task, "pass", tmp_path / "two")
    text = (two / "warp_output.txt").read_text()
    (two / "warp_output.txt").write_text(text.split("[INFO] Iteration: 2,")[0])
    for name in ("trials.txt", "results.txt"):
        kept = [x for x in (two / name).read_text().splitlines() if "trial_2" not in x]
        (two / name).write_text("\n".join(kept) + "\n")
    assert failed(judged(task, two)) == [
        "results_written",
        "trial_2_logged",
        "trial_image",
        "trial_records",
    ]
    odd = copy_state(task, "pass", tmp_path / "odd")
    edit(odd / "warp_output.txt", "Place Success: 0.667,", "Place Success: 1.667,")
    assert failed(judged(task, odd)) == ["place_success_rate"]
