#!/usr/bin/env python3
"""End every process the agent left: all that did not exist before it started, except this
script's own ancestors (the harness's connection), sshd and kernel threads. Repeats until
nothing new is found, so a process that forks while it is being killed is caught too.

Usage: end_agent_processes.py BASELINE_PID... ; prints one line per process it killed."""

import os
import signal
import sys
import time
from pathlib import Path


def stat(pid: int) -> tuple[str, int] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    comm = raw[raw.index("(") + 1 : raw.rindex(")")]
    ppid = int(raw[raw.rindex(")") + 2 :].split()[1])
    return comm, ppid


def ancestors(pid: int) -> set[int]:
    seen = set()
    while pid > 1 and pid not in seen:
        seen.add(pid)
        info = stat(pid)
        if info is None:
            break
        pid = info[1]
    return seen


def main(baseline: set[int]) -> int:
    keep = baseline | ancestors(os.getpid()) | {1, 2}
    killed = 0
    for _ in range(20):
        targets = []
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) in keep:
                continue
            info = stat(int(name))
            if info is None or info[1] == 2 or info[0].startswith("sshd"):
                continue
            try:
                raw = Path(f"/proc/{name}/cmdline").read_bytes()
                args = raw.replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                args = ""
            if not args:  # kernel thread
                continue
            targets.append((int(name), args.strip()))
        if not targets:
            return 0
        for pid, args in targets:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
                print(f"killed {pid}: {args[:200]}")
            except ProcessLookupError:
                pass
        time.sleep(0.1)
    print("processes kept appearing after 20 rounds", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main({int(p) for p in sys.argv[1:]}))
