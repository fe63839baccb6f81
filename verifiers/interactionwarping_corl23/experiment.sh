# Layer 2 experiment of interactionwarping_corl23 (hidden from the agent), after experiment_lib.sh.
#
# With the agent's environment ($WORKDIR/env/bin/python) and the data it fetched into
# relational_ndf (RNDF_SOURCE_DIR=$WORKDIR/relational_ndf/src/rndf_robot, as rndf_env.sh sets it),
# as the owner of WORKDIR, from WORKDIR, on GPU 0:
#   1. the env imports torch (with CUDA), shapewarping, rndf_robot, airobot, pybullet, meshcat;
#   2. the env's meshcat-server is started on tcp://127.0.0.1:6000 (run_warp.py connects to it
#      and waits for it), then the first command of shell_scripts/run_warp_1_demo.sh (bowl on mug,
#      one demonstration, --pybullet_server, --opt_iterations 650) runs three trials
#      (--num_iterations 3) with a seed drawn now, writing its evaluation folder under a fresh
#      --eval_data_dir in SCRATCH (an absolute path: run_warp.py joins it onto the eval_data root).
# nvidia-smi's compute processes are sampled every second meanwhile; the trial folders and their
# results.txt are collected. checks.yaml judges the collected files on the controller.
# RUNBOOK.MD is never read.
PY_ENV="$WORKDIR/env/bin/python"
NVSMI_PATH=$SYSTEM_PATH
RNDF=$WORKDIR/relational_ndf/src/rndf_robot

# The python that runs the warp, vouched: a wrapper script or an ELF no Debian package lists,
# printing trials, shows in runtime.txt (the reference's env is `python3 -m venv`).
vouch python "$PY_ENV"
# A .pth or sitecustomize no installer made can swap the run under the vouched python and the
# pinned files: the start-up hooks that python reads, and who vouches for each (hooks.txt).
py_hooks_of "$PY_ENV"
# run_warp and the shapewarping modules it imports (pip install -e . runs them from the workdir),
# and the two PCA models the command names.
pinned shapewarping/run_warp.py shapewarping/lib/ndf_interface.py shapewarping/lib/object_warping.py \
  shapewarping/lib/demo.py shapewarping/lib/utils.py shapewarping/lib/viz_utils.py \
  data/pcas/230315_ndf_bowls_scale_pca_8_dim_alp_0_01.pkl data/pcas/230315_ndf_mugs_scale_pca_8_dim_alp_0_01.pkl
SEED=$(od -An -tu2 -N2 /dev/urandom | tr -d ' ')
echo "$SEED" >"$LOG_DIR/seed.txt"
EVAL="$SCRATCH/eval"
mkdir -p "$EVAL" && chown "$OWNER" "$EVAL"

{
  echo "== environment: $PY_ENV"
  cd "$WORKDIR" && rc_of environment as_owner env "RNDF_SOURCE_DIR=$RNDF" "$PY_ENV" -c 'import sys, torch, shapewarping, rndf_robot, airobot, pybullet, meshcat; print(sys.version.split()[0], "torch", torch.__version__); print("cuda_available", torch.cuda.is_available())' >"$SCRATCH/env.out" 2>&1
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

cd "$WORKDIR" && setsid "$TOOLS/as_owner" "$WORKDIR/env/bin/meshcat-server" --zmq-url tcp://127.0.0.1:6000 \
  >"$SCRATCH/meshcat.out" 2>&1 &
MESHCAT=$!
sleep 5
{
  echo "== experiment: env/bin/python -m shapewarping.run_warp (run_warp_1_demo.sh, bowl on mug) --num_iterations=3 --seed=$SEED, meshcat-server beside it"
  cd "$WORKDIR" && rc_of warp as_owner env "RNDF_SOURCE_DIR=$RNDF" CUDA_VISIBLE_DEVICES=0 timeout 540 "$PY_ENV" \
    -m shapewarping.run_warp --parent_class=mug --child_class=bowl \
    --source-pca-path=data/pcas/230315_ndf_bowls_scale_pca_8_dim_alp_0_01.pkl \
    --target-pca-path=data/pcas/230315_ndf_mugs_scale_pca_8_dim_alp_0_01.pkl \
    --source-pca-scale=0.8 --target-pca-scale=0.7 --exp=bowl_on_mug_upright_pose_new \
    --parent_model_path=ndf_vnn/rndf_weights/ndf_mug.pth \
    --child_model_path=ndf_vnn/rndf_weights/ndf_bowl.pth \
    --is_parent_shapenet_obj --is_child_shapenet_obj \
    --rel_demo_exp=release_demos/bowl_on_mug_relation --pybullet_server --opt_iterations=650 \
    --parent_load_pose_type=random_upright --child_load_pose_type=random_upright \
    --num_iterations=3 "--seed=$SEED" "--eval_data_dir=$EVAL" >"$SCRATCH/warp.out" 2>&1
  collect "$SCRATCH/warp.out" warp_output.txt
  tail -c 20000 "$SCRATCH/warp.out"
  echo "exit code: $(cat "$LOG_DIR/warp.rc")"
} >"$LOG_DIR/02_experiment.log" 2>&1
kill -- "-$MESHCAT" 2>/dev/null || kill "$MESHCAT" 2>/dev/null

kill "$SAMPLER" 2>/dev/null
wait "$SAMPLER" 2>/dev/null
collect "$SCRATCH/gpu_apps.txt" gpu_apps.txt
(cd "$EVAL" 2>/dev/null && find . -type f -path '*/trial_*' -exec ls -l {} \;) >"$LOG_DIR/trials.txt" 2>&1
for trial in 0 1 2; do
  f=$(find "$EVAL" -type f -path "*/trial_$trial/results.txt" 2>/dev/null | head -n 1)
  [ -n "$f" ] && [ ! -L "$f" ] && { printf 'trial_%s ' "$trial"; head -c 2000 "$f"; echo; }
done >"$LOG_DIR/results.txt"
