# Layer 2 experiment of ergo_coling22 (hidden from the agent), after experiment_lib.sh.
#
# Runs the README's command (python train.py --num_heads 4 --dropout_att 0.1 --dropout_emb 0.3)
# with the agent's environment ($WORKDIR/env/bin/python), as the owner of WORKDIR, cut to one
# epoch and two folds, on the cached EventStoryLine features in data/cached_eci and
# ./ckpts/longformer-base-4096 (the README's layout), with a fold-split seed drawn here, into a
# fresh --output_dir in SCRATCH (only this run's log.txt is seen). train.py takes the GPU when
# torch has CUDA. While it trains, nvidia-smi's compute processes are sampled every 2 s.
# checks.yaml judges the collected files on the controller. RUNBOOK.MD is never read.
PY_ENV="$WORKDIR/env/bin/python"
OUT="$SCRATCH/outputs_res"
SEED=$(($(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 1000 + 1))

# The python that runs train.py, vouched: a wrapper script or an ELF no Debian package lists,
# printing the log, shows in runtime.txt (the reference's env is `python3 -m venv`, Debian's).
vouch python "$PY_ENV"
# A .pth or sitecustomize no installer made can swap the run under the vouched python and the
# pinned files: the start-up hooks that python reads, and who vouches for each (hooks.txt).
py_hooks_of "$PY_ENV"
# The modules train.py imports, as at the pinned commit.
pinned model.py processor.py utils.py processor_esl.py
# train.py itself, with its one import line put back as the commit has it: the fix every run
# needs (the commit imports processor_esl, which it lacks) may name processor or add
# processor_esl.py (then pinned above: a copy of processor.py); anything else changed shows.
if [ -f "$WORKDIR/train.py" ] && [ ! -L "$WORKDIR/train.py" ]; then
  sed -E 's/^from processor(_esl)? import ESL_processor( .*)?$/from processor_esl import ESL_processor/' \
    "$WORKDIR/train.py" >"$SCRATCH/train_import_as_pinned.py"
  echo "train.py(import-as-pinned) $(blob_of "$SCRATCH/train_import_as_pinned.py")" >>"$LOG_DIR/pinned.txt"
else
  echo "train.py(import-as-pinned) missing" >>"$LOG_DIR/pinned.txt"
fi

{
  echo "== environment: $PY_ENV"
  cd "$WORKDIR" && rc_of environment as_owner "$PY_ENV" -c 'import sys, torch, transformers, sklearn, lxml; print(sys.version.split()[0], "torch", torch.__version__, "transformers", transformers.__version__); print("cuda_available", torch.cuda.is_available()); print("device", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")' >"$SCRATCH/env.out" 2>&1
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
  echo "== experiment: python train.py --num_heads 4 --dropout_att 0.1 --dropout_emb 0.3 --epoch 1 --k_fold 2 --seed $SEED"
  cd "$WORKDIR" && rc_of train as_owner timeout 2400 "$PY_ENV" train.py --num_heads 4 \
    --dropout_att 0.1 --dropout_emb 0.3 --epoch 1 --k_fold 2 --seed "$SEED" \
    --output_dir "$OUT" >"$SCRATCH/train.out" 2>&1
  collect "$SCRATCH/train.out" train_output.txt
  tail -c 20000 "$SCRATCH/train.out"
  echo "exit code: $(cat "$LOG_DIR/train.rc")"
} >"$LOG_DIR/02_experiment.log" 2>&1

kill "$SAMPLER" 2>/dev/null
wait "$SAMPLER" 2>/dev/null
collect "$SCRATCH/gpu_apps.txt" gpu_apps.txt
collect "$OUT/log.txt" run_log.txt
