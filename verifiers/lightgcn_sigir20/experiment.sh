# Layer 2 experiment of lightgcn_sigir20 (hidden from the agent), after experiment_lib.sh.
#
# Runs the README's 3-layer LightGCN command (LightGCN.py, the agent's C++ evaluator) with the
# agent's environment ($WORKDIR/env/bin/python), as the owner of WORKDIR, for 20 epochs (the first
# test is at epoch 20) on a HIDDEN dataset written here in LightGCN's format: 400 users in 10
# taste groups of 30 items; each user has 8 training and 4 test items of its group. A model that
# trains learns the groups (recall@20 near 0.9 here); a random or untrained scorer finds about
# 20/292 of them. --data_path and --proj_path point into SCRATCH, so only what is written now is
# seen. One seed, the controller's draw ($VARIANT_SEED, checks.yaml's variants) or else one drawn
# here, makes the dataset and seeds the training: LightGCN.py seeds nothing (its initial
# embeddings come from TensorFlow's unseeded initializer, its batches from random and numpy), so a
# few lines of the verifier's set TensorFlow's graph seed and numpy's and random's before
# LightGCN.py runs, unchanged, as __main__; one seed then gives one set of losses and metrics,
# which the operator's bank holds. The log and output/hidden/LightGCN.result are collected;
# checks.yaml judges them on the controller. A GPU task: nvidia-smi's list of compute processes is
# sampled every 2 s while it trains and TensorFlow's GPU list is collected; a run on a machine
# without a GPU (the local backend) or one that fell back to the CPU fails those checks by design.
# RUNBOOK.MD is never read.
PY_ENV="$WORKDIR/env/bin/python"
DATA="$SCRATCH/Data/hidden"

# The python that trains, vouched (a wrapper script, or an ELF no Debian package lists, shows in
# runtime.txt), and the start-up hooks it would run (a .pth or sitecustomize swapping the
# computation leaves the python and the repository as they were): hooks.txt.
vouch python "$PY_ENV"
py_hooks_of "$PY_ENV"
# The modules LightGCN.py runs, as at the pinned commit (setup.py and the .pyx/.h sources the
# evaluator is compiled from included).
pinned utility/helper.py utility/parser.py utility/batch_test.py evaluator/__init__.py \
  evaluator/cpp/evaluate_foldout.py evaluator/cpp/apt_evaluate_foldout.pyx evaluator/cpp/apt_tools.pyx \
  evaluator/cpp/include/evaluate_foldout.h evaluator/cpp/include/tools.h \
  evaluator/cpp/include/thread_pool.h setup.py
# LightGCN.py and utility/load_data.py with the two edits every run on a current TensorFlow and
# Python needs put back (the reference setup's port: TensorFlow 1's API through tf.compat.v1 with
# v2 behaviour or eager execution off; random.sample over a sequence of the test users' keys):
# anything else changed shows in their blob ids.
as_pinned() {
  rel=$1
  shift
  if [ -f "$WORKDIR/$rel" ] && [ ! -L "$WORKDIR/$rel" ]; then
    sed -E "$@" "$WORKDIR/$rel" >"$SCRATCH/as_pinned"
    echo "$rel(port-as-pinned) $(blob_of "$SCRATCH/as_pinned")"
  else
    echo "$rel(port-as-pinned) missing"
  fi >>"$LOG_DIR/pinned.txt"
}
as_pinned LightGCN.py -e 's/^import tensorflow\.compat\.v1 as tf$/import tensorflow as tf/' \
  -e '/^tf\.(compat\.v1\.)?disable_(v2_behavior|eager_execution)\(\)$/d'
as_pinned utility/load_data.py \
  -e 's/rd\.sample\((list|sorted|tuple)\(self\.test_set\.keys\(\)\), self\.batch_size\)/rd.sample(self.test_set.keys(), self.batch_size)/'
# The compiled evaluator evaluator/__init__.py imports: setup.py builds it in place as an
# extension module beside its .pyx, whose init function (PyInit_<module>) the loader calls; a
# module of the same name as a package or a .py is not the built one (the import prefers a
# package, and a launcher ELF has no init function).
for f in "$WORKDIR"/evaluator/cpp/apt_evaluate_foldout* "$WORKDIR"/evaluator/cpp/apt_tools*; do
  [ -e "$f" ] || continue
  name=$(basename "$f")
  if [ -d "$f" ] || [ -L "$f" ]; then
    echo "$name not a regular file"
  else
    mod=${name%%.*}
    init=no
    has_text "$f" "PyInit_$mod" && init=yes
    echo "$name magic $(head -c4 "$f" | od -An -tx1 | tr -d ' \n') init $init"
  fi
done >"$LOG_DIR/evaluator.txt" 2>&1
# The hidden seed: the controller's draw, else one drawn here (no bank then).
SEED=${VARIANT_SEED:-$(($(rand_below 99999) + 1))}
# LightGCN.py run as it is, as __main__ (its flags parse sys.argv): the seeds are set after
# TensorFlow's v2 behaviour is turned off (the port does it again at LightGCN.py's import), since a
# graph seed set in eager mode would not reach the graph the model is built in.
SEEDED='import random, runpy, sys
seed = int(sys.argv[1])
sys.argv[:2] = ["LightGCN.py"]
import numpy, tensorflow
tensorflow.compat.v1.disable_v2_behavior()
tensorflow.compat.v1.set_random_seed(seed)
numpy.random.seed(seed)
random.seed(seed)
runpy.run_path("LightGCN.py", run_name="__main__")'
mkdir -p "$DATA"
awk -v seed="$SEED" -v dir="$DATA" '
BEGIN {
  srand(seed); U = 400; G = 10; K = 30; n = G * K
  for (i = 0; i < n; i++) perm[i] = i
  for (i = n - 1; i > 0; i--) { j = int(rand() * (i + 1)); t = perm[i]; perm[i] = perm[j]; perm[j] = t }
  for (u = 0; u < U; u++) {
    g = int(rand() * G)
    for (k = 0; k < K; k++) pool[k] = perm[g * K + k]
    for (k = K - 1; k > 0; k--) { j = int(rand() * (k + 1)); t = pool[k]; pool[k] = pool[j]; pool[j] = t }
    tr = u; te = u
    for (k = 0; k < 8; k++) tr = tr " " pool[k]
    for (k = 8; k < 12; k++) te = te " " pool[k]
    print tr > (dir "/train.txt"); print te > (dir "/test.txt")
  }
}'
chown -R "$OWNER" "$SCRATCH/Data" 2>/dev/null || true
wc -l "$DATA/train.txt" "$DATA/test.txt" >"$LOG_DIR/hidden_data.txt" 2>&1
RUN_ARGS="--data_path $SCRATCH/Data/ --proj_path $SCRATCH/ --dataset hidden --regs [1e-4] --embed_size 64 --layer_size [64,64,64] --lr 0.005 --batch_size 256 --epoch 20"

{
  echo "== environment: $PY_ENV"
  cd "$WORKDIR" && rc_of environment as_owner "$PY_ENV" -c 'import sys, numpy, scipy, tensorflow as tf; print(sys.version.split()[0], "numpy", numpy.__version__, "tensorflow", tf.__version__); print("gpus", len(tf.config.list_physical_devices("GPU")))' >"$SCRATCH/env.out" 2>&1
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
  echo "== training: env/bin/python LightGCN.py $RUN_ARGS, seeded with $SEED"
  # shellcheck disable=SC2086 # RUN_ARGS is a list of flags without spaces
  cd "$WORKDIR" && rc_of train as_owner timeout 900 "$PY_ENV" -c "$SEEDED" "$SEED" $RUN_ARGS >"$SCRATCH/train.out" 2>&1
  collect "$SCRATCH/train.out" train_output.txt
  tail -c 20000 "$SCRATCH/train.out"
  echo "exit code: $(cat "$LOG_DIR/train.rc")"
} >"$LOG_DIR/02_train.log" 2>&1

kill "$SAMPLER" 2>/dev/null
collect "$SCRATCH/gpu_apps.txt" gpu_apps.txt
collect "$SCRATCH/output/hidden/LightGCN.result" result.txt
