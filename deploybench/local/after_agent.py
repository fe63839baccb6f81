"""Every stage after the agent on a local machine, run from the host: no harness step enters
the machine through a door the agent owned (its sshd, login shell, PAM, sudo, python3).

1. Liveness: the container's PID 1 gone while no harness action ended it is `machine_broken`.
2. Stop: the host lists the machine's processes and SIGKILLs its PID 1, which ends every
   process of its PID namespace; nothing of the machine's runs for it.
3. State: the agent's runbook, log and trajectory, dpkg's and Python's package lists are read
   from the layers on the host (deploybench/local/layers.py: no link followed, capped).
4. Scan: deploybench/local/scan.py, on the layers, judged by deploybench/verify/integrity.py.
5. Experiment: in a fresh container over the same layers that the host starts itself (boot.sh's
   verify mode): nspawn's stub init as PID 1 (no sshd, no login), no network, no_new_privileges
   for every process, a clean environment, the controller's static busybox as the shell and
   the `timeout`. The verifier's folder is bound in from the host; its script and logs are
   root's alone there, and the experiment's programs run as the agent's user.
6. Judgment on the controller (deploybench/verify/evidence.py), with `trust: host` in the verdict.

The experiment's own programs are the agent's (that environment is what is judged)."""

from __future__ import annotations

import os
import re
import shutil
import stat
import time
from pathlib import Path
from typing import Any

from deploybench import runfolder
from deploybench.errors import InfraError
from deploybench.local import images, layers, machine, scan
from deploybench.verify import evidence, integrity, toolkit

# Caps of the agent's files (as the stop stage on other backends: collect_state.sh).
CAPS = {
    runfolder.RUNBOOK: 1 << 20,
    runfolder.AGENT_LOG: 16 << 20,
    runfolder.TRAJECTORY: 64 << 20,
}
# Each verifier log keeps its last MiB; the whole folder at most this much.
LOG_CAP = 1 << 20
LOGS_TOTAL_CAP = 16 << 20
LOGS_MAX_FILES = 2000
# Beyond the verification budget: nspawn's start and end, busybox timeout's kill delay.
VERIFY_GRACE_SECONDS = 60
INSIDE = "/.deploybench-verify"
WORKDIR_CHANGES = "workdir_changes.txt"
TRUST = "host"


def _escaped(raw: bytes) -> str:
    return raw.decode("utf-8", "backslashreplace").encode("unicode_escape").decode()[:300]


def _processes(info: dict) -> list[str]:
    """The machine's processes as the host sees them (pid, uid inside, command line)."""
    rows = []
    base = int(info.get("uid_base", images.UID_BASE))
    for pid in machine.machine_processes(info):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").strip()
        except OSError:
            continue
        uid = next((int(ln.split()[1]) for ln in status.splitlines() if ln.startswith("Uid:")), 0)
        rows.append(f"{pid}\t{uid - base}\t{_escaped(cmdline)}")
    return rows


def _agent_processes(rows: list[str]) -> int:
    """The processes the stop ended that were not the machine's own sshd sessions."""
    return sum(1 for row in rows if not row.split("\t")[2].startswith("sshd"))


def _state(m: layers.Machine, dest: Path, workdir: str, control: str) -> None:
    """The agent's files and the package lists, from the layers into the state folder."""
    dest.mkdir(parents=True, exist_ok=True)
    notes = {"refused.txt": [], "truncated.txt": []}
    sources = {
        runfolder.RUNBOOK: f"{workdir}/{runfolder.RUNBOOK}",
        runfolder.AGENT_LOG: f"{control}/{runfolder.AGENT_LOG}",
        runfolder.TRAJECTORY: f"{control}/{runfolder.TRAJECTORY}",
    }
    for name, rel in sources.items():
        note = layers.copy_capped(m, rel.lstrip("/"), dest / name, CAPS[name])
        if note:
            notes["truncated.txt" if "cut to" in note else "refused.txt"].append(note)
    status = (m.read("var/lib/dpkg/status", 64 << 20) or (b"", 0))[0].decode(errors="replace")
    packages = scan.installed_packages(status)
    (dest / "dpkg.txt").write_text(
        "".join(f"{k}\t{v.lstrip('*')}\n" for k, v in sorted(packages.items()))
    )
    for out, folders in (
        ("pip_system.txt", ["usr/lib/python3/dist-packages", *_python_dirs(m)]),
        ("pip_env.txt", _env_dirs(m, workdir)),
    ):
        dists = set()
        for folder in folders:
            for name in m.listdir(folder):
                base = re.sub(r"\.(dist|egg)-info$", "", name)
                if base != name and "-" in base:
                    dists.add("==".join(base.split("-", 1)))
        # Names are the agent's: one that is not UTF-8 is written escaped, never an error.
        (dest / out).write_text("".join(f"{d}\n" for d in sorted(dists)), errors="backslashreplace")
    for name, lines in notes.items():
        if lines:
            (dest / name).write_text(
                "".join(f"{line}\n" for line in lines), errors="backslashreplace"
            )


def _workdir_changes(mdir: Path, workdir: str, out: Path) -> None:
    """What changed in the workdir since the agent started (the staged tree at the pinned
    commit, noted then): the host's answer to `git status`, with no git run at all."""
    unchanged = machine.unchanged_since_agent(mdir)
    noted = machine.noted_before_agent(mdir)
    rows = []
    top = workdir.strip("/")
    for rel, st in layers.walk(machine.upper_dir(mdir), top):
        if stat.S_ISDIR(st.st_mode) or unchanged(rel, st):
            continue
        kind = "deleted" if layers.is_whiteout(st) else "changed" if rel in noted else "added"
        rows.append(f"{kind}\t/{rel}")
    out.write_text("".join(f"{row}\n" for row in rows), errors="backslashreplace")


def _python_dirs(m: layers.Machine) -> list[str]:
    return [
        f"usr/local/lib/{v}/dist-packages"
        for v in m.listdir("usr/local/lib")
        if re.fullmatch(r"python3(\.\d+)?", v)
    ]


def _env_dirs(m: layers.Machine, workdir: str) -> list[str]:
    lib = f"{workdir.strip('/')}/env/lib"
    return [f"{lib}/{v}/site-packages" for v in m.listdir(lib) if v.startswith("python3")]


def _verify_dir(where: Path, script: str, busybox: Path, uid: int) -> Path:
    """The verifier's folder, bound into its container: tools/ (busybox, sh) 755, script/ and
    logs/ root's alone, scratch/ for the workdir's owner (the experiment hands it over). Owned
    by the container's root (host uid uid), so nothing of the host's is writable in there."""
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(mode=0o711)
    for sub, mode in (("tools", 0o755), ("script", 0o700), ("logs", 0o700), ("scratch", 0o700)):
        (where / sub).mkdir(mode=mode)
    shutil.copyfile(busybox, where / "tools/busybox")
    os.chmod(where / "tools/busybox", 0o755)
    os.symlink("busybox", where / "tools/sh")
    (where / "script/verify.sh").write_text(script)
    os.chmod(where / "script/verify.sh", 0o600)
    for path in [where, *where.rglob("*")]:
        os.lchown(path, uid, uid)
    return where


def _take_logs(logs: Path, dest: Path) -> str | None:
    """Copy the verifier's logs (written by the container's root) onto the controller: regular
    files only, never through a link, each cut to its last MiB, the whole bounded."""
    dest.mkdir(parents=True, exist_ok=True)
    total = count = 0
    for rel, st in layers.walk(logs):
        if stat.S_ISDIR(st.st_mode):
            if rel.count("/") < 4:
                (dest / rel).mkdir(parents=True, exist_ok=True)
            continue
        if not stat.S_ISREG(st.st_mode) or rel.count("/") >= 4:
            continue
        count += 1
        if count > LOGS_MAX_FILES or total > LOGS_TOTAL_CAP:
            return "the verifier's logs were cut: too many or too large"
        got = layers.read(logs, rel, LOG_CAP, tail=True)
        if got is None:
            continue
        data = got[0]
        total += len(data)
        target = dest / rel
        target.unlink(missing_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    return None


def judge(state_dir: Path, name: str, attempt: Path, task_id: str, hand: dict[str, Any]) -> dict:
    """Every stage after the agent for one attempt on machine `name`: the verdict, written."""
    attempt = Path(attempt)
    mdir = machine.machines_dir(state_dir) / name
    info = machine.read_info(mdir) or {}
    files = {
        "scan": attempt / runfolder.TAMPER_SCAN,
        "probe": attempt / runfolder.MACHINE_PROBE,
        "script": attempt / runfolder.MACHINE_SCRIPT,
    }
    alive = machine.is_alive(info)
    if not alive and machine.killed_from_outside(mdir, info):
        raise InfraError(f"machine {name} was killed from outside while the agent ran")
    rows = _processes(info) if alive else []
    if info:
        machine.kill_machine(info)
    state = attempt / runfolder.STATE_DIR
    state.mkdir(parents=True, exist_ok=True)
    (state / "processes_at_stop.txt").write_text("".join(f"{row}\n" for row in rows))
    lower = Path(info.get("image_dir", ""))
    m = layers.Machine(machine.upper_dir(mdir), lower)
    workdir, control = hand["workdir"], hand["control_dir"]
    _state(m, state, workdir, control)
    _workdir_changes(mdir, workdir, state / WORKDIR_CHANGES)
    raw_scan = scan.scan(machine.upper_dir(mdir), lower, machine.unchanged_since_agent(mdir))
    files["scan"].write_text(raw_scan, errors="backslashreplace")
    probe = None
    if not alive:
        files["probe"].write_text(
            "PROBE machine broken the machine's PID 1 ended during the agent's run, "
            "and no harness action ended it\n"
        )
        probe = files["probe"]
    judged = integrity.judge(raw_scan, probe.read_text() if probe else None)
    verify_rc, seconds, ran = None, 0.0, False
    if judged["passed"] and files["script"].is_file():
        verify_rc, seconds = _experiment(
            state_dir, name, mdir, attempt, files["script"].read_text(), hand,
            attempt / runfolder.VERIFIER_DIR,
        )  # fmt: skip
        ran = True
    evidence.unpack_state(
        attempt, int(hand["agent_rc"]), float(hand["agent_seconds"]), _agent_processes(rows)
    )
    verdict = evidence.judge(attempt, verify_rc, seconds, task_id, files["scan"], probe, ran=ran)
    verdict["trust"] = TRUST
    runfolder.write_verdict(attempt, verdict)
    files["script"].unlink(missing_ok=True)
    return verdict


def experiment_again(
    state_dir: Path, name: str, attempt: Path, hand: dict[str, Any], script: str, logs: Path
) -> tuple[int, float]:
    """The verifier's experiment once more on the judged machine's final state (a variant bank's
    real runs, validate-references --bank): its exit code and seconds, its logs into LOGS."""
    mdir = machine.machines_dir(state_dir) / name
    return _experiment(state_dir, name, mdir, attempt, script, hand, logs)


def _experiment(
    state_dir: Path,
    name: str,
    mdir: Path,
    attempt: Path,
    script: str,
    hand: dict[str, Any],
    logs_dest: Path,
) -> tuple[int, float]:
    """Run the verifier's script in its container; its exit code (124 when the wall-clock
    limit ran out) and seconds. The logs land in LOGS_DEST."""
    budget = float(hand["verify_seconds"])
    info = machine.read_info(mdir) or {}
    where = _verify_dir(
        mdir / "verify",
        script,
        toolkit.busybox(),
        int(info.get("uid_base", images.UID_BASE)),
    )
    bb = f"{INSIDE}/tools/busybox"
    command = [
        bb, "env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root",
        f"WORKDIR={hand['workdir']}", f"LOG_DIR={INSIDE}/logs", f"SCRATCH={INSIDE}/scratch",
        f"TOOLS={INSIDE}/tools", f"DEPLOYBENCH_OWNER={hand['user']}",
        # The trusted shell waits for the trusted timeout and writes its exit code (nspawn's
        # own says only that its payload died of a signal).
        bb, "sh", "-c", f'"$0" timeout -k 10 {int(budget)} "$0" sh {INSIDE}/script/verify.sh;'
        f" echo $? > {INSIDE}/exit", bb,
    ]  # fmt: skip
    (attempt / runfolder.MACHINE_DIR).mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    rc = machine.run_verifier(
        state_dir,
        name,
        where,
        command,
        budget + VERIFY_GRACE_SECONDS,
        attempt / runfolder.MACHINE_DIR / "verifier_console.log",
    )
    seconds = time.monotonic() - started
    got = layers.read(where, "exit", 16)
    if rc is not None and got and got[0].strip().isdigit():
        rc = int(got[0].strip())
    # The script is gone before the logs are read; the logs are copied, then the folder goes.
    (where / "script/verify.sh").unlink(missing_ok=True)
    error = _take_logs(where / "logs", logs_dest)
    if error:
        (logs_dest / "logs_cut.txt").write_text(error + "\n")
    shutil.rmtree(where, ignore_errors=True)
    return (124 if rc is None else rc), seconds
