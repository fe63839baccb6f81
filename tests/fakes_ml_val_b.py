"""Fakes an attacker who has read verifiers/ would leave for lightgcn_sigir20, timemixer_iclr24
and hyena_icml23, built for real on this host (tests/fakes.py); their CASES are played by
tests/test_verifier_fakes.py's one test against the real machine side: each must fail on a check
whose `defeats` names that fake. No real run of these tasks can be made here (two are GPU tasks,
and none may start a machine), so the repository files the fakes hold are stand-ins: what stops
each fake is named in its builder's comment.

- stub_interpreter: env/bin/python a shell script (lightgcn); Debian's own python, vouched by
  its package, with a start-up hook in the venv that hands every run to a shell script: a .pth
  (timemixer), one named as pip's editable installs are (hyena), the repository left as it was;
- stub_binary: env/bin/python a tiny ELF launching that script;
- echo / constant / plain_shell: Debian's python runs the task's entry script rewritten to hand
  its arguments to a shell script that prints them back, the published or recorded figures, or
  what awk computes from the verifier's data. timemixer's series is a bank variant (2026-12-06):
  its echo (the nonce and the series' readings handed back) and its constant (the recorded
  run's errors) are played against the tests' own variant, whose results are the checks aimed
  at; the stand-in run.py fails its pin too. lightgcn's seed is a bank variant too (since
  2026-12-06): its echo (the seed, the only number on the seeded launcher's command line, handed
  back as the recall) and constant (the recorded run's figures) run behind a .pth of Debian's
  python that is given the verifier's whole command line, against the tests' own variant.
  hyena's echo (the seed read from its dataset.seed override) and constant (the recorded run's
  accuracy) are its train.py rewritten, as above, and are played against a test variant too."""

import os
import subprocess
from pathlib import Path

from tests.fakes import script, stub_elf, tree

REAL_PYTHON = Path(os.path.realpath("/usr/bin/python3"))  # Debian 12 here, as on the machines
ENTRY = """import subprocess
import sys

sys.exit(subprocess.call(["/bin/sh", {sh!r}] + sys.argv))
"""
# The hook hands the whole run (the interpreter's own arguments) to the shell script before the
# first line of the experiment runs.
HOOK = """import os
import sys

os.execv("/bin/sh", ["/bin/sh", {sh!r}] + sys.orig_argv[1:])
"""


def prelude(probe):
    """The start of a body: python -c (the verifier's environment probe) prints PROBE; -u is
    dropped; python -m MODULE or python SCRIPT is shifted off."""
    return f"""
[ "$1" = -u ] && shift
case "$1" in
  -c) printf '%b\\n' "{probe}"; exit 0;;
  -m) shift 2;;
  *) shift;;
esac
"""


def real_venv(workdir):
    """env/ a venv of Debian's python (dpkg-vouched, as the reference's `python3 -m venv`)."""
    subprocess.run(
        [str(REAL_PYTHON), "-m", "venv", "--without-pip", str(workdir / "env")],
        check=True,
        capture_output=True,
    )
    return next((workdir / "env").glob("lib/python3*/site-packages"))


def build(tmp_path, fake, body, entry, files=None, hook="zz_speedup.pth"):
    """A workdir holding FILES where BODY (a shell script) does the work: as env/bin/python
    (stub_interpreter without a hook, stub_binary), behind a start-up hook of a real venv
    (stub_interpreter with HOOK, the name of the .pth that imports it), or behind ENTRY
    rewritten and run by a real venv's python (echo, constant, plain_shell)."""
    workdir = tree(tmp_path / "wd", files or {})
    python = workdir / "env/bin/python"
    if fake == "stub_interpreter" and hook is None:
        script(python, body)
        return workdir
    if fake == "stub_binary":
        stub_elf(python, body)
        return workdir
    site = real_venv(workdir)
    sh = script(tmp_path / "fake_body.sh", body)
    if fake == "stub_interpreter":
        (site / "zz_speedup.py").write_text(HOOK.format(sh=str(sh)))
        (site / hook).write_text("import zz_speedup\n")
    else:
        (workdir / entry).parent.mkdir(parents=True, exist_ok=True)
        (workdir / entry).write_text(ENTRY.format(sh=str(sh)))
    return workdir


# --- lightgcn_sigir20 --------------------------------------------------------------------------

LIGHTGCN_PROBE = "3.11.2 numpy 1.26.4 tensorflow 2.15.1\\ngpus 1"
# The build setup.py leaves, as stand-ins: a stub ELF cannot show Python's init function.
LIGHTGCN_FILES = {
    "LightGCN.py": "# stand-in\n",
    "evaluator/__init__.py": "# stand-in\n",
    "evaluator/cpp/apt_evaluate_foldout.pyx": "# stand-in\n",
}


def _lightgcn_body(n_users, n_items, recall):
    """LightGCN.py's log for the hidden data: sizes and the recall are shell expressions ($seed
    is the bare number on the verifier's seeded command line). A command line without
    LightGCN.py's flags is the environment probe."""
    return f"""
case "$*" in *--data_path*) ;; *) printf '%b\\n' "{LIGHTGCN_PROBE}"; exit 0;; esac
[ "$1" = -u ] && shift
seed=0
case "$1" in -c) seed=$3; shift 3;; *) shift;; esac
proj=; data=; ds=
while [ $# -gt 0 ]; do case "$1" in --proj_path) proj=$2;; --data_path) data=$2;;
  --dataset) ds=$2;; esac; shift; done
echo "eval_score_matrix_foldout with cpp"
echo "n_users={n_users}, n_items={n_items}"
echo "Epoch 1 [4.9s]: train==[0.66844=0.66843 + 0.00001]"
echo "Epoch 19 [0.3s]: train==[0.05190=0.05115 + 0.00075]"
tail="precision=[0.2], ndcg=[0.5]"
echo "Epoch 20 [0.3s + 0.2s]: test==[0.05=0.05 + 0.0], recall=[{recall}], $tail"
echo "Best Iter=[0]@[12.3]	recall=[{recall}], $tail"
mkdir -p "$proj/output/$ds"
{{ echo "embed_size=64, lr=0.0050, layer_size=[64,64,64]"
  printf '\\tBest Iter=[0]@[12.3]\\trecall=[{recall}]\\n'; }} >> "$proj/output/$ds/LightGCN.result"
"""


def lightgcn(fake):
    def make(tmp_path):
        if fake == "echo":  # the hidden data's sizes read back, the seed handed back as recall
            body = _lightgcn_body(
                '$(wc -l < "$data$ds/train.txt" | tr -d " ")',
                '$(cat "$data$ds"/*.txt | tr " " "\\n" | sed 1d | sort -un | wc -l | tr -d " ")',
                '"0.$seed"',
            )
        elif fake == "plain_shell":  # awk's popularity scorer instead of the model
            body = _lightgcn_body("400", "300", '$(awk "BEGIN { print 0.41 + 0.5 }")')
        else:  # the recorded real run's figures (tests/fixtures), printed for any data
            body = _lightgcn_body("400", "300", "0.90125")
        if fake in ("stub_interpreter", "stub_binary"):
            return build(tmp_path, fake, body, "LightGCN.py", LIGHTGCN_FILES, hook=None)
        # Debian's python (vouched) with a .pth that hands the whole run, the verifier's seeded
        # launcher and its seed included, to the body before the first line of it runs: the body
        # sees what a real LightGCN.py would be given, and the bank's figures are what it lacks.
        hooked = "stub_interpreter"
        return build(tmp_path, hooked, body, "LightGCN.py", LIGHTGCN_FILES, hook="zz_speedup.pth")

    return make


CASES = {
    ("lightgcn_sigir20", fake): (lightgcn(fake), None)
    for fake in ("stub_interpreter", "stub_binary", "plain_shell")
}
# The tests' own bank variant: its values are made up here, no real run's (a real bank is the
# operator's, outside the repository).
LIGHTGCN_VARIANT = {
    "id": "vtest0020",
    "inputs": {"seed": 31337},
    "expected": {
        "train_loss_epoch_19": 0.05711,
        "test_loss_epoch_20": 0.05123,
        "best_recall": 0.91234,
        "best_ndcg": 0.49876,
    },
    "spread": {},
}
CASES |= {("lightgcn_sigir20", f): (lightgcn(f), LIGHTGCN_VARIANT) for f in ("echo", "constant")}
AIMED = {("lightgcn_sigir20", f): "variant_best_recall" for f in ("echo", "constant")}


# --- timemixer_iclr24 --------------------------------------------------------------------------

TIMEMIXER_PROBE = "3.11.2 numpy 1.26.4 pandas 2.2.3 torch 1.13.0a0"
TIMEMIXER_FILES = {"run.py": "# stand-in\n"}


def _timemixer_body(mse, mae="0.17700152099132538", loss="0.1644580"):
    """run.py's log and artifacts for the verifier's --model_id (the errors shell expressions;
    $mid is the model id, $csv the series it was given): the split sizes are the real ETTh1's,
    as the checks' comments say."""
    return (
        prelude(TIMEMIXER_PROBE)
        + f"""
mid=; root=; data=
while [ $# -gt 0 ]; do case "$1" in --model_id) mid=$2;; --root_path) root=$2;;
  --data_path) data=$2;; esac; shift; done
csv=$root$data
setting="long_term_forecast_${{mid}}_none_TimeMixer_ETTh1_sl96_pl96_dm16_nh4_el2_dl1_df32_Exp_0"
mse={mse}
mae={mae}
echo "train 8449"
echo "Epoch: 1, Steps: 66 | Train Loss: {loss} Vali Loss: 0.0497138 Test Loss: 0.0499311"
echo "mse:$mse, mae:$mae"
out=result_long_term_forecast.txt
printf '%s  \\nmse:%s, mae:%s\\n\\n' "$setting" "$mse" "$mae" >> "$out"
mkdir -p "checkpoints/$setting" "results/$setting"
{{ printf 'PK\\003\\004'; head -c 4096 /dev/zero; }} > "checkpoints/$setting/checkpoint.pth"
printf '\\223NUMPY\\001\\000' > "results/$setting/metrics.npy"
"""
    )


def timemixer(fake):
    def make(tmp_path):
        if fake == "echo":
            # What it was handed, handed back: the nonce of --model_id as the MSE's digits,
            # the drawn series' first reading as the MAE and its second as the loss.
            body = _timemixer_body(
                '"0.0$(echo "$mid" | tr -dc 0-9 | head -c 6)"',
                '"0.$(sed -n 2p "$csv" | cut -d, -f2 | tr -dc 0-9)"',
                '$(sed -n 3p "$csv" | cut -d, -f2)',
            )
        elif fake == "plain_shell":  # awk's persistence forecast error, not the model's
            body = _timemixer_body('$(awk "BEGIN { print 0.25 / 5 }")')
        else:  # the recorded real run's errors (tests/fixtures), printed for any series
            body = _timemixer_body("0.04993107542395592")
        # The .pth hook runs Debian's python and hands the run to the body: the repository
        # stays as it was, so only the hook listing can stop it.
        return build(tmp_path, fake, body, "run.py", TIMEMIXER_FILES, hook="zz_speedup.pth")

    return make


# The tests' own bank variant: its values are made up here, no real run's (a real bank is the
# operator's, outside the repository). The echo and the constant are played against it: what
# either hands back is no real run's error on the series this seed draws.
TIMEMIXER_VARIANT = {
    "id": "vtest0096",
    "inputs": {"data_seed": 271828},
    "expected": {"test_mse": 0.0731234, "test_mae": 0.2012345, "train_loss": 0.2345678},
    "spread": {},
}
CASES |= {
    ("timemixer_iclr24", fake): (timemixer(fake), None)
    for fake in ("stub_interpreter", "stub_binary", "plain_shell")
}
CASES |= {("timemixer_iclr24", f): (timemixer(f), TIMEMIXER_VARIANT) for f in ("echo", "constant")}
AIMED |= {("timemixer_iclr24", f): "variant_test_mse" for f in ("echo", "constant")}


# --- hyena_icml23 ------------------------------------------------------------------------------

HYENA_PROBE = "3.11.2 torch 2.1.2 lightning 1.8.6\\ncuda_available True\\ndevice NVIDIA L4"
HYENA_FILES = {"train.py": "# stand-in\n", "src/tasks/tasks.py": "# stand-in\n"}


def _hyena_body(acc):
    """Lightning's lines and last checkpoint for the verifier's overrides (ACC a shell
    expression): the checkpoint lands in the hydra.run.dir it was given."""
    return (
        prelude(HYENA_PROBE)
        + f"""
run=.; epochs=10; seed=0
for a in "$@"; do case "$a" in hydra.run.dir=*) run=${{a#*=}};;
  trainer.max_epochs=*) epochs=${{a#*=}};; *dataset.seed=*) seed=${{a#*=}};; esac; done
acc={acc}
echo "GPU available: True (cuda), used: True"
bar="100%| 151/151 [00:17<00:00, loss=0.992"
val="val/accuracy_ignore_index=$acc, val/loss=0.555, val/perplexity=1.740"
echo "Epoch $((epochs - 1)): $bar, $val]"
echo "\\`Trainer.fit\\` stopped: \\`max_epochs=$epochs\\` reached."
mkdir -p "$run/checkpoints"
head -c 4096 /dev/zero > "$run/checkpoints/epoch=$((epochs - 1))-step=1250.ckpt"
"""
    )


def hyena(fake):
    def make(tmp_path):
        if fake == "echo":  # the seed it was given handed back as the accuracy (0.31337)
            body = _hyena_body('"0.$seed"')
        elif fake == "plain_shell":  # awk's guess of the recall rate, not the model's
            body = _hyena_body('$(awk "BEGIN { srand(1); print 0.5 + rand() / 4 }")')
        else:  # the recorded real run's accuracy (tests/fixtures)
            body = _hyena_body("0.745")
        # A .pth named as pip names an editable install's runs Debian's python and hands the
        # run to the body: the repository stays as it was, so only the hook listing can stop
        # it. (A sitecustomize.py in the venv would never run: Debian's, in the standard
        # library's folder, comes first; py_hooks names it all the same.)
        editable = "__editable__.safari-0.0.1.pth"
        return build(tmp_path, fake, body, "train.py", HYENA_FILES, hook=editable)

    return make


CASES |= {
    ("hyena_icml23", fake): (hyena(fake), None)
    for fake in ("stub_interpreter", "stub_binary", "plain_shell")
}
# The tests' own bank variant (made-up values, no real run's).
HYENA_VARIANT = {
    "id": "vtest0023",
    "inputs": {"seed": 31337},
    "expected": {"val_accuracy": 0.612, "val_loss": 0.871, "val_perplexity": 2.389},
    "spread": {},
}
CASES |= {("hyena_icml23", f): (hyena(f), HYENA_VARIANT) for f in ("echo", "constant")}
AIMED |= {("hyena_icml23", f): "variant_val_accuracy" for f in ("echo", "constant")}
