#!/usr/bin/env bash
# Layer 2 verifier of tinytrain_demo24 (hidden from the agent).
#
# Runs on the machine as root with:
#   WORKDIR   the staged repository the agent worked in
#   LOG_DIR   where this script writes its logs (*.log) and checks.json
# It trains one epoch with the agent's environment ($WORKDIR/env/bin/python train.py), as the
# owner of WORKDIR, on readings of its own (same distribution, different draw and size), and
# checks the checkpoint and the metrics. RUNBOOK.MD is never read.
# checks.json: [{"name", "passed", "detail"}]. Exit 0 whenever it ran to the end.
# shellcheck source=../global/verify_lib.sh
. "$(dirname "$0")/verify_lib.sh"

PY_ENV="$WORKDIR/env/bin/python"
ROWS=90
# Readings the agent never saw: the paper's three regimes, another draw.
python3 - "$SCRATCH/readings.csv" "$ROWS" <<'PY'
import random, sys
rng = random.Random(424242)
centres = [(2.0, 8.0, 1.0, 30.0), (6.0, 3.0, 4.0, 22.0), (9.0, 9.0, 7.0, 15.0)]
rows = []
for label, c in enumerate(centres):
    for _ in range(int(sys.argv[2]) // 3):
        rows.append([round(v + rng.gauss(0, s), 3) for v, s in zip(c, (1.2, 1.2, 1.0, 3.0))] + [label])
rng.shuffle(rows)
with open(sys.argv[1], "w") as f:
    f.write("wind,pressure,cloud,temp,regime\n")
    for r in rows:
        f.write(",".join(str(v) for v in r[:-1]) + ",%d\n" % r[-1])
PY
chown "$OWNER" "$SCRATCH/readings.csv" 2>/dev/null || true

{
  echo "== environment: $PY_ENV"
  (cd "$WORKDIR" && as_owner "$PY_ENV" -c 'import sys, numpy; print(sys.version.split()[0], sys.prefix, "numpy", numpy.__version__)')
  echo "exit code: $?"
} 2>&1 | tee "$LOG_DIR/01_environment.log"
if [ -x "$PY_ENV" ] && tail -n1 "$LOG_DIR/01_environment.log" | grep -qx 'exit code: 0'; then
  check environment true "$(head -n2 "$LOG_DIR/01_environment.log" | tail -n1)"
else
  check environment false "$PY_ENV missing or cannot import numpy"
fi

{
  echo "== experiment: env/bin/python train.py --data <verifier readings> --epochs 1 --out <scratch>"
  (cd "$WORKDIR" && as_owner timeout 120 "$PY_ENV" train.py --data "$SCRATCH/readings.csv" --epochs 1 --out "$SCRATCH/out")
  echo "exit code: $?"
} 2>&1 | tee "$LOG_DIR/02_experiment.log"
rc=$(tail -n1 "$LOG_DIR/02_experiment.log" | sed -n 's/^exit code: //p')
if [ "$rc" = 0 ]; then
  check train_exit_code true "train.py exited 0"
else
  check train_exit_code false "train.py exited ${rc:-?}"
fi

python3 - "$SCRATCH/out" "$ROWS" >>"$CHECKS" <<'PY' 2>>"$LOG_DIR/02_experiment.log"
import ast, json, math, os, sys, zipfile

out, rows = sys.argv[1], int(sys.argv[2])

def row(name, ok, detail):
    print("%s\t%s\t%s" % (name, "true" if ok else "false", detail))

def npy_shape(data):
    if data[:6] != b"\x93NUMPY":
        return None
    major = data[6]
    if major == 1:
        n, start = int.from_bytes(data[8:10], "little"), 10
    else:
        n, start = int.from_bytes(data[8:12], "little"), 12
    return tuple(ast.literal_eval(data[start:start + n].decode("latin1"))["shape"])

ckpt = os.path.join(out, "checkpoint.npz")
try:
    with zipfile.ZipFile(ckpt) as z:
        names = set(z.namelist())
        shapes = {n: npy_shape(z.read(n)) for n in ("W.npy", "b.npy") if n in names}
    ok = shapes.get("W.npy") == (4, 3) and shapes.get("b.npy") == (3,)
    row("checkpoint", ok, "checkpoint.npz arrays %s" % sorted(
        "%s%s" % (k[:-4], list(v) if v is not None else "?") for k, v in shapes.items()))
except (OSError, zipfile.BadZipFile, ValueError, SyntaxError, KeyError) as exc:
    row("checkpoint", False, "no readable checkpoint.npz (%s)" % type(exc).__name__)

try:
    m = json.load(open(os.path.join(out, "metrics.json")))
    loss, acc = float(m.get("loss")), float(m.get("accuracy"))
    problems = []
    if m.get("epoch") != 1:
        problems.append("epoch %r != 1" % m.get("epoch"))
    if m.get("n_train") != rows:
        problems.append("n_train %r != %d rows given" % (m.get("n_train"), rows))
    if not (math.isfinite(loss) and loss < math.log(3)):
        problems.append("loss %r not finite or not below chance (%.3f)" % (loss, math.log(3)))
    if not acc >= 0.8:
        problems.append("accuracy %r < 0.8" % acc)
    row("metrics", not problems,
        "; ".join(problems) or "epoch 1, n_train %d, loss %.4f, accuracy %.3f" % (rows, loss, acc))
except (OSError, ValueError, TypeError) as exc:
    row("metrics", False, "no readable metrics.json (%s)" % type(exc).__name__)
PY

write_checks
exit 0
