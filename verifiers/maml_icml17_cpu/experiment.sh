# Layer 2 experiment of maml_icml17_cpu (hidden from the agent), after experiment_lib.sh.
#
# Runs the paper's 10-shot sinusoid from main.py with the agent's environment
# ($WORKDIR/env/bin/python), as the owner of WORKDIR, cut to 2,000 meta-training iterations, then
# the test pass on the checkpoint it wrote (600 sinusoid tasks, 10 gradient steps). The logdir is
# a fresh folder in SCRATCH, so only checkpoints written now are seen. The training output, the
# checkpoint listing and the test CSV are collected; checks.yaml judges them on the controller.
# RUNBOOK.MD is never read.
PY_ENV="$WORKDIR/env/bin/python"
LOGDIR="$SCRATCH/sine"
EXP=cls_5.mbs_25.ubs_10.numstep1.updatelr0.001nonorm
TRAIN_ARGS="--datasource=sinusoid --logdir=$LOGDIR/ --metatrain_iterations=2000 --norm=None --update_batch_size=10"

{
  echo "== environment: $PY_ENV"
  cd "$WORKDIR" && rc_of environment as_owner "$PY_ENV" -c 'import sys, numpy, tensorflow as tf; print(sys.version.split()[0], "numpy", numpy.__version__, "tensorflow", tf.__version__)'
  echo "exit code: $(cat "$LOG_DIR/environment.rc")"
} >"$LOG_DIR/01_environment.log" 2>&1

{
  echo "== meta-training: env/bin/python main.py $TRAIN_ARGS"
  # shellcheck disable=SC2086 # TRAIN_ARGS is a list of flags without spaces
  cd "$WORKDIR" && rc_of train as_owner timeout 900 "$PY_ENV" main.py $TRAIN_ARGS >"$SCRATCH/train.out" 2>&1
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
