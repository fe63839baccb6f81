"""Verifiers of the AI/ML tasks of issue [C2] given to the "legacy" helper: lightgcn_sigir20 (its
states recorded from real CPU runs here, the GPU evidence of its pass state hand-made),
maml_icml17_gpu, gan_neurips14_cpu, gan_neurips14_gpu, dml_cvpr18, simclr_icml20 and
pointnet2_neurips17 (pass states HAND-MADE from the repositories' output formats: none can run
here). Their checks are judged on recorded final states (tests/fixtures/verifier_states/<id>/
<state>/, each with a README.md saying how it was made), on cheats made from the pass states, and
the reference roles' shape and syntax."""

import pytest
import yaml

from deploybench.catalog import checks
from tests.conftest import REPO
from tests.verifier_states import (
    STATES,
    copy_state,
    edit,
    failed,
    judged,
)

TASKS = [
    "lightgcn_sigir20",
    "maml_icml17_gpu",
    "gan_neurips14_cpu",
    "gan_neurips14_gpu",
    "pointnet2_neurips17",
    "dml_cvpr18",
    "simclr_icml20",
]
GPU_TASKS = [t for t in TASKS if t != "gan_neurips14_cpu"]

# What each shallow state fails on, exactly.
SHALLOW_FAILS = {
    # A real CPU run here: it trained and learned, on the wrong device.
    "lightgcn_sigir20": ["gpu_listed", "gpu_used", "tensorflow_sees_gpu"],
    # Hand-made: the same run with a CPU-only TensorFlow.
    "maml_icml17_gpu": ["gpu_listed", "gpu_used", "tensorflow_sees_gpu"],
    # Hand-made: a Python 3 environment whose imports work; the Python 2 code does not load.
    "gan_neurips14_cpu": [
        "batches_seen",
        "examples_seen",
        "model_saved",
        "one_epoch_seen",
        "python_2",
        "train_exit_code",
        "valid_objective_finite",
    ],
    # Hand-made: the CPU variant's run (device=cpu), on the GPU task.
    "gan_neurips14_gpu": ["gpu_listed", "gpu_used", "theano_on_gpu"],
    # Hand-made: imports work on a CPU-only TensorFlow; the GPU-only ops never built, no epoch.
    "pointnet2_neurips17": [
        "epoch_started",
        "eval_accuracy",
        "eval_avg_class_acc",
        "evaluated",
        "gpu_listed",
        "gpu_used",
        "model_saved",
        "tensorflow_sees_gpu",
        "train_accuracy",
        "train_exit_code",
        "train_mean_loss",
    ],
    # Hand-made: the same run with a CPU-only TensorFlow.
    "dml_cvpr18": ["gpu_listed", "gpu_used", "tensorflow_sees_gpu"],
    # Hand-made: the same run with a CPU-only TensorFlow.
    "simclr_icml20": ["gpu_listed", "gpu_used", "tensorflow_sees_gpu"],
}


@pytest.mark.parametrize("task_id", TASKS)
def test_pass_state_says_it_is_hand_made(task_id):
    # Every pass state here is wholly or partly made by hand, and says so.
    assert "HAND-MADE" in (STATES / task_id / "pass" / "README.md").read_text().upper()


@pytest.mark.parametrize("task_id", TASKS)
def test_untouched_state_fails_on_the_environment(task_id):
    assert "environment" in failed(judged(task_id, STATES / task_id / "untouched"))


@pytest.mark.parametrize("task_id", TASKS)
def test_shallow_state_fails_on_exactly_its_missing_parts(task_id):
    assert failed(judged(task_id, STATES / task_id / "shallow")) == SHALLOW_FAILS[task_id]


# A verifier cut down to "the experiment's entry point ran": the environment answered.
ENTRY_POINT_RAN = {"name": "entry_point", "kind": "value", "pattern": r"^(\d+)$", "equals": 0}
WEAKENED = ["lightgcn_sigir20", "maml_icml17_gpu", "gan_neurips14_cpu"]


@pytest.mark.parametrize("task_id", WEAKENED)
def test_checks_weakened_to_the_entry_point_pass_the_shallow_state(task_id):
    weak = [{**ENTRY_POINT_RAN, "file": "environment.rc"}]
    assert all(r["passed"] for r in checks.judge_all(weak, STATES / task_id / "shallow"))
    assert all(r["passed"] for r in checks.judge_all(weak, STATES / task_id / "pass"))


def test_lightgcn_judges_learning_on_the_hidden_data(tmp_path):
    # A run that never learned (recall of a random scorer, ~0.07), one on another dataset than
    # the hidden one, one with the Python evaluator instead of the built C++ one, and one whose
    # result file is missing each fail alone.
    untrained = copy_state("lightgcn_sigir20", "pass", tmp_path / "untrained")
    edit(untrained / "train_output.txt", "recall=[0.90125]", "recall=[0.06875]")
    assert failed(judged("lightgcn_sigir20", untrained)) == ["best_line", "test_recall_at_epoch_20"]
    other = copy_state("lightgcn_sigir20", "pass", tmp_path / "other")
    edit(other / "train_output.txt", "n_users=400, n_items=300", "n_users=29858, n_items=40981")
    assert failed(judged("lightgcn_sigir20", other)) == ["hidden_dataset_loaded"]
    python_eval = copy_state("lightgcn_sigir20", "pass", tmp_path / "python_eval")
    edit(python_eval / "train_output.txt", "foldout with cpp", "foldout with python")
    assert failed(judged("lightgcn_sigir20", python_eval)) == ["cpp_evaluator"]
    noresult = copy_state("lightgcn_sigir20", "pass", tmp_path / "noresult")
    (noresult / "result.txt").unlink()
    assert failed(judged("lightgcn_sigir20", noresult)) == ["result_written"]


def test_lightgcn_task_file_says_its_validation_here_was_a_cpu_one():
    task = yaml.safe_load((REPO / "tasks" / "lightgcn_sigir20" / "task.yaml").read_text())
    assert task["gpu"] is True
    assert task["runs_here"]["local"] == "with_changes"
    assert "GPU" in task["runs_here"]["why"] and "--cpu-only" in task["runs_here"]["why"]
    # Never mistaken for a full validation: the GPU checks it left out are named.
    assert task["validated"]["cpu_only"] is True
    assert set(task["validated"]["left_out"]) == {"tensorflow_sees_gpu", "gpu_listed", "gpu_used"}
    # The role uses the shipped train.txt when present; staging no longer demands it.
    assert "needed_files" not in task["repo"]
    main = (REPO / "reference_setups" / "lightgcn_sigir20" / "tasks" / "main.yml").read_text()
    assert "when: not lightgcn_sigir20_train.stat.exists" in main


def test_maml_gpu_judges_learning_and_the_checkpoint(tmp_path):
    # Post-update accuracy at 5-way chance, and a run stopped before its last checkpoint.
    chance = copy_state("maml_icml17_gpu", "pass", tmp_path / "chance")
    edit(chance / "train_output.txt", "Iteration 500: 0.20125, 0.93875", "Iteration 500: 0.2, 0.21")
    assert failed(judged("maml_icml17_gpu", chance)) == ["iteration_500_post_update_accuracy"]
    short = copy_state("maml_icml17_gpu", "pass", tmp_path / "short")
    edit(short / "checkpoints.txt", "model599.index", "model500.index")
    assert failed(judged("maml_icml17_gpu", short)) == ["checkpoint_written"]


def test_gan_judges_a_whole_epoch_and_a_finite_objective(tmp_path):
    # A run cut short (fewer batches than an epoch), a NaN objective and no pickle each fail alone.
    short = copy_state("gan_neurips14_cpu", "pass", tmp_path / "short")
    edit(short / "train_output.txt", "Batches seen: 500", "Batches seen: 50")
    assert failed(judged("gan_neurips14_cpu", short)) == ["batches_seen"]
    nan = copy_state("gan_neurips14_cpu", "pass", tmp_path / "nan")
    edit(nan / "train_output.txt", "valid_objective: 0.873361825943", "valid_objective: nan")
    assert failed(judged("gan_neurips14_cpu", nan)) == ["valid_objective_finite"]
    unsaved = copy_state("gan_neurips14_cpu", "pass", tmp_path / "unsaved")
    edit(unsaved / "saved.txt", " mnist.pkl", " mnist.pkl.tmp")
    assert failed(judged("gan_neurips14_cpu", unsaved)) == ["model_saved"]


def test_pointnet2_judges_the_evaluation_and_the_checkpoint(tmp_path):
    # Evaluation at 40-class chance and a checkpoint missing each fail alone.
    chance = copy_state("pointnet2_neurips17", "pass", tmp_path / "chance")
    edit(chance / "log_train.txt", "eval accuracy: 0.612034", "eval accuracy: 0.025000")
    assert failed(judged("pointnet2_neurips17", chance)) == ["eval_accuracy"]
    unsaved = copy_state("pointnet2_neurips17", "pass", tmp_path / "unsaved")
    edit(unsaved / "checkpoints.txt", "model.ckpt.index", "model.ckpt.tmp")
    assert failed(judged("pointnet2_neurips17", unsaved)) == ["model_saved"]


def test_dml_judges_the_losses_and_the_last_checkpoint(tmp_path):
    # A diverged loss and a run stopped before its last step each fail alone.
    nan = copy_state("dml_cvpr18", "pass", tmp_path / "nan")
    edit(nan / "train_output.txt", "step 50, net0_loss = 6.66", "step 50, net0_loss = nan")
    assert failed(judged("dml_cvpr18", nan)) == ["step_50_loss"]
    short = copy_state("dml_cvpr18", "pass", tmp_path / "short")
    edit(short / "checkpoints.txt", "model.ckpt-59.index", "model.ckpt-40.index")
    assert failed(judged("dml_cvpr18", short)) == ["checkpoint_last"]


def test_simclr_judges_the_evaluated_step_and_the_loss(tmp_path):
    # An evaluation of an earlier checkpoint and a diverged contrastive loss each fail alone.
    early = copy_state("simclr_icml20", "pass", tmp_path / "early")
    edit(early / "result_200.json", '"global_step": 200.0', '"global_step": 100.0')
    assert failed(judged("simclr_icml20", early)) == ["evaluated_step"]
    diverged = copy_state("simclr_icml20", "pass", tmp_path / "diverged")
    edit(diverged / "result.json", '"contrast_loss": 5.912845134735107', '"contrast_loss": NaN')
    assert failed(judged("simclr_icml20", diverged)) == ["contrast_loss"]


def test_non_validated_tasks_say_why_they_cannot_run_here():
    for task_id in TASKS[1:]:
        task = yaml.safe_load((REPO / "tasks" / task_id / "task.yaml").read_text())
        assert task["runs_here"]["local"] == "no", task_id
        if task_id in GPU_TASKS:
            assert task["gpu"] is True and "GPU" in task["runs_here"]["why"], task_id
