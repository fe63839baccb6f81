# Layer 2 experiment of yolov7_cvpr23 (hidden from the agent), after experiment_lib.sh.
#
# Runs the README's inference command (detect.py --weights yolov7.pt --conf 0.25 --img-size 640)
# with the agent's environment ($WORKDIR/env/bin/python), as the owner of WORKDIR, ON GPU 0
# (--device 0: select_device asserts CUDA and logs "CUDA:0 (<name>, <MB>MB)"), on a copy of the
# shipped inference/images/horses.jpg under a fresh name, into a fresh --project folder in
# SCRATCH, with --save-txt --save-conf so the detections themselves are collected (COCO class 17 is
# horse). Nothing an earlier run left in runs/detect can be taken for this run's output. While it
# runs, nvidia-smi's list of compute processes is sampled every second. checks.yaml judges the
# collected files on the controller. RUNBOOK.MD is never read.
#
# A second detect.py run (at most 100 s: the model loads again, one image) takes the shipped
# image the controller drew ($VARIANT_IMAGE, one of inference/images/) under another fresh name:
# its class summary, box count, top confidence and the image's blob are the variant's results,
# compared with what real runs of the reference gave for that image (the operator's bank).
# horses.jpg alone was a file the agent could run beforehand and replay.
PY_ENV="$WORKDIR/env/bin/python"
# What runs is what is judged: the interpreter, vouched (a wrapper script, or a launcher ELF in its
# place, shows as such in runtime.txt), and the repository's files the run executes, pinned to
# their blobs (an entry script rewritten to print the expected lines shows in pinned.txt).
vouch python "$PY_ENV"
# A .pth or sitecustomize no installer made can swap the run under the vouched python and the
# pinned files: the start-up hooks that python reads, and who vouches for each (hooks.txt).
py_hooks_of "$PY_ENV"
pinned detect.py models/yolo.py models/common.py models/experimental.py utils/general.py \
  inference/images/horses.jpg
# The drawn image (a word of checks.yaml's choice list; horses without a variant).
IMAGE=${VARIANT_IMAGE:-horses}
NVSMI_PATH=$SYSTEM_PATH
NONCE=$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n')
mkdir -p "$SCRATCH/src" && chown "$OWNER" "$SCRATCH/src"
cp "$WORKDIR/inference/images/horses.jpg" "$SCRATCH/src/h$NONCE.jpg" 2>/dev/null
echo "h$NONCE" >"$LOG_DIR/image_name.txt"
mkdir -p "$SCRATCH/drawn" && chown "$OWNER" "$SCRATCH/drawn"
cp "$WORKDIR/inference/images/$IMAGE.jpg" "$SCRATCH/drawn/d$NONCE.jpg" 2>/dev/null
echo "$IMAGE $(blob_of "$WORKDIR/inference/images/$IMAGE.jpg")" >"$LOG_DIR/drawn_image.txt"

{
  echo "== environment: $PY_ENV"
  cd "$WORKDIR" && rc_of environment as_owner "$PY_ENV" -c 'import sys, torch, torchvision, cv2, yaml, scipy, pandas, seaborn; print(sys.version.split()[0], "torch", torch.__version__); print("cuda_available", torch.cuda.is_available())' >"$SCRATCH/env.out" 2>&1
  cat "$SCRATCH/env.out"
  echo "exit code: $(cat "$LOG_DIR/environment.rc")"
} >"$LOG_DIR/01_environment.log" 2>&1
collect "$SCRATCH/env.out" torch_device.txt
# Only nvidia-smi's standard output is kept: a missing nvidia-smi leaves these files empty.
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
  echo "== experiment: env/bin/python detect.py --weights yolov7.pt --conf 0.25 --img-size 640 --source <copy of horses.jpg> --device 0 --save-txt --save-conf"
  cd "$WORKDIR" && rc_of detect as_owner timeout 480 "$PY_ENV" detect.py --weights yolov7.pt \
    --conf 0.25 --img-size 640 --source "$SCRATCH/src/h$NONCE.jpg" --device 0 \
    --save-txt --save-conf --project "$SCRATCH/detect" --name exp --exist-ok >"$SCRATCH/detect.out" 2>&1
  collect "$SCRATCH/detect.out" detect_output.txt
  tail -c 20000 "$SCRATCH/detect.out"
  echo "exit code: $(cat "$LOG_DIR/detect.rc")"
  echo "== experiment: the same on the drawn image ($IMAGE.jpg, copied as d$NONCE.jpg)"
  cd "$WORKDIR" && rc_of drawn as_owner timeout 100 "$PY_ENV" detect.py --weights yolov7.pt \
    --conf 0.25 --img-size 640 --source "$SCRATCH/drawn/d$NONCE.jpg" --device 0 \
    --save-txt --save-conf --project "$SCRATCH/detect" --name drawn --exist-ok >"$SCRATCH/drawn.out" 2>&1
  collect "$SCRATCH/drawn.out" drawn_output.txt
  tail -c 5000 "$SCRATCH/drawn.out"
  echo "exit code: $(cat "$LOG_DIR/drawn.rc")"
} >"$LOG_DIR/02_experiment.log" 2>&1

kill "$SAMPLER" 2>/dev/null
wait "$SAMPLER" 2>/dev/null
collect "$SCRATCH/gpu_apps.txt" gpu_apps.txt
collect "$SCRATCH/detect/exp/labels/h$NONCE.txt" labels.txt
(cd "$SCRATCH/detect/exp" 2>/dev/null && find . -name "h$NONCE.*" -type f -exec ls -l {} \;) >"$LOG_DIR/artifacts.txt" 2>&1
# The drawn image's detections: how many, and the highest confidence (the sixth field of
# --save-conf's label lines; none written: 0 and 0).
cat "$SCRATCH/detect/drawn/labels/d$NONCE.txt" 2>/dev/null |
  awk '{ n++; if ($6 > top) top = $6 } END { printf "boxes %d\ntop_confidence %s\n", n, top + 0 }' \
    >"$LOG_DIR/drawn_labels.txt"
