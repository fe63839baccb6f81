# Layer 2 experiment of silt_sosp11 (hidden from the agent), after experiment_lib.sh.
#
# Runs the test programs the agent built in $WORKDIR/test/fawnds, as the owner of WORKDIR:
# testCombi (Google Test of the combined SILT store) on its short cases in an order shuffled with
# a seed drawn here (the seed gtest reports must be ours, so a replayed log shows), then
# benchCuckoo (the partial-key cuckoo index benchmark). Outputs are collected for checks.yaml.
# The seed is the controller's draw ($VARIANT_SEED): gtest's shuffle turns it and testCombi.cc's
# list of cases (the filtered-out ones included) into one order, compared with the operator's
# bank. Strings of the sources are looked for in both binaries (a launcher of a script has
# none) and the sources they are built from, with their configurations, are pinned.
# When a binary is missing, a diagnostic make in a scratch copy shows why (Layer 1 classifies
# its errors). RUNBOOK.MD is never read.
DIR="$WORKDIR/test/fawnds"
SEED=${VARIANT_SEED:-$(($(od -An -tu2 -N2 /dev/urandom | tr -d ' ') % 9000 + 1000))}
echo "seed: $SEED" >"$LOG_DIR/seed.txt"

{
  for b in testCombi benchCuckoo; do
    BIN="$DIR/$b"
    echo "== binary: $b"
    [ -f "$BIN" ] && [ ! -L "$BIN" ] && echo "$b regular: yes" || echo "$b regular: no"
    [ -x "$BIN" ] && echo "$b executable: yes" || echo "$b executable: no"
    echo "$b magic: $(head -c4 "$BIN" 2>/dev/null | od -An -tx1 | tr -d ' \n')"
    echo "$b size: $(stat -c %s "$BIN" 2>/dev/null)"
  done
  # String literals each program compiles in: its own .cc's configuration file and messages of
  # fawnds_combi.cc and hash_table_cuckoo.cc, linked in from the libfawnds convenience library.
  for lit in "testConfigs/testCombi.xml" "(%s) latency: stage: %zu, i: %zu, sum: %llu ns" \
    "Error while creating a middle store" "Could not zero out hash_table file."; do
    has_text "$DIR/testCombi" "$lit" && echo "testCombi string '$lit': yes" ||
      echo "testCombi string '$lit': no"
  done
  for lit in "testConfigs/exp_benchCuckoo.xml" "%s: %zu keys per index" \
    "%s: %lf lookups/sec (%s)" "Could not zero out hash_table file."; do
    has_text "$DIR/benchCuckoo" "$lit" && echo "benchCuckoo string '$lit': yes" ||
      echo "benchCuckoo string '$lit': no"
  done
} >"$LOG_DIR/binary.txt" 2>&1
cat "$LOG_DIR/binary.txt" >"$LOG_DIR/01_binary.log"
# Not utils/hashutil.cc nor fawnds/task.cc: the OpenSSL 3 and glibc repairs change those.
pinned test/fawnds/testCombi.cc test/fawnds/benchCuckoo.cc test/fawnds/testConfigs/testCombi.xml \
  test/fawnds/testConfigs/exp_benchCuckoo.xml fawnds/fawnds_combi.cc fawnds/hash_table_cuckoo.cc \
  fawnds/fawnds_factory.cc

if [ "$(grep -c -e '^[a-zA-Z]* magic: 7f454c46$' -e '^[a-zA-Z]* executable: yes$' "$LOG_DIR/binary.txt")" != 4 ]; then
  # Diagnosis only (binaries_built fails anyway): INSTALL.SILT's build in a scratch copy.
  {
    echo "== diagnostic build: autoreconf -is; ./configure; make (in a scratch copy of the workdir)"
    mkdir -p "$SCRATCH/build"
    cp -a "$WORKDIR/." "$SCRATCH/build/"
    chown -R "$OWNER" "$SCRATCH/build"
    cd "$SCRATCH/build" || exit 0
    [ -x configure ] || as_owner timeout 120 autoreconf -is
    [ -f Makefile ] || as_owner timeout 120 ./configure
    as_owner timeout 240 make -j2
    echo "make exit code: $?"
  } >"$LOG_DIR/02_build.log" 2>&1
  exit 0
fi

{
  echo "== testCombi --gtest_filter='FawnDS_Combi_Test.*:-*Many*' --gtest_shuffle --gtest_random_seed=$SEED"
  cd "$DIR" && rc_of testcombi as_owner timeout 300 ./testCombi \
    "--gtest_filter=FawnDS_Combi_Test.*:-*Many*" --gtest_shuffle "--gtest_random_seed=$SEED" \
    >"$SCRATCH/testcombi.txt" 2>&1
  collect "$SCRATCH/testcombi.txt" testcombi.txt
  sed -n "s/^Note: Randomizing tests' orders with a seed of \([0-9]*\) .*/seed: \1/p" \
    "$SCRATCH/testcombi.txt" | head -n 1 >"$LOG_DIR/seen_seed.txt"
  # The order the cases ran in, one line: the bank's result.
  echo "order: $(sed -n 's/^\[ RUN      \] FawnDS_Combi_Test\.\([A-Za-z0-9_]*\)$/\1/p' \
    "$SCRATCH/testcombi.txt" | tr '\n' ' ' | sed 's/ $//')" >"$LOG_DIR/order.txt"
  grep -e '^\[' "$SCRATCH/testcombi.txt" | tail -n 30
  echo "exit code: $(cat "$LOG_DIR/testcombi.rc")"
} >"$LOG_DIR/03_testcombi.log" 2>&1

{
  echo "== benchCuckoo"
  cd "$DIR" && rc_of benchcuckoo as_owner timeout 420 ./benchCuckoo >"$SCRATCH/benchcuckoo.txt" 2>&1
  collect "$SCRATCH/benchcuckoo.txt" benchcuckoo.txt
  grep '^cuckoo:' "$SCRATCH/benchcuckoo.txt"
  echo "exit code: $(cat "$LOG_DIR/benchcuckoo.rc")"
} >"$LOG_DIR/04_benchcuckoo.log" 2>&1
