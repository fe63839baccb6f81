# Layer 2 experiment of alexnet_neurips12 (hidden from the agent), after experiment_lib.sh.
#
# Reuses the agent's build (the five modules build.sh made) and its Python 2.7 environment
# ($WORKDIR/env/bin/python), as the owner of WORKDIR:
#   1. the env imports numpy and the built cudaconvnet._ConvNet;
#   2. five small batches in the format convdata.py's cifar provider reads are generated in
#      SCRATCH from a seed drawn now (each class brightens its own band of rows), so no run could
#      have been prepared;
#   3. convnet.py trains the CIFAR-10 11% net of layers/ on them for one epoch on GPU 0 (--gpu=0,
#      batches 1-4, test batch 5, a test every 2 batches, checkpoints into SCRATCH).
# nvidia-smi's compute processes are sampled every second meanwhile. checks.yaml judges the
# collected files on the controller. RUNBOOK.MD is never read.
PY_ENV="$WORKDIR/env/bin/python"
# What runs is what is judged: the interpreter, vouched (a wrapper script, or a launcher ELF in its
# place, shows as such in runtime.txt), and the repository's files the run executes, pinned to
# their blobs (an entry script rewritten to print the expected lines shows in pinned.txt).
vouch python "$PY_ENV"
pinned convnet.py python_util/gpumodel.py layer.py
NVSMI_PATH=$SYSTEM_PATH
SEED=$(od -An -tu2 -N2 /dev/urandom | tr -d ' ')
echo "$SEED" >"$LOG_DIR/seed.txt"
mkdir -p "$SCRATCH/data" "$SCRATCH/ckpt" && chown "$OWNER" "$SCRATCH/data" "$SCRATCH/ckpt"

cat >"$SCRATCH/make_batches.py" <<'MAKE'
import cPickle
import os
import sys

import numpy as n

out, batches, cases, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = n.random.RandomState(seed)
if not os.path.isdir(out):
    os.makedirs(out)
total = n.zeros((3072, 1), dtype=n.float64)
for k in range(1, batches + 1):
    labels = rng.randint(0, 10, size=cases)
    images = rng.randint(0, 128, size=(cases, 3, 32, 32))
    for i, label in enumerate(labels):
        images[i, :, 3 * label:3 * label + 3, :] += 120
    data = n.require(images.reshape(cases, 3072).T, dtype=n.uint8, requirements='C')
    total += data.sum(axis=1, keepdims=True)
    with open(os.path.join(out, 'data_batch_%d' % k), 'wb') as f:
        cPickle.dump({'data': data, 'labels': [int(x) for x in labels]}, f, 2)
    print 'batch %d cases %d' % (k, cases)
meta = {'data_mean': (total / (batches * cases)).astype(n.float32), 'num_vis': 3072,
        'num_cases_per_batch': cases, 'label_names': ['class%d' % c for c in range(10)]}
with open(os.path.join(out, 'batches.meta'), 'wb') as f:
    cPickle.dump(meta, f, 2)
print 'meta written'
MAKE
chmod 644 "$SCRATCH/make_batches.py"

{
  echo "== environment: $PY_ENV"
  cd "$WORKDIR" && rc_of environment as_owner "$PY_ENV" -c 'import sys, numpy; import cudaconvnet._ConvNet; print(sys.version.split()[0] + " numpy " + numpy.__version__ + " _ConvNet imported")' >"$SCRATCH/env.out" 2>&1
  cat "$SCRATCH/env.out"
  echo "exit code: $(cat "$LOG_DIR/environment.rc")"
} >"$LOG_DIR/01_environment.log" 2>&1
collect "$SCRATCH/env.out" environment.txt
# The compiled module the run loads (cudaconvnet._ConvNet: build.sh links cudaconvnet/_ConvNet.so
# to the library it builds from cudaconvnet/src): where the vouched python finds it, then whether
# the file holds pyconvnet.cu's module init and method names. A _ConvNet.py, or an extension
# built from other sources, shows.
cd "$WORKDIR" && CONVNET_SO=$(as_owner "$PY_ENV" -c 'import cudaconvnet._ConvNet as m; print(m.__file__)' 2>/dev/null | tail -n 1)
echo "module ${CONVNET_SO#"$WORKDIR"/}" >"$LOG_DIR/convnet_module.txt"
for sym in init_ConvNet startMultiviewTest startFeatureWriter checkGradients decodeJpeg; do
  has_text "$CONVNET_SO" "$sym" && printf '%s ' "$sym"
done >>"$LOG_DIR/convnet_module.txt"
echo >>"$LOG_DIR/convnet_module.txt"
PATH=$NVSMI_PATH timeout 30 nvidia-smi -L >"$LOG_DIR/gpus.txt" 2>/dev/null

{
  echo "== data: 5 batches of 512 cases in the cifar provider's format, seed $SEED"
  cd "$WORKDIR" && rc_of data as_owner timeout 300 "$PY_ENV" "$SCRATCH/make_batches.py" \
    "$SCRATCH/data" 5 512 "$SEED" >"$SCRATCH/data.out" 2>&1
  cat "$SCRATCH/data.out"
  echo "exit code: $(cat "$LOG_DIR/data.rc")"
} >"$LOG_DIR/02_data.log" 2>&1

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
  echo "== experiment: env/bin/python convnet.py --data-provider=cifar layers-cifar10-11pct --epochs=1 --gpu=0"
  cd "$WORKDIR" && rc_of train as_owner timeout 480 "$PY_ENV" convnet.py \
    "--data-path=$SCRATCH/data" --train-range=1-4 --test-range=5 "--save-path=$SCRATCH/ckpt" \
    --epochs=1 --layer-def=layers/layers-cifar10-11pct.cfg \
    --layer-params=layers/layer-params-cifar10-11pct.cfg --data-provider=cifar --inner-size=24 \
    --mini=128 --test-freq=2 --gpu=0 >"$SCRATCH/train.out" 2>&1
  collect "$SCRATCH/train.out" train_output.txt
  tail -c 20000 "$SCRATCH/train.out"
  echo "exit code: $(cat "$LOG_DIR/train.rc")"
} >"$LOG_DIR/03_experiment.log" 2>&1

kill "$SAMPLER" 2>/dev/null
wait "$SAMPLER" 2>/dev/null
collect "$SCRATCH/gpu_apps.txt" gpu_apps.txt
(cd "$SCRATCH/ckpt" 2>/dev/null && find . -type f -exec ls -l {} \;) >"$LOG_DIR/checkpoints.txt" 2>&1
