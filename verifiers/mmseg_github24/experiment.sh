# Layer 2 experiment of mmseg_github24 (hidden from the agent), after experiment_lib.sh.
#
# With the agent's environment ($WORKDIR/env/bin/python), as the owner of WORKDIR, on cuda:0:
#   1. docs/en/get_started.md's verification demo: demo/image_demo.py demo/demo.png with the
#      PSPNet R-50 Cityscapes config and the checkpoint mim download put in the workdir,
#      --device cuda:0, --out-file under a fresh name in SCRATCH;
#   2. a probe written here, which builds the same model with mmseg.apis.init_model on cuda:0,
#      segments demo/demo.png (mirrored left-right or not, drawn now, so no answer can be
#      prepared) with inference_model and prints the mask's shape, the share of each Cityscapes
#      class in it, the model's device, and whether mmcv's compiled ops (mmcv.ops, absent from
#      mmcv-lite) import.
# nvidia-smi's compute processes are sampled every second meanwhile. checks.yaml judges the
# collected files on the controller. RUNBOOK.MD is never read.
PY_ENV="$WORKDIR/env/bin/python"
NVSMI_PATH=$SYSTEM_PATH
CONFIG=configs/pspnet/pspnet_r50-d8_4xb2-40k_cityscapes-512x1024.py
CKPT=pspnet_r50-d8_512x1024_40k_cityscapes_20200605_003338-2966598c.pth

# The python that runs the demo and the probe, vouched: a wrapper script or an ELF no Debian
# package lists, printing classes, shows in runtime.txt (the reference's env is `python3 -m venv`).
# The repository's files are not pinned: no snapshot of the pinned commit could be read (see
# task.yaml), so their blob ids are unknown here.
vouch python "$PY_ENV"
# A .pth or sitecustomize no installer made can swap the run under the vouched python and the
# pinned files: the start-up hooks that python reads, and who vouches for each (hooks.txt).
py_hooks_of "$PY_ENV"
NONCE=$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n')
FLIP=$(($(od -An -tu1 -N1 /dev/urandom) % 2))
echo "$NONCE flip=$FLIP" >"$LOG_DIR/nonce.txt"
mkdir -p "$SCRATCH/out" && chown "$OWNER" "$SCRATCH/out"

cat >"$SCRATCH/probe.py" <<'PROBE'
import sys

import mmcv
import numpy as np

try:
    import mmcv.ops  # noqa: F401  (imported only to prove the compiled ops load)

    print("mmcv_ops loaded")
    import importlib

    print("mmcv_ext_file", importlib.import_module("mmcv._ext").__file__)
except Exception as exc:
    print("mmcv_ops missing", type(exc).__name__)
from mmseg.apis import inference_model, init_model

config, checkpoint, image_path, flip = sys.argv[1:5]
model = init_model(config, checkpoint, device="cuda:0")
print("device", next(model.parameters()).device)
image = mmcv.imread(image_path)
if flip == "1":
    image = mmcv.imflip(image, direction="horizontal")
result = inference_model(model, image)
mask = result.pred_sem_seg.data.cpu().numpy()[0]
print("shape", mask.shape[0], mask.shape[1], "image", image.shape[0], image.shape[1])
classes = model.dataset_meta["classes"]
counts = np.bincount(mask.ravel(), minlength=len(classes))
for index, count in enumerate(counts):
    if count / mask.size >= 0.01:
        print("class", classes[index].replace(" ", "_"), f"{count / mask.size:.4f}")
print("classes", int((counts / mask.size >= 0.01).sum()))
PROBE
chmod 644 "$SCRATCH/probe.py"

{
  echo "== environment: $PY_ENV"
  cd "$WORKDIR" && rc_of environment as_owner "$PY_ENV" -c 'import sys, torch, mmcv, mmengine, mmseg; print(sys.version.split()[0], "torch", torch.__version__, "mmcv", mmcv.__version__, "mmseg", mmseg.__version__); print("cuda_available", torch.cuda.is_available())' >"$SCRATCH/env.out" 2>&1
  cat "$SCRATCH/env.out"
  echo "exit code: $(cat "$LOG_DIR/environment.rc")"
} >"$LOG_DIR/01_environment.log" 2>&1
collect "$SCRATCH/env.out" torch_device.txt
PATH=$NVSMI_PATH timeout 30 nvidia-smi -L >"$LOG_DIR/gpus.txt" 2>/dev/null

: >"$SCRATCH/gpu_apps.txt"
sample_gpu() {
  while :; do
    PATH=$NVSMI_PATH timeout 10 nvidia-smi --query-compute-apps=pid,process_name,used_memory \
      --format=csv,noheader >>"$SCRATCH/gpu_apps.txt" 2>/dev/null
    sleep 1
  done
}
sample_gpu &
SAMPLER=$!

{
  echo "== demo: env/bin/python demo/image_demo.py demo/demo.png $CONFIG $CKPT --device cuda:0 --out-file <scratch>/r$NONCE.jpg"
  cd "$WORKDIR" && rc_of demo as_owner timeout 400 "$PY_ENV" demo/image_demo.py demo/demo.png \
    "$CONFIG" "$CKPT" --device cuda:0 --out-file "$SCRATCH/out/r$NONCE.jpg" >"$SCRATCH/demo.out" 2>&1
  collect "$SCRATCH/demo.out" demo_output.txt
  tail -c 10000 "$SCRATCH/demo.out"
  echo "exit code: $(cat "$LOG_DIR/demo.rc")"
} >"$LOG_DIR/02_demo.log" 2>&1
(cd "$SCRATCH/out" 2>/dev/null && find . -type f -exec ls -l {} \;) >"$LOG_DIR/demo_images.txt" 2>&1

{
  echo "== probe: mmseg.apis init_model/inference_model on cuda:0, demo/demo.png flip=$FLIP"
  cd "$WORKDIR" && rc_of probe as_owner timeout 400 "$PY_ENV" "$SCRATCH/probe.py" \
    "$CONFIG" "$CKPT" demo/demo.png "$FLIP" >"$SCRATCH/probe.out" 2>&1
  collect "$SCRATCH/probe.out" probe_output.txt
  tail -c 10000 "$SCRATCH/probe.out"
  echo "exit code: $(cat "$LOG_DIR/probe.rc")"
} >"$LOG_DIR/03_probe.log" 2>&1

kill "$SAMPLER" 2>/dev/null
wait "$SAMPLER" 2>/dev/null
# mmcv's compiled ops, as the probe imported them, searched for mmcv's own sources' strings
# (the same in 2.0.0 to 2.1.0): pybind.cpp's op names and a message of cudabind.cpp, which only
# a CUDA build compiles. A stand-in mmcv (mmcv-lite, or the attacker's) lacks them.
EXT=$(sed -n 's/^mmcv_ext_file //p' "$SCRATCH/probe.out" 2>/dev/null | head -n 1)
{
  echo "ext ${EXT:-none} magic $(head -c4 "${EXT:-/dev/null}" 2>/dev/null | od -An -tx1 | tr -d ' \n')"
  for text in 'upfirdn2d (CUDA)' get_compiler_version 'wrong roi size'; do
    if [ -n "$EXT" ] && has_text "$EXT" "$text"; then echo "text '$text': yes"; else echo "text '$text': no"; fi
  done
} >"$LOG_DIR/mmcv_ext.txt"
collect "$SCRATCH/gpu_apps.txt" gpu_apps.txt
