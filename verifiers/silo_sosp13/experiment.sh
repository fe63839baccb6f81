# Layer 2 experiment of silo_sosp13 (hidden from the agent), after experiment_lib.sh.
#
# Runs the benchmark driver the agent built ($WORKDIR/out-perf/benchmarks/dbtest), as the owner
# of WORKDIR, on a short TPC-C run of its own (2 threads, 8 seconds rather than the designated
# 10, so a replayed log shows; the scale factor is the controller's draw, $VARIANT_SCALE_FACTOR)
# and collects stdout and stderr; checks.yaml judges them on the controller. The loader's seeds
# are fixed in tpcc.cc, so the order lines it loads for a scale factor are one number that only
# the real loader knows (compared with the operator's bank). Strings of dbtest.cc and tpcc.cc are
# looked for in the binary (21 MB: too big to collect whole), which a launcher lacks, and the
# sources' blob ids are pinned.
# When there is no binary, a diagnostic `make dbtest` in a scratch copy
# shows in the logs why (Layer 1 classifies its errors). RUNBOOK.MD is never read.
BIN="$WORKDIR/out-perf/benchmarks/dbtest"

{
  echo "== binary: $BIN"
  [ -f "$BIN" ] && [ ! -L "$BIN" ] && echo "regular: yes" || echo "regular: no"
  [ -x "$BIN" ] && echo "executable: yes" || echo "executable: no"
  echo "magic: $(head -c4 "$BIN" 2>/dev/null | od -An -tx1 | tr -d ' \n')"
  echo "size: $(stat -c %s "$BIN" 2>/dev/null)"
  # String literals the build compiles in from dbtest.cc and tpcc.cc (a launcher has none).
  for lit in "specified without logging enabled" "does not have persistence implemented" \
    "[INFO] finished loading stock" "[WARNING] customer loader loading abort"; do
    has_text "$BIN" "$lit" && echo "string '$lit': yes" || echo "string '$lit': no"
  done
} >"$LOG_DIR/binary.txt" 2>&1
cat "$LOG_DIR/binary.txt" >"$LOG_DIR/01_binary.log"
pinned benchmarks/dbtest.cc benchmarks/tpcc.cc benchmarks/bench.cc
SF=${VARIANT_SCALE_FACTOR:-2}

if ! grep -q '^magic: 7f454c46$' "$LOG_DIR/binary.txt" || ! grep -q '^executable: yes$' "$LOG_DIR/binary.txt"; then
  # Diagnosis only (binary_built fails anyway): what the README's build says in this
  # environment; its compiler errors are what Layer 1 classifies.
  {
    echo "== diagnostic build: make dbtest (in a scratch copy of the workdir)"
    mkdir -p "$SCRATCH/build"
    cp -a "$WORKDIR/." "$SCRATCH/build/"
    chown -R "$OWNER" "$SCRATCH/build"
    cd "$SCRATCH/build" && as_owner timeout 180 make -j2 dbtest
    echo "make exit code: $?"
  } >"$LOG_DIR/02_build.log" 2>&1
  exit 0
fi

{
  echo "== experiment: out-perf/benchmarks/dbtest --verbose --bench tpcc --num-threads 2 --scale-factor $SF --runtime 8"
  cd "$WORKDIR" && rc_of experiment as_owner timeout 300 "$BIN" --verbose --bench tpcc \
    --num-threads 2 --scale-factor "$SF" --runtime 8 >"$SCRATCH/stdout.txt" 2>"$SCRATCH/stderr.txt"
  collect "$SCRATCH/stdout.txt" stdout.txt
  collect "$SCRATCH/stderr.txt" stderr.txt
  tail -n 40 "$SCRATCH/stderr.txt"
  tail -n 5 "$SCRATCH/stdout.txt"
  echo "exit code: $(cat "$LOG_DIR/experiment.rc")"
} >"$LOG_DIR/03_experiment.log" 2>&1
