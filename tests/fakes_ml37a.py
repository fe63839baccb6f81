"""Fakes an attacker who has read verifiers/ would leave for the GPU AI/ML tasks adalora, qlora,
yolov7, gan (cpu, gpu), pointnet2, alexnet, bertscore, clue, dml and equigrasp (tests/fakes.py
builds them for real on this host), played against the real machine side by
tests/test_verifier_fakes.py's one test. No GPU here, so every fake also fails gpu_used:
each must fail on a check that is NOT GPU evidence and whose `defeats` names that fake.

What the fakes print is what the checks parse: the recorded pass state's own files (the values
the public fixtures show: the constant), or those with the drawn seed or nonce put in (the echo).
- stub_interpreter: env/bin/python is a shell script that answers the environment probes and
  writes every output file where experiment.sh collects it;
- stub_binary: the same script behind a tiny ELF at env/bin/python;
- echo / constant: a real venv of this host's Debian python3 (what the vouch wants), fake
  framework modules in it, and the repository's entry script rewritten to run the writer;
- plain_shell (bertscore): the bert-score command is a shell script.
The yolov7 bank variant is the tests' own (made-up expected values, no real run's)."""

import subprocess

from tests.fakes import script, stub_elf, tree
from tests.verifier_states import STATES

# A shell prologue: every "--key value" / "--key=value" argument as $A_key (dashes as _).
ARGS = r"""
prev=
for a in "$@"; do
  case "$a" in --*=*) k=${a%%=*}; v=${a#*=}; eval "A_$(printf %s "${k#--}" | tr -- - _)=\$v";; esac
  case "$prev" in --*=*) ;; --*) eval "A_$(printf %s "${prev#--}" | tr -- - _)=\$a";; esac
  prev=$a
done
"""


def recorded(task_id, name):
    """A file of the task's recorded pass state: the figures the public fixtures show."""
    return (STATES / task_id / "pass" / name).read_text()


def heredoc(path, text):
    return f"mkdir -p \"$(dirname {path})\"\ncat > {path} <<'FAKE_EOF'\n{text.rstrip()}\nFAKE_EOF\n"


def stdout(text):
    return f"cat <<'FAKE_EOF'\n{text.rstrip()}\nFAKE_EOF\n"


# ---- what each task's fake writes: (environment answer, -c probes, the run's writer) ----------


def adalora(echo):
    out = "$A_root_output_dir"
    run = ARGS + heredoc(f"{out}/log.txt", recorded("adalora_iclr23", "run_log.txt"))
    run += heredoc(f"{out}/rank_pattern.json", recorded("adalora_iclr23", "rank_pattern.json"))
    run += heredoc(
        f"{out}/model/Eval_cola_results.json", recorded("adalora_iclr23", "eval_results.json")
    )
    run += stdout(recorded("adalora_iclr23", "train_output.txt"))
    if echo:  # the drawn seed as the last loss, in thousandths
        run += "echo \"{'loss': 0.$A_seed, 'learning_rate': 0, 'epoch': 0.24}\"\n"
    probes = {
        "distributed.launch": "echo launch $WORKDIR/env/lib/python3.10/site-packages/torch/"
        "distributed/launch.py; echo loralib $WORKDIR/loralib/loralib/__init__.py; "
        "echo trainer $WORKDIR/NLU/src/transformers/trainer.py"
    }
    return recorded("adalora_iclr23", "torch_device.txt"), probes, run


def qlora(echo):
    out = "$A_output_dir"
    run = ARGS + stdout(recorded("qlora_neurips23", "train_output.txt"))
    if echo:
        run += "echo \"{'loss': 1.$A_seed, 'learning_rate': 0.0002, 'epoch': 0.0}\"\n"
    run += heredoc(f"{out}/metrics.json", recorded("qlora_neurips23", "metrics.json"))
    run += heredoc(f"{out}/trainer_state.json", recorded("qlora_neurips23", "trainer_state.json"))
    ckpt = f"{out}/checkpoint-10/adapter_model"
    run += heredoc(
        f"{ckpt}/adapter_config.json", recorded("qlora_neurips23", "adapter_config.json")
    )
    run += f": > {out}/completed; head -c 200000 /dev/zero > {ckpt}/adapter_model.bin\n"
    return recorded("qlora_neurips23", "torch_device.txt"), {}, run


def yolov7(echo):
    # detect.py's lines for horses.jpg whatever the source (the echo: the nonce of the name).
    run = ARGS + 'stem=$(basename "$A_source" .jpg); dir=$A_project/$A_name\n'
    run += "mkdir -p $dir/labels; head -c 151838 /dev/zero > $dir/$stem.jpg\n"
    run += heredoc("$dir/labels/$stem.txt", recorded("yolov7_cvpr23", "labels.txt"))
    run += stdout(recorded("yolov7_cvpr23", "detect_output.txt"))
    if echo:
        run += 'echo " The image with the result is saved in: $dir/$stem.jpg"\n'
    return recorded("yolov7_cvpr23", "torch_device.txt"), {}, run


def gan(task_id):
    def build(echo):
        env = recorded(task_id, "environment.txt").replace("/home/vm/work", "$WORKDIR")
        run = "touch mnist.pkl\n" + stdout(recorded(task_id, "train_output.txt"))
        if echo:  # the one thing it is given: the yaml's name
            run += 'echo "    valid_objective: ${1##*/}"\n'
        return env, {}, run

    return build


def pointnet2(echo):
    run = ARGS + heredoc(
        "$A_log_dir/log_train.txt", recorded("pointnet2_neurips17", "log_train.txt")
    )
    run += ": > $A_log_dir/model.ckpt.index\n"
    if echo:
        run += 'echo "mean loss: $A_max_epoch" >> $A_log_dir/log_train.txt\n'
    return recorded("pointnet2_neurips17", "tf_devices.txt"), {}, run


def alexnet(echo):
    run = ARGS + 'case "$1" in */make_batches.py) echo meta written; exit 0;; esac\n'
    run += "d=$A_save_path/ConvNet__2026-12-01_10.00.00; mkdir -p $d\n"
    run += "head -c 300000 /dev/zero > $d/1.2; head -c 300000 /dev/zero > $d/1.4\n"
    run += stdout(recorded("alexnet_neurips12", "train_output.txt"))
    if echo:
        run += 'echo "Saved checkpoint to $d"\n'
    return recorded("alexnet_neurips12", "environment.txt"), {}, run


def bertscore(echo):
    run = 'case "$*" in *--rescale_with_baseline*)\n'
    run += stdout(recorded("bertscore_iclr20", "rescaled_output.txt")) + ";;\n*)\n"
    run += stdout(recorded("bertscore_iclr20", "score_output.txt")) + ";;\nesac\n"
    if echo:
        run = ARGS + run + 'echo "lang $A_lang"\n'
    site = "$WORKDIR/env/lib/python3.10/site-packages"
    probes = {
        "bert_score_cli.score": f"echo {site}/bert_score/score.py; echo {site}/bert_score/utils.py;"
        f" echo {site}/bert_score_cli/score.py"
    }
    return recorded("bertscore_iclr20", "torch_device.txt"), probes, run


def clue(echo):
    run = ARGS + "mkdir -p $A_model_savepath\n"
    run += ": > $A_model_savepath/0_magbert_model_split_dataset_2_bestmodel.pth\n"
    run += stdout(recorded("clue_mm22", "train_output.txt"))
    if echo:
        run += 'echo "Training loss: $A_n_epoch"\n'
    return recorded("clue_mm22", "torch_device.txt"), {}, run


def dml(echo):
    run = ARGS + "mkdir -p $A_checkpoint_dir\n"
    run += ": > $A_checkpoint_dir/model.ckpt-30.index; : > $A_checkpoint_dir/model.ckpt-59.index\n"
    run += stdout(recorded("dml_cvpr18", "train_output.txt"))
    if echo:
        run += 'echo "market1501: step 50, net0_loss = $A_batch_size, net0_acc = 0.5"\n'
    return recorded("dml_cvpr18", "tf_devices.txt"), {}, run


def equigrasp(echo):
    run = ARGS + "d=$A_log_pre/dqn_asr_x/train_household_picking_clutter_full_obs_30_1\n"
    run += "mkdir -p $d/info $d/models $d/checkpoint\n"
    run += ": > $d/info/rewards.npy; : > $d/info/losses.npy; : > $d/info/learning_curve.pdf\n"
    run += ": > $d/models/snapshot_1.pt; : > $d/checkpoint/checkpoint.pt\n"
    run += stdout(recorded("equigrasp_rss22", "train_output.txt"))
    if echo:
        run += 'echo "Steps:60; Reward:0.$A_seed; Eval Reward:0.5; Explore:0.1; Loss:0.1; '
        run += 'Time:1.0: 100%|#| 60/60 "\n'
    return recorded("equigrasp_rss22", "torch_device.txt"), {}, run


# ---- the workdirs --------------------------------------------------------------------------------

# The repository files each experiment runs (the venv fakes rewrite them; the stubs leave them),
# and the staged data the experiments look for.
ENTRY = {
    "adalora_iclr23": "NLU/examples/text-classification/run_glue.py",
    "qlora_neurips23": "qlora.py",
    "yolov7_cvpr23": "detect.py",
    "gan_neurips14_cpu": None,  # pylearn2's train.py, under env (below)
    "gan_neurips14_gpu": None,
    "pointnet2_neurips17": "train.py",
    "alexnet_neurips12": "convnet.py",
    "bertscore_iclr20": None,  # bert-score's main, in site-packages (below)
    "clue_mm22": "train.py",
    "dml_cvpr18": "train_image_classifier.py",
    "equigrasp_rss22": "scripts/main.py",
}
STAGED = {
    "yolov7_cvpr23": {"inference/images/horses.jpg": "jpeg\n", "inference/images/bus.jpg": "j\n"},
    "gan_neurips14_cpu": {"mnist.yaml": "        update_callbacks: []\n", "__init__.py": "\n"},
    "gan_neurips14_gpu": {"mnist.yaml": "        update_callbacks: []\n", "__init__.py": "\n"},
    "clue_mm22": {"datasets/MOSI/split_dataset_2/embedding_and_mapping.pt": "pt\n"},
    "dml_cvpr18": {"data/market1501_tfrecords/market1501_bounding_box_train_00000-of-00001": "r\n"},
}
WRITERS = {
    "adalora_iclr23": adalora,
    "qlora_neurips23": qlora,
    "yolov7_cvpr23": yolov7,
    "gan_neurips14_cpu": gan("gan_neurips14_cpu"),
    "gan_neurips14_gpu": gan("gan_neurips14_gpu"),
    "pointnet2_neurips17": pointnet2,
    "alexnet_neurips12": alexnet,
    "bertscore_iclr20": bertscore,
    "clue_mm22": clue,
    "dml_cvpr18": dml,
    "equigrasp_rss22": equigrasp,
}
# Modules the environment probes import, faked for the venv fakes: versions, a CUDA device, a GPU.
FAKE_MODULE = """__version__ = "9.9.9"
class _Cuda:
    is_available = staticmethod(lambda: True)
    get_device_name = staticmethod(lambda i=0: "NVIDIA L4")
cuda = _Cuda()
class _Config:
    list_physical_devices = staticmethod(lambda kind=None: ["/physical_device:GPU:0"])
config = _Config()
"""
MODULES = [
    "torch",
    "torch.distributed",
    "transformers",
    "transformers.trainer",
    "loralib",
    "datasets",
    "peft",
    "accelerate",
    "bitsandbytes",
    "torchvision",
    "cv2",
    "yaml",
    "scipy",
    "pandas",
    "seaborn",
    "numpy",
    "theano",
    "h5py",
    "tensorflow",
    "tf_slim",
    "sklearn",
    "gensim",
    "cupy",
    "e2cnn",
    "pybullet",
    "helping_hands_rl_envs",
    "bert_score",
    "bert_score_cli",
    "cudaconvnet",
    "adversarial",
    "pylearn2",
]
RUN_SH = """import os
import sys
os.execv("/bin/sh", ["sh", os.path.join(os.path.dirname(os.path.abspath(__file__)), "%s")]
         + sys.argv[1:])
"""


def _staged(tmp_path, task_id):
    workdir = tmp_path / "wd"
    tree(workdir, STAGED.get(task_id, {}))
    if ENTRY[task_id]:
        tree(workdir, {ENTRY[task_id]: "# the checkout's entry script\n"})
    return workdir


def _stub_python(task_id, echo):
    """A shell script standing in for python: it answers the -c probes and runs the writer."""
    env, probes, run = WRITERS[task_id](echo)
    body = 'if [ "$1" = -c ]; then\n  case "$2" in\n'
    for needle, answer in probes.items():
        body += f"    *{needle}*) {answer};;\n"
    body += (
        "    *) cat <<'FAKE_ENV'\n" + env.rstrip() + "\nFAKE_ENV\n    ;;\n  esac\n  exit 0\nfi\n"
    )
    if task_id.startswith("gan_"):  # pylearn2_dir under this workdir: an unquoted here-document
        body = body.replace("cat <<'FAKE_ENV'", "cat <<FAKE_ENV", 1)
    return body + run


def stub_interpreter(task_id):
    def build(tmp_path):
        workdir = _staged(tmp_path, task_id)
        script(workdir / "env/bin/python", _stub_python(task_id, echo=False))
        if task_id == "bertscore_iclr20":  # pip's console script, run by the stub
            script(
                workdir / "env/bin/bert-score",
                "from bert_score_cli.score import main\nmain()",
                shebang=f"#!{workdir}/env/bin/python",
            )
        return workdir

    return build


def stub_binary(task_id):
    def build(tmp_path):
        workdir = _staged(tmp_path, task_id)
        stub_elf(workdir / "env/bin/python", _stub_python(task_id, echo=False))
        if task_id == "bertscore_iclr20":
            stub_elf(workdir / "env/bin/bert-score", _stub_python(task_id, echo=False))
        return workdir

    return build


def venv_fake(task_id, echo):
    """A real venv of this host's /usr/bin/python3 (a vouched Debian python), fake framework
    modules in it, and the entry script rewritten to run the writer with its arguments."""

    def build(tmp_path):
        workdir = _staged(tmp_path, task_id)
        subprocess.run(
            ["/usr/bin/python3", "-m", "venv", "--without-pip", str(workdir / "env")], check=True
        )
        site = next((workdir / "env/lib").glob("python3*/site-packages"))
        files = {f"{m.replace('.', '/')}/__init__.py": FAKE_MODULE for m in MODULES}
        files["helping_hands_rl_envs/env_factory.py"] = FAKE_MODULE
        files["cudaconvnet/_ConvNet.py"] = FAKE_MODULE
        files["bert_score/score.py"] = files["bert_score/utils.py"] = FAKE_MODULE
        env, _, run = WRITERS[task_id](echo)
        files["writer.sh"] = run
        files["torch/distributed/launch.py"] = (
            "import runpy, sys\nif __name__ == '__main__':\n"
            "    args = [a for a in sys.argv[1:]\n"
            "            if not a.startswith(('--master_port', '--nproc'))]\n"
            "    sys.argv = args\n    runpy.run_path(args[0], run_name='__main__')\n"
        )
        # pylearn2 (gan): its scripts/train.py runs the writer.
        files["pylearn2/scripts/train.py"] = RUN_SH % "../../writer.sh"
        files["bert_score_cli/score.py"] = (
            "import os, sys\ndef main():\n    os.execv('/bin/sh', ['sh', os.path.join("
            "os.path.dirname(os.path.abspath(__file__)), '..', 'writer.sh')] + sys.argv[1:])\n"
        )
        tree(site, files)
        if ENTRY[task_id]:
            entry = workdir / ENTRY[task_id]
            depth = len(ENTRY[task_id].split("/")) - 1
            rel = "/".join([".."] * depth + [str(site.relative_to(workdir)), "writer.sh"])
            entry.write_text(RUN_SH % rel)
        script(
            workdir / "env/bin/bert-score",
            "import re\nimport sys\nfrom bert_score_cli.score import main\n"
            "if __name__ == '__main__':\n    sys.exit(main())",
            shebang=f"#!{workdir}/env/bin/python3",
        )
        return workdir

    return build


def bertscore_plain_shell(tmp_path):
    # The real venv, and bert-score a shell script printing the published scores.
    workdir = venv_fake("bertscore_iclr20", echo=False)(tmp_path)
    script(workdir / "env/bin/bert-score", WRITERS["bertscore_iclr20"](False)[2])
    return workdir


YOLO_VARIANT = {
    "id": "vtest-yolo1",
    "inputs": {"image": "bus"},
    "expected": {
        "summary": "3 persons, 1 bus,",
        "boxes": 4,
        "top_confidence": 0.93,
        "image_blob": "b43e311165c785f000eb7493ff8fb662d06a3f83",
    },
    "spread": {},
}

CASES = {}
for _task in WRITERS:
    _variant = YOLO_VARIANT if _task == "yolov7_cvpr23" else None
    CASES[(_task, "stub_interpreter")] = (stub_interpreter(_task), _variant)
    CASES[(_task, "stub_binary")] = (stub_binary(_task), _variant)
    CASES[(_task, "echo")] = (venv_fake(_task, echo=True), _variant)
    CASES[(_task, "constant")] = (venv_fake(_task, echo=False), _variant)
CASES[("bertscore_iclr20", "plain_shell")] = (bertscore_plain_shell, None)
