"""Fakes an attacker who has read verifiers/ would leave for the GPU tasks ergo_coling22,
groundingdino_eccv24, interactionwarping_corl23, ldm_cvpr22, maml_icml17_gpu, mixtext_acl20,
mmseg_github24, neuralstyle_cvpr16, pixelreasoner_neurips25 and simclr_icml20 (tests/fakes.py
builds them for real on this host), played against the real machine side (the shape of
tests/test_verifier_fakes.py). This host has no GPU, so every fake also fails the GPU checks:
the test asserts that a check which is NOT GPU evidence, and whose `defeats` names the fake,
fails. No bank can be made here (no GPU): these verifiers stop the fakes with the vouched
interpreter, the pinned sources and what only the real artifact collects.

Each fake prints exactly the lines and writes the files the checks parse:
- stub_interpreter: env/bin/python (th for neuralstyle) is a shell script;
- stub_binary: it is a tiny ELF launching that script;
- echo / constant: Debian's own python (dpkg-vouched, as the reference's venv has it) runs the
  task's entry script, rewritten to hand its arguments to a shell script that prints them back
  (echo) or the figures published in the paper or the recorded states (constant)."""

import os
from pathlib import Path

import pytest

from deploybench.catalog import checks as checks_mod
from deploybench.verify import verification
from tests.fakes import script, stub_elf, tree
from tests.test_verifier_fakes import defeats_of
from tests.verifier_states import run_experiment

REAL_PYTHON = Path(os.path.realpath("/usr/bin/python3"))  # Debian 12 here, as on the machines
ENTRY = """import subprocess
import sys

sys.exit(subprocess.call(["/bin/sh", {sh!r}] + sys.argv))
"""


def workdir_with(tmp_path, fake, body, entry=None, files=None, interpreter="env/bin/python"):
    """A workdir holding FILES, where BODY (a shell script: $1 is the script or flag python was
    given, the arguments follow) does the work: as the interpreter itself (stub_interpreter,
    stub_binary) or behind the rewritten ENTRY run by Debian's python (echo, constant)."""
    workdir = tree(tmp_path / "wd", files or {})
    if fake == "stub_interpreter":
        script(workdir / interpreter, body)
    elif fake == "stub_binary":
        stub_elf(workdir / interpreter, body)
    else:
        link = workdir / interpreter
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(REAL_PYTHON)
        sh = script(tmp_path / "fake_body.sh", body)
        (workdir / entry).parent.mkdir(parents=True, exist_ok=True)
        (workdir / entry).write_text(ENTRY.format(sh=str(sh)))
    return workdir


def prelude(probe):
    """The start of a body: python -c (the verifier's environment probe) prints PROBE; python
    -m MODULE or python SCRIPT is shifted off."""
    return f"""
case "$1" in
  -c) printf '%b\\n' "{probe}"; exit 0;;
  -m) shift 2;;
  *) shift;;
esac
"""


# --- ergo_coling22 -----------------------------------------------------------------------------

ERGO_PROBE = "3.11.2 torch 2.1.2 transformers 4.36.2\\ncuda_available True\\ndevice NVIDIA A10G"


def _ergo(fake, figure):
    """train.py's log.txt with both folds, the epoch-1 losses and the average; FIGURE is a
    shell expression for the recall, precision and F1 printed everywhere."""
    body = (
        prelude(ERGO_PROBE)
        + f"""
out=outputs; seed=1
while [ $# -gt 0 ]; do case "$1" in --output_dir) out=$2;; --seed) seed=$2;; esac; shift; done
mkdir -p "$out"; f={figure}
{{
for fold in 1 2; do
  echo "12/05/2026 10:00:00 - INFO - __main__ -   Fold $fold"
  echo "12/05/2026 10:01:00 - INFO - root -   Epoch1: Train Loss 0.14 R $f P $f F $f"
  echo "12/05/2026 10:01:20 - INFO - root -   Epoch1: Test Loss 0.12 R $f P $f F $f"
  echo "12/05/2026 10:01:40 - INFO - root -   Epoch1: Valid Loss 0.12 R $f P $f F $f"
done
echo "12/05/2026 10:02:00 - INFO - __main__ -   -------- 5-Fold Avg: R $f P $f F $f ---------"
}} > "$out/log.txt"
echo "Output full path $out"
"""
    )
    return body


def ergo(fake):
    # echo: the drawn fold-split seed read back as a figure; otherwise the recorded state's F1.
    figure = "0.$seed" if fake == "echo" else "0.3224"
    files = {"model.py": "", "processor.py": "", "utils.py": "", "train.py": ""}
    return lambda tmp_path: workdir_with(tmp_path, fake, _ergo(fake, figure), "train.py", files)


# --- ldm_cvpr22 --------------------------------------------------------------------------------

TORCH_PROBE = "3.11.2 torch 2.1.2 lightning 1.9.5\\ncuda_available True\\ndevice NVIDIA A10G"


def _ldm(steps, saved):
    """sample_diffusion.py's closing lines, three PNGs of noise and the npz where it saves them;
    STEPS and SAVED are shell expressions."""
    return prelude(TORCH_PROBE) + f"""
out=logs; n=4; c=200; e=1.0
while [ $# -gt 0 ]; do case "$1" in -l) out=$2;; -n) n=$2;; -c) c=$2;; -e) e=$2;; esac; shift; done
d="$out/celeba256/samples/00410000/2026-12-05-10-00-00"
mkdir -p "$d/img" "$d/numpy"
for i in -00001 000000 000001 000002; do head -c 120000 /dev/urandom > "$d/img/sample_$i.png"; done
head -c 786688 /dev/zero > "$d/numpy/4x256x256x3-samples.npz"
echo "Using DDIM sampling with {steps} sampling steps and eta=$e"
echo "sampling of {saved} images finished in 0.04 minutes."
echo "done."
"""


LDM_FILES = {
    "models/ldm/celeba256/model.ckpt": "",
    "scripts/sample_diffusion.py": "",
    "ldm/models/diffusion/ddim.py": "",
    "ldm/models/diffusion/ddpm.py": "",
    "ldm/modules/diffusionmodules/openaimodel.py": "",
    "ldm/models/autoencoder.py": "",
    "ldm/util.py": "",
}


def ldm(fake):
    # echo: the steps and the sample count read back from -c and -n; constant: the README's 20.
    body = _ldm("$c", "$((n - 1))") if fake == "echo" else _ldm("20", "3")
    entry = "scripts/sample_diffusion.py"
    return lambda tmp_path: workdir_with(tmp_path, fake, body, entry, LDM_FILES)


# --- mixtext_acl20 -----------------------------------------------------------------------------

MIXTEXT_PROBE = "3.11.2 torch 2.1.2 pytorch_transformers 1.2.0\\ncuda_available True\\ndevice x"


def _mixtext(labeled, acc):
    return prelude(MIXTEXT_PROBE) + f"""
n=10
while [ $# -gt 0 ]; do case "$1" in --n-labeled) n=$2;; esac; shift; done
echo "GPU num:  1"
echo "#Labeled: {labeled}, Unlabeled 50000, Val 20000, Test 60000"
echo "epoch 0, step 0, loss 2.34, Lx 2.31, Lu 0.02, Lu2 0.0"
echo "epoch 0, val acc {acc}, val_loss 2.18"
echo "epoch 0, test acc {acc},test loss 2.18"
echo "Finished training!"
"""


def mixtext(fake):
    # echo: --n-labeled times Yahoo's ten classes; constant: the recorded state's accuracy.
    body = _mixtext("$((n * 10))", "0.$n") if fake == "echo" else _mixtext("100", "0.2316")
    files = {"code/train.py": "", "code/mixtext.py": "", "code/read_data.py": ""}
    return lambda tmp_path: workdir_with(tmp_path, fake, body, "code/train.py", files)


# --- simclr_icml20 -----------------------------------------------------------------------------

TF_PROBE = "3.11.2 numpy 1.26.4 tensorflow 2.15.1\\ngpus 1"


def _simclr(step):
    return prelude(TF_PROBE) + f"""
dir=/tmp; steps=100
for a in "$@"; do case "$a" in --model_dir=*) dir=${{a#*=}};; --train_steps=*) steps=${{a#*=}};; esac; done
mkdir -p "$dir"; s={step}
r='"contrast_loss": 5.91, "contrastive_top_1_accuracy": 0.1377, "label_top_1_accuracy": 0.1022'
echo "{{$r, \\"global_step\\": $s.0}}" > "$dir/result.json"
cp "$dir/result.json" "$dir/result_$s.json"
echo "{{\\"train_steps\\": $s}}" > "$dir/flags.json"
: > "$dir/model.ckpt-$s.index"
"""


SIMCLR_MODULES = ["resnet", "data", "data_util", "model", "model_util", "objective"]


def simclr(fake):
    # echo: every step count read back from --train_steps; constant: the README's 200 as given.
    body = _simclr("$steps" if fake == "echo" else "200")
    files = {f"{m}.py": "" for m in [*SIMCLR_MODULES, "lars_optimizer", "run"]}
    return lambda tmp_path: workdir_with(tmp_path, fake, body, "run.py", files)


# --- maml_icml17_gpu ---------------------------------------------------------------------------


def _maml(last, acc):
    return prelude(TF_PROBE) + f"""
logdir=/tmp/; iters=100
for a in "$@"; do case "$a" in --logdir=*) logdir=${{a#*=}};; --metatrain_iterations=*) iters=${{a#*=}};; esac; done
d="$logdir/cls_5.mbs_32.ubs_1.numstep1.updatelr0.4batchnorm"
mkdir -p "$d"; : > "$d/model{last}.index"
echo "Done initializing, starting training."
echo "Iteration 500: 0.2, {acc}"
echo "Validation results: 0.2, {acc}"
"""


def maml(fake):
    # echo: the checkpoint's number from --metatrain_iterations; constant: the paper's 98.7%.
    body = _maml("$((iters - 1))", "0.9$iters") if fake == "echo" else _maml("599", "0.987")
    files = {"main.py": "", "data_generator.py": "", "maml.py": "", "utils.py": ""}
    return lambda tmp_path: workdir_with(tmp_path, fake, body, "main.py", files)


FOUR = ("stub_interpreter", "stub_binary", "echo", "constant")
BUILDERS = {
    "ergo_coling22": ergo,
    "ldm_cvpr22": ldm,
    "mixtext_acl20": mixtext,
    "simclr_icml20": simclr,
    "maml_icml17_gpu": maml,
}
CASES = {(task, fake): build(fake) for task, build in BUILDERS.items() for fake in FOUR}


def non_gpu_stoppers(task_id, failed_names, fake):
    """The failed checks that are not GPU evidence and say they defeat FAKE."""
    gpu = {c["name"] for c in verification.load_checks(task_id) if checks_mod.is_gpu_evidence(c)}
    named = defeats_of(task_id)
    return {n for n in failed_names if n not in gpu and fake in named.get(n, set())}


@pytest.mark.parametrize(("task_id", "fake"), sorted(CASES))
def test_a_fake_fails_on_a_non_gpu_check_that_says_it_defeats_it(task_id, fake, tmp_path):
    assert fake in checks_mod.FAKES
    workdir = CASES[(task_id, fake)](tmp_path)
    verdict = run_experiment(task_id, workdir, tmp_path / "logs", seconds=120)
    failed = {c["name"] for c in verdict["layer2"]["checks"] if not c["passed"]}
    assert verdict["passed"] is False
    assert non_gpu_stoppers(task_id, failed, fake), (fake, sorted(failed))
