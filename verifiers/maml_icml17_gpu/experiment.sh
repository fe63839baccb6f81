# Layer 2 experiment of maml_icml17_gpu (hidden from the agent), after experiment_lib.sh.
#
# Runs main.py's 5-way 1-shot Omniglot command with the agent's environment ($WORKDIR/env/bin/python)
# and the agent's resized Omniglot (data/omniglot_resized), as the owner of WORKDIR, cut to 600
# meta-iterations, with a fresh logdir in SCRATCH (only checkpoints written now are seen). A GPU
# task: TensorFlow's GPU list is collected and nvidia-smi's compute processes are sampled every
# 2 s while it trains. checks.yaml judges the output on the controller. RUNBOOK.MD is never read.
PY_ENV="$WORKDIR/env/bin/python"
LOGDIR="$SCRATCH/omniglot5way"
EXP=cls_5.mbs_32.ubs_1.numstep1.updatelr0.4batchnorm
TRAIN_ARGS="--datasource=omniglot --metatrain_iterations=600 --meta_batch_size=32 --update_batch_size=1 --update_lr=0.4 --num_updates=1 --logdir=$LOGDIR/"

# The python that meta-trains, vouched: a wrapper script or an ELF no Debian package lists,
# printing main.py's lines, shows in runtime.txt (the reference's env is `python3 -m venv`).
vouch python "$PY_ENV"
# A .pth or sitecustomize no installer made can swap the run under the vouched python and the
# pinned files: the start-up hooks that python reads, and who vouches for each (hooks.txt).
py_hooks_of "$PY_ENV"
# main.py (which prints the accuracies) and data_generator.py (which samples the Omniglot
# tasks), with their TensorFlow import put back as the commit has it: TensorFlow 2 needs
# `import tensorflow.compat.v1 as tf` and disable_v2_behavior() (or disable_eager_execution());
# any other change shows. maml.py and utils.py take edits of tf.contrib that differ between
# honest ports, so they are not pinned.
for rel in main.py data_generator.py; do
  if [ -f "$WORKDIR/$rel" ] && [ ! -L "$WORKDIR/$rel" ]; then
    sed -E -e '/^tf(\.compat\.v1)?\.(disable_v2_behavior|disable_eager_execution)\(\)$/d' \
      -e 's/^import tensorflow(\.compat\.v1)? as tf$/import tensorflow as tf/' \
      "$WORKDIR/$rel" >"$SCRATCH/tf1_import.py"
    echo "$rel(tf-import-as-pinned) $(blob_of "$SCRATCH/tf1_import.py")"
  else
    echo "$rel(tf-import-as-pinned) missing"
  fi
done >>"$LOG_DIR/pinned.txt"

{
  echo "== environment: $PY_ENV"
  cd "$WORKDIR" && rc_of environment as_owner "$PY_ENV" -c 'import sys, numpy, tensorflow as tf; print(sys.version.split()[0], "numpy", numpy.__version__, "tensorflow", tf.__version__); print("gpus", len(tf.config.list_physical_devices("GPU")))' >"$SCRATCH/env.out" 2>&1
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
  echo "== meta-training: env/bin/python main.py $TRAIN_ARGS"
  # shellcheck disable=SC2086 # TRAIN_ARGS is a list of flags without spaces
  cd "$WORKDIR" && rc_of train as_owner timeout 1500 "$PY_ENV" main.py $TRAIN_ARGS >"$SCRATCH/train.out" 2>&1
  collect "$SCRATCH/train.out" train_output.txt
  tail -c 20000 "$SCRATCH/train.out"
  echo "exit code: $(cat "$LOG_DIR/train.rc")"
} >"$LOG_DIR/02_train.log" 2>&1

kill "$SAMPLER" 2>/dev/null
collect "$SCRATCH/gpu_apps.txt" gpu_apps.txt
ls -l "$LOGDIR/$EXP" >"$LOG_DIR/checkpoints.txt" 2>&1
