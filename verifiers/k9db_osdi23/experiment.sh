# Layer 2 experiment of k9db_osdi23 (hidden from the agent), after experiment_lib.sh.
#
# Starts the K9db server the agent built with Bazel (bazel-bin/k9db/proxy/proxy, what
# `bazel run //:k9db` runs), as the owner of WORKDIR, on a port and database folder of its own,
# and checks that the process listening there is that binary. Then, through the machine's
# MySQL-protocol client, it creates a schema with names and rows drawn here (a data-subject
# table, a table owned by it), asks K9db for one subject's data (GDPR GET) and deletes it (GDPR
# FORGET): only K9db's ownership tracking returns exactly that subject's rows and removes them.
# Last, the Lobsters harness the agent built runs briefly against the same server. Outputs are
# collected for checks.yaml. RUNBOOK.MD is never read.
BIN="$WORKDIR/bazel-bin/k9db/proxy/proxy"
HARNESS="$WORKDIR/experiments/lobsters/bazel-bin/lobsters-harness"
R=$(od -An -tu4 -N4 /dev/urandom | tr -d ' ')
PORT=$((R % 20000 + 20000))
T="v$((R % 900000 + 100000))"
OWN=$((R % 5 + 3))
OTHER=$((R / 7 % 4 + 2))
{
  echo "get_own: $OWN"
  echo "get_other: 0"
  echo "forgotten_own: 0"
  echo "forgotten_other: $OTHER"
} >"$LOG_DIR/expected.txt"

{
  echo "== binary: $BIN"
  REAL=$(readlink -f "$BIN" 2>/dev/null)
  [ -n "$REAL" ] && [ -f "$REAL" ] && echo "regular: yes" || echo "regular: no"
  [ -x "$REAL" ] && echo "executable: yes" || echo "executable: no"
  echo "magic: $(head -c4 "$REAL" 2>/dev/null | od -An -tx1 | tr -d ' \n')"
  echo "size: $(stat -c %s "$REAL" 2>/dev/null)"
  [ -d "$BIN.runfiles" ] && echo "runfiles: yes" || echo "runfiles: no"
} >"$LOG_DIR/binary.txt" 2>&1
cat "$LOG_DIR/binary.txt" >"$LOG_DIR/01_binary.log"
echo "exe: $(readlink -f "$BIN" 2>/dev/null)" >"$LOG_DIR/expected_exe.txt"

if ! grep -q '^magic: 7f454c46$' "$LOG_DIR/binary.txt" || ! grep -q '^executable: yes$' "$LOG_DIR/binary.txt"; then
  exit 0
fi

CLIENT=""
for c in mariadb mysql; do
  PATH=$SYSTEM_PATH command -v "$c" >/dev/null 2>&1 && CLIENT=$c && break
done
# sql FILE OUT: the statements of FILE through the client, tab-separated rows, no headers.
sql() {
  as_owner timeout 60 "$CLIENT" -h 127.0.0.1 -P "$PORT" -u k9db -ppassword -N -B <"$1" >"$2" 2>&1
}

{
  echo "== server: proxy --hostname=127.0.0.1:$PORT --db_path=$SCRATCH/db/"
  mkdir -p "$SCRATCH/db"
  chown "$OWNER" "$SCRATCH/db"
  # bazel run starts the binary in its runfiles tree, where it finds the Calcite jars.
  cd "$BIN.runfiles/k9db" 2>/dev/null || cd "$BIN.runfiles/__main__" 2>/dev/null || cd "$WORKDIR"
  setsid "$TOOLS/as_owner" "$BIN" "--hostname=127.0.0.1:$PORT" "--db_path=$SCRATCH/db/" \
    >"$SCRATCH/server.txt" 2>&1 &
  SPID=$!
  i=0
  # Up to 4 minutes (the JVM and RocksDB start first), unless the server has exited.
  while [ $i -lt 240 ] && kill -0 "$SPID" 2>/dev/null && ! netstat -tln 2>/dev/null | grep -q "127.0.0.1:$PORT "; do
    sleep 1
    i=$((i + 1))
  done
  echo "waited: $i s"
  PID=$(netstat -tlnp 2>/dev/null | sed -n "s|.* 127.0.0.1:$PORT .* LISTEN *\([0-9]*\)/.*|\1|p" | head -n 1)
  echo "exe: $(readlink -f "/proc/$PID/exe" 2>/dev/null)" >"$LOG_DIR/listener_exe.txt"
  cat "$LOG_DIR/listener_exe.txt"
} >"$LOG_DIR/02_server.log" 2>&1

{
  echo "== client: ${CLIENT:-none}; table names u$T, p$T; $OWN and $OTHER rows"
  {
    echo "CREATE DATA_SUBJECT TABLE u$T (ID INT, name TEXT, PRIMARY KEY(ID));"
    echo "CREATE TABLE p$T (ID INT, author INT, body TEXT, PRIMARY KEY(ID), FOREIGN KEY (author) OWNED_BY u$T(ID));"
    echo "INSERT INTO u$T VALUES (11, 'own$T');"
    echo "INSERT INTO u$T VALUES (12, 'other$T');"
    i=1
    while [ $i -le "$OWN" ]; do echo "INSERT INTO p$T VALUES ($((100 + i)), 11, 'own${T}_$i');"; i=$((i + 1)); done
    i=1
    while [ $i -le "$OTHER" ]; do echo "INSERT INTO p$T VALUES ($((200 + i)), 12, 'other${T}_$i');"; i=$((i + 1)); done
  } >"$SCRATCH/load.sql"
  echo "GDPR GET u$T 11;" >"$SCRATCH/get.sql"
  { echo "GDPR FORGET u$T 11;"; echo "SELECT * FROM p$T;"; } >"$SCRATCH/forget.sql"
  echo "SHOW MEMORY;" >"$SCRATCH/memory.sql"
  if [ -n "$CLIENT" ]; then
    rc_of load sql "$SCRATCH/load.sql" "$SCRATCH/load.txt"
    rc_of get sql "$SCRATCH/get.sql" "$SCRATCH/get.txt"
    rc_of forget sql "$SCRATCH/forget.sql" "$SCRATCH/forget.txt"
    rc_of memory sql "$SCRATCH/memory.sql" "$SCRATCH/memory.txt"
  fi
  for f in load get forget memory; do collect "$SCRATCH/$f.txt" "$f.txt"; cat "$SCRATCH/$f.txt" 2>/dev/null; done
  {
    echo "get_own: $(grep -c "own${T}_" "$SCRATCH/get.txt" 2>/dev/null)"
    echo "get_other: $(grep -c "other${T}_" "$SCRATCH/get.txt" 2>/dev/null)"
    echo "forgotten_own: $(grep -c "own${T}_" "$SCRATCH/forget.txt" 2>/dev/null)"
    echo "forgotten_other: $(grep -c "other${T}_" "$SCRATCH/forget.txt" 2>/dev/null)"
  } >"$LOG_DIR/seen.txt"
  cat "$LOG_DIR/seen.txt"
} >"$LOG_DIR/03_sql.log" 2>&1

{
  echo "== lobsters-harness --runtime 10 --datascale 0.01 --reqscale 2 --queries pelton --backend pelton --prime --in-flight 1"
  cd "$WORKDIR/experiments/lobsters" && rc_of lobsters as_owner timeout 900 "$HARNESS" \
    --runtime 10 --datascale 0.01 --reqscale 2 --queries pelton --backend pelton --prime \
    --in-flight 1 "mysql://pelton:password@127.0.0.1:$PORT/lobsters" >"$SCRATCH/lobsters.txt" 2>&1
  collect "$SCRATCH/lobsters.txt" lobsters.txt
  tail -n 40 "$SCRATCH/lobsters.txt"
  echo "exit code: $(cat "$LOG_DIR/lobsters.rc")"
} >"$LOG_DIR/04_lobsters.log" 2>&1

# The server stops with the verifier's own process group; its log is evidence for Layer 1.
kill -INT "$PID" 2>/dev/null
sleep 2
collect "$SCRATCH/server.txt" server.txt
tail -n 30 "$SCRATCH/server.txt" >>"$LOG_DIR/02_server.log"
