#!/usr/bin/env bash
# Layer 2 verifier of legacycalc_demo24 (hidden from the agent).
#
# Runs on the machine as root with:
#   WORKDIR   the staged repository the agent worked in
#   LOG_DIR   where this script writes its logs (*.log) and checks.json
# It runs the binary the agent built ($WORKDIR/legacycalc), as the owner of WORKDIR, on formulas
# of its own and checks every value against an independent evaluation. RUNBOOK.MD is never read.
# checks.json: [{"name", "passed", "detail"}]. Exit 0 whenever it ran to the end.
# shellcheck source=../global/verify_lib.sh
. "$(dirname "$0")/verify_lib.sh"

BIN="$WORKDIR/legacycalc"
# Formulas the agent never saw: every operator, and every way a formula can be invalid.
cat >"$SCRATCH/formulas.txt" <<'EOF'
# hidden formulas of the verifier
812 512 - 0.125 * 21.5 +
2 10 ^ sqrt 3.2 *
19.5 dup * 0.4 * 100 /
7 neg 3 swap -
1 2 3 + + 4 /
5 0 /
-4 sqrt
1 +
3 4 kelvin
2.5e2 4 / 1 -
EOF
chown "$OWNER" "$SCRATCH/formulas.txt" 2>/dev/null || true

{
  echo "== binary: $BIN"
  if [ -f "$BIN" ] && [ -x "$BIN" ] && [ "$(head -c4 "$BIN" | od -An -c | tr -d ' ')" = "177ELF" ]; then
    echo "an executable ELF file ($(stat -c %s "$BIN") bytes)"
    check binary_built true "$BIN is an executable ELF binary"
  else
    echo "legacycalc binary missing or not an executable ELF file at $BIN"
    check binary_built false "no executable ELF binary at $BIN"
  fi
} 2>&1 | tee "$LOG_DIR/01_binary.log"

if ! grep -q '^binary_built	true' "$CHECKS"; then
  # Diagnosis only (the check above already failed): what does the README's `make` say in
  # this environment? Its errors are what Layer 1 classifies.
  {
    echo "== diagnostic build: make (in a scratch copy of the workdir)"
    cp -a "$WORKDIR/." "$SCRATCH/build/" 2>/dev/null || { mkdir -p "$SCRATCH/build" && cp -r "$WORKDIR/." "$SCRATCH/build/"; }
    chown -R "$OWNER" "$SCRATCH/build" 2>/dev/null || true
    (cd "$SCRATCH/build" && as_owner timeout 120 bash -c 'make legacycalc')
    echo "make exit code: $?"
  } 2>&1 | tee "$LOG_DIR/02_build.log"
  check formulas_evaluated false "not run: there is no built binary"
  write_checks
  exit 0
fi

{
  echo "== experiment: $BIN < formulas.txt"
  (cd "$WORKDIR" && as_owner timeout 30 "$BIN" <"$SCRATCH/formulas.txt" >"$SCRATCH/out.txt" 2>"$SCRATCH/err.txt")
  echo "$?" >"$SCRATCH/rc"
  cat "$SCRATCH/out.txt" "$SCRATCH/err.txt"
  echo "exit code: $(cat "$SCRATCH/rc")"
} 2>&1 | tee "$LOG_DIR/03_experiment.log"

rc=$(cat "$SCRATCH/rc" 2>/dev/null || echo 1)
if [ "$rc" = 0 ]; then
  check exit_code true "legacycalc exited 0"
else
  check exit_code false "legacycalc exited $rc"
fi

python3 - "$SCRATCH/formulas.txt" "$SCRATCH/out.txt" >>"$CHECKS" <<'PY' 2>>"$LOG_DIR/03_experiment.log"
import math, sys

def evaluate(line):
    stack = []
    def pop():
        if not stack:
            raise ValueError("stack underflow")
        return stack.pop()
    for tok in line.split():
        try:
            stack.append(float(tok)); continue
        except ValueError:
            pass
        if tok == "sqrt":
            a = pop()
            if a < 0: raise ValueError("sqrt of a negative number")
            stack.append(math.sqrt(a))
        elif tok == "neg": stack.append(-pop())
        elif tok == "dup":
            a = pop(); stack += [a, a]
        elif tok == "swap":
            b, a = pop(), pop(); stack += [b, a]
        else:
            b, a = pop(), pop()
            if tok == "+": stack.append(a + b)
            elif tok == "-": stack.append(a - b)
            elif tok == "*": stack.append(a * b)
            elif tok == "/":
                if b == 0: raise ValueError("division by zero")
                stack.append(a / b)
            elif tok == "^": stack.append(a ** b)
            else: raise ValueError("unknown operator")
    if len(stack) != 1:
        raise ValueError("formula does not reduce to one value")
    return stack[0]

expected = {}
for n, line in enumerate(open(sys.argv[1]), 1):
    line = line.rstrip("\n")
    if not line or line.startswith("#"):
        continue
    try:
        expected[n] = evaluate(line)
    except ValueError:
        expected[n] = None
got = {}
for line in open(sys.argv[2], errors="replace"):
    parts = line.split(None, 1)
    if len(parts) == 2 and parts[0].isdigit():
        got[int(parts[0])] = parts[1].strip()
bad_values, bad_invalid = [], []
for n, want in expected.items():
    have = got.get(n)
    if want is None:
        if not (have or "").startswith("invalid"):
            bad_invalid.append("line %d: want 'invalid: ...', got %r" % (n, have))
    else:
        try:
            ok = abs(float(have) - want) <= 1e-6 * max(1.0, abs(want))
        except (TypeError, ValueError):
            ok = False
        if not ok:
            bad_values.append("line %d: want %.6f, got %r" % (n, want, have))
nv = sum(v is not None for v in expected.values())
ni = len(expected) - nv
def row(name, bad, total, what):
    detail = "all %d %s" % (total, what) if not bad else "; ".join(bad)[:480]
    print("%s\t%s\t%s" % (name, "false" if bad else "true", detail))
row("formulas_evaluated", bad_values, nv, "values correct")
row("invalid_formulas_reported", bad_invalid, ni, "invalid formulas reported")
PY

write_checks
exit 0
