# Layer 2 experiment of gan_neurips14_gpu (hidden from the agent), after experiment_lib.sh.
#
# Trains the paper's MNIST model (the agent's mnist.yaml, copied into SCRATCH with an EpochCounter
# of one epoch added, since the file has no termination criterion) with pylearn2's train.py from
# the agent's environment ($WORKDIR/env/bin/python, Python 2.7), as the owner of WORKDIR, with
# THEANO_FLAGS=device=gpu,floatX=float32,nvcc.flags=-arch=sm_80. MNIST is taken from PYLEARN2_DATA_PATH=$WORKDIR/data, or
# else from the first folder under WORKDIR or the owner's home holding mnist/train-images-idx3-ubyte.
# The model is saved next to the copy (SCRATCH), so only what is written now is seen. The output
# and the listing of SCRATCH are collected; checks.yaml judges them. A GPU task: nvidia-smi's
# compute processes are sampled every 2 s while it trains, and Theano's "Using gpu device" line
# is in the output. RUNBOOK.MD is never read.
PY_ENV="$WORKDIR/env/bin/python"
# What runs is what is judged: the interpreter, vouched (a wrapper script, or a launcher ELF in its
# place, shows as such in runtime.txt), and the repository's files the run executes, pinned to
# their blobs (an entry script rewritten to print the expected lines shows in pinned.txt).
vouch python "$PY_ENV"
pinned mnist.yaml __init__.py
# Python 2.7 is built from source on Debian (an ELF no package vouches for) or Ubuntu's
# python2.7: either way a real CPython exports its C API; a launcher of a script does not.
for sym in Py_Initialize PyEval_EvalCode; do
  has_text "$(readlink -f "$PY_ENV")" "$sym" && printf '%s ' "$sym"
done >"$LOG_DIR/python_exports.txt"
echo >>"$LOG_DIR/python_exports.txt"
HOME_DIR=$(awk -F: -v u="$OWNER" '$1 == u { print $6 }' /etc/passwd)
DATA_PATH="$WORKDIR/data"
if [ ! -f "$DATA_PATH/mnist/train-images-idx3-ubyte" ]; then
  found=$(find "$WORKDIR" "$HOME_DIR" -maxdepth 5 -path '*/mnist/train-images-idx3-ubyte' 2>/dev/null | head -n 1)
  [ -n "$found" ] && DATA_PATH=$(dirname "$(dirname "$found")")
fi
echo "$DATA_PATH" >"$LOG_DIR/data_path.txt"

awk '/^        update_callbacks:/ { print "        termination_criterion: !obj:pylearn2.termination_criteria.EpochCounter { max_epochs: 1 }," } { print }' \
  "$WORKDIR/mnist.yaml" >"$SCRATCH/mnist.yaml" 2>/dev/null
chown "$OWNER" "$SCRATCH/mnist.yaml" 2>/dev/null || true

{
  echo "== environment: $PY_ENV"
  cd "$WORKDIR" && rc_of environment as_owner "$PY_ENV" -c 'import sys, os, numpy, theano, pylearn2, adversarial; print(sys.version.split()[0]); print("numpy", numpy.__version__, "theano", theano.__version__); print("pylearn2_dir", os.path.dirname(pylearn2.__file__))' >"$SCRATCH/env.out" 2>&1
  cat "$SCRATCH/env.out"
  echo "exit code: $(cat "$LOG_DIR/environment.rc")"
} >"$LOG_DIR/01_environment.log" 2>&1
collect "$SCRATCH/env.out" environment.txt
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
PL2_DIR=$(sed -n 's/^pylearn2_dir //p' "$SCRATCH/env.out" | head -n 1)
# The program the run executes is pylearn2's scripts/train.py: pinned like the checkout's files
# (a train.py that prints the monitor's lines shows).
echo "pylearn2/scripts/train.py $(blob_of "$PL2_DIR/scripts/train.py")" >>"$LOG_DIR/pinned.txt"

{
  echo "== training: THEANO_FLAGS=device=gpu,floatX=float32,nvcc.flags=-arch=sm_80 env/bin/python $PL2_DIR/scripts/train.py mnist.yaml (one epoch)"
  cd "$SCRATCH" && rc_of train as_owner env THEANO_FLAGS=device=gpu,floatX=float32,nvcc.flags=-arch=sm_80 \
    PYLEARN2_DATA_PATH="$DATA_PATH" timeout 1200 "$PY_ENV" "$PL2_DIR/scripts/train.py" mnist.yaml \
    >"$SCRATCH/train.out" 2>&1
  collect "$SCRATCH/train.out" train_output.txt
  tail -c 20000 "$SCRATCH/train.out"
  echo "exit code: $(cat "$LOG_DIR/train.rc")"
} >"$LOG_DIR/02_train.log" 2>&1

kill "$SAMPLER" 2>/dev/null
collect "$SCRATCH/gpu_apps.txt" gpu_apps.txt
ls -l "$SCRATCH" >"$LOG_DIR/saved.txt" 2>&1
