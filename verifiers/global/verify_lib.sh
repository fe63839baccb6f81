# Shared by every Layer 2 verifier (sourced by verifiers/<task>/verify.sh; the verify_hidden
# role copies it beside the task's verifier, which holds a symlink to it in the repository).
#
# Needs WORKDIR (the staged repository the agent worked in) and LOG_DIR (where the verifier
# writes its *.log files and checks.json). Gives SCRATCH (a temp folder the verifier may use,
# owned by the workdir's owner and removed on exit), OWNER, and the helpers below.
set -u
: "${WORKDIR:?set WORKDIR to the staged repository}"
: "${LOG_DIR:?set LOG_DIR to the log folder}"
mkdir -p "$LOG_DIR"
CHECKS="$LOG_DIR/checks.tsv"
: >"$CHECKS"
SCRATCH=$(mktemp -d /tmp/deploybench-verify.XXXXXX)
OWNER=$(stat -c %U "$WORKDIR" 2>/dev/null || echo root)
chown "$OWNER" "$SCRATCH" 2>/dev/null || true
trap 'rm -rf "$SCRATCH"' EXIT

# Record one Layer 2 check: check NAME true|false DETAIL
check() {
  printf '%s\t%s\t%s\n' "$1" "$2" "$(printf '%s' "$3" | tr '\t\n' '  ' | cut -c1-500)" >>"$CHECKS"
}

# Run a command as the workdir's owner: the agent's environment, not root's.
as_owner() {
  if [ "$(id -u)" = 0 ] && [ "$OWNER" != root ]; then runuser -u "$OWNER" -- "$@"; else "$@"; fi
}

# Turn the recorded checks into $LOG_DIR/checks.json: [{"name", "passed", "detail"}].
write_checks() {
  python3 - "$CHECKS" "$LOG_DIR/checks.json" <<'PY'
import json, sys
rows = []
for line in open(sys.argv[1]):
    name, passed, detail = (line.rstrip("\n").split("\t") + ["", ""])[:3]
    rows.append({"name": name, "passed": passed == "true", "detail": detail})
json.dump(rows, open(sys.argv[2], "w"), indent=2)
PY
  rm -f "$CHECKS"
}
