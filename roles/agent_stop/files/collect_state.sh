#!/bin/bash
# Collect the machine's state after the agent stopped, as evidence: the runbook, the agent's
# log and trajectory, git status and diff of the staged repository against the pinned commit,
# package listings and the processes still running. Usage: collect_state.sh WORKDIR COMMIT CONTROL OUT
set -u
workdir=$1 commit=$2 control=$3 out=$4
mkdir -p "$out"
git_() { git -c safe.directory='*' -C "$workdir" "$@"; }
[ -f "$workdir/RUNBOOK.MD" ] && cp "$workdir/RUNBOOK.MD" "$out/RUNBOOK.MD"
for f in agent.log trajectory.jsonl; do [ -f "$control/$f" ] && cp "$control/$f" "$out/$f"; done
git_ status --porcelain=v1 --untracked-files=normal > "$out/git_status.txt" 2>&1
git_ rev-parse HEAD > "$out/git_head.txt" 2>&1
# Tracked edits against the pinned commit, committed or not.
git_ diff "$commit" -- . > "$out/git_diff.patch" 2>&1
dpkg-query -W -f='${Package}\t${Version}\n' > "$out/dpkg.txt" 2>&1
{ python3 -m pip list --format=freeze 2>/dev/null || echo "(no pip for the system python3)"; } > "$out/pip_system.txt"
if [ -x "$workdir/env/bin/python" ]; then
  "$workdir/env/bin/python" -m pip list --format=freeze > "$out/pip_env.txt" 2>&1
fi
ps -eo pid,ppid,user,etimes,args > "$out/processes_after_stop.txt"
chmod -R a+r "$out"
