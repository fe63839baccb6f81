# Layer 2 experiment of karousos_eurosys24 (hidden from the agent), after experiment_lib.sh.
#
# Writes a message workload of its own (one thread: a throwaway first post, which the Lua
# client leaves out of its trace, then posts of messages drawn here, each read back), runs the
# agent's Karousos server on it (./runServer.sh, which starts the agent's MySQL, records advice
# and parses the binlog with the patched mysqlbinlog) and then the Karousos verifier
# (./runVerifier.sh), as the owner of WORKDIR with KAR_HOME=WORKDIR. Then it changes one drawn
# message in one response of the recorded trace and runs the verifier again: an auditor that
# re-executes the requests must reject that trace. What runs is vouched for first: the
# repository's scripts and the JavaScript they start are pinned (blob ids), mysqld must hold
# MySQL's own version format and release string (a launcher of a script holds neither), and the
# node on the system PATH is vouched (an ELF or a package's, never a script) and must hold
# Node 12.16.1's release string and N-API's exported names. Outputs are collected for
# checks.yaml. RUNBOOK.MD is never read.
SRC="$WORKDIR/src"
MY=""
for d in "$WORKDIR/mysql/usr/local/mysql" "$WORKDIR/mysql" "/home/$OWNER/mysql/usr/local/mysql" /usr/local/mysql; do
  [ -x "$d/bin/mysqld_safe" ] && MY=$d && break
done
{
  echo "== mysql: ${MY:-none}"
  echo "magic: $(head -c4 "$MY/bin/mysqld" 2>/dev/null | od -An -tx1 | tr -d ' \n')"
  echo "mysqld: $(as_owner "$MY/bin/mysqld" --version 2>&1 | head -n 1)"
  echo "node: $(as_owner node --version 2>&1 | head -n 1)"
  [ -d "$SRC/apps/message-prover" ] && echo "prover: yes" || echo "prover: no"
  [ -d "$SRC/apps/message-verifier" ] && echo "verifier: yes" || echo "verifier: no"
  # mysqld.cc's print_version format and the release it is handed (a separate constant).
  for lit in "  Ver %s for %s on %s (%s)" "8.0.19"; do
    has_text "$MY/bin/mysqld" "$lit" && echo "mysqld string '$lit': yes" || echo "mysqld string '$lit': no"
  done
  # Node's release string and names of the N-API it exports to addons.
  NODE=$(PATH=$SYSTEM_PATH command -v node)
  for lit in "v12.16.1" "napi_create_function" "napi_get_uv_event_loop"; do
    has_text "$NODE" "$lit" && echo "node string '$lit': yes" || echo "node string '$lit': no"
  done
} >"$LOG_DIR/binary.txt" 2>&1
cat "$LOG_DIR/binary.txt" >"$LOG_DIR/01_binary.log"
vouch node node
pinned src/runServer.sh src/runVerifier.sh src/env.sh src/create_trace.py \
  src/send_request_lua/send_request_message.lua src/runServer/index.js src/runVerifier/index.js \
  src/verifier-lib/src/cov.js

R=$(od -An -tu4 -N4 /dev/urandom | tr -d ' ')
N=$((R % 4 + 4))
W="v$((R % 900000 + 100000))"
{ echo "posted: $N"; echo "read_back: $N"; } >"$LOG_DIR/expected.txt"
if [ -z "$MY" ] || [ ! -x "$SRC/runServer.sh" ]; then
  exit 0
fi

# The drawn messages: 12 lowercase letters each, as the bundled workloads' messages are letters.
: >"$SCRATCH/messages.txt"
i=1
while [ $i -le "$N" ]; do
  tr -dc a-z </dev/urandom | head -c 12 >>"$SCRATCH/messages.txt"
  echo >>"$SCRATCH/messages.txt"
  i=$((i + 1))
done
collect "$SCRATCH/messages.txt" messages.txt
WL="$SRC/workloads/message/$W"
mkdir -p "$WL"
{
  echo "RID,REQUEST TYPE,DATE,MESSAGE,READABLE"
  echo "1,post,0-,warmup,true"
  i=1
  while read -r m; do
    echo "$((2 * i)),post,$((2 * i))-,$m,true"
    echo "$((2 * i + 1)),get,$((2 * i))-,,"
    i=$((i + 1))
  done <"$SCRATCH/messages.txt"
} >"$WL/t1.csv"
chown -R "$OWNER" "$WL"

# kar SCRIPT: one of the repository's scripts from src/, as the owner, in the README's environment.
kar() {
  (cd "$SRC" && as_owner timeout 900 env KAR_HOME="$WORKDIR" MYSQL_INSTALL_LOC="$MY" \
    KEEP_ALIVE_FOR=20000 bash "$@")
}
{
  echo "== runServer.sh message $W ($N drawn messages)"
  rc_of server kar ./runServer.sh message "$W" >"$SCRATCH/server.txt" 2>&1
  collect "$SCRATCH/server.txt" server.txt
  tail -n 30 "$SCRATCH/server.txt"
  echo "exit code: $(cat "$LOG_DIR/server.rc")"
} >"$LOG_DIR/02_server.log" 2>&1

TRACE="$SRC/advice/karousos_message-$W/trace.csv"
{
  collect "$TRACE" trace.csv
  p=0
  g=0
  while read -r m; do
    grep -q "Posted: [^,]*: $m" "$TRACE" 2>/dev/null && p=$((p + 1))
    grep -v "Posted" "$TRACE" 2>/dev/null | grep -v '"message"' | grep -q ": $m" && g=$((g + 1))
  done <"$SCRATCH/messages.txt"
  { echo "posted: $p"; echo "read_back: $g"; } >"$LOG_DIR/seen.txt"
  cat "$LOG_DIR/seen.txt"
} >"$LOG_DIR/03_trace.log" 2>&1

{
  echo "== runVerifier.sh message $W"
  rc_of verifier kar ./runVerifier.sh message "$W" >"$SCRATCH/verifier.txt" 2>&1
  collect "$SCRATCH/verifier.txt" verifier.txt
  tail -n 30 "$SCRATCH/verifier.txt"
  echo "exit code: $(cat "$LOG_DIR/verifier.rc")"
  ls "$WORKDIR/measurements/message-$W" >"$LOG_DIR/measurements.txt" 2>&1
} >"$LOG_DIR/04_verifier.log" 2>&1

{
  M1=$(head -n 1 "$SCRATCH/messages.txt")
  FORGED=$(tr -dc a-z </dev/urandom | head -c 12)
  echo "== the read-back response of $M1 now says $FORGED; runVerifier.sh again"
  if [ -f "$TRACE" ] && grep -v Posted "$TRACE" | grep -v '"message"' | grep -q ": $M1"; then
    # Only the RESPONSE line of the read-back (no "Posted", no request JSON) is changed.
    sed -i "/Posted/!{/\"message\"/!s/: $M1/: $FORGED/}" "$TRACE"
    grep -q ": $FORGED" "$TRACE" && echo "applied: yes" >"$LOG_DIR/tampered.txt"
  fi
  [ -f "$LOG_DIR/tampered.txt" ] || echo "applied: no" >"$LOG_DIR/tampered.txt"
  rc_of tamper kar ./runVerifier.sh message "$W" >"$SCRATCH/tamper.txt" 2>&1
  collect "$SCRATCH/tamper.txt" tamper.txt
  tail -n 30 "$SCRATCH/tamper.txt"
} >"$LOG_DIR/05_tamper.log" 2>&1
rm -rf "$WL"
