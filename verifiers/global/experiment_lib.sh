# Preamble of every verifier's machine side: the controller puts it before
# verifiers/<id>/experiment.sh and runs the two as one script under its own static busybox shell
# (`busybox sh`: `cat`, `grep`, `timeout`, `su` below are busybox's applets, never the machine's),
# in a clean environment. The experiment only runs the light experiment in the agent's final
# environment and collects files into $LOG_DIR; the checks are judged on the controller
# (verifiers/<id>/checks.yaml), so nothing here decides a verdict.
#
# Given: WORKDIR (the staged repository), LOG_DIR (root-only; everything in it goes to the
# controller: *.log is read by Layer 1), SCRATCH (a folder the experiment may use; the
# workdir's owner may write it), TOOLS (the folder of the trusted busybox, with `sh`).
# Gives: OWNER, SYSTEM_PATH, as_owner, collect, rc_of.
set -u
: "${WORKDIR:?}" "${LOG_DIR:?}" "${SCRATCH:?}" "${TOOLS:?}"
exec >>"$LOG_DIR/verifier_stdout.log" 2>&1 </dev/null
umask 022
ps -o pid,ppid,user,args >"$LOG_DIR/processes_before_verify.txt" 2>&1
SYSTEM_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# The harness names the owner where it can (a local machine's verifier: the run's user), so an
# agent that hands the workdir to root cannot have the experiment run as root.
OWNER=${DEPLOYBENCH_OWNER:-$(stat -c %U "$WORKDIR" 2>/dev/null || echo root)}
chown "$OWNER" "$SCRATCH" 2>/dev/null || true
# Collected files are capped: no experiment output may flood the controller.
COLLECT_BYTES=1048576

# as_owner CMD...: run CMD as the workdir's owner in the machine's own environment (what is
# judged): the owner's login facts (HOME, USER), the system PATH, the current folder. It is a
# script beside the trusted shell, so `setsid "$TOOLS/as_owner" ...` starts a service with it.
# The harness's own variables (where the logs and the tools are, who the owner is) are not
# handed to the agent's programs; WORKDIR, SCRATCH and what an experiment exports are.
export OWNER SYSTEM_PATH TOOLS
# A missing program is reported in bash's words, which Layer 1's rules know.
cat >"$TOOLS/as_owner" <<AS_OWNER
#!$TOOLS/sh
case "\$1" in
  */*) [ -e "\$1" ] || { echo "\$1: No such file or directory" >&2; exit 127; } ;;
  *) PATH=\$SYSTEM_PATH command -v "\$1" >/dev/null || { echo "\$1: command not found" >&2; exit 127; } ;;
esac
if [ "\$(id -u)" = 0 ] && [ "\$OWNER" != root ]; then
  exec su -s "\$TOOLS/sh" -c 'PATH=\$0; export PATH; exec "\$TOOLS/busybox" env -u LOG_DIR -u TOOLS -u OWNER -u SYSTEM_PATH -u DEPLOYBENCH_OWNER "\$@"' -- "\$OWNER" "\$SYSTEM_PATH" "\$@"
fi
PATH=\$SYSTEM_PATH exec "\$TOOLS/busybox" env -u LOG_DIR -u TOOLS -u OWNER -u SYSTEM_PATH -u DEPLOYBENCH_OWNER "\$@"
AS_OWNER
chmod 755 "$TOOLS/as_owner"
as_owner() {
  "$TOOLS/as_owner" "$@"
}

# collect SRC NAME: copy a regular file (never a link) into $LOG_DIR/NAME, capped.
collect() {
  if [ -f "$1" ] && [ ! -L "$1" ]; then
    head -c "$COLLECT_BYTES" "$1" >"$LOG_DIR/$2"
  fi
}

# rc_of NAME CMD...: run CMD, write its exit code to $LOG_DIR/NAME.rc, return it.
rc_of() {
  name=$1
  shift
  "$@"
  rc=$?
  echo "$rc" >"$LOG_DIR/$name.rc"
  return "$rc"
}
