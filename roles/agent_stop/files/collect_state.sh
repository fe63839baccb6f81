#!/bin/bash
# Collect the machine's state after the agent stopped, as evidence: the runbook, the agent's
# log and trajectory, git status and diff of the staged repository against the pinned commit,
# package listings and the processes still running, packed into one tar.gz in a fresh folder
# with a name nobody knew (so a path the agent prepared is never written into nor packed), whose
# path is printed as STATE_TARBALL=<path>. Usage: collect_state.sh WORKDIR COMMIT CONTROL
#
# Everything here was the agent's to shape, so: files are copied only when they are regular,
# reached through no symbolic link, not hard-linked elsewhere, and only up to a size cap;
# nothing the agent wrote is executed (git runs on a fresh git folder of ours, without the
# workdir's config, hooks or attributes, and with fsmonitor, external diff and textconv off;
# Python packages are listed from their metadata folders, not by pip).
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

# Git runs as root on the agent's tree, so it must read nothing the agent could make it run:
# not the workdir's .git/config (a filter.<name>.clean/smudge, core.fsmonitor, core.pager,
# diff.external... would run as root), not its hooks, info/ or attributes. It runs on a fresh
# GIT_DIR of ours holding only HEAD (a commit id), a copy of the index and an alternates file
# that points at the workdir's .git/objects (objects are data; git only parses them). A
# .gitattributes in the work tree can still name a filter or diff driver, but with no
# filter.<name>.clean or diff.<name>.command in any config git reads, no command runs.
# The workdir's .git must be a plain folder reached through no link; its HEAD, refs and index
# are read as plain files (regular, one link, no symbolic link on the way).
hex40='^[0-9a-f]{40}$'
# plain_file PATH: a regular file with one link, reached through no symbolic link.
plain_file() {
  [ ! -L "$1" ] && [ -f "$1" ] && [ "$(realpath -e -- "$1" 2>/dev/null)" = "$1" ] \
    && [ "$(stat -c %h -- "$1")" = 1 ]
}
# head_commit GIT: the commit HEAD names, from plain reads of HEAD, refs/ and packed-refs;
# nothing when it cannot be read so.
head_commit() {
  local g=$1 head ref id=
  plain_file "$g/HEAD" || return 0
  head=$(head -c 4096 -- "$g/HEAD" | head -n 1)
  if printf '%s\n' "$head" | grep -Eq "$hex40"; then
    echo "$head"
    return 0
  fi
  ref=${head#ref: }
  # A branch name only: refs/..., no "..", no "//", no odd characters.
  printf '%s\n' "$ref" | grep -Eq '^refs/[A-Za-z0-9._/-]+$' || return 0
  case "$ref" in *..* | *//* | */ | */.* | *.lock) return 0 ;; esac
  if plain_file "$g/$ref"; then
    id=$(head -c 4096 -- "$g/$ref" | head -n 1)
  elif plain_file "$g/packed-refs"; then
    id=$(head -c "$CAP_OUTPUT" -- "$g/packed-refs" \
      | awk -v r="$ref" '$2 == r && $1 ~ /^[0-9a-f]+$/ { print $1; exit }')
  fi
  if printf '%s\n' "$id" | grep -Eq "$hex40"; then echo "$id"; fi
}

gitdir=
git_() {
  env -u GIT_DIR -u GIT_WORK_TREE -u GIT_INDEX_FILE -u GIT_OBJECT_DIRECTORY \
    -u GIT_ALTERNATE_OBJECT_DIRECTORIES -u GIT_CONFIG -u GIT_CONFIG_PARAMETERS \
    -u GIT_CONFIG_COUNT -u GIT_COMMON_DIR -u GIT_CEILING_DIRECTORIES \
    GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_ATTR_NOSYSTEM=1 GIT_EXTERNAL_DIFF= \
    GIT_PAGER=cat PAGER=cat GIT_NO_LAZY_FETCH=1 GIT_TERMINAL_PROMPT=0 \
    git -c safe.directory='*' -c core.fsmonitor=false -c core.hooksPath=/dev/null \
    -c core.untrackedCache=false -c core.attributesFile=/dev/null \
    -c diff.ignoreSubmodules=all -c submodule.recurse=false \
    --git-dir="$gitdir" --work-tree="$workdir" -C "$workdir" "$@"
}
if [ "$(realpath -e -- "$workdir" 2>/dev/null)" = "$workdir" ] && [ -d "$workdir" ] \
  && [ ! -L "$workdir/.git" ] && [ -d "$workdir/.git" ] \
  && [ ! -L "$workdir/.git/objects" ] && [ -d "$workdir/.git/objects" ]; then
  gitdir=$(mktemp -d "$base/git.XXXXXXXX") || exit 1
  mkdir -p "$gitdir/objects/info" "$gitdir/refs"
  head=$(head_commit "$workdir/.git")
  echo "${head:-$commit}" > "$gitdir/HEAD"
  if plain_file "$workdir/.git/index"; then
    head -c "$CAP_TRAJECTORY" -- "$workdir/.git/index" > "$gitdir/index"
  fi
  echo "$workdir/.git/objects" > "$gitdir/objects/info/alternates"
  # Submodules are not entered: git would run in them with their own config.
  git_ status --porcelain=v1 --untracked-files=normal --ignore-submodules=all 2>&1 \
    | capped git_status.txt "$CAP_OUTPUT"
  git_ rev-parse HEAD 2>&1 | capped git_head.txt 4096
  # Tracked edits against the pinned commit, committed or not.
  git_ diff --no-ext-diff --no-textconv --ignore-submodules=all "$commit" -- . 2>&1 \
    | capped git_diff.patch "$CAP_OUTPUT"
  rm -rf -- "$gitdir"
else
  echo "$workdir or its .git is missing or reached through a symbolic link" > "$out/git_status.txt"
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
