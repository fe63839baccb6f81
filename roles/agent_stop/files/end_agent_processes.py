#!/usr/bin/env python3
"""What the agent may leave running, noted before it starts and ended after it stops.

`baseline` prints, as one JSON object, every process as "pid:start time" (a pid alone can be
reused; with its start time, field 22 of /proc/<pid>/stat, it names one process) and, where
systemd runs, the loaded units, the cron files with their digests and the queued at jobs. The
harness keeps that object on the controller, where the agent cannot rewrite it.

`end BASELINE_JSON` ends what is not in the baseline: systemd units and timers (stopped),
cron files that are new or changed (removed), at jobs (removed), then every process, whatever
its name, except this script's own ancestors (the harness's connection) and kernel threads.
It repeats until a round finds nothing, so a process that forks while it is killed is caught.
Prints one line per thing it ended, its unprintable characters escaped: the names are the
agent's, and a newline in one must not start a line of the harness's own (the stop stage tells
its output's sections apart by marker lines)."""

import hashlib
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

PF_KTHREAD = 0x00200000
CRON_PLACES = ("/etc/crontab", "/etc/cron.d", "/var/spool/cron/crontabs", "/var/spool/cron")
ROUNDS = 50


def stat(pid: int) -> tuple[int, int, int] | None:
    """(ppid, flags, start time) of a live process; None when it is gone or a zombie (which
    runs nothing and is reaped once its parent is killed)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Fields after the command name, which may hold spaces and parentheses: state is field 3.
    fields = raw[raw.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[1]), int(fields[6]), int(fields[19])


def processes() -> dict[int, tuple[int, int, int]]:
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            info = stat(int(name))
            if info is not None:
                out[int(name)] = info
    return out


def ancestors(pid: int) -> set[int]:
    seen = set()
    while pid > 0 and pid not in seen:
        seen.add(pid)
        info = stat(pid)
        if info is None:
            break
        pid = info[0]
    return seen


def has_systemd() -> bool:
    return Path("/run/systemd/system").is_dir() and shutil.which("systemctl") is not None


# Unit types that run or start something; scopes and slices are left alone (the harness's own
# login is a new session scope), processes in them are ended by id like any other.
UNIT_TYPES = (".service", ".socket", ".timer", ".path")
HARNESS_UNITS = ("user@", "user-runtime-dir@")


def _systemctl(*args: str) -> list[str]:
    out = subprocess.run(
        ["systemctl", *args, "list-units", "--all", "--plain", "--no-legend", "--no-pager"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    return sorted({line.split()[0] for line in out.splitlines() if line.strip()})


def _user_managers() -> list[str]:
    """Users with a running systemd user manager, whose units (systemctl --user) are theirs."""
    names = []
    for run_dir in sorted(Path("/run/user").glob("*")) if Path("/run/user").is_dir() else []:
        if run_dir.name.isdigit() and (run_dir / "systemd/private").exists():
            try:
                names.append(pwd.getpwuid(int(run_dir.name)).pw_name)
            except KeyError:
                continue
    return names


def units() -> list[str]:
    """System units, and each user manager's as "user@NAME:unit", of the types that run."""
    if not has_systemd():
        return []
    found = [u for u in _systemctl() if u.endswith(UNIT_TYPES) and not u.startswith(HARNESS_UNITS)]
    for user in _user_managers():
        found += [
            f"user@{user}:{u}"
            for u in _systemctl("--user", f"--machine={user}@")
            if u.endswith(UNIT_TYPES)
        ]
    return found


def cron_files() -> dict[str, str]:
    found = {}
    for place in CRON_PLACES:
        root = Path(place)
        paths = [root] if root.is_file() else sorted(root.glob("*")) if root.is_dir() else []
        for path in paths:
            if path.is_file() and not path.is_symlink():
                try:
                    found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
                except OSError:
                    continue
    return found


def at_jobs() -> list[str]:
    if shutil.which("atq") is None:
        return []
    out = subprocess.run(["atq"], capture_output=True, text=True).stdout
    return sorted(line.split()[0] for line in out.splitlines() if line.strip())


def baseline() -> dict:
    return {
        "processes": [f"{pid}:{info[2]}" for pid, info in sorted(processes().items())],
        "units": units(),
        "cron": cron_files(),
        "at": at_jobs(),
    }


def end_scheduled(before: dict) -> list[str]:
    """Stop what systemd, cron and at would start again after the processes are gone."""
    ended = []
    known = set(before.get("units", []))
    for unit in units():
        if unit in known:
            continue
        if unit.startswith("user@"):
            user, name = unit[len("user@") :].split(":", 1)
            command = ["systemctl", "--user", f"--machine={user}@", "stop", name]
        else:
            command = ["systemctl", "stop", unit]
        subprocess.run(command, capture_output=True, timeout=60)
        ended.append(f"stopped unit {unit}")
    old_cron = before.get("cron", {})
    for path, digest in cron_files().items():
        if old_cron.get(path) != digest:
            Path(path).unlink(missing_ok=True)
            ended.append(f"removed cron file {path}")
    known_at = set(before.get("at", []))
    for job in at_jobs():
        if job not in known_at:
            subprocess.run(["atrm", job], capture_output=True)
            ended.append(f"removed at job {job}")
    return ended


def command_line(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()[:200]


def end_processes(before: dict) -> tuple[list[str], bool]:
    keep = set(before.get("processes", []))
    mine = ancestors(os.getpid())
    ended = []
    # A process killed in one round may not have finished dying by the next (a loaded host):
    # it is signalled again but listed once.
    listed = set()
    for _ in range(ROUNDS):
        targets = {
            pid: f"{pid}:{start}"
            for pid, (ppid, flags, start) in processes().items()
            if f"{pid}:{start}" not in keep
            and pid not in mine
            and pid not in (1, 2)
            and not flags & PF_KTHREAD
            and ppid != 2
        }
        if not targets:
            return ended, True
        # Stop them all first, so none can start a replacement while the others die.
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid, key in targets.items():
                try:
                    if sig == signal.SIGKILL and key not in listed:
                        listed.add(key)
                        ended.append(f"killed {pid}: {command_line(pid)}")
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        time.sleep(0.05)
    return ended, False


def printable(line: str) -> str:
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in line)


def main(argv: list[str]) -> int:
    if argv[:1] == ["baseline"]:
        print(json.dumps(baseline()))
        return 0
    if len(argv) != 2 or argv[0] != "end":
        print("usage: end_agent_processes.py baseline | end BASELINE_JSON", file=sys.stderr)
        return 2
    before = json.loads(argv[1])
    ended = end_scheduled(before)
    killed, settled = end_processes(before)
    for line in ended + killed:
        print(printable(line))
    if not settled:
        print(f"processes kept appearing after {ROUNDS} rounds", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
