# Layer 2 experiment of eet_osdi24 (hidden from the agent), after experiment_lib.sh.
#
# Runs the eet the agent built ($WORKDIR/eet), as the owner of WORKDIR, against SQLite for two
# minutes in a fresh folder, as scripts/sqlite/test_setup.sh does without Docker and tmux, and
# collects its log, its exit code, the folder's file names and the bug files it saved; checks.yaml
# judges them on the controller. Each round of eet seeds itself from std::random_device, so the
# run differs every time: it either tests until the experiment stops it or stops at the first
# "bug" it finds (abort, exit 134) with the queries saved. When there is no binary, a diagnostic
# build in a scratch copy shows in the logs why (Layer 1 classifies its errors). The binary is
# searched for its sources' strings (a launcher of a script holds none), the sources are pinned
# and the sqlite3 CLI is vouched. Then a second, short run is the bank's (checks.yaml's
# variants): eet again, its std::random_device answering from a seed the verifier draws (a
# preloaded library of the verifier's, compiled here), so the database and the queries EET
# generates are a function of the seed; digests of what it generated until its first round's
# third test are the results. RUNBOOK.MD is never read.
BIN="$WORKDIR/eet"
RUN="$SCRATCH/sqlite_test/test1"

{
  echo "== binary: $BIN"
  [ -f "$BIN" ] && [ ! -L "$BIN" ] && echo "regular: yes" || echo "regular: no"
  [ -x "$BIN" ] && echo "executable: yes" || echo "executable: no"
  echo "magic: $(head -c4 "$BIN" 2>/dev/null | od -An -tx1 | tr -d ' \n')"
  echo "size: $(stat -c %s "$BIN" 2>/dev/null)"
  # String literals of qcn.cc, general_process.cc, grammar.cc, qcn_tester.cc and sqlite.cc (its
  # command's tail, which the reference's change of the CLI's path leaves as it is).
  for lit in "-------------Test Info------------" \
    "have generated db ... " \
    "generate_database: cannot remove file (" \
    "select_all and pointed_type cannot be used at the same time" \
    "so sleep 1 min (wait for recovering the server)" \
    "< sqlite3_test.sql > sqlite3_output 2> sqlite3_error"; do
    has_text "$BIN" "$lit" && echo "string '$lit': yes" || echo "string '$lit': no"
  done
} >"$LOG_DIR/binary.txt" 2>&1
cat "$LOG_DIR/binary.txt" >"$LOG_DIR/01_binary.log"
# The driver, the generator and the testers. Not sqlite.cc: the deployment must change the path
# of the sqlite3 CLI in it (the artifact's is its Docker image's), each in its own way.
pinned qcn.cc general_process.cc grammar.cc qcn_tester/qcn_tester.cc \
  qcn_tester/qcn_select_tester.cc qcn_tester/qcn_update_tester.cc qcn_tester/qcn_delete_tester.cc \
  qcn_tester/qcn_insert_select_tester.cc qcn_tester/qcn_cte_tester.cc
# eet runs `timeout N sqlite3 ...` through /bin/sh with the PATH as_owner gives: an sqlite3 of
# the agent's earlier in it shows here.
vouch sqlite3 sqlite3

if ! grep -q '^magic: 7f454c46$' "$LOG_DIR/binary.txt" || ! grep -q '^executable: yes$' "$LOG_DIR/binary.txt"; then
  # Diagnosis only (binary_built fails anyway): what the README's build says in this
  # environment; configure's and the compiler's errors are what Layer 1 classifies.
  {
    echo "== diagnostic build: autoreconf -if && ./configure && make (in a scratch copy of the workdir)"
    mkdir -p "$SCRATCH/build"
    cp -a "$WORKDIR/." "$SCRATCH/build/"
    chown -R "$OWNER" "$SCRATCH/build"
    cd "$SCRATCH/build" && as_owner timeout 180 sh -c 'autoreconf -if && ./configure && make -j2'
    echo "build exit code: $?"
  } >"$LOG_DIR/02_build.log" 2>&1
  exit 0
fi

mkdir -p "$RUN"
chown -R "$OWNER" "$SCRATCH/sqlite_test"
{
  echo "== experiment: cd sqlite_test/test1 && eet --sqlite=test1.db (stopped after 120 s)"
  # eet forks each round and runs the sqlite3 CLI from it: it runs in a session of its own, and
  # a watchdog (in another) stops that whole session after 120 s, so nothing of it outlives
  # the experiment.
  (cd "$RUN" && exec setsid "$TOOLS/as_owner" "$BIN" --sqlite=test1.db) >"$SCRATCH/eet.log" 2>&1 &
  EET_PID=$!
  setsid "$TOOLS/sh" -c "sleep 120; echo stopped >'$SCRATCH/stopped'; kill -TERM -- -$EET_PID; sleep 3; kill -KILL -- -$EET_PID" 2>/dev/null &
  WATCHDOG=$!
  wait "$EET_PID"
  echo "$?" >"$LOG_DIR/eet.rc"
  kill -KILL -- "-$WATCHDOG" 2>/dev/null
  kill -KILL -- "-$EET_PID" 2>/dev/null
  wait "$WATCHDOG" 2>/dev/null
  if [ -f "$SCRATCH/stopped" ]; then
    echo "stopped after 120 s" >"$LOG_DIR/eet_end.txt"
  else
    echo "exited by itself with $(cat "$LOG_DIR/eet.rc")" >"$LOG_DIR/eet_end.txt"
  fi
  cat "$LOG_DIR/eet_end.txt"
  tail -n 30 "$SCRATCH/eet.log"
} >"$LOG_DIR/03_experiment.log" 2>&1

collect "$SCRATCH/eet.log" eet.log
ls -1 "$RUN" >"$LOG_DIR/run_files.txt" 2>&1
for f in unexpected.sql db_setup.sql origin.sql eet.sql; do
  collect "$RUN/$f" "bug_$f"
done

# The drawn run. The library replaces libstdc++'s std::random_device::_M_getval(): each call
# gives the next number of a sequence that starts from the seed, so eet's rounds seed
# themselves (and seed again after a failed generation) from it. It is compiled with the
# machine's gcc as the owner: a compiler of the agent's that made it ignore the seed would only
# make the results another seed's (the bank's answers are a real eet's for this one).
EET_SEED=${VARIANT_EET_SEED:-$(($(rand_below 999999) + 1))}
echo "eet_seed: $EET_SEED" >"$LOG_DIR/eet_seed.txt"
SEEDED="$SCRATCH/seeded"
VRUN="$SEEDED/test1"
mkdir -p "$VRUN"
cat >"$SEEDED/seed.c" <<'SEED_C'
#include <stdlib.h>
static unsigned long long state;
static int ready;
unsigned int _ZNSt13random_device9_M_getvalEv(void *self) {
  (void)self;
  if (!ready) {
    const char *s = getenv("DEPLOYBENCH_EET_SEED");
    state = s ? strtoull(s, 0, 10) : 1;
    ready = 1;
  }
  state = state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (unsigned int)(state >> 33);
}
SEED_C
chown -R "$OWNER" "$SEEDED"
{
  echo "== drawn run: eet --sqlite=test1.db with std::random_device from seed $EET_SEED, until its first round's third test (90 s at most)"
  cd "$SEEDED" && rc_of seed_library as_owner gcc -shared -fPIC -O2 -o seed.so seed.c
  echo "seed library build exit code: $(cat "$LOG_DIR/seed_library.rc")"
: >"$SCRATCH/seeded.log"
  (cd "$VRUN" && exec setsid "$TOOLS/as_owner" "$TOOLS/busybox" env LD_PRELOAD="$SEEDED/seed.so" \
    DEPLOYBENCH_EET_SEED="$EET_SEED" "$BIN" --sqlite=test1.db) >"$SCRATCH/seeded.log" 2>&1 &
  SEEDED_PID=$!
  i=0
  while [ $i -lt 450 ] && kill -0 "$SEEDED_PID" 2>/dev/null && ! grep -q '^\[2\]$' "$SCRATCH/seeded.log" 2>/dev/null; do
    sleep 0.2
    i=$((i + 1))
  done
  kill -KILL -- "-$SEEDED_PID" 2>/dev/null
  wait "$SEEDED_PID" 2>/dev/null
  grep -q '^\[2\]$' "$SCRATCH/seeded.log" && echo "reached: third test" || echo "reached: $(tail -n 1 "$SCRATCH/seeded.log")"
} >"$LOG_DIR/04_drawn_run.log" 2>&1
# The log up to the third test's line, without what the machine's speed and cores decide.
sed '/^\[2\]$/q' "$SCRATCH/seeded.log" | grep -v -e '^running on CPU core ' -e 'time: ' \
  -e '^test throughput: ' -e '^execution percentage: ' >"$SCRATCH/seeded_cut.log"
collect "$SCRATCH/seeded_cut.log" seeded_eet.log
# The SQL EET generated: its database's statements, and where the run ended by itself (a
# statement SQLite rejected, often while the database was being made: no db_setup.sql then) the
# last statement it sent and the one it saved. A run stopped at its third test leaves the
# database's only: the statement being sent at that moment is the machine's timing's.
GENERATED="db_setup.sql"
grep -q '^\[2\]$' "$SCRATCH/seeded.log" || GENERATED="db_setup.sql sqlite3_test.sql unexpected.sql"
: >"$SCRATCH/generated.sql"
for f in $GENERATED; do
  if [ -f "$VRUN/$f" ] && [ ! -L "$VRUN/$f" ]; then
    echo "== $f" >>"$SCRATCH/generated.sql"
    cat "$VRUN/$f" >>"$SCRATCH/generated.sql"
  fi
done
collect "$SCRATCH/generated.sql" seeded_generated.sql
{
  echo "generated_sql: $([ -s "$SCRATCH/generated.sql" ] && sha256sum <"$SCRATCH/generated.sql" | cut -c1-64 || echo none)"
  echo "run_digest: $(sha256sum <"$SCRATCH/seeded_cut.log" | cut -c1-64)"
} >"$LOG_DIR/seeded.txt"
exit 0
