# Layer 2 experiment of hyena_icml23 (hidden from the agent), after experiment_lib.sh.
#
# Runs the quick Hyena associative-recall synthetic of experiments.md (vocabulary 10, sequence
# length 256, 2,000 training and 200 test examples, 10 epochs) with the agent's environment
# ($WORKDIR/env/bin/python -m train), as the owner of WORKDIR, ON THE GPU: trainer.accelerator=gpu
# is passed explicitly, so an environment that only runs on the CPU fails here (only the CPU
# validation asks for the CPU). While it trains,
# nvidia-smi's list of compute processes is sampled every 2 s. The Hydra run folder is a fresh one
# in SCRATCH, so only this run's checkpoints are seen. checks.yaml judges the collected files on
# the controller (a GPU task passes only with GPU evidence). RUNBOOK.MD is never read.
# One seed, the controller's draw ($VARIANT_SEED, checks.yaml's variants) or else one drawn here,
# is both the data's (dataset.seed: the associative-recall examples synthetics.py generates) and
# the training's (train.seed: train.py's seed_everything, the initial weights, dropout and the
# batches' order); the config's own are 0 and 0, so without it every run would learn the same
# examples from the same start. The dataset's config names no seed (the class's default, 0, is
# used), so Hydra is told to add or override it (`++`).
PY_ENV="$WORKDIR/env/bin/python"
RUN_DIR="$SCRATCH/run"
# CPU_ONLY is written by the controller into this script (1 only in the CPU validation of the
# task, whose judgment leaves out the GPU checks); there the device asked for is the CPU.
ACCELERATOR=gpu
[ "$CPU_ONLY" = 1 ] && ACCELERATOR=cpu
NVSMI_PATH=$SYSTEM_PATH
# The hidden seed: the controller's draw, else one drawn here (no bank then).
SEED=${VARIANT_SEED:-$(($(rand_below 99999) + 1))}

# The python that trains, vouched (a wrapper script, or an ELF no Debian package lists, shows in
# runtime.txt), and the start-up hooks it would run (a .pth or sitecustomize swapping the
# run leaves the python and the repository as they were): hooks.txt.
vouch python "$PY_ENV"
py_hooks_of "$PY_ENV"
# train.py, the Hyena operator and the model around it, the associative-recall data, the task's
# metrics and the experiment's configs, as at the pinned commit.
pinned train.py src/models/sequence/hyena.py src/models/sequence/simple_lm.py \
  src/dataloaders/synthetics.py src/dataloaders/base.py src/dataloaders/__init__.py \
  src/tasks/decoders.py src/tasks/encoders.py src/tasks/metrics.py src/tasks/torchmetrics.py \
  src/utils/train.py src/utils/registry.py src/utils/optim_groups.py src/models/nn/utils.py \
  configs/experiment/synthetics/associative_recall/hyena-131k-30vs.yaml \
  configs/experiment/synthetics/associative_recall/base.yaml
# src/tasks/tasks.py with the reference setup's CPU port put back (only its CPU validation makes
# it: the metrics' hard-coded .to('cuda') follow the device torch has); anything else changed
# shows in its blob id.
if [ -f "$WORKDIR/src/tasks/tasks.py" ] && [ ! -L "$WORKDIR/src/tasks/tasks.py" ]; then
  sed "s/\.to('cuda' if torch\.cuda\.is_available() else 'cpu')/.to('cuda')/g" \
    "$WORKDIR/src/tasks/tasks.py" >"$SCRATCH/tasks_as_pinned.py"
  echo "src/tasks/tasks.py(port-as-pinned) $(blob_of "$SCRATCH/tasks_as_pinned.py")"
else
  echo "src/tasks/tasks.py(port-as-pinned) missing"
fi >>"$LOG_DIR/pinned.txt"

{
  echo "== environment: $PY_ENV"
  cd "$WORKDIR" && rc_of environment as_owner "$PY_ENV" -c 'import sys, torch, torchvision, torchtext, pytorch_lightning, hydra; print(sys.version.split()[0], "torch", torch.__version__, "lightning", pytorch_lightning.__version__); print("cuda_available", torch.cuda.is_available()); print("device", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")' >"$SCRATCH/env.out" 2>&1
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
    sleep 2
  done
}
sample_gpu &
SAMPLER=$!

{
  echo "== experiment: env/bin/python -m train experiment=synthetics/associative_recall/hyena-131k-30vs (quick form) trainer.accelerator=$ACCELERATOR wandb=null, seeded with $SEED"
  cd "$WORKDIR" && rc_of train as_owner timeout 1500 "$PY_ENV" -m train \
    experiment=synthetics/associative_recall/hyena-131k-30vs \
    dataset.input_seq_len=256 dataset.vocab_size=10 dataset.num_examples=2000 \
    dataset.num_test_examples=200 "++dataset.seed=$SEED" "train.seed=$SEED" \
    trainer.max_epochs=10 trainer.accelerator=$ACCELERATOR \
    trainer.devices=1 wandb=null "hydra.run.dir=$RUN_DIR" >"$SCRATCH/train.out" 2>&1
  collect "$SCRATCH/train.out" train_output.txt
  tail -c 20000 "$SCRATCH/train.out"
  echo "exit code: $(cat "$LOG_DIR/train.rc")"
} >"$LOG_DIR/02_experiment.log" 2>&1

kill "$SAMPLER" 2>/dev/null
wait "$SAMPLER" 2>/dev/null
collect "$SCRATCH/gpu_apps.txt" gpu_apps.txt
(cd "$RUN_DIR" 2>/dev/null && find checkpoints -type f -exec ls -l {} \;) >"$LOG_DIR/checkpoints.txt" 2>&1
