# Layer 2 experiment of equigrasp_rss22 (hidden from the agent), after experiment_lib.sh.
#
# With the agent's environment ($WORKDIR/env/bin/python), as the owner of WORKDIR, from WORKDIR
# (scripts/main.py puts './' on its path):
#   1. the env imports torch (with CUDA), CuPy, e2cnn, pybullet and helping_hands_rl_envs;
#   2. python3 ./scripts/main.py trains the paper's method in the simulated
#      random_household_picking_clutter_full_obs_30, headless, for 60 grasp episodes with training
#      from episode 20 and one short evaluation (10 episodes), on --device_name cuda, with a seed
#      drawn now, logging into a fresh --log_pre in SCRATCH.
# nvidia-smi's compute processes are sampled every second meanwhile; the files the run wrote
# (info/, models/, checkpoint/) are listed. checks.yaml judges the collected files on the
# controller. RUNBOOK.MD is never read.
PY_ENV="$WORKDIR/env/bin/python"
# What runs is what is judged: the interpreter, vouched (a wrapper script, or a launcher ELF in its
# place, shows as such in runtime.txt), and the repository's files the run executes, pinned to
# their blobs (an entry script rewritten to print the expected lines shows in pinned.txt).
vouch python "$PY_ENV"
# A .pth or sitecustomize no installer made can swap the run under the vouched python and the
# pinned files: the start-up hooks that python reads, and who vouches for each (hooks.txt).
py_hooks_of "$PY_ENV"
pinned scripts/main.py
NVSMI_PATH=$SYSTEM_PATH
SEED=$(od -An -tu2 -N2 /dev/urandom | tr -d ' ')
echo "$SEED" >"$LOG_DIR/seed.txt"
mkdir -p "$SCRATCH/runs" && chown "$OWNER" "$SCRATCH/runs"

{
  echo "== environment: $PY_ENV"
  cd "$WORKDIR" && rc_of environment as_owner "$PY_ENV" -c 'import sys, torch, cupy, e2cnn, pybullet; from helping_hands_rl_envs import env_factory; print(sys.version.split()[0], "torch", torch.__version__, "cupy", cupy.__version__); print("cuda_available", torch.cuda.is_available())' >"$SCRATCH/env.out" 2>&1
  cat "$SCRATCH/env.out"
  echo "exit code: $(cat "$LOG_DIR/environment.rc")"
} >"$LOG_DIR/01_environment.log" 2>&1
collect "$SCRATCH/env.out" torch_device.txt
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
  echo "== experiment: env/bin/python ./scripts/main.py --max_episode=60 --training_offset=20 --num_eval=1 --eval_num_processes=1 --num_eval_episodes=10 --device_name=cuda --seed=$SEED"
  cd "$WORKDIR" && rc_of train as_owner timeout 540 "$PY_ENV" ./scripts/main.py --max_episode=60 \
    --training_offset=20 --num_eval=1 --eval_num_processes=1 --num_eval_episodes=10 \
    --device_name=cuda --render=f "--seed=$SEED" "--log_pre=$SCRATCH/runs" >"$SCRATCH/train.out" 2>&1
  # tqdm redraws its bar with carriage returns: one line per redraw.
  tr '\r' '\n' <"$SCRATCH/train.out" >"$SCRATCH/train.lines"
  collect "$SCRATCH/train.lines" train_output.txt
  tail -c 20000 "$SCRATCH/train.lines"
  echo "exit code: $(cat "$LOG_DIR/train.rc")"
} >"$LOG_DIR/02_experiment.log" 2>&1

kill "$SAMPLER" 2>/dev/null
wait "$SAMPLER" 2>/dev/null
collect "$SCRATCH/gpu_apps.txt" gpu_apps.txt
(cd "$SCRATCH/runs" 2>/dev/null && find . -type f -exec ls -l {} \;) >"$LOG_DIR/artifacts.txt" 2>&1
