# Layer 2 experiment of maml_icml17_cpu (hidden from the agent), after experiment_lib.sh.
#
# Runs the paper's 10-shot sinusoid from main.py with the agent's environment
# ($WORKDIR/env/bin/python), as the owner of WORKDIR, cut to 2,000 meta-training iterations, then
# the test pass on the checkpoint it wrote (600 sinusoid tasks, 10 gradient steps). The training
# is seeded with the controller's draw ($VARIANT_SEED, checks.yaml's variants): main.py seeds
# nothing while it trains, so a few lines of the verifier's import main.py as it is and set
# TensorFlow's graph seed and numpy's and random's seeds before its main() runs; one seed then
# gives one set of losses on a machine, which the operator's bank holds. The logdir is
# a fresh folder in SCRATCH, so only checkpoints written now are seen. The training output, the
# checkpoint listing and the test CSV are collected; checks.yaml judges them on the controller.
# Before it runs: the python is vouched (runtime.txt), the four modules the sinusoid executes are
# pinned with the port put back (pinned.txt), and the start-up hooks that python would read are
# listed with who vouches for them (hooks.txt). RUNBOOK.MD is never read.
PY_ENV="$WORKDIR/env/bin/python"
LOGDIR="$SCRATCH/sine"
EXP=cls_5.mbs_25.ubs_10.numstep1.updatelr0.001nonorm
TRAIN_ARGS="--datasource=sinusoid --logdir=$LOGDIR/ --metatrain_iterations=2000 --norm=None --update_batch_size=10"
# The hidden seed: the controller's draw, else one drawn here (no bank then).
SEED=${VARIANT_SEED:-$(($(rand_below 99999) + 1))}
# main.py imported, not rewritten: its module code, flags and main() are the pinned file's (its
# flags parse sys.argv on first use); the seeds are set after its imports (main.py's port turns
# graph mode on there, and a graph seed set in eager mode would not reach the graph).
SEEDED='import random, sys
seed = int(sys.argv[1])
sys.argv[:2] = ["main.py"]
import numpy, tensorflow
import main
tensorflow.compat.v1.set_random_seed(seed)
numpy.random.seed(seed)
random.seed(seed)
main.main()'

# A wrapper script, or an ELF no Debian package lists, printing main.py's lines shows here (the
# reference's env is `python3 -m venv`: a link to the system's python3).
vouch python "$PY_ENV"
# A .pth or sitecustomize no installer made can swap the computation under a vouched python and
# pinned files.
py_hooks_of "$PY_ENV"
# The modules the sinusoid executes (main.py prints the losses, data_generator.py draws the
# sine tasks, maml.py builds the losses, utils.py holds mse), each with the documented
# TensorFlow 2 port put back to the commit's text before its blob id is taken (the reference's
# and the GPU reference's edits: `import tensorflow.compat.v1 as tf` with disable_v2_behavior()
# or disable_eager_execution(); tf_slim for tf.contrib's layers; Glorot uniform for tf.contrib's
# Xavier and a reduce_mean for its accuracy, in lines the sinusoid never runs). Any other edit
# shows as another blob.
TF_IMPORT='/^tf(\.compat\.v1)?\.(disable_v2_behavior|disable_eager_execution)\(\)$/d
s/^import tensorflow(\.compat\.v1)? as tf$/import tensorflow as tf/'
CONTRIB_LAYERS='s/^(import tf_slim|from tf_slim import layers|from tf_slim\.layers import layers) as tf_layers$/from tensorflow.contrib.layers.python import layers as tf_layers/'
CONTRIB_INIT='s/^(        conv_initializer =  )tf\.glorot_uniform_initializer\(dtype=dtype\)$/\1tf.contrib.layers.xavier_initializer_conv2d(dtype=dtype)/
s/^(        fc_initializer =  )tf\.glorot_uniform_initializer\(dtype=dtype\)$/\1tf.contrib.layers.xavier_initializer(dtype=dtype)/
s/tf\.reduce_mean\(tf\.cast\(tf\.equal\((tf\.argmax\(tf\.nn\.softmax\([^()]*\), 1\)), (tf\.argmax\(label[ab], 1\))\), tf\.float32\)\)/tf.contrib.metrics.accuracy(\1, \2)/'
for rel in main.py data_generator.py maml.py utils.py; do
  if [ -f "$WORKDIR/$rel" ] && [ ! -L "$WORKDIR/$rel" ]; then
    sed -E -e "$TF_IMPORT" -e "$CONTRIB_LAYERS" -e "$CONTRIB_INIT" "$WORKDIR/$rel" >"$SCRATCH/as_pinned.py"
    echo "$rel(port-put-back) $(blob_of "$SCRATCH/as_pinned.py")"
  else
    echo "$rel(port-put-back) missing"
  fi
done >>"$LOG_DIR/pinned.txt"
rm -f "$SCRATCH/as_pinned.py"

{
  echo "== environment: $PY_ENV"
  cd "$WORKDIR" && rc_of environment as_owner "$PY_ENV" -c 'import sys, numpy, tensorflow as tf; print(sys.version.split()[0], "numpy", numpy.__version__, "tensorflow", tf.__version__)'
  echo "exit code: $(cat "$LOG_DIR/environment.rc")"
} >"$LOG_DIR/01_environment.log" 2>&1

{
  echo "== meta-training: env/bin/python main.py $TRAIN_ARGS, seeded with $SEED"
  # shellcheck disable=SC2086 # TRAIN_ARGS is a list of flags without spaces
  cd "$WORKDIR" && rc_of train as_owner timeout 900 "$PY_ENV" -c "$SEEDED" "$SEED" $TRAIN_ARGS >"$SCRATCH/train.out" 2>&1
  collect "$SCRATCH/train.out" train_output.txt
  tail -c 20000 "$SCRATCH/train.out"
  echo "exit code: $(cat "$LOG_DIR/train.rc")"
} >"$LOG_DIR/02_train.log" 2>&1

ls -l "$LOGDIR/$EXP" >"$LOG_DIR/checkpoints.txt" 2>&1

if [ -f "$LOGDIR/$EXP/model1999.index" ]; then
  {
    echo "== test pass: env/bin/python main.py $TRAIN_ARGS --train=False --test_set=True"
    # shellcheck disable=SC2086
    cd "$WORKDIR" && rc_of test as_owner timeout 600 "$PY_ENV" main.py $TRAIN_ARGS --train=False --test_set=True >"$SCRATCH/test.out" 2>&1
    tail -c 20000 "$SCRATCH/test.out"
    echo "exit code: $(cat "$LOG_DIR/test.rc")"
  } >"$LOG_DIR/03_test.log" 2>&1
  collect "$LOGDIR/$EXP/test_ubs10_stepsize0.001.csv" test_losses.csv
fi
