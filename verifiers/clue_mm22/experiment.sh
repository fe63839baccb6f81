# Layer 2 experiment of clue_mm22 (hidden from the agent), after experiment_lib.sh.
#
# Trains CLUE over its default MAG-BERT base model on the authors' CMU-MOSI OOD split with the
# agent's environment ($WORKDIR/env/bin/python train.py), as the owner of WORKDIR, on GPU 0, for
# one epoch per seed (train.py always runs its three seeds 223, 123, 323). The split is wherever
# the agent put it under WORKDIR (the folder holding MOSI/split_dataset_2/embedding_and_mapping.pt
# is passed as --datapath); the checkpoints go to a fresh --model_savepath in SCRATCH, so only
# this run's are seen. While it trains, nvidia-smi's compute processes are sampled every 2 s.
# checks.yaml judges the collected files on the controller. RUNBOOK.MD is never read.
PY_ENV="$WORKDIR/env/bin/python"
# What runs is what is judged: the interpreter, vouched (a wrapper script, or a launcher ELF in its
# place, shows as such in runtime.txt), and the repository's files the run executes, pinned to
# their blobs (an entry script rewritten to print the expected lines shows in pinned.txt).
vouch python "$PY_ENV"
# A .pth or sitecustomize no installer made can swap the run under the vouched python and the
# pinned files: the start-up hooks that python reads, and who vouches for each (hooks.txt).
py_hooks_of "$PY_ENV"
pinned train.py models/causal_model.py
CKPT="$SCRATCH/checkpoints"
as_owner mkdir -p "$CKPT"
SPLIT=$(find "$WORKDIR" -path '*/MOSI/split_dataset_2/embedding_and_mapping.pt' 2>/dev/null | head -n 1)
DATAPATH=${SPLIT%/MOSI/split_dataset_2/embedding_and_mapping.pt}
echo "${SPLIT:-no MOSI/split_dataset_2/embedding_and_mapping.pt under the workdir}" >"$LOG_DIR/split.txt"

{
  echo "== environment: $PY_ENV"
  cd "$WORKDIR" && rc_of environment as_owner "$PY_ENV" -c 'import sys, torch, transformers, sklearn, gensim; print(sys.version.split()[0], "torch", torch.__version__, "transformers", transformers.__version__); print("cuda_available", torch.cuda.is_available()); print("device", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")' >"$SCRATCH/env.out" 2>&1
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
  echo "== experiment: python train.py --data mosi --dataset_name split_dataset_2 --datapath ${DATAPATH:-?} --gpu_id 0 --n_epoch 1"
  cd "$WORKDIR" && rc_of train as_owner timeout 2400 "$PY_ENV" train.py --data mosi \
    --dataset_name split_dataset_2 --datapath "${DATAPATH:-$WORKDIR/datasets}" --gpu_id 0 \
    --n_epoch 1 --model_savepath "$CKPT" >"$SCRATCH/train.out" 2>&1
  collect "$SCRATCH/train.out" train_output.txt
  tail -c 20000 "$SCRATCH/train.out"
  echo "exit code: $(cat "$LOG_DIR/train.rc")"
} >"$LOG_DIR/02_experiment.log" 2>&1

kill "$SAMPLER" 2>/dev/null
wait "$SAMPLER" 2>/dev/null
collect "$SCRATCH/gpu_apps.txt" gpu_apps.txt
(cd "$CKPT" 2>/dev/null && ls -l) >"$LOG_DIR/checkpoints.txt" 2>&1
