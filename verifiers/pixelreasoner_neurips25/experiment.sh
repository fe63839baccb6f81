# Layer 2 experiment of pixelreasoner_neurips25 (hidden from the agent), after experiment_lib.sh.
#
# Evaluates TIGER-Lab/PixelReasoner-RL-v1 on a random slice of V* with the agent's install: the
# agent's curiosity_driven_rl/data/vstar.parquet (prepare.sh's output) is sampled here to 32
# questions (seed drawn here, with the agent's python and pandas) into SCRATCH, and
# curiosity_driven_rl/scripts/eval_vlm_new.sh runs on it as the owner of WORKDIR, with
# $WORKDIR/env/bin first on PATH, on one GPU (num_vllm=1, num_gpus=1, eval_bsz 8, MAX_PIXELS
# lowered for a 24 GB L4), under a fresh tag (only this run's logs/metrics_iter0.json and
# sample.eval_iter0*.jsonl are seen). Ray is stopped afterwards. While it runs, nvidia-smi's
# compute processes are sampled every 2 s. checks.yaml judges the collected files on the
# controller. RUNBOOK.MD is never read.
PY_ENV="$WORKDIR/env/bin/python"
RL="$WORKDIR/curiosity_driven_rl"
SEED=$(($(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 10000 + 1))
TAG="verify_$SEED"
SAVE="$RL/eval_verify/$TAG"
NVJ=$(find "$WORKDIR/env/lib" -type d -path '*nvidia/nvjitlink/lib' 2>/dev/null | head -n 1)

# The pythons that run: env/bin/python prepares the slice, and eval_vlm_new.sh's
# `python3 -m openrlhf.cli.eval_ray` finds env/bin/python3 first on PATH. Both vouched: a wrapper
# script or an ELF no Debian package lists, printing the summary, shows in runtime.txt (the
# reference's env is `python3 -m venv`).
vouch python "$PY_ENV"
vouch python3 "$WORKDIR/env/bin/python3"
# A .pth or sitecustomize no installer made can swap the run under the vouched python and the
# pinned files: the start-up hooks that python reads, and who vouches for each (hooks.txt).
py_hooks_of "$PY_ENV"
# The evaluation script and the openrlhf code it submits to Ray (pip install -e . runs it from
# the workdir): the entry, the Ray evaluator, and the evaluator that prints the summary line.
# The run's save folder is in the workdir: what an earlier run (or the agent) left under this
# tag is removed first (as the owner: never through a link as root), so the metrics read below
# are this run's.
as_owner rm -rf "$SAVE"
pinned curiosity_driven_rl/scripts/eval_vlm_new.sh curiosity_driven_rl/openrlhf/cli/eval_ray.py \
  curiosity_driven_rl/openrlhf/trainer/ray/evaluator2.py curiosity_driven_rl/openrlhf/trainer/evaluator.py

{
  echo "== environment: $PY_ENV"
  cd "$RL" && rc_of environment as_owner "$PY_ENV" -c 'import sys, torch, transformers, vllm, ray, flash_attn, openrlhf; print(sys.version.split()[0], "torch", torch.__version__, "transformers", transformers.__version__, "vllm", vllm.__version__); print("cuda_available", torch.cuda.is_available()); print("device", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")' >"$SCRATCH/env.out" 2>&1
  cat "$SCRATCH/env.out"
  echo "exit code: $(cat "$LOG_DIR/environment.rc")"
  echo "== the slice: 32 questions of data/vstar.parquet, seed $SEED"
  rc_of slice as_owner "$PY_ENV" -c 'import sys, pandas as pd; df = pd.read_parquet(sys.argv[1]); s = df.sample(n=32, random_state=int(sys.argv[3])); s.to_parquet(sys.argv[2]); print("questions", len(df), "slice", len(s))' "$RL/data/vstar.parquet" "$SCRATCH/vstar.parquet" "$SEED" >"$SCRATCH/slice.out" 2>&1
  cat "$SCRATCH/slice.out"
} >"$LOG_DIR/01_environment.log" 2>&1
collect "$SCRATCH/slice.out" slice.txt
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
  echo "== experiment: scripts/eval_vlm_new.sh benchmark=vstar sys=vcot num_vllm=1 num_gpus=1 eval_bsz=8 tag=$TAG"
  cd "$RL" && rc_of eval as_owner timeout 3000 env "PATH=$WORKDIR/env/bin:$SYSTEM_PATH" \
    "working_dir=$RL" policy=TIGER-Lab/PixelReasoner-RL-v1 "testdata=$SCRATCH/vstar.parquet" \
    savefolder=eval_verify "tagname=$TAG" sys=vcot num_vllm=1 num_gpus=1 eval_bsz=8 util=0.7 \
    MIN_PIXELS=401408 MAX_PIXELS=1003520 "nvj_path=$NVJ" \
    bash scripts/eval_vlm_new.sh >"$SCRATCH/eval.out" 2>&1
  collect "$SCRATCH/eval.out" eval_output.txt
  tail -c 20000 "$SCRATCH/eval.out"
  echo "exit code: $(cat "$LOG_DIR/eval.rc")"
  as_owner env "PATH=$WORKDIR/env/bin:$SYSTEM_PATH" ray stop --force
} >"$LOG_DIR/02_experiment.log" 2>&1

kill "$SAMPLER" 2>/dev/null
wait "$SAMPLER" 2>/dev/null
collect "$SCRATCH/gpu_apps.txt" gpu_apps.txt
collect "$SAVE/logs/metrics_iter0.json" metrics.json
# One line per rollout: how many answers this run wrote.
cat "$SAVE"/logs/sample.eval_iter0*.jsonl 2>/dev/null | wc -l >"$LOG_DIR/rollouts.txt"
