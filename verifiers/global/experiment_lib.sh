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
# Each file is also copied, under its blob id, into $LOG_DIR/pinned_copies/ (up to 1 MiB): where
# the agent changed one, the controller diffs it against the pinned commit's to judge whether it
# is a compatibility repair (deploybench/verify/repairs.py).
pinned() {
  mkdir -p "$LOG_DIR/pinned_copies"
  for rel in "$@"; do
    blob=$(blob_of "$WORKDIR/$rel")
    echo "$rel $blob"
    if [ "$blob" != missing ] && [ "$(stat -c %s "$WORKDIR/$rel")" -le 1048576 ]; then
      cat "$WORKDIR/$rel" >"$LOG_DIR/pinned_copies/$blob"
    fi
  done >>"$LOG_DIR/pinned.txt"
}

# rand_below N: a number from 0 to N-1 drawn from the kernel's /dev/urandom. Never awk's bare
# srand(), which seeds from the time of day in seconds: two draws in one second are the same
# draw, and the value is as good as known to anyone who knows when the verifier ran.
rand_below() {
  echo $(($(od -An -tu4 -N4 /dev/urandom | tr -d ' ') % $1))
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

# py_hooks DIR...: the Python start-up hooks in DIR (folders a python searches: site-packages,
# dist-packages, the standard library's folder) and who vouches for each, in
# $LOG_DIR/hooks.txt. A `.pth` (site runs its import lines and puts its other lines on the
# path) or a sitecustomize/usercustomize module (imported before any script) can swap what an
# honest interpreter computes while the interpreter and the repository's files stay as pinned.
# One line per hook, then `end`:
#   hook PATH record DIST     a RECORD of DIR/DIST lists PATH with its sha256 (pip's install)
#   hook PATH dpkg PACKAGE    a Debian package lists PATH, checksum (or conffile sum) as packaged
#   hook PATH paths N         a .pth no installer lists that runs nothing: N folder lines, no
#                             `import` line (what `setup.py develop`, so `pip install -e` of a
#                             setup.py project, leaves in easy-install.pth); site only appends
#                             its folders to sys.path, so the sitecustomize/usercustomize in
#                             them (which `import sitecustomize` could find there) are listed
#                             too, each on a line of its own
#   hook PATH none SHA256     nothing vouches for it: no installer made it
# A link is judged by what it resolves to (Debian links the standard library's sitecustomize.py
# to /etc); an installer's records are the machine's, so a forged RECORD passes here (the host's
# scan judges a hook no RECORD lists too: docs/verification.md). A check that accepts `paths`
# says so in its pattern.
py_hooks() {
  for dir in "$@"; do
    [ -d "$dir" ] || continue
    for hook in "$dir"/*.pth "$dir"/sitecustomize* "$dir"/usercustomize*; do
      [ -e "$hook" ] || [ -L "$hook" ] || continue
      owner=$(hook_owner "$dir" "$hook")
      echo "hook $hook $owner"
      case "$owner" in
        paths\ *)
          pth_folders "$dir" "$hook" | while IFS= read -r folder; do
            for inner in "$folder"/sitecustomize* "$folder"/usercustomize*; do
              [ -e "$inner" ] || [ -L "$inner" ] || continue
              echo "hook $inner $(hook_owner "$folder" "$inner")"
            done
          done
          ;;
      esac
    done
  done >>"$LOG_DIR/hooks.txt"
  echo end >>"$LOG_DIR/hooks.txt"
}

# pth_folders DIR PTH: the folders a .pth of DIR names (site.py's addpackage: comment and blank
# lines skipped, the rest stripped at the end and taken relative to DIR).
pth_folders() {
  grep -v -e '^#' -e '^[[:space:]]*$' "$2" 2>/dev/null | sed 's/[[:space:]]*$//' |
    while IFS= read -r line; do
      case "$line" in
        /*) echo "$line" ;;
        *) echo "$1/$line" ;;
      esac
    done
}

hook_owner() { # DIR HOOK
  real=$(readlink -f "$2" 2>/dev/null)
  if [ -z "$real" ] || [ ! -f "$real" ]; then
    # A package folder (sitecustomize/) or a dangling link: never an installer's single file.
    echo "none not-a-file"
    return
  fi
  sha=$(sha256sum "$real" | cut -d' ' -f1)
  if [ ! -L "$2" ]; then
    b64=$(echo "$sha" | xxd -r -p | base64 | tr '+/' '-_' | tr -d '=\n')
    for record in "$1"/*.dist-info/RECORD; do
      [ -f "$record" ] || continue
      if awk -F, -v p="${2#"$1"/}" -v h="sha256=$b64" '$1 == p && $2 == h { f = 1 } END { exit !f }' "$record"; then
        echo "record $(basename "$(dirname "$record")")"
        return
      fi
    done
  fi
  md5=$(md5sum "$real" | cut -d' ' -f1)
  for list in /var/lib/dpkg/info/*.list; do
    grep -qxF -e "$real" "$list" 2>/dev/null || continue
    pkg=$(basename "$list" .list)
    if grep -qE "^$md5  ${real#/}\$" "/var/lib/dpkg/info/$pkg.md5sums" 2>/dev/null \
      || grep -qxF " $real $md5" /var/lib/dpkg/status 2>/dev/null; then
      echo "dpkg ${pkg%%:*}"
      return
    fi
  done
  # A .pth (not a link) without an `import` line (site.py runs a line only when it starts with
  # "import " or "import<tab>") runs nothing: it only names folders.
  case "$2" in
    *.pth)
      if [ ! -L "$2" ] && ! grep -q '^import[[:space:]]' "$real"; then
        echo "paths $(grep -c -v -e '^#' -e '^[[:space:]]*$' "$real")"
        return
      fi
      ;;
  esac
  echo "none $sha"
}

# py_hooks_of PYTHON: py_hooks on every folder PYTHON (a venv's python, or a system one) reads
# a hook from: the venv's site-packages and the standard library's folders; the system's
# dist-packages and the owner's user site too unless a pyvenv.cfg beside it (where site.py
# looks: the python's folder or the one above) leaves them out, as the reference's venv does.
py_hooks_of() {
  bin_dir=$(dirname "$1")
  env_dir=$(dirname "$bin_dir")
  system=yes
  for cfg in "$bin_dir/pyvenv.cfg" "$env_dir/pyvenv.cfg"; do
    if [ -f "$cfg" ]; then
      grep -qiE '^[[:space:]]*include-system-site-packages[[:space:]]*=[[:space:]]*true[[:space:]]*$' "$cfg" || system=no
      break
    fi
  done
  home=$(awk -F: -v u="$OWNER" '$1 == u { print $6 }' /etc/passwd)
  folders="$env_dir/lib/python3*/site-packages $env_dir/lib64/python3*/site-packages /usr/lib/python3*/ /usr/lib/python3*/lib-dynload"
  [ "$system" = yes ] && folders="$folders /usr/local/lib/python3*/dist-packages /usr/lib/python3/dist-packages ${home:+$home/.local/lib/python3*/site-packages}"
  # shellcheck disable=SC2046,SC2086 # the globs are the folders
  py_hooks $(for f in $folders; do [ -d "$f" ] && readlink -f "$f"; done | sort -u)
}
