# Layer 2 experiment of pointnet2_neurips17 (hidden from the agent), after experiment_lib.sh.
#
# Runs the README's classification training (train.py --model pointnet2_cls_ssg) with the agent's
# environment ($WORKDIR/env/bin/python), the agent's compiled tf_ops and data/modelnet40_ply_hdf5_2048,
# as the owner of WORKDIR, for one epoch, with --log_dir a fresh folder in SCRATCH (only what is
# written now is seen; train.py writes log_train.txt and model.ckpt there). A GPU task: the
# sampling and grouping ops have GPU kernels only, nvidia-smi's compute processes are sampled every
# 2 s while it trains, and TensorFlow's GPU list is collected. checks.yaml judges the output.
# RUNBOOK.MD is never read.
PY_ENV="$WORKDIR/env/bin/python"
# What runs is what is judged: the interpreter, vouched (a wrapper script, or a launcher ELF in its
# place, shows as such in runtime.txt), and the repository's files the run executes, pinned to
# their blobs (an entry script rewritten to print the expected lines shows in pinned.txt).
vouch python "$PY_ENV"
# A .pth or sitecustomize no installer made can swap the run under the vouched python and the
# pinned files: the start-up hooks that python reads, and who vouches for each (hooks.txt).
py_hooks_of "$PY_ENV"
pinned train.py models/pointnet2_cls_ssg.py
RUN_LOG="$SCRATCH/log"

{
  echo "== environment: $PY_ENV"
  cd "$WORKDIR" && rc_of environment as_owner "$PY_ENV" -c 'import sys, numpy, h5py, tensorflow as tf; print(sys.version.split()[0], "numpy", numpy.__version__, "tensorflow", tf.__version__); print("gpus", len(tf.config.list_physical_devices("GPU")))' >"$SCRATCH/env.out" 2>&1
  cat "$SCRATCH/env.out"
  echo "exit code: $(cat "$LOG_DIR/environment.rc")"
} >"$LOG_DIR/01_environment.log" 2>&1
collect "$SCRATCH/env.out" tf_devices.txt
# Only nvidia-smi's standard output is kept: a missing nvidia-smi leaves these files empty.
PATH=$SYSTEM_PATH timeout 30 nvidia-smi -L >"$LOG_DIR/gpus.txt" 2>/dev/null
: >"$SCRATCH/gpu_apps.txt"
sample_gpu() {
  while :; do
    PATH=$SYSTEM_PATH timeout 10 nvidia-smi --query-compute-apps=pid,process_name,used_memory \
      --format=csv,noheader >>"$SCRATCH/gpu_apps.txt" 2>/dev/null
    sleep 2
  done
}
sample_gpu &
SAMPLER=$!

{
  echo "== training: env/bin/python train.py --model pointnet2_cls_ssg --log_dir $RUN_LOG --max_epoch 1"
  cd "$WORKDIR" && rc_of train as_owner timeout 1800 "$PY_ENV" train.py --model pointnet2_cls_ssg \
    --log_dir "$RUN_LOG" --max_epoch 1 >"$SCRATCH/train.out" 2>&1
  tail -c 20000 "$SCRATCH/train.out"
  echo "exit code: $(cat "$LOG_DIR/train.rc")"
} >"$LOG_DIR/02_train.log" 2>&1

kill "$SAMPLER" 2>/dev/null
collect "$SCRATCH/gpu_apps.txt" gpu_apps.txt
collect "$RUN_LOG/log_train.txt" log_train.txt
ls -l "$RUN_LOG" >"$LOG_DIR/checkpoints.txt" 2>&1
