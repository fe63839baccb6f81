# Layer 2 experiment of simclr_icml20 (hidden from the agent), after experiment_lib.sh.
#
# Runs the README's single-GPU CIFAR-10 pretraining (run.py, train_then_eval) with the agent's
# environment ($WORKDIR/env/bin/python), as the owner of WORKDIR, cut to 200 steps, with
# --model_dir a fresh folder in SCRATCH (only what is written now is seen). CIFAR-10 comes
# through tensorflow_datasets (the owner's ~/tensorflow_datasets, or downloaded by run.py). A GPU
# task: nvidia-smi's compute processes are sampled every 2 s while it trains and TensorFlow's GPU
# list is collected. result.json, result_200.json, flags.json and the model_dir listing are
# collected; checks.yaml judges them. RUNBOOK.MD is never read.
PY_ENV="$WORKDIR/env/bin/python"
MODEL_DIR="$SCRATCH/simclr_test"

# The python that pretrains, vouched: a wrapper script or an ELF no Debian package lists,
# writing result.json, shows in runtime.txt (the reference's env is `python3 -m venv`).
vouch python "$PY_ENV"
# A .pth or sitecustomize no installer made can swap the run under the vouched python and the
# pinned files: the start-up hooks that python reads, and who vouches for each (hooks.txt).
py_hooks_of "$PY_ENV"
# run.py and every module it imports from the checkout (the reference runs them unchanged).
pinned run.py resnet.py data.py data_util.py model.py model_util.py objective.py lars_optimizer.py

{
  echo "== environment: $PY_ENV"
  cd "$WORKDIR" && rc_of environment as_owner "$PY_ENV" -c 'import sys, numpy, tensorflow as tf, tensorflow_datasets, tensorflow_hub; print(sys.version.split()[0], "numpy", numpy.__version__, "tensorflow", tf.__version__); print("gpus", len(tf.config.list_physical_devices("GPU")))' >"$SCRATCH/env.out" 2>&1
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
  echo "== pretraining: env/bin/python run.py (README's CIFAR-10 flags, 200 steps, train_then_eval)"
  cd "$WORKDIR" && rc_of train as_owner timeout 2400 "$PY_ENV" run.py --train_mode=pretrain \
    --train_batch_size=512 --train_steps=200 --learning_rate=1.0 --weight_decay=1e-4 \
    --temperature=0.5 --dataset=cifar10 --image_size=32 --eval_split=test --resnet_depth=18 \
    --use_blur=False --color_jitter_strength=0.5 --model_dir="$MODEL_DIR" --use_tpu=False \
    --mode=train_then_eval >"$SCRATCH/train.out" 2>&1
  tail -c 20000 "$SCRATCH/train.out"
  echo "exit code: $(cat "$LOG_DIR/train.rc")"
} >"$LOG_DIR/02_train.log" 2>&1

kill "$SAMPLER" 2>/dev/null
collect "$SCRATCH/gpu_apps.txt" gpu_apps.txt
collect "$MODEL_DIR/result.json" result.json
collect "$MODEL_DIR/result_200.json" result_200.json
collect "$MODEL_DIR/flags.json" flags.json
ls -l "$MODEL_DIR" >"$LOG_DIR/model_dir.txt" 2>&1
