# Layer 2 experiment of qsym_usenixsec18 (hidden from the agent), after experiment_lib.sh.
#
# Writes a small target program of its own with two branches on constants drawn here
# (((x ^ K1) + K2) * K3 == K4 on four bytes at one drawn offset, y * K5 - K6 == K7 at another),
# compiles it with the machine's gcc (the system PATH, not the virtualenv's) as the owner of
# WORKDIR (the source goes through stdin and is never left on disk), seeds it with 64 "A"s and runs the agent's QSYM on it once
# (bin/run_qsym.py in the agent's Python 2 environment). Random inputs hit either branch with
# odds of 1 in 2^32, so a generated test case that satisfies one shows a working concolic run.
# This script tests each generated case against the drawn equations itself (busybox arithmetic),
# then runs the target on them. Outputs are collected for checks.yaml. RUNBOOK.MD is never read.
PY=""
for p in "$WORKDIR/env/bin/python" "$WORKDIR/venv/bin/python"; do
  [ -x "$p" ] && PY=$p && break
done
SO=$(ls "${PY%/bin/python}"/lib/python2.7/site-packages/qsym/pintool/obj-intel64/libqsym.so 2>/dev/null | head -n 1)
{
  echo "== python: ${PY:-none}"
  [ -n "$PY" ] && echo "version: $(as_owner "$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>&1)"
  echo "== pintool: ${SO:-none}"
  echo "magic: $(head -c4 "$SO" 2>/dev/null | od -An -tx1 | tr -d ' \n')"
  [ -f "$WORKDIR/bin/run_qsym.py" ] && echo "run_qsym: yes" || echo "run_qsym: no"
} >"$LOG_DIR/binary.txt" 2>&1
cat "$LOG_DIR/binary.txt" >"$LOG_DIR/01_binary.log"
{
  echo "branch_a: solved"
  echo "branch_b: solved"
} >"$LOG_DIR/expected.txt"
[ -n "$PY" ] || exit 0

# rnd N: a random number below N (N at most 2^32).
rnd() {
  echo $(($(od -An -tu4 -N4 /dev/urandom | tr -d ' ') % $1))
}
M=4294967295
OA=$((4 * $(rnd 4)))
OB=$((16 + 4 * $(rnd 8)))
K1=$(rnd 4294967296)
K2=$(rnd 4294967296)
K3=$((2 * $(rnd 32768) + 1))
K5=$((2 * $(rnd 32768) + 1))
K6=$(rnd 4294967296)
XA=$(rnd 4294967296)
YB=$(rnd 4294967296)
# Each equation has exactly one solution (K3 and K5 are odd, so multiplying is a bijection).
K4=$(((((XA ^ K1) + K2) & M) * K3 & M))
K7=$(((YB * K5 - K6) & M))
echo "offsets: $OA $OB" >"$LOG_DIR/drawn.txt"

RUN="$SCRATCH/run"
mkdir -p "$RUN/tests"
chown -R "$OWNER" "$RUN"
{
  echo "== gcc -O0 -x c - -o target (offsets $OA and $OB)"
  cat <<C | (cd "$RUN" && as_owner gcc -O0 -x c - -o target)
#include <stdio.h>
#include <stdint.h>
static uint32_t word(const unsigned char *b) {
  return b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24;
}
int main(int argc, char **argv) {
  unsigned char b[64] = {0};
  FILE *f = argc > 1 ? fopen(argv[1], "rb") : NULL;
  if (f == NULL) return 2;
  if (fread(b, 1, sizeof(b), f) != sizeof(b)) return 3;
  fclose(f);
  uint32_t x = word(b + $OA), y = word(b + $OB);
  if (((x ^ ${K1}u) + ${K2}u) * ${K3}u == ${K4}u) puts("branch A");
  if (y * ${K5}u - ${K6}u == ${K7}u) puts("branch B");
  return 0;
}
C
  echo "exit code: $?"
  head -c 64 /dev/zero | tr '\0' A >"$RUN/seed"
  chown "$OWNER" "$RUN/seed"
} >"$LOG_DIR/02_target.log" 2>&1

{
  echo "== run_qsym.py -i seed -o tests -- ./target @@"
  cd "$RUN" && rc_of qsym as_owner timeout 600 env PATH="${PY%/python}:$SYSTEM_PATH" \
    "$PY" "$WORKDIR/bin/run_qsym.py" -i seed -o tests -- ./target @@ >"$SCRATCH/qsym.txt" 2>&1
  collect "$SCRATCH/qsym.txt" qsym.txt
  tail -n 40 "$SCRATCH/qsym.txt"
  echo "exit code: $(cat "$LOG_DIR/qsym.rc")"
  collect "$RUN/tests/qsym-last/pin.log" pin.log
} >"$LOG_DIR/03_qsym.log" 2>&1

# word FILE OFFSET: the little-endian 32-bit word at OFFSET, empty if the file is too short.
word() {
  od -An -tu4 -j "$2" -N4 "$1" 2>/dev/null | tr -d ' '
}
{
  A=unsolved
  B=unsolved
  n=0
  for t in "$RUN"/tests/qsym-last/0*; do
    [ -f "$t" ] && [ ! -L "$t" ] || continue
    n=$((n + 1))
    x=$(word "$t" "$OA")
    y=$(word "$t" "$OB")
    [ -n "$x" ] && [ $(((((x ^ K1) + K2) & M) * K3 & M)) -eq "$K4" ] && A=solved
    [ -n "$y" ] && [ $(((y * K5 - K6) & M)) -eq "$K7" ] && B=solved
    echo "== ${t##*/}"
    (cd "$RUN" && as_owner timeout 10 ./target "$t")
  done
  echo "testcases: $n" >"$LOG_DIR/testcases.txt"
  { echo "branch_a: $A"; echo "branch_b: $B"; } >"$LOG_DIR/solved.txt"
} >"$LOG_DIR/target.txt" 2>&1
{
  cat "$LOG_DIR/testcases.txt" "$LOG_DIR/solved.txt"
  cat "$LOG_DIR/target.txt"
} >"$LOG_DIR/04_testcases.log" 2>&1
