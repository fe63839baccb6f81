# Layer 2 experiment of mixtext_acl20 (hidden from the agent), after experiment_lib.sh.
#
# Runs the README's MixText command on one GPU, cut to one epoch of 20 iterations, with the
# agent's environment ($WORKDIR/env/bin/python ./code/train.py), as the owner of WORKDIR, on the
# agent's data/yahoo_answers_csv/ (train.csv, test.csv, de_1.pkl, ru_1.pkl). train.py moves the
# model and every batch to the GPU with .cuda() (no CPU path). While it trains, nvidia-smi's
# compute processes are sampled every 2 s. checks.yaml judges the collected files on the
# controller. RUNBOOK.MD is never read.
PY_ENV="$WORKDIR/env/bin/python"

# The python that trains, vouched: a wrapper script or an ELF no Debian package lists, printing
# train.py's lines, shows in runtime.txt (the reference's env is `python3 -m venv`).
vouch python "$PY_ENV"
# A .pth or sitecustomize no installer made can swap the run under the vouched python and the
# pinned files: the start-up hooks that python reads, and who vouches for each (hooks.txt).
py_hooks_of "$PY_ENV"
# train.py and the two modules it imports from code/ (the MixText model, the Yahoo reader).
pinned code/train.py code/mixtext.py code/read_data.py

{
  echo "== environment: $PY_ENV"
  cd "$WORKDIR" && rc_of environment as_owner "$PY_ENV" -c 'import sys, torch, pandas, pytorch_transformers; print(sys.version.split()[0], "torch", torch.__version__, "pytorch_transformers", pytorch_transformers.__version__); print("cuda_available", torch.cuda.is_available()); print("device", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")' >"$SCRATCH/env.out" 2>&1
  cat "$SCRATCH/env.out"
  echo "exit code: $(cat "$LOG_DIR/environment.rc")"
} >"$LOG_DIR/01_environment.log" 2>&1
collect "$SCRATCH/env.out" torch_device.txt
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
  echo "== experiment: python ./code/train.py --gpu 0 --n-labeled 10 --data-path ./data/yahoo_answers_csv/ --batch-size 4 --batch-size-u 8 --epochs 1 --val-iteration 20 --lambda-u 1 --T 0.5 --alpha 16 --mix-layers-set 7 9 12 --lrmain 0.000005 --lrlast 0.0005"
  cd "$WORKDIR" && rc_of train as_owner timeout 2400 "$PY_ENV" ./code/train.py --gpu 0 \
    --n-labeled 10 --data-path ./data/yahoo_answers_csv/ --batch-size 4 --batch-size-u 8 \
    --epochs 1 --val-iteration 20 --lambda-u 1 --T 0.5 --alpha 16 --mix-layers-set 7 9 12 \
    --lrmain 0.000005 --lrlast 0.0005 >"$SCRATCH/train.out" 2>&1
  collect "$SCRATCH/train.out" train_output.txt
  tail -c 20000 "$SCRATCH/train.out"
  echo "exit code: $(cat "$LOG_DIR/train.rc")"
} >"$LOG_DIR/02_experiment.log" 2>&1

kill "$SAMPLER" 2>/dev/null
wait "$SAMPLER" 2>/dev/null
collect "$SCRATCH/gpu_apps.txt" gpu_apps.txt
