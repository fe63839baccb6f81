# Layer 2 experiment of legacycalc_demo24 (hidden from the agent), after experiment_lib.sh.
#
# Runs the binary the agent built ($WORKDIR/legacycalc), as the owner of WORKDIR, on formulas of
# its own and collects what it printed; checks.yaml (on the controller) compares every value
# with an independent evaluation. The binary itself is collected too, before it runs, so the
# controller can judge that it carries the repository's code (its ELF symbols and strings; a copy
# of python3 with a .pth evaluator beside it prints the right values too). When there is no
# binary, a diagnostic `make` in a scratch copy shows in the logs why (Layer 1 classifies its
# errors). RUNBOOK.MD is never read.
BIN="$WORKDIR/legacycalc"
# Formulas the agent never saw: every operator, and every way a formula can be invalid.
cat >"$SCRATCH/formulas.txt" <<'FORMULAS'
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
FORMULAS
chown "$OWNER" "$SCRATCH/formulas.txt"

{
  echo "== binary: $BIN"
  [ -f "$BIN" ] && [ ! -L "$BIN" ] && echo "regular: yes" || echo "regular: no"
  [ -x "$BIN" ] && echo "executable: yes" || echo "executable: no"
  echo "magic: $(head -c4 "$BIN" 2>/dev/null | od -An -tx1 | tr -d ' \n')"
  echo "size: $(stat -c %s "$BIN" 2>/dev/null)"
} >"$LOG_DIR/binary.txt" 2>&1
cat "$LOG_DIR/binary.txt" >"$LOG_DIR/01_binary.log"

if ! grep -q '^magic: 7f454c46$' "$LOG_DIR/binary.txt" || ! grep -q '^executable: yes$' "$LOG_DIR/binary.txt"; then
  # Diagnosis only (binary_built fails anyway): what does the README's `make` say in this
  # environment? Its errors are what Layer 1 classifies.
  {
    echo "== diagnostic build: make (in a scratch copy of the workdir)"
    mkdir -p "$SCRATCH/build"
    cp -a "$WORKDIR/." "$SCRATCH/build/"
    chown -R "$OWNER" "$SCRATCH/build"
    cd "$SCRATCH/build" && as_owner timeout 120 bash -c 'make legacycalc'
    echo "make exit code: $?"
  } >"$LOG_DIR/02_build.log" 2>&1
  exit 0
fi

# What is judged is what runs: the binary is collected (whole: the repository's build is about
# 30 KB, 270 KB with -g3; the cap is 1 MiB) before any of the agent's code runs, and its
# checksum is taken before and after the run.
collect "$BIN" legacycalc.elf
md5sum <"$BIN" >"$LOG_DIR/binary_before.md5" 2>&1

{
  echo "== experiment: $BIN < formulas.txt"
  cd "$WORKDIR" && rc_of experiment as_owner timeout 30 "$BIN" <"$SCRATCH/formulas.txt" >"$SCRATCH/out.txt" 2>"$SCRATCH/err.txt"
  collect "$SCRATCH/out.txt" output.txt
  cat "$LOG_DIR/output.txt" "$SCRATCH/err.txt"
  echo "exit code: $(cat "$LOG_DIR/experiment.rc")"
} >"$LOG_DIR/03_experiment.log" 2>&1
md5sum <"$BIN" >"$LOG_DIR/binary_after.md5" 2>&1
