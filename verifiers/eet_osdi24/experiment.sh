# Layer 2 experiment of eet_osdi24 (hidden from the agent), after experiment_lib.sh.
#
# Runs the eet the agent built ($WORKDIR/eet), as the owner of WORKDIR, against SQLite for two
# minutes in a fresh folder, as scripts/sqlite/test_setup.sh does without Docker and tmux, and
# collects its log, its exit code, the folder's file names and the bug files it saved; checks.yaml
# judges them on the controller. Each round of eet seeds itself from std::random_device, so the
# run differs every time: it either tests until the experiment stops it or stops at the first
# "bug" it finds (abort, exit 134) with the queries saved. When there is no binary, a diagnostic
# build in a scratch copy shows in the logs why (Layer 1 classifies its errors). No input of the
# run is the verifier's to draw, so no bank: the binary is searched for its sources' strings (a
# launcher of a script holds none), the sources are pinned and the sqlite3 CLI is vouched.
# RUNBOOK.MD is never read.
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
exit 0
