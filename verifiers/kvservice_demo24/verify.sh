#!/usr/bin/env bash
# Layer 2 verifier of kvservice_demo24 (hidden from the agent).
#
# Runs on the machine as root with:
#   WORKDIR   the staged repository the agent worked in
#   LOG_DIR   where this script writes its logs (*.log) and checks.json
# It starts the service from the agent's environment and configuration
# ($WORKDIR/env/bin/python server.py --config $WORKDIR/kvservice.ini) as the owner of WORKDIR on
# a free loopback port, stores and reads a value, checks the 404 and 403 answers, restarts the
# service and checks the value persisted. RUNBOOK.MD is never read.
# checks.json: [{"name", "passed", "detail"}]. Exit 0 whenever it ran to the end.
# shellcheck source=../global/verify_lib.sh
. "$(dirname "$0")/verify_lib.sh"
SERVICE_PID=""
cleanup() {
  stop_service
  rm -rf "$SCRATCH"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
start_service() { # port logfile
  echo "== start: env/bin/python server.py --config kvservice.ini --host 127.0.0.1 --port $1" >>"$2"
  local run=()
  if [ "$(id -u)" = 0 ] && [ "$OWNER" != root ]; then run=(runuser -u "$OWNER" --); fi
  (cd "$WORKDIR" && exec setsid "${run[@]}" "$WORKDIR/env/bin/python" server.py \
    --config kvservice.ini --host 127.0.0.1 --port "$1") >>"$2" 2>&1 &
  SERVICE_PID=$!
}
stop_service() {
  if [ -n "$SERVICE_PID" ]; then
    { kill -TERM -- "-$SERVICE_PID" || kill -TERM "$SERVICE_PID"; } 2>/dev/null
    for _ in $(seq 50); do kill -0 "$SERVICE_PID" 2>/dev/null || break; sleep 0.1; done
    { kill -KILL -- "-$SERVICE_PID"; } 2>/dev/null
    wait "$SERVICE_PID" 2>/dev/null
    SERVICE_PID=""
  fi
}
# HTTP client and checks in python3's standard library; prints "name<TAB>passed<TAB>detail".
cat >"$SCRATCH/client.py" <<'PY'
import json, os, sys, time, urllib.error, urllib.request

mode, port, token, pid = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
base = "http://127.0.0.1:%s" % port
KEY, VALUE = "verifier-sample-17", "pH 6.82 @ 14:05, site B"

def row(name, ok, detail):
    print("%s\t%s\t%s" % (name, "true" if ok else "false", detail), flush=True)

def call(method, path, body=None, headers=None):
    req = urllib.request.Request(base + path, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")
    except (OSError, ValueError) as e:
        return None, "%s: %s" % (type(e).__name__, e)

def alive():
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False

status, body, deadline = None, "", time.time() + 40
while time.time() < deadline:
    status, body = call("GET", "/health")
    if status is not None or not alive():
        break
    time.sleep(0.3)
try:
    ok = status == 200 and json.loads(body).get("status") == "ok"
except ValueError:
    ok = False
row("answers_%s" % mode, ok, "GET /health -> %s %s" % (status, body.strip()[:200]))
if not ok:
    sys.exit(0)

if mode == "first":
    s, b = call("PUT", "/kv/" + KEY, VALUE.encode(), {"X-Token": token})
    row("put_with_token", s in (200, 201), "PUT /kv/%s -> %s %s" % (KEY, s, b.strip()[:200]))
    s, b = call("PUT", "/kv/" + KEY, b"forged", {"X-Token": token + "-wrong"})
    row("put_without_token_refused", s == 403, "PUT with a wrong token -> %s" % s)
    s, b = call("GET", "/kv/verifier-missing-key")
    row("missing_key_404", s == 404, "GET of a missing key -> %s" % s)
s, b = call("GET", "/kv/" + KEY)
try:
    got = json.loads(b).get("value")
except ValueError:
    got = None
name = "get_value" if mode == "first" else "value_persisted_after_restart"
row(name, s == 200 and got == VALUE, "GET /kv/%s -> %s %r" % (KEY, s, got))
PY

CONFIG="$WORKDIR/kvservice.ini"
TOKEN=$(python3 - "$CONFIG" <<'PY' 2>>"$LOG_DIR/01_config.log"
import configparser, sys
cfg = configparser.ConfigParser()
try:
    cfg.read(sys.argv[1])
except configparser.Error as exc:
    sys.exit("kvservice.ini cannot be parsed (%s)" % type(exc).__name__)
print(cfg.get("auth", "token", fallback="").strip())
PY
)
{
  echo "== config: $CONFIG"
  if [ -f "$CONFIG" ] && [ -n "$TOKEN" ] && [ "$TOKEN" != CHANGE_ME ]; then
    echo "present, with a token"
    check config_written true "$CONFIG has [auth] token set"
  else
    echo "kvservice.ini absent or without a token"
    check config_written false "$CONFIG absent or [auth] token not set"
    TOKEN=${TOKEN:-none}
  fi
} 2>&1 | tee -a "$LOG_DIR/01_config.log"

PORT=$(free_port)
start_service "$PORT" "$LOG_DIR/02_service.log"
python3 "$SCRATCH/client.py" first "$PORT" "$TOKEN" "$SERVICE_PID" >>"$CHECKS" 2>>"$LOG_DIR/03_client.log"
stop_service

if grep -q '^answers_first	true' "$CHECKS"; then
  PORT=$(free_port)
  start_service "$PORT" "$LOG_DIR/04_service_restart.log"
  python3 "$SCRATCH/client.py" restart "$PORT" "$TOKEN" "$SERVICE_PID" >>"$CHECKS" 2>>"$LOG_DIR/03_client.log"
  stop_service
fi
cat "$LOG_DIR"/0[24]_service*.log 2>/dev/null

write_checks
exit 0
