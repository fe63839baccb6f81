"""Verifiers of the AI/ML (NLP and generative) GPU tasks of issue [C2] that cannot run here: their
checks judged on recorded final states (tests/fixtures/verifier_states/<id>/<state>/, each with a
README.md saying how it was made: the pass states are HAND-MADE from the repositories' output
formats, since none of these tasks can run on this machine), cheats made from the pass states (what
every verifier and reference role must have is tested in test_verifiers_all.py)."""

import json

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
    run_experiment,
)

TASKS = [
    "adalora_iclr23",
    "bertscore_iclr20",
    "clue_mm22",
    "ergo_coling22",
    "mixtext_acl20",
    "qlora_neurips23",
    "pixelreasoner_neurips25",
    "ldm_cvpr22",
]
GPU_CHECKS = ["cuda_available", "gpu_listed", "gpu_used"]
# What each shallow state (an env on the wrong device, or one that only imports) fails on.
SHALLOW_FAILS = {
    "adalora_iclr23": GPU_CHECKS,
    "bertscore_iclr20": GPU_CHECKS,
    # CLUE has no CPU path: the run dies on the first .cuda(gpu_id).
    "clue_mm22": sorted(
        [
            *GPU_CHECKS,
            "acc2",
            "acc2_nonzero",
            "acc7",
            "best_model_saved",
            "three_seeds_trained",
            "train_exit_code",
            "train_loss",
        ]
    ),
    "ergo_coling22": GPU_CHECKS,
    # MixText has no CPU path either: it reads the data, then dies at .cuda().
    "mixtext_acl20": sorted(
        [
            *GPU_CHECKS,
            "finished",
            "gpu_count",
            "test_acc",
            "train_exit_code",
            "train_loss",
            "val_acc",
        ]
    ),
    # 4-bit loading needs the GPU: everything after the imports fails.
    "qlora_neurips23": sorted(
        [
            *GPU_CHECKS,
            "adapter_alpha",
            "adapter_rank",
            "adapter_weights",
            "all_params",
            "completed",
            "last_step_loss",
            "loaded_model",
            "ten_steps",
            "train_exit_code",
            "train_loss",
            "trainable_params",
        ]
    ),
    # vLLM finds no CUDA device: the Ray job writes nothing.
    "pixelreasoner_neurips25": sorted(
        [
            *GPU_CHECKS,
            "benchmark",
            "eval_exit_code",
            "pass1",
            "questions_scored",
            "rollouts_written",
            "summary_line",
        ]
    ),
    # sample_diffusion.py calls model.cuda() before it samples anything.
    "ldm_cvpr22": sorted(
        [
            *GPU_CHECKS,
            "ddim_steps",
            "done",
            "first_png",
            "last_png",
            "npz_written",
            "sample_exit_code",
            "sampling_finished",
        ]
    ),
}


@pytest.mark.parametrize("task_id", TASKS)
def test_pass_state_says_it_is_hand_made(task_id):
    assert "Hand-made" in (STATES / task_id / "pass" / "README.md").read_text()


@pytest.mark.parametrize("task_id", TASKS)
def test_untouched_state_fails_on_the_environment_and_every_gpu_check(task_id):
    # Nothing ran (the untouched states are real runs of experiment.sh here).
    untouched = judged(task_id, STATES / task_id / "untouched")
    assert {"environment", *GPU_CHECKS} <= set(failed(untouched))


@pytest.mark.parametrize("task_id", TASKS)
def test_shallow_state_fails_on_exactly_its_missing_parts(task_id):
    assert failed(judged(task_id, STATES / task_id / "shallow")) == SHALLOW_FAILS[task_id]


# The entry point of each task's staged tree (tasks/<id>/task.yaml), for the untouched run below.
ENTRY = {
    "adalora_iclr23": "NLU/examples/text-classification/run_glue.py",
    "bertscore_iclr20": "bert_score_cli/score.py",
    "clue_mm22": "train.py",
    "ergo_coling22": "train.py",
    "mixtext_acl20": "code/train.py",
    "qlora_neurips23": "qlora.py",
    "pixelreasoner_neurips25": "curiosity_driven_rl/scripts/eval_vlm_new.sh",
    "ldm_cvpr22": "scripts/sample_diffusion.py",
}


@pytest.mark.parametrize("task_id", TASKS)
def test_experiment_runs_under_busybox_and_fails_an_untouched_tree(task_id, tmp_path):
    # The real experiment.sh, under the trusted busybox shell, against a staged tree with nothing
    # done (its entry point only; no env, no driver here): it finishes, and every check that
    # needs the environment or the GPU fails. RUNBOOK.MD is never read.
    experiment = (REPO / "verifiers" / task_id / "experiment.sh").read_text()
    assert "RUNBOOK" not in experiment.replace("RUNBOOK.MD is never read", "")
    workdir = tmp_path / "wd"
    (workdir / ENTRY[task_id]).parent.mkdir(parents=True)
    (workdir / ENTRY[task_id]).write_text("# staged entry point\n")
    (workdir / "RUNBOOK.MD").write_text("STATUS: SUCCESS\n")
    verdict = run_experiment(task_id, workdir, tmp_path / "logs", seconds=120)
    assert verdict["passed"] is False
    assert {"environment", *GPU_CHECKS} <= set(failed(verdict["layer2"]["checks"]))
    assert (tmp_path / "logs" / "environment.rc").read_text().strip() == "127"


# What a verifier cut down to "the experiment's entry point ran" would still ask: the environment
# answered (its python exists and imports the framework).
ENTRY_POINT_RAN = {"name": "entry_point", "kind": "value", "pattern": r"^(\d+)$", "equals": 0}


@pytest.mark.parametrize("task_id", TASKS)
def test_checks_weakened_to_the_entry_point_pass_the_shallow_state(task_id):
    weak = [{**ENTRY_POINT_RAN, "file": "environment.rc"}]
    assert all(r["passed"] for r in checks.judge_all(weak, STATES / task_id / "shallow"))
    assert all(r["passed"] for r in checks.judge_all(weak, STATES / task_id / "pass"))


def test_adalora_judges_lora_parameters_evaluation_and_rank_pattern(tmp_path):
    # Full fine-tuning (every DeBERTaV3-base weight trainable), an evaluation over a cut split, a
    # NaN loss and an empty rank pattern (the allocator never logged) each fail alone.
    full = copy_state("adalora_iclr23", "pass", tmp_path / "full")
    edit(full / "run_log.txt", "Parameters: 1331328", "Parameters: 184423682")
    assert failed(judged("adalora_iclr23", full)) == ["trainable_parameters"]
    cut = copy_state("adalora_iclr23", "pass", tmp_path / "cut")
    data = json.loads((cut / "eval_results.json").read_text())
    (cut / "eval_results.json").write_text(json.dumps({**data, "eval_samples": 100}))
    assert failed(judged("adalora_iclr23", cut)) == ["eval_samples"]
    nan = copy_state("adalora_iclr23", "pass", tmp_path / "nan")
    edit(nan / "train_output.txt", "{'loss': 0.5519", "{'loss': nan")
    assert failed(judged("adalora_iclr23", nan)) == ["train_loss"]
    empty = copy_state("adalora_iclr23", "pass", tmp_path / "empty")
    (empty / "rank_pattern.json").write_text("{}")
    assert failed(judged("adalora_iclr23", empty)) == ["rank_pattern_written"]


def test_bertscore_compares_with_the_repository_test_figures(tmp_path):
    # Another model (a different layer gives other scores), one score off in the fourth digit,
    # and a rescaled F1 far from the README's each fail alone.
    other = copy_state("bertscore_iclr20", "pass", tmp_path / "other")
    edit(other / "score_output.txt", "roberta-large_L17", "roberta-base_L10")
    assert failed(judged("bertscore_iclr20", other))[0] == "hash_code"
    off = copy_state("bertscore_iclr20", "pass", tmp_path / "off")
    edit(off / "score_output.txt", "0.973286", "0.973586")
    assert failed(judged("bertscore_iclr20", off)) == ["pair2_r"]
    rescaled = copy_state("bertscore_iclr20", "pass", tmp_path / "rescaled")
    edit(rescaled / "rescaled_output.txt", "F1: 0.759045", "F1: 0.959333")
    assert failed(judged("bertscore_iclr20", rescaled)) == ["example_rescaled_f1"]


def test_clue_judges_all_three_seeds_and_the_ood_accuracy(tmp_path):
    # A run cut after two seeds, an OOD accuracy worse than a coin, and a run whose split was not
    # the authors' (no MOSI/split_dataset_2 found) each fail alone.
    two = copy_state("clue_mm22", "pass", tmp_path / "two")
    text = (two / "train_output.txt").read_text()
    last = text.rindex("over_train!")
    (two / "train_output.txt").write_text(text[:last] + text[last + len("over_train!\n") :])
    assert failed(judged("clue_mm22", two)) == ["three_seeds_trained"]
    coin = copy_state("clue_mm22", "pass", tmp_path / "coin")
    edit(coin / "train_output.txt", "acc2: \n0.6861666666666667", "acc2: \n0.31")
    assert failed(judged("clue_mm22", coin)) == ["acc2"]
    nosplit = copy_state("clue_mm22", "pass", tmp_path / "nosplit")
    (nosplit / "split.txt").write_text("no MOSI/split_dataset_2/embedding_and_mapping.pt\n")
    assert failed(judged("clue_mm22", nosplit)) == ["split_found"]


def test_ergo_judges_the_folds_and_the_average(tmp_path):
    # A run of one fold only, a NaN training loss and an F1 out of range each fail alone.
    one = copy_state("ergo_coling22", "pass", tmp_path / "one")
    edit(one / "run_log.txt", " -   Fold 2\n", " -   Fold 1\n")
    assert failed(judged("ergo_coling22", one)) == ["second_fold"]
    nan = copy_state("ergo_coling22", "pass", tmp_path / "nan")
    edit(nan / "run_log.txt", "Train Loss 0.1398", "Train Loss nan")
    assert failed(judged("ergo_coling22", nan)) == ["train_loss"]
    big = copy_state("ergo_coling22", "pass", tmp_path / "big")
    edit(big / "run_log.txt", "F 0.3224 ---", "F 32.24 ---")
    assert failed(judged("ergo_coling22", big)) == ["avg_f1"]


def test_mixtext_judges_the_yahoo_split_and_the_accuracies(tmp_path):
    # Another dataset (a test set of another size), more labels than the command asks, and an
    # accuracy printed as a percentage each fail alone.
    other = copy_state("mixtext_acl20", "pass", tmp_path / "other")
    edit(other / "train_output.txt", ", Test 60000", ", Test 7600")
    assert failed(judged("mixtext_acl20", other)) == ["test_examples"]
    labels = copy_state("mixtext_acl20", "pass", tmp_path / "labels")
    edit(labels / "train_output.txt", "#Labeled: 100,", "#Labeled: 2000,")
    assert failed(judged("mixtext_acl20", labels)) == ["labeled_examples"]
    percent = copy_state("mixtext_acl20", "pass", tmp_path / "percent")
    edit(percent / "train_output.txt", "val acc 0.2316,", "val acc 23.16,")
    assert failed(judged("mixtext_acl20", percent)) == ["val_acc"]


def test_qlora_judges_the_lora_shape_and_the_steps(tmp_path):
    # LoRA on the attention only (the 4-bit count of r=64 on q,k,v,o: 33,554,432), a run that
    # stopped at step 5, and an adapter of another rank each fail alone.
    attention = copy_state("qlora_neurips23", "pass", tmp_path / "attention")
    edit(
        attention / "train_output.txt",
        "trainable params: 79953920.0",
        "trainable params: 33554432.0",
    )
    assert failed(judged("qlora_neurips23", attention)) == ["trainable_params"]
    short = copy_state("qlora_neurips23", "pass", tmp_path / "short")
    edit(short / "trainer_state.json", '"global_step": 10,', '"global_step": 5,')
    assert failed(judged("qlora_neurips23", short)) == ["ten_steps"]
    rank = copy_state("qlora_neurips23", "pass", tmp_path / "rank")
    edit(rank / "adapter_config.json", '"r": 64,', '"r": 8,')
    assert failed(judged("qlora_neurips23", rank)) == ["adapter_rank"]


def test_pixelreasoner_judges_the_slice_and_the_accuracy(tmp_path):
    # Metrics of the whole benchmark (not this run's slice), a V* that is not the benchmark's
    # 191 questions, and an accuracy far below the policy's each fail alone.
    whole = copy_state("pixelreasoner_neurips25", "pass", tmp_path / "whole")
    edit(whole / "metrics.json", '"ntotal": 32', '"ntotal": 191')
    assert failed(judged("pixelreasoner_neurips25", whole)) == ["questions_scored"]
    other = copy_state("pixelreasoner_neurips25", "pass", tmp_path / "other")
    edit(other / "slice.txt", "questions 191", "questions 40")
    assert failed(judged("pixelreasoner_neurips25", other)) == ["vstar_prepared"]
    weak = copy_state("pixelreasoner_neurips25", "pass", tmp_path / "weak")
    edit(weak / "metrics.json", '"pass1": 0.78125', '"pass1": 0.25')
    assert failed(judged("pixelreasoner_neurips25", weak)) == ["pass1"]


def test_ldm_judges_the_samples(tmp_path):
    # A black (NaN) sample, the count a reader of the README would expect instead of what run()
    # prints, and a batch of another resolution each fail alone.
    black = copy_state("ldm_cvpr22", "pass", tmp_path / "black")
    edit(black / "sample_files.txt", "118734 Dec", "   824 Dec")
    assert failed(judged("ldm_cvpr22", black)) == ["first_png"]
    four = copy_state("ldm_cvpr22", "pass", tmp_path / "four")
    edit(four / "sample_output.txt", "sampling of 3 images", "sampling of 4 images")
    assert failed(judged("ldm_cvpr22", four)) == ["sampling_finished"]
    small = copy_state("ldm_cvpr22", "pass", tmp_path / "small")
    edit(small / "sample_files.txt", "4x256x256x3-samples", "4x64x64x3-samples")
    assert failed(judged("ldm_cvpr22", small)) == ["npz_written"]


@pytest.mark.parametrize("task_id", TASKS)
def test_task_file_says_why_it_cannot_run_here(task_id):
    task = yaml.safe_load((REPO / "tasks" / task_id / "task.yaml").read_text())
    assert task["gpu"] is True
    assert task["runs_here"]["local"] == "no"
    assert "GPU" in task["runs_here"]["why"]
