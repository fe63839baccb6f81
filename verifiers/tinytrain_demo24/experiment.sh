# Layer 2 experiment of tinytrain_demo24 (hidden from the agent), after experiment_lib.sh.
#
# Trains one epoch with the agent's environment ($WORKDIR/env/bin/python train.py), as the owner
# of WORKDIR, on readings of its own (the paper's three regimes, another draw and size: 90 rows
# from seed 424242), and collects the metrics and the checkpoint; checks.yaml judges them on
# the controller: it scores the checkpoint there on held-out rows the machine never sees.
#
# Every attempt gets a draw of its own, taken by this (trusted) shell from the kernel's random
# device before any of the agent's code runs: the readings' feature columns are permuted and
# some negated, and the three regime labels permuted. A model trained on them is the same model
# in another basis, so train.py reaches the same accuracy; a checkpoint made beforehand (by
# someone who read this file) does not fit the attempt's space. The environment's python also
# computes numpy's RandomState(seed).standard_normal(5) for the attempt's seed, which the
# controller recomputes: only real numpy prints those numbers. RUNBOOK.MD is never read.
PY_ENV="$WORKDIR/env/bin/python"
cat >"$SCRATCH/readings.orig.csv" <<'READINGS'
wind,pressure,cloud,temp,regime
7.208,8.727,6.627,17.066,2
7.108,2.346,3.011,27.868,1
2.479,9.358,-0.818,30.345,0
4.389,4.754,3.744,20.364,1
8.361,9.525,6.828,12.951,2
10.906,8.615,9.042,16.993,2
2.644,6.435,1.842,32.937,0
5.699,3.163,2.872,23.87,1
3.784,8.909,1.179,28.606,0
9.866,8.369,6.377,12.574,2
2.473,7.646,0.259,23.872,0
1.051,8.039,0.485,27.235,0
5.754,5.188,2.724,18.349,1
1.624,9.001,1.164,33.177,0
7.541,1.822,2.732,16.546,1
2.063,8.614,0.655,32.248,0
5.632,4.87,2.407,21.437,1
11.222,7.599,6.587,17.713,2
9.84,8.5,5.449,16.663,2
5.585,1.97,4.631,22.745,1
7.541,9.569,8.178,14.232,2
4.07,1.216,3.893,21.831,1
9.327,9.686,7.424,10.742,2
9.199,11.302,8.203,23.234,2
4.31,4.837,4.335,26.213,1
2.099,7.238,0.959,27.193,0
1.748,6.247,0.429,30.854,0
9.708,9.274,5.661,22.988,2
8.057,1.025,3.926,27.519,1
8.476,2.5,2.716,18.69,1
-1.674,8.065,0.6,33.565,0
1.78,7.835,0.036,28.82,0
1.791,10.209,1.219,30.925,0
9.086,10.945,7.041,18.415,2
11.403,6.819,5.025,16.713,2
5.234,1.928,3.806,17.927,1
5.22,-0.755,3.991,26.321,1
1.894,7.624,1.639,30.155,0
4.003,8.285,-0.043,33.01,0
1.114,9.609,1.699,31.172,0
5.642,2.106,5.542,24.868,1
7.013,8.585,7.093,11.55,2
10.553,7.751,7.225,10.969,2
9.047,9.99,6.539,7.287,2
7.985,2.959,4.499,26.385,1
7.063,0.626,3.427,24.616,1
7.887,10.872,5.906,22.787,2
6.938,2.263,4.167,19.827,1
8.025,11.138,6.12,16.709,2
7.625,6.519,7.135,11.312,2
6.888,1.357,2.567,20.39,1
0.573,9.293,-1.041,29.2,0
8.54,8.797,6.146,16.102,2
7.888,3.65,3.574,18.528,1
5.436,2.964,2.688,22.371,1
7.115,2.368,4.858,23.639,1
9.664,6.921,6.909,16.688,2
1.989,6.905,0.504,31.659,0
10.129,11.039,5.285,12.878,2
0.406,5.288,-0.59,27.593,0
6.065,1.574,3.28,26.545,1
5.959,2.518,4.436,23.417,1
2.71,9.218,1.897,28.166,0
1.692,7.645,2.412,31.64,0
9.012,8.435,6.873,16.261,2
9.204,8.144,6.765,16.514,2
4.997,2.073,3.618,22.356,1
9.292,10.29,6.586,13.555,2
7.163,4.357,4.155,21.17,1
3.351,8.341,2.025,28.565,0
3.634,8.156,0.308,28.245,0
7.143,1.941,3.369,23.162,1
1.784,8.024,-0.311,28.607,0
8.786,9.228,8.458,12.932,2
3.228,7.524,1.806,31.603,0
9.705,8.488,9.198,14.519,2
2.593,6.045,1.182,28.434,0
8.781,8.727,6.277,17.398,2
3.606,7.236,1.906,24.613,0
5.767,3.353,3.396,23.749,1
5.424,2.91,3.162,20.515,1
0.765,8.747,1.131,28.725,0
6.66,2.336,2.078,20.822,1
7.102,9.273,8.088,18.72,2
0.717,9.988,2.145,26.833,0
6.998,2.183,3.549,26.706,1
7.712,9.231,9.118,12.585,2
1.14,7.976,0.767,27.723,0
1.3,8.999,0.443,30.502,0
7.188,9.117,7.697,12.458,2
READINGS

# The draw: 16 bytes of /dev/urandom (the kernel's character device 1:9, recorded and checked on
# the controller), read by busybox's od: a seed below 2**32 and a Fisher-Yates shuffle of the 4
# columns and of the 3 labels, and 4 signs.
URANDOM=$(stat -c '%F %t:%T' /dev/urandom 2>&1)
# The draw is the controller's (checks.yaml's variants: VARIANT_*), so a bank can hold the
# loss and accuracy the real train.py gives for it.
set -- "$VARIANT_DRAW" "$VARIANT_COLUMNS" "$VARIANT_SIGNS" "$VARIANT_LABELS"
DRAW=$(awk -v a="$1" -v b="$2" -v c="$3" -v d="$4" '
  function shuffle(n, r,   i, j, t, out) {
    for (i = 0; i < n; i++) p[i] = i
    for (i = n - 1; i > 0; i--) { j = r % (i + 1); r = int(r / (i + 1)); t = p[i]; p[i] = p[j]; p[j] = t }
    out = p[0]
    for (i = 1; i < n; i++) out = out " " p[i]
    return out
  }
  BEGIN {
    printf "seed: %.0f\n", a
    printf "columns: %s\n", shuffle(4, b)
    s = ""
    for (i = 0; i < 4; i++) { s = s (i ? " " : "") ((c % 2) ? -1 : 1); c = int(c / 2) }
    printf "signs: %s\n", s
    printf "labels: %s\n", shuffle(3, d)
  }')
SEED=$(echo "$DRAW" | sed -n 's/^seed: //p')
# Column j of the attempt's readings is signs[j] times column columns[j] of the readings above
# (negated as text, so every value stays exact); regime r becomes labels[r].
awk -F, -v cols="$(echo "$DRAW" | sed -n 's/^columns: //p')" \
  -v signs="$(echo "$DRAW" | sed -n 's/^signs: //p')" \
  -v labels="$(echo "$DRAW" | sed -n 's/^labels: //p')" '
  BEGIN { n = split(cols, c, " "); split(signs, s, " "); split(labels, l, " ") }
  NR == 1 { h = ""; for (j = 1; j <= n; j++) h = h $(c[j] + 1) ","; print h $(n + 1); next }
  {
    row = ""
    for (j = 1; j <= n; j++) {
      v = $(c[j] + 1)
      if (s[j] < 0) v = (substr(v, 1, 1) == "-") ? substr(v, 2) : "-" v
      row = row v ","
    }
    print row l[$(n + 1) + 1]
  }' "$SCRATCH/readings.orig.csv" >"$SCRATCH/readings.csv"
chown "$OWNER" "$SCRATCH/readings.csv"

{
  echo "== environment: $PY_ENV"
  cd "$WORKDIR" && rc_of environment as_owner "$PY_ENV" -c 'import sys, numpy; print(sys.version.split()[0], sys.prefix, "numpy", numpy.__version__); print("draw:", " ".join(repr(float(v)) for v in numpy.random.RandomState(int(sys.argv[1])).standard_normal(5)))' "$SEED" >"$SCRATCH/numpy.txt"
  cat "$SCRATCH/numpy.txt"
  echo "exit code: $(cat "$LOG_DIR/environment.rc")"
} >"$LOG_DIR/01_environment.log" 2>&1
collect "$SCRATCH/numpy.txt" numpy_draw.txt

{
  echo "== experiment: env/bin/python train.py --data <verifier readings> --epochs $VARIANT_EPOCHS --seed <drawn> --out <scratch>"
  cd "$WORKDIR" && rc_of train as_owner timeout 120 "$PY_ENV" train.py --data "$SCRATCH/readings.csv" \
    --epochs "$VARIANT_EPOCHS" --seed "$VARIANT_TRAIN_SEED" --out "$SCRATCH/out"
  echo "exit code: $(cat "$LOG_DIR/train.rc")"
} >"$LOG_DIR/02_experiment.log" 2>&1

collect "$SCRATCH/out/metrics.json" metrics.json
# train.py as the experiment ran it: the pinned commit's, or a change the controller judges (a
# compatibility repair, such as the builtins for np.float and np.int, passes only where the
# bank's loss and accuracy were reproduced: deploybench/verify/repairs.py).
pinned train.py
echo "epochs: $VARIANT_EPOCHS" >"$LOG_DIR/epochs_asked.txt"
sed -n 's/.*"epoch": *\([0-9]*\).*/epochs: \1/p' "$LOG_DIR/metrics.json" 2>/dev/null | head -n 1 >"$LOG_DIR/epochs_seen.txt"
collect "$SCRATCH/out/checkpoint.npz" checkpoint.npz
# Written last, from the shell's own copy of the draw (nothing the agent's code ran could change
# it): the controller reads the seed and the space of the attempt from here.
printf 'urandom: %s\n%s\n' "$URANDOM" "$DRAW" >"$LOG_DIR/draw.txt"
