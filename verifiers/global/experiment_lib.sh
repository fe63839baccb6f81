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

# blob_of FILE: git's blob id of a regular file (what `git hash-object` prints), or `missing`
# (absent, or a link: the repository's files are never links the experiment follows).
blob_of() {
  if [ -f "$1" ] && [ ! -L "$1" ]; then
    { printf 'blob %s\0' "$(stat -c %s "$1")"; cat "$1"; } | sha1sum | cut -d' ' -f1
  else
    echo missing
  fi
}

# pinned REL...: for each file of the repository that the experiment executes or imports, a
# line "REL BLOB" in $LOG_DIR/pinned.txt; checks.yaml compares them with the blobs of the
# pinned commit (a changed file shows, and fails where it replaces the computation).
pinned() {
  for rel in "$@"; do
    echo "$rel $(blob_of "$WORKDIR/$rel")"
  done >>"$LOG_DIR/pinned.txt"
}

# has_text FILE TEXT: whether FILE (a binary: an ELF, a class file) holds TEXT. busybox grep
# reads a line as a C string, so text after a NUL byte of the same line is never seen: the
# file's NULs become line ends first.
has_text() {
  [ -f "$1" ] && tr '\000' '\n' <"$1" 2>/dev/null | grep -q -F -e "$2"
}

# vouch NAME PATH: what the interpreter or runtime at PATH (as the experiment will run it) is,
# one line in $LOG_DIR/runtime.txt:
#   NAME PATH -> REAL dpkg PACKAGE      a Debian package lists REAL, and its checksum matches
#   NAME PATH -> REAL elf SIZE SHA256   an ELF no package vouches for (pip, conda, uv, a build)
#   NAME PATH -> REAL script FIRSTLINE  a script (a shebang, or text): never an interpreter
#   NAME PATH -> missing
# An ELF no package vouches for is collected as runtime_NAME.elf (its first MiB) for an
# elf_symbols check (a real CPython exports Py_Initialize; a launcher of a script does not).
vouch() {
  name=$1
  path=$2
  case "$path" in /*) ;; *) path=$(PATH=$SYSTEM_PATH which "$path" 2>/dev/null || echo "$path") ;; esac
  real=$(readlink -f "$path" 2>/dev/null)
  if [ -z "$real" ] || [ ! -f "$real" ]; then
    echo "$name $path -> missing" >>"$LOG_DIR/runtime.txt"
    return
  fi
  magic=$(head -c4 "$real" | od -An -tx1 | tr -d ' \n')
  if [ "$magic" != 7f454c46 ]; then
    echo "$name $path -> $real script $(head -c 80 "$real" | head -n 1 | tr -d '\000-\037\177-\377')" >>"$LOG_DIR/runtime.txt"
    return
  fi
  # Debian lists files under /usr and, for merged-/usr aliases, under /bin, /sbin, /lib.
  alt=$(echo "$real" | sed -n 's#^/usr\(/\(bin\|sbin\|lib\|lib64\)/.*\)#\1#p')
  sum=$(md5sum "$real" | cut -d' ' -f1)
  for list in /var/lib/dpkg/info/*.list; do
    if grep -qxF -e "$real" ${alt:+-e "$alt"} "$list"; then
      pkg=$(basename "$list" .list)
      sums="/var/lib/dpkg/info/$pkg.md5sums"
      if grep -qE "^$sum  (usr/)?${real#/usr/}\$|^$sum  ${real#/}\$" "$sums" 2>/dev/null; then
        echo "$name $path -> $real dpkg ${pkg%%:*}" >>"$LOG_DIR/runtime.txt"
        return
      fi
    fi
  done
  echo "$name $path -> $real elf $(stat -c %s "$real") $(sha256sum "$real" | cut -d' ' -f1)" >>"$LOG_DIR/runtime.txt"
  collect "$real" "runtime_$name.elf"
}

# py_hooks PY: the Python start-up hooks that the interpreter PY (a venv's bin/python, as the
# experiment runs it) would run before the experiment's first line, one line each in
# $LOG_DIR/hooks.txt, then `hooks: end`:
#   site DIR                        a folder whose hooks were listed
#   hook PATH record DIST.dist-info its folder's RECORD lists it with this content's sha256
#   hook PATH dpkg PACKAGE          a Debian package lists it with this content's md5 (conffiles too)
#   hook PATH unowned               anything else: no installer put it there as it is now
# A hook is a .pth of a site folder (its `import` lines run at every start) or a
# sitecustomize/usercustomize module of any folder on the start-up path: a hook that swaps the
# computation leaves the interpreter, the repository's files and their blob ids as they were.
# The folders are the interpreter's own: the venv's site-packages, the system's (Debian's and
# /usr/local's) and the owner's user site when pyvenv.cfg includes them (or there is no venv),
# and the standard library's folder for the two modules.
py_hooks() {
  py=$1
  env_dir=$(dirname "$(dirname "$py")")
  real=$(readlink -f "$py" 2>/dev/null)
  stdlib=$(dirname "$(dirname "$real")")/lib/$(basename "$real")
  sites=$(ls -d "$env_dir"/lib/python3*/site-packages "$env_dir"/lib64/python3*/site-packages 2>/dev/null)
  if [ ! -f "$env_dir/pyvenv.cfg" ] || grep -Eiq '^include-system-site-packages *= *true' "$env_dir/pyvenv.cfg"; then
    home=$(awk -F: -v u="$OWNER" '$1 == u { print $6 }' /etc/passwd)
    sites="$sites $(ls -d /usr/local/lib/python3*/dist-packages /usr/lib/python3/dist-packages "$home"/.local/lib/python3*/site-packages 2>/dev/null)"
  fi
  seen=" "
  {
    for dir in $stdlib $sites; do
      [ -d "$dir" ] || continue
      key=$(readlink -f "$dir")
      case "$seen" in *" $key "*) continue ;; esac
      seen="$seen$key "
      echo "site $dir"
      if [ "$dir" = "$stdlib" ]; then
        set -- "$dir"/sitecustomize* "$dir"/usercustomize*
      else
        set -- "$dir"/*.pth "$dir"/sitecustomize* "$dir"/usercustomize*
      fi
      for hook in "$@"; do
        [ -e "$hook" ] || [ -L "$hook" ] || continue
        echo "hook $hook $(_hook_owner "$dir" "$hook")"
      done
    done
    echo "hooks: end"
  } >"$LOG_DIR/hooks.txt" 2>&1
}

# _hook_owner DIR HOOK: `record DIST`, `dpkg PACKAGE` or `unowned` (see py_hooks).
_hook_owner() {
  target=$(readlink -f "$2" 2>/dev/null)
  if [ -z "$target" ] || [ ! -f "$target" ]; then
    echo unowned
    return
  fi
  rel=$(basename "$2")
  sha=$(sha256sum "$target" | cut -d' ' -f1)
  for record in "$1"/*.dist-info/RECORD; do
    [ -f "$record" ] || continue
    b64=$(awk -F, -v n="$rel" '$1 == n { print $2; exit }' "$record" | sed -n 's/^sha256=//p')
    [ -n "$b64" ] || continue
    want=$(echo "$b64=" | tr '_-' '/+' | base64 -d 2>/dev/null | od -An -tx1 | tr -d ' \n')
    if [ "$want" = "$sha" ]; then
      echo "record $(basename "$(dirname "$record")")"
      return
    fi
  done
  md5=$(md5sum "$target" | cut -d' ' -f1)
  alt=$(echo "$target" | sed -n 's#^/usr\(/\(bin\|sbin\|lib\|lib64\)/.*\)#\1#p')
  for list in /var/lib/dpkg/info/*.list; do
    grep -qxF -e "$target" ${alt:+-e "$alt"} "$list" 2>/dev/null || continue
    pkg=$(basename "$list" .list)
    if grep -qE "^$md5  (usr/)?${target#/usr/}\$|^$md5  ${target#/}\$" "/var/lib/dpkg/info/$pkg.md5sums" 2>/dev/null ||
      grep -qxF " $target $md5" /var/lib/dpkg/status 2>/dev/null; then
      echo "dpkg ${pkg%%:*}"
      return
    fi
  done
  echo unowned
}
