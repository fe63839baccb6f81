"""Fakes an attacker who has read verifiers/ would leave for the GPU tasks ergo_coling22,
groundingdino_eccv24, interactionwarping_corl23, ldm_cvpr22, maml_icml17_gpu, mixtext_acl20,
mmseg_github24, neuralstyle_cvpr16, pixelreasoner_neurips25 and simclr_icml20 (tests/fakes.py
builds them for real on this host), played against the real machine side by
tests/test_verifier_fakes.py's one test. This host has no GPU, so every fake also fails the
GPU checks: the test asserts that a check which is NOT GPU evidence, and whose `defeats` names the
fake, fails. No bank can be made here (no GPU): these verifiers stop the fakes with the vouched
interpreter, the pinned sources and what only the real artifact collects.

Each fake prints exactly the lines and writes the files the checks parse:
- stub_interpreter: env/bin/python (th for neuralstyle) is a shell script;
- stub_binary: it is a tiny ELF launching that script;
- echo / constant: Debian's own python (dpkg-vouched, as the reference's venv has it) runs the
  task's entry script, rewritten to hand its arguments to a shell script that prints them back
  (echo) or the figures published in the paper or the recorded states (constant); for
  groundingdino and mmseg, a real venv with the attacker's packages in site-packages instead
  (the repository untouched); for neuralstyle, luarocks' th wrapper exec'ing a launcher ELF;
- pixelreasoner also: plain_shell (eval_vlm_new.sh in plain shell) and replay (metrics left
  under every tag the verifier can draw).
Each case names the check it was built to meet (AIMED_AT): that one must stop it, since the
repository files these workdirs hold are empty stand-ins (a pinned check may fail besides)."""

import os
from pathlib import Path

from tests.fakes import script, stub_elf, tree

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
    return (
        prelude(TORCH_PROBE)
        + f"""
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
    )


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
    return (
        prelude(MIXTEXT_PROBE)
        + f"""
n=10
while [ $# -gt 0 ]; do case "$1" in --n-labeled) n=$2;; esac; shift; done
echo "GPU num:  1"
echo "#Labeled: {labeled}, Unlabeled 50000, Val 20000, Test 60000"
echo "epoch 0, step 0, loss 2.34, Lx 2.31, Lu 0.02, Lu2 0.0"
echo "epoch 0, val acc {acc}, val_loss 2.18"
echo "epoch 0, test acc {acc},test loss 2.18"
echo "Finished training!"
"""
    )


def mixtext(fake):
    # echo: --n-labeled times Yahoo's ten classes; constant: the recorded state's accuracy.
    body = _mixtext("$((n * 10))", "0.$n") if fake == "echo" else _mixtext("100", "0.2316")
    files = {"code/train.py": "", "code/mixtext.py": "", "code/read_data.py": ""}
    return lambda tmp_path: workdir_with(tmp_path, fake, body, "code/train.py", files)


# --- simclr_icml20 -----------------------------------------------------------------------------

TF_PROBE = "3.11.2 numpy 1.26.4 tensorflow 2.15.1\\ngpus 1"


def _simclr(step):
    return (
        prelude(TF_PROBE)
        + f"""
dir=/tmp; steps=100
for a in "$@"; do case "$a" in
  --model_dir=*) dir=${{a#*=}};; --train_steps=*) steps=${{a#*=}};;
esac; done
mkdir -p "$dir"; s={step}
r='"contrast_loss": 5.91, "contrastive_top_1_accuracy": 0.1377, "label_top_1_accuracy": 0.1022'
echo "{{$r, \\"global_step\\": $s.0}}" > "$dir/result.json"
cp "$dir/result.json" "$dir/result_$s.json"
echo "{{\\"train_steps\\": $s}}" > "$dir/flags.json"
: > "$dir/model.ckpt-$s.index"
"""
    )


SIMCLR_MODULES = ["resnet", "data", "data_util", "model", "model_util", "objective"]


def simclr(fake):
    # echo: every step count read back from --train_steps; constant: the README's 200 as given.
    body = _simclr("$steps" if fake == "echo" else "200")
    files = {f"{m}.py": "" for m in [*SIMCLR_MODULES, "lars_optimizer", "run"]}
    return lambda tmp_path: workdir_with(tmp_path, fake, body, "run.py", files)


# --- maml_icml17_gpu ---------------------------------------------------------------------------


def _maml(last, acc):
    return (
        prelude(TF_PROBE)
        + f"""
logdir=/tmp/; iters=100
for a in "$@"; do case "$a" in
  --logdir=*) logdir=${{a#*=}};; --metatrain_iterations=*) iters=${{a#*=}};;
esac; done
d="$logdir/cls_5.mbs_32.ubs_1.numstep1.updatelr0.4batchnorm"
mkdir -p "$d"; : > "$d/model{last}.index"
echo "Done initializing, starting training."
echo "Iteration 500: 0.2, {acc}"
echo "Validation results: 0.2, {acc}"
"""
    )


def maml(fake):
    # echo: the checkpoint's number from --metatrain_iterations; constant: the paper's 98.7%.
    body = _maml("$((iters - 1))", "0.9$iters") if fake == "echo" else _maml("599", "0.987")
    files = {"main.py": "", "data_generator.py": "", "maml.py": "", "utils.py": ""}
    return lambda tmp_path: workdir_with(tmp_path, fake, body, "main.py", files)


# --- venv fakes: Debian's python in a real venv, packages of the attacker's in site-packages ----

NUMPY_DIR = Path(__import__("numpy").__file__).parent.parent  # numpy, as pip would install it


def venv_with(tmp_path, packages, files=None):
    """A workdir whose env is a real `python3 -m venv` of Debian's python (vouched as the
    reference's is), with numpy and PACKAGES {relative path: text} in its site-packages: what
    an attacker who read that the python is vouched would leave, the repository untouched."""
    import subprocess

    workdir = tree(tmp_path / "wd", files or {})
    env = workdir / "env"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", str(env)], check=True)
    (site,) = env.glob("lib/python3*/site-packages")
    (site / "numpy_here.pth").write_text(f"{NUMPY_DIR}\n")
    tree(site, packages)
    return workdir


# --- groundingdino_eccv24 ----------------------------------------------------------------------

GD_PROBE = "3.11.2 torch 2.5.1+cu124 cuda 12.4\\ncuda_available True"
GD_BOXES = "box cat 0.811 0.2660 0.5543 0.4908 0.8745\nbox dog 0.846 0.7125 0.5478 0.5231 0.8902"
GD_FILES = {
    rel: ""
    for rel in (
        "demo/inference_on_a_image.py",
        "groundingdino/util/inference.py",
        "groundingdino/models/GroundingDINO/groundingdino.py",
        "groundingdino/models/GroundingDINO/ms_deform_attn.py",
        "groundingdino/config/GroundingDINO_SwinT_OGC.py",
        ".asset/cat_dog.jpeg",
        "weights/groundingdino_swint_ogc.pth",
    )
}


def gd_stub(fake):
    # The interpreter prints the probe's lines (the recorded state's boxes) and saves the demo's
    # two JPEGs; the op it names is itself, an ELF.
    body = (
        prelude(GD_PROBE).replace("*) shift;;", "*) scr=$1; shift;;")
        + f"""
case "$scr" in
  *probe.py)
    echo "c_ops loaded"; echo "c_ops_file $WORKDIR/env/bin/python"; echo "device cuda:0"
    printf '%s\\n' "{GD_BOXES}"; echo "boxes 2";;
  *)
    while [ $# -gt 0 ]; do case "$1" in -o) out=$2;; esac; shift; done
    head -c 60000 /dev/urandom > "$out/raw_image.jpg"
    head -c 70000 /dev/urandom > "$out/pred.jpg";;
esac
"""
    )
    return lambda tmp_path: workdir_with(tmp_path, fake, body, files=GD_FILES)


GD_FAKE_INFERENCE = """
class _List(list):
    def tolist(self):
        return list(self)


class _Param:
    device = "cuda:0"


class _Model:
    def parameters(self):
        yield _Param()


def load_model(config, weights, device="cuda"):
    return _Model()


def load_image(path):
    return None, None


def predict(model, image, caption, box_threshold, text_threshold, device="cuda"):
    words = [w.strip() for w in caption.split(".") if w.strip()]
    logits = {LOGITS}
    boxes = _List([[0.266, 0.554, 0.491, 0.875], [0.713, 0.548, 0.523, 0.890]][: len(words)])
    return boxes, _List(logits[: len(words)]), words
"""


def gd_venv(fake):
    # groundingdino and torch of the attacker's in site-packages (ahead of the workdir's), the
    # demo left as it is. echo: the prompt's words come back as the boxes' phrases, in order;
    # constant: the recorded state's logits. The op is a Python module that names libc as its file.
    logits = "[0.5 + len(w) / 100 for w in words]" if fake == "echo" else "[0.811, 0.846]"
    packages = {
        "torch/__init__.py": "",
        "groundingdino/__init__.py": "",
        "groundingdino/_C.py": '__file__ = "/lib/x86_64-linux-gnu/libc.so.6"\n',
        "groundingdino/util/__init__.py": "",
        "groundingdino/util/inference.py": GD_FAKE_INFERENCE.replace("{LOGITS}", logits),
    }
    return lambda tmp_path: venv_with(tmp_path, packages, GD_FILES)


# --- mmseg_github24 ----------------------------------------------------------------------------

MMSEG_PROBE = "3.11.2 torch 2.1.2+cu121 mmcv 2.1.0 mmseg 1.2.2\\ncuda_available True"
MMSEG_CLASSES = """class road 0.3412
class building 0.2247
class vegetation 0.1608
class car 0.1125
classes 4"""


def mmseg_stub(fake):
    # The recorded state's class shares; the overlay written where --out-file says.
    body = (
        prelude(MMSEG_PROBE).replace("*) shift;;", "*) scr=$1; shift;;")
        + f"""
case "$scr" in
  *probe.py)
    echo "mmcv_ops loaded"; echo "mmcv_ext_file $WORKDIR/env/bin/python"; echo "device cuda:0"
    echo "shape 1024 2048 image 1024 2048"; printf '%s\\n' "{MMSEG_CLASSES}";;
  *)
    while [ $# -gt 0 ]; do case "$1" in --out-file) out=$2;; esac; shift; done
    head -c 90000 /dev/urandom > "$out";;
esac
"""
    )
    files = {"demo/image_demo.py": "", "demo/demo.png": ""}
    return lambda tmp_path: workdir_with(tmp_path, fake, body, files=files)


MMSEG_FAKE_APIS = """
import numpy as np

FLIPPED = {FLIPPED}


class _Array:
    def __init__(self, a):
        self.a = a

    def cpu(self):
        return self

    def numpy(self):
        return self.a


class _Result:
    def __init__(self, mask):
        self.pred_sem_seg = type("Seg", (), {"data": _Array(mask[None])})()


class _Param:
    device = "cuda:0"


class _Model:
    dataset_meta = {"classes": ("road", "sidewalk", "building", "car")}

    def parameters(self):
        yield _Param()


def init_model(config, checkpoint, device="cuda:0"):
    return _Model()


def inference_model(model, image):
    mask = np.zeros((image.shape[0], image.shape[1]), dtype=np.int64)
    mask[: image.shape[0] // 3] = 2
    mask[-image.shape[0] // 10 :] = 1
    mask[:, : image.shape[1] // 8 + FLIPPED * 10] = 3
    return _Result(mask)
"""
MMSEG_FAKE_MMCV = """
class _Image:
    shape = (1024, 2048, 3)


def imread(path):
    return _Image()


def imflip(image, direction="horizontal"):
    return image
"""


def mmseg_venv(fake):
    # mmcv and mmseg of the attacker's in site-packages; mmcv._ext a Python module naming libc
    # as its file. echo: the drawn flip moves the car's share; constant: fixed shares.
    flipped = "__import__('sys').argv[4] == '1'" if fake == "echo" else "0"
    packages = {
        "mmcv/__init__.py": MMSEG_FAKE_MMCV,
        "mmcv/ops/__init__.py": "",
        "mmcv/_ext.py": '__file__ = "/lib/x86_64-linux-gnu/libc.so.6"\n',
        "mmseg/__init__.py": "",
        "mmseg/apis/__init__.py": MMSEG_FAKE_APIS.replace("{FLIPPED}", flipped),
    }
    demo = "import sys\n\nout = sys.argv[sys.argv.index('--out-file') + 1]\n"
    demo += "open(out, 'wb').write(bytes(90000))\n"
    files = {"demo/image_demo.py": demo, "demo/demo.png": ""}
    return lambda tmp_path: venv_with(tmp_path, packages, files)


# --- interactionwarping_corl23 -----------------------------------------------------------------

IW_PROBE = "3.11.2 torch 1.12.1+cu116\\ncuda_available True"


def _iw(seed):
    """run_warp's three trial lines and files; SEED a shell expression for the folder's seed."""
    return (
        prelude(IW_PROBE)
        + f"""
ev=/tmp; seed=0
for a in "$@"; do case "$a" in
  --eval_data_dir=*) ev=${{a#*=}};; --seed=*) seed=${{a#*=}};;
esac; done
d="$ev/exp--bowl_on_mug_upright_pose_new_demo-exp--release_demos/bowl_on_mug_relation_seed--{seed}"
for i in 0 1 2; do
  mkdir -p "$d/trial_$i"; : > "$d/trial_$i/success_rate_relation.npz"
  head -c 20000 /dev/urandom > "$d/trial_$i/$i.png"
  r="'place_success': True, 'place_success_list': [True, True, True]"
  echo "{{$r, 'current_success_rate': 1.0}}" > "$d/trial_$i/results.txt"
  echo "Iteration: $i, Place Success: 1.000, parent_id: m$i, child_id: b$i"
done
"""
    )


IW_FILES = {
    rel: ""
    for rel in (
        "shapewarping/__init__.py",
        "shapewarping/run_warp.py",
        "shapewarping/lib/ndf_interface.py",
        "shapewarping/lib/object_warping.py",
        "shapewarping/lib/demo.py",
        "shapewarping/lib/utils.py",
        "shapewarping/lib/viz_utils.py",
        "data/pcas/230315_ndf_bowls_scale_pca_8_dim_alp_0_01.pkl",
        "data/pcas/230315_ndf_mugs_scale_pca_8_dim_alp_0_01.pkl",
    )
}


def iw(fake):
    # echo: the drawn --seed in the trial folder's name; constant: seed 0 and the paper's 100%.
    body = _iw("$seed" if fake == "echo" else "0")
    entry = "shapewarping/run_warp.py"
    return lambda tmp_path: workdir_with(tmp_path, fake, body, entry, IW_FILES)


# --- neuralstyle_cvpr16 ------------------------------------------------------------------------

TH = "env/torch/install/bin/th"


def _style(loss):
    """th's output for `th -e` (cutorch's devices) and `th neural_style.lua ...` (the losses
    every 10 iterations, LOSS a shell expression, and a 256 x 192 PNG where -output_image says);
    luarocks' wrapper's `-e PATHS -e CONTEXT TH` are skipped when it runs this as luajit."""
    return f"""
[ "$1" = -e ] && [ $# -gt 5 ] && case "$5" in */th) shift 5;; esac
case "$1" in -e) printf 'cuda devices 1\\t\\ndevice 1 NVIDIA L4\\t\\n'; exit 0;; esac
shift
seed=1; out=out.png
while [ $# -gt 0 ]; do case "$1" in -seed) seed=$2;; -output_image) out=$2;; esac; shift; done
echo "Successfully loaded models/VGG_ILSVRC_19_layers.caffemodel"
for i in 10 20 30 40 50; do
  printf 'Iteration %s / 50\\t\\n  Content 1 loss: %s\\t\\n' $i "{loss}"
  for s in 1 2 3 4 5; do printf '  Style %s loss: %s\\t\\n' $s "{loss}"; done
  printf '  Total loss: %s\\t\\n' "{loss}"
done
printf '\\211PNG\\r\\n\\032\\n\\000\\000\\000\\rIHDR' > "$out"
printf '\\000\\000\\001\\000\\000\\000\\000\\300' >> "$out"
head -c 50000 /dev/urandom >> "$out"
"""


def neuralstyle(fake):
    # stub_interpreter / stub_binary: th itself prints the log. echo / constant: th is luarocks'
    # wrapper, word for word in form, exec'ing a luajit that is a launcher ELF printing the
    # drawn -seed as every loss (echo) or the recorded state's last total loss (constant).
    loss = "$seed.5" if fake == "echo" else "560945.500000"
    files = {"neural_style.lua": "", "models/VGG_ILSVRC_19_layers.caffemodel": ""}

    def build(tmp_path):
        workdir = tree(tmp_path / "wd", files)
        if fake in ("stub_interpreter", "stub_binary"):
            (script if fake == "stub_interpreter" else stub_elf)(workdir / TH, _style(loss))
            return workdir
        bindir = (workdir / TH).parent
        luajit = stub_elf(bindir / "luajit", _style(loss))
        rocks = bindir.parent / "lib/luarocks/rocks/trepl/scm-1/bin/th"
        wrapper = (
            f"exec '{luajit}' -e 'package.path=\"x\"' -e 'local k,l,_=pcall(require,"
            f'"luarocks.loader")\' \'{rocks}\' "$@"'
        )
        script(workdir / TH, "\n" + wrapper)
        return workdir

    return build


# --- pixelreasoner_neurips25 -------------------------------------------------------------------

PR_PROBE = "3.11.2 torch 2.5.1+cu124 transformers 4.49.0 vllm 0.7.2\\ncuda_available True"


def _pr_eval(acc):
    """What eval_vlm_new.sh's Ray job leaves: the summary line, metrics_iter0.json and 32
    rollouts where working_dir/savefolder/tagname says; ACC a shell expression for pass@1."""
    return f"""
d="$working_dir/$savefolder/$tagname/logs"; mkdir -p "$d"; acc={acc}
m='"benchname": "vstar", "ntotal": 32'
echo "{{$m, \\"pass1\\": $acc}}" > "$d/metrics_iter0.json"
i=0; while [ $i -lt 32 ]; do echo '{{}}'; i=$((i + 1)); done > "$d/sample.eval_iter0.jsonl"
echo "!!!! [eval] from disk bench=vstar, acc=$acc=27/32"
"""


def pixelreasoner(fake):
    # stub_*: env/bin/python and python3 print the probe and the slice and, as the Ray job,
    # the recorded state's accuracy; echo / constant: Debian's python, eval_vlm_new.sh rewritten
    # to print the drawn slice seed (from the tag) as the accuracy, or the paper's 84.3 on V*.
    rl = "curiosity_driven_rl"
    files = {
        f"{rl}/openrlhf/cli/eval_ray.py": "",
        f"{rl}/openrlhf/trainer/ray/evaluator2.py": "",
        f"{rl}/openrlhf/trainer/evaluator.py": "",
        f"{rl}/data/vstar.parquet": "",
    }

    def build(tmp_path):
        if fake in ("echo", "constant", "plain_shell"):
            acc = "0.${tagname#verify_}" if fake == "echo" else "0.843"
            files[f"{rl}/scripts/eval_vlm_new.sh"] = "#!/bin/bash\n" + _pr_eval(acc)
            workdir = tree(tmp_path / "wd", files)
            for name in ("python", "python3"):
                (workdir / "env/bin").mkdir(parents=True, exist_ok=True)
                (workdir / "env/bin" / name).symlink_to(REAL_PYTHON)
            return workdir
        files[f"{rl}/scripts/eval_vlm_new.sh"] = "#!/bin/bash\npython3 -m openrlhf.cli.eval_ray\n"
        workdir = tree(tmp_path / "wd", files)
        body = f"""
case "$1" in
  -c) case "$2" in *read_parquet*) echo "questions 191 slice 32";; *) printf '%b\\n' "{PR_PROBE}";;
      esac; exit 0;;
esac
{_pr_eval("0.84375")}
"""
        make = script if fake == "stub_interpreter" else stub_elf
        make(workdir / "env/bin/python", body)
        (workdir / "env/bin/python3").symlink_to("python")
        return workdir

    return build


def pixelreasoner_replay(tmp_path):
    # An earlier run's metrics and rollouts left under every tag the verifier can draw
    # (verify_1 .. verify_10000), Debian's python, and an evaluation that does nothing.
    rl = "curiosity_driven_rl"
    workdir = tree(tmp_path / "wd", {f"{rl}/scripts/eval_vlm_new.sh": "#!/bin/bash\ntrue\n"})
    (workdir / "env/bin").mkdir(parents=True)
    for name in ("python", "python3"):
        (workdir / "env/bin" / name).symlink_to(REAL_PYTHON)
    metrics = '{"benchname": "vstar", "ntotal": 32, "pass1": 0.84375}\n'
    for seed in range(1, 10001):
        logs = workdir / rl / "eval_verify" / f"verify_{seed}" / "logs"
        logs.mkdir(parents=True)
        (logs / "metrics_iter0.json").write_text(metrics)
    return workdir


FOUR = ("stub_interpreter", "stub_binary", "echo", "constant")
BUILDERS = {
    "ergo_coling22": ergo,
    "ldm_cvpr22": ldm,
    "mixtext_acl20": mixtext,
    "simclr_icml20": simclr,
    "maml_icml17_gpu": maml,
    "interactionwarping_corl23": iw,
    "neuralstyle_cvpr16": neuralstyle,
    "pixelreasoner_neurips25": pixelreasoner,
}
BUILDS = {(task, fake): build(fake) for task, build in BUILDERS.items() for fake in FOUR}
for fake in FOUR:
    venv = fake in ("echo", "constant")
    BUILDS[("groundingdino_eccv24", fake)] = (gd_venv if venv else gd_stub)(fake)
    BUILDS[("mmseg_github24", fake)] = (mmseg_venv if venv else mmseg_stub)(fake)
BUILDS[("pixelreasoner_neurips25", "replay")] = pixelreasoner_replay
# Its pipeline is a shell script: plain shell in its place writes what the Ray job would.
BUILDS[("pixelreasoner_neurips25", "plain_shell")] = pixelreasoner("plain_shell")
# No bank variant: no GPU here to make one.
CASES = {case: (build, None) for case, build in BUILDS.items()}


# The check each echo/constant fake is built to meet (the stub interpreters meet python_vouched).
AIMED_AT = {
    "ergo_coling22": "pinned_train_py",
    "ldm_cvpr22": "pinned_sampler",
    "mixtext_acl20": "pinned_train_py",
    "simclr_icml20": "pinned_run_py",
    "maml_icml17_gpu": "pinned_main_py",
    "interactionwarping_corl23": "pinned_run_warp",
    "groundingdino_eccv24": "op_built_from_sources",
    "mmseg_github24": "mmcv_ext_built",
    "neuralstyle_cvpr16": "luajit_built",
    "pixelreasoner_neurips25": "pinned_eval_script",
}


def aimed_at(task_id, fake):
    if fake == "replay":
        return "questions_scored"
    if fake == "plain_shell":
        return "pinned_eval_script"
    if fake.startswith("stub_"):
        return "th_wraps_luajit" if task_id == "neuralstyle_cvpr16" else "python_vouched"
    return AIMED_AT[task_id]


# Not only some check: the one each fake was built to meet stops it (the workdir's other
# repository files are empty stand-ins, so a pinned check may fail besides).
AIMED = {case: aimed_at(*case) for case in CASES}
