# Layer 2 experiment of polyjuice_osdi21 (hidden from the agent), after experiment_lib.sh.
#
# Runs the TPC-C driver the agent built in ae-tpcc-polyjuice, as the owner of WORKDIR, with
# Polyjuice's concurrency control (ndb-ic3) and the shipped learned policy, like the AE guide's
# getting-started run but on the controller's scale factor ($VARIANT_SCALE_FACTOR, 4 to 15
# warehouses, not the guide's 1) for a runtime drawn here (8 to 15 s), so a replayed log shows:
# the scale, the whole seconds of runtime and the loaded warehouse and stock tables must be the
# drawn ones. The tables are loaded by one loader each (no --parallel-loading): tpcc.cc seeds
# them with fixed numbers (2343352 for the orders) and a non-parallel loader never aborts (it
# asserts so), so the order lines loaded for a scale factor are one integer that only the real
# loader gives (compared with the operator's bank): a program that prints the drawn scale back
# cannot know it. String literals of dbtest.cc and tpcc.cc are looked for in the binary, which a
# launcher of a script lacks, and the sources' blob ids are pinned. Outputs are collected for
# checks.yaml. When there is no binary, a diagnostic `make dbtest` in a scratch copy shows in the
# logs why (Layer 1 classifies its errors).
# RUNBOOK.MD is never read.
DIR="$WORKDIR/ae-tpcc-polyjuice"
BIN="$DIR/out-perf.masstree/benchmarks/dbtest"
R=$(od -An -tu2 -N2 /dev/urandom | tr -d ' ')
SF=${VARIANT_SCALE_FACTOR:-$((R % 12 + 4))}
RT=$((R / 4 % 8 + 8))
{
  echo "scale: $SF"
  echo "runtime: $RT"
  echo "warehouse_0: $SF"
  echo "stock_0: $((SF * 100000))"
} >"$LOG_DIR/drawn.txt"

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
pinned ae-tpcc-polyjuice/benchmarks/dbtest.cc ae-tpcc-polyjuice/benchmarks/tpcc.cc \
  ae-tpcc-polyjuice/benchmarks/bench.cc

if ! grep -q '^magic: 7f454c46$' "$LOG_DIR/binary.txt" || ! grep -q '^executable: yes$' "$LOG_DIR/binary.txt"; then
  # Diagnosis only (binary_built fails anyway): the guide's build in this environment.
  {
    echo "== diagnostic build: make dbtest MYSQL=0 (in a scratch copy of ae-tpcc-polyjuice)"
    mkdir -p "$SCRATCH/build"
    cp -a "$DIR/." "$SCRATCH/build/"
    chown -R "$OWNER" "$SCRATCH/build"
    cd "$SCRATCH/build" && as_owner timeout 240 make -j2 dbtest MYSQL=0
    echo "make exit code: $?"
  } >"$LOG_DIR/02_build.log" 2>&1
  exit 0
fi

{
  echo "== experiment: dbtest --verbose --bench tpcc (one loader per table) ... --db-type ndb-ic3 --runtime $RT --num-threads 1 --scale-factor $SF --policy training/input-RL-occ-tpcc.txt"
  cd "$DIR" && rc_of experiment as_owner timeout 400 "$BIN" --verbose --bench tpcc \
    --retry-aborted-transactions --bench-opt "--workload-mix 45,43,4,4,4" \
    --db-type ndb-ic3 --backoff-aborted-transactions --runtime "$RT" --num-threads 1 \
    --scale-factor "$SF" --policy training/input-RL-occ-tpcc.txt \
    >"$SCRATCH/stdout.txt" 2>"$SCRATCH/stderr.txt"
  collect "$SCRATCH/stdout.txt" stdout.txt
  collect "$SCRATCH/stderr.txt" stderr.txt
  # The table sizes dbtest printed after loading (the first line of each; the later ones carry
  # the run's "(+N records)"), and the scale and whole seconds of runtime it reports, in drawn.txt's shape.
  {
    sed -n 's/^  scale       : \([0-9]*\)$/scale: \1/p' "$SCRATCH/stderr.txt" | head -n 1
    sed -n 's/^runtime: \([0-9]*\)[.0-9]* sec$/runtime: \1/p' "$SCRATCH/stderr.txt" | head -n 1
    sed -n 's/^table \(warehouse_0\) size \([0-9]*\)$/\1: \2/p' "$SCRATCH/stderr.txt" | head -n 1
    sed -n 's/^table \(stock_0\) size \([0-9]*\)$/\1: \2/p' "$SCRATCH/stderr.txt" | head -n 1
  } >"$LOG_DIR/loaded.txt"
  grep -e '^table ' -e '^runtime:' -e '^agg_throughput:' -e '^agg_abort_rate:' -e '^txn_breakdown:' "$SCRATCH/stderr.txt" | tail -n 40
  tail -n 5 "$SCRATCH/stdout.txt"
  echo "exit code: $(cat "$LOG_DIR/experiment.rc")"
} >"$LOG_DIR/03_experiment.log" 2>&1
