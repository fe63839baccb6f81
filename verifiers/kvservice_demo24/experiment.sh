# Layer 2 experiment of kvservice_demo24 (hidden from the agent), after experiment_lib.sh.
#
# Starts the service from the agent's environment and configuration
# ($WORKDIR/env/bin/python server.py --config $WORKDIR/kvservice.ini) as the owner of WORKDIR on
# a free loopback port, stores and reads a value, asks for a missing key and writes with a wrong
# token, restarts the service and reads the value again. Every raw HTTP response is collected
# (*.http); checks.yaml judges them on the controller. The python is vouched (runtime.txt), its
# start-up hooks listed (hooks.txt), server.py pinned (pinned.txt), and the stored value carries
# a number drawn now from the kernel, which the value read back must carry too (a service that
# answers with the value this file once held fails). RUNBOOK.MD is never read.
KEY=verifier-sample-17
SAMPLE=$(od -An -N4 -tu4 /dev/urandom | tr -d ' \n')
VALUE="pH 6.82 @ 14:05, site B, sample $SAMPLE"
echo "value: $VALUE" >"$LOG_DIR/value_asked.txt"
vouch python "$WORKDIR/env/bin/python"
py_hooks_of "$WORKDIR/env/bin/python"
pinned server.py
CONFIG="$WORKDIR/kvservice.ini"
SERVICE_PID=""

stop_service() {
  if [ -n "$SERVICE_PID" ]; then
    kill -TERM -- "-$SERVICE_PID" 2>/dev/null || kill -TERM "$SERVICE_PID" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$SERVICE_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$SERVICE_PID" 2>/dev/null
    wait "$SERVICE_PID" 2>/dev/null
    SERVICE_PID=""
  fi
}
trap stop_service EXIT

free_port() {
  while :; do
    port=$(shuf -i 20000-60000 -n 1)
    nc -z 127.0.0.1 "$port" 2>/dev/null || { echo "$port"; return; }
  done
}

start_service() { # port logfile
  echo "== start: env/bin/python server.py --config kvservice.ini --host 127.0.0.1 --port $1" >>"$2"
  (cd "$WORKDIR" && exec setsid "$TOOLS/as_owner" "$WORKDIR/env/bin/python" server.py \
    --config kvservice.ini --host 127.0.0.1 --port "$1") >>"$2" 2>&1 &
  SERVICE_PID=$!
}

# http METHOD PATH OUTFILE [HEADER [BODY]]: one HTTP/1.0 request; the raw response is collected.
http() {
  body=${5-}
  {
    printf '%s %s HTTP/1.0\r\nHost: 127.0.0.1:%s\r\nContent-Length: %s\r\n' "$1" "$2" "$PORT" "${#body}"
    [ -n "${4-}" ] && printf '%s\r\n' "$4"
    printf '\r\n%s' "$body"
  } | timeout 10 nc 127.0.0.1 "$PORT" >"$SCRATCH/response" 2>&1
  collect "$SCRATCH/response" "$3"
}

# wait_health OUTFILE: poll GET /health for up to 40 s while the service lives.
wait_health() {
  for _ in $(seq 130); do
    http GET /health "$1"
    grep -q '^HTTP/' "$LOG_DIR/$1" && return 0
    kill -0 "$SERVICE_PID" 2>/dev/null || return 1
    sleep 0.3
  done
  return 1
}

collect "$CONFIG" kvservice.ini
# The token of [auth], read by busybox awk (the checks judge the file itself).
TOKEN=$(awk '
  /^[ \t]*\[auth\][ \t]*$/ { auth = 1; next }
  /^[ \t]*\[/ { auth = 0; next }
  auth && /^[ \t]*token[ \t]*=/ { v = substr($0, index($0, "=") + 1); gsub(/^[ \t]+|[ \t\r]+$/, "", v); print v; exit }
' "$CONFIG" 2>/dev/null)
TOKEN=${TOKEN:-none}
echo "== config: $CONFIG (token $([ "$TOKEN" = none ] && echo absent || echo present))" >"$LOG_DIR/01_config.log"

PORT=$(free_port)
start_service "$PORT" "$LOG_DIR/02_service.log"
if wait_health health_first.http; then
  http PUT "/kv/$KEY" put.http "X-Token: $TOKEN" "$VALUE"
  http PUT "/kv/$KEY" put_wrong_token.http "X-Token: $TOKEN-wrong" forged
  http GET /kv/verifier-missing-key get_missing.http
  http GET "/kv/$KEY" get.http
  stop_service
  PORT=$(free_port)
  start_service "$PORT" "$LOG_DIR/04_service_restart.log"
  wait_health health_restart.http && http GET "/kv/$KEY" get_restart.http
fi
stop_service
# The value each GET returned (jsonify writes it between the quotes of "value"; the drawn value
# has no quote or backslash), compared with value_asked.txt on the controller.
for name in get get_restart; do
  seen=$(sed -n 's/.*"value": *"\([^"\\]*\)".*/\1/p' "$LOG_DIR/$name.http" 2>/dev/null | head -n 1)
  echo "value: $seen" >"$LOG_DIR/value_seen_$name.txt"
done
cat "$LOG_DIR"/0[24]_service*.log 2>/dev/null
