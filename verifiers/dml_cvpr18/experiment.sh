# Layer 2 experiment of dml_cvpr18 (hidden from the agent), after experiment_lib.sh.
#
# Runs train_dml_mobilenet_on_market.sh's command (two MobileNets trained with DML, 751 classes)
# with the agent's environment ($WORKDIR/env/bin/python) on the agent's Market-1501 TFRecords, as
# the owner of WORKDIR, cut to 60 steps with a checkpoint every 30, into a fresh checkpoint and log
# folder in SCRATCH (only what is written now is seen). The TFRecords folder is the first one under
# WORKDIR or the owner's home holding market1501_bounding_box_train*.tfrecord files. A GPU task:
# train_models.py puts the towers on /gpu:N; nvidia-smi's compute processes are sampled every 2 s
# and TensorFlow's GPU list is collected. checks.yaml judges the output. RUNBOOK.MD is never read.
PY_ENV="$WORKDIR/env/bin/python"
# What runs is what is judged: the interpreter, vouched (a wrapper script, or a launcher ELF in its
# place, shows as such in runtime.txt), and the repository's files the run executes, pinned to
# their blobs (an entry script rewritten to print the expected lines shows in pinned.txt).
vouch python "$PY_ENV"
# A .pth or sitecustomize no installer made can swap the run under the vouched python and the
# pinned files: the start-up hooks that python reads, and who vouches for each (hooks.txt).
py_hooks_of "$PY_ENV"
pinned train_image_classifier.py train_models.py
HOME_DIR=$(awk -F: -v u="$OWNER" '$1 == u { print $6 }' /etc/passwd)
record=$(find "$WORKDIR" "$HOME_DIR" -maxdepth 5 -name 'market1501_bounding_box_train*' -path '*tfrecord*' 2>/dev/null | head -n 1)
TF_DIR=$(dirname "${record:-/nonexistent/x}")
echo "$TF_DIR" >"$LOG_DIR/tfrecords_dir.txt"
ls "$TF_DIR" 2>&1 | head -n 20 >>"$LOG_DIR/tfrecords_dir.txt"

{
  echo "== environment: $PY_ENV"
  cd "$WORKDIR" && rc_of environment as_owner "$PY_ENV" -c 'import sys, numpy, tensorflow as tf, tf_slim; print(sys.version.split()[0], "numpy", numpy.__version__, "tensorflow", tf.__version__); print("gpus", len(tf.config.list_physical_devices("GPU")))' >"$SCRATCH/env.out" 2>&1
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
  echo "== training: env/bin/python train_image_classifier.py (DML, 2 x mobilenet_v1, 60 steps)"
  cd "$WORKDIR" && rc_of train as_owner timeout 1500 "$PY_ENV" train_image_classifier.py \
    --dataset_name=market1501 --split_name=bounding_box_train --dataset_dir="$TF_DIR" \
    --checkpoint_dir="$SCRATCH/checkpoint" --log_dir="$SCRATCH/logs" \
    --model_name=mobilenet_v1,mobilenet_v1 --preprocessing_name=reid \
    --max_number_of_steps=60 --ckpt_steps=30 --batch_size=16 --num_classes=751 \
    --optimizer=adam --learning_rate=0.0002 --adam_beta1=0.5 --opt_epsilon=1e-8 \
    --label_smoothing=0.1 --num_networks=2 >"$SCRATCH/train.out" 2>&1
  collect "$SCRATCH/train.out" train_output.txt
  tail -c 20000 "$SCRATCH/train.out"
  echo "exit code: $(cat "$LOG_DIR/train.rc")"
} >"$LOG_DIR/02_train.log" 2>&1

kill "$SAMPLER" 2>/dev/null
collect "$SCRATCH/gpu_apps.txt" gpu_apps.txt
ls -l "$SCRATCH/checkpoint" >"$LOG_DIR/checkpoints.txt" 2>&1
