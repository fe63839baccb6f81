#!/bin/bash
# Collect the machine's state after the agent stopped, as evidence: the runbook, the agent's
# log and trajectory, git status and diff of the staged repository against the pinned commit,
# package listings and the processes still running, packed into one tar.gz in a fresh folder
# with a name nobody knew (so a path the agent prepared is never written into nor packed), whose
# path is printed as STATE_TARBALL=<path>. Usage: collect_state.sh WORKDIR COMMIT CONTROL
#
# Everything here was the agent's to shape, so: files are copied only when they are regular,
# reached through no symbolic link, not hard-linked elsewhere, and only up to a size cap;
# nothing the agent wrote is executed (git runs with hooks, fsmonitor, external diff and
# textconv off; Python packages are listed from their metadata folders, not by pip).
set -u
workdir=$1 commit=$2 control=$3
# Size caps in bytes (the README states them): the rest of a longer file is cut off and the
# cut is noted in truncated.txt.
CAP_RUNBOOK=$((1 * 1024 * 1024))
CAP_LOG=$((16 * 1024 * 1024))
CAP_TRAJECTORY=$((64 * 1024 * 1024))
CAP_OUTPUT=$((16 * 1024 * 1024))
umask 077
base=$(mktemp -d /tmp/deploybench-state-XXXXXXXX) || exit 1
out=$base/state
mkdir "$out"

# copy_capped SRC DEST CAP: copy a regular file with one link, reached without symlinks.
copy_capped() {
  local src=$1 dest=$2 cap=$3 size
  if [ -L "$src" ]; then
    echo "$src: a symbolic link, not copied" >> "$out/refused.txt"
    return 0
  fi
  [ -f "$src" ] || return 0
  if [ "$(realpath -e -- "$src" 2>/dev/null)" != "$src" ]; then
    echo "$src: reached through a symbolic link, not copied" >> "$out/refused.txt"
    return 0
  fi
  if [ "$(stat -c %h -- "$src")" != 1 ]; then
    echo "$src: has other hard links, not copied" >> "$out/refused.txt"
    return 0
  fi
  size=$(stat -c %s -- "$src")
  head -c "$cap" -- "$src" > "$dest"
  if [ "$size" -gt "$cap" ]; then
    echo "$(basename "$dest"): $size bytes, cut to $cap" >> "$out/truncated.txt"
  fi
}

# capped NAME CAP: a command's output into NAME, cut at CAP bytes.
capped() {
  local name=$1 cap=$2
  head -c "$cap" > "$out/$name"
}

copy_capped "$workdir/RUNBOOK.MD" "$out/RUNBOOK.MD" "$CAP_RUNBOOK"
copy_capped "$control/agent.log" "$out/agent.log" "$CAP_LOG"
copy_capped "$control/trajectory.jsonl" "$out/trajectory.jsonl" "$CAP_TRAJECTORY"

git_() {
  GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_EXTERNAL_DIFF= GIT_PAGER=cat \
    git -c safe.directory='*' -c core.fsmonitor=false -c core.hooksPath=/dev/null \
    -c core.untrackedCache=false -C "$workdir" "$@"
}
if [ "$(realpath -e -- "$workdir" 2>/dev/null)" = "$workdir" ] && [ -d "$workdir" ]; then
  git_ status --porcelain=v1 --untracked-files=normal 2>&1 | capped git_status.txt "$CAP_OUTPUT"
  git_ rev-parse HEAD 2>&1 | capped git_head.txt 4096
  # Tracked edits against the pinned commit, committed or not.
  git_ diff --no-ext-diff --no-textconv "$commit" -- . 2>&1 | capped git_diff.patch "$CAP_OUTPUT"
else
  echo "$workdir is missing or reached through a symbolic link" > "$out/git_status.txt"
fi
dpkg-query -W -f='${Package}\t${Version}\n' 2>&1 | capped dpkg.txt "$CAP_OUTPUT"

# list_dists DIR...: name==version of each installed distribution, from its metadata folder.
list_dists() {
  local d base
  for d in "$@"; do
    [ -d "$d" ] || continue
    for base in "$d"/*.dist-info "$d"/*.egg-info; do
      [ -e "$base" ] || continue
      base=${base##*/}
      base=${base%.dist-info}
      base=${base%.egg-info}
      echo "${base%%-*}==${base#*-}"
    done
  done | sort -u
}
list_dists /usr/lib/python3/dist-packages /usr/local/lib/python3*/dist-packages \
  | capped pip_system.txt "$CAP_OUTPUT"
if [ -d "$workdir/env" ] && [ ! -L "$workdir/env" ]; then
  list_dists "$workdir"/env/lib/python3*/site-packages | capped pip_env.txt "$CAP_OUTPUT"
fi
ps -eo pid,ppid,user,etimes,args 2>&1 | capped processes_after_stop.txt "$CAP_OUTPUT"
chmod -R go-rwx "$out"
tar -C "$out" -czf "$base/state.tar.gz" . && echo "STATE_TARBALL=$base/state.tar.gz"
