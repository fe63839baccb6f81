"""Evidence of one attempt on the controller: the agent's state after it stopped and the
verifier's logs, unpacked from what the playbook fetched, and the verdict judged from them
(the machine's integrity from the tamper scan's raw lines, then Layers 1 and 2).

Called through the playbook's side door (deploybench/attempt/sidedoor.py), so a playbook run by hand
leaves the same files as `deploybench run`."""

from __future__ import annotations

import base64
import binascii
import os
import shutil
import tempfile
from dataclasses import asdict
from pathlib import Path

from deploybench import runfolder
from deploybench.verify import archives, integrity, verification

# Exit codes of `timeout`: 124 when the budget ran out (GNU), 143 (busybox: SIGTERM), 137
# when it had to SIGKILL.
TIMEOUT_CODES = {124, 137, 143}
# The verifier's logs arrive base64-encoded in a task's output; this caps them on the controller.
MAX_LOGS_BYTES = 16 * 1024 * 1024


# What collect_state.sh (roles/agent_stop/files/collect_state.sh) packs, and nothing else; tar
# writes them as ./NAME beside the root folder ./, which archives.safe_unpack reads as NAME.
STATE_NAMES = (
    runfolder.RUNBOOK,
    runfolder.AGENT_LOG,
    runfolder.TRAJECTORY,
    "git_status.txt",
    "git_head.txt",
    "git_diff.patch",
    "dpkg.txt",
    "pip_system.txt",
    "pip_env.txt",
    "processes_after_stop.txt",
    "refused.txt",
    "truncated.txt",
)
# Bounds above the script's own caps (64 MiB for the trajectory, 16 MiB for each output).
STATE_LIMITS = {
    "max_depth": 1,
    "max_members": 64,
    "max_file_bytes": 64 * 1024 * 1024,
    "max_total_bytes": 256 * 1024 * 1024,
}
# The verifier's logs: any file names, each capped at 1 MiB by pack_logs.sh (a margin here).
LOGS_LIMITS = {
    "max_depth": 16,
    "max_members": 4096,
    "max_file_bytes": 4 * 1024 * 1024,
    "max_total_bytes": 256 * 1024 * 1024,
}
# The line a refused state archive adds to the tamper scan's raw lines (integrity.TAMPER_KINDS).
ARCHIVE_REFUSED = "ARCHIVE state refused: "


def _unpack_into(source: Path | bytes, dest: Path, **rules) -> None:
    """Unpack into a new folder beside dest, then move what it holds into dest (replacing a
    file or folder of the same name): safe_unpack wants a new folder, and dest may already hold
    the controller's own files (a playbook run by hand reuses its attempt folder; other stages
    write into it), which must neither block the unpacking nor be removed by it. Raises
    archives.ArchiveRefused; nothing of a refused archive reaches dest."""
    dest.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix=".unpack-", dir=dest.parent))
    try:
        # As an unprivileged user when the controller is root (archives.unpack_unprivileged).
        archives.unpack_unprivileged(source, fresh, **rules)
        for child in fresh.iterdir():
            target = dest / child.name
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            elif target.is_symlink() or target.exists():
                target.unlink()
            os.replace(child, target)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)


def _unpack_state(tarball: Path, dest: Path) -> str | None:
    """Unpack the state's tarball into dest; None, or why it was refused. A refused tarball
    is kept as it came, unopened: it is the evidence of the refusal."""
    try:
        _unpack_into(tarball, dest, allowed=STATE_NAMES, **STATE_LIMITS)
    except archives.ArchiveRefused as exc:
        return str(exc)
    tarball.unlink()
    return None


def unpack_state(attempt: Path, rc: int, seconds: float, killed: int) -> dict:
    state = attempt / runfolder.STATE_DIR
    if (attempt / runfolder.STATE_TARBALL).is_file():
        refused = _unpack_state(attempt / runfolder.STATE_TARBALL, state)
        if refused:
            # The machine sent an archive that broke the rules (a link, a path that escapes, a
            # name collect_state.sh never writes): tampered, judged by `judge` from this line.
            with (attempt / runfolder.TAMPER_SCAN).open("a") as scan:
                scan.write(ARCHIVE_REFUSED + " ".join(refused.split()) + "\n")
    # The files the analysis reads sit at the attempt's top level.
    for name in runfolder.AGENT_FILES:
        if (state / name).is_file():
            shutil.move(state / name, attempt / name)
    stop = runfolder.Stop(
        agent_rc=rc,
        agent_seconds=round(seconds, 3),
        timed_out=rc in TIMEOUT_CODES,
        killed_processes=killed,
    )
    runfolder.write_stop(attempt, stop)
    return asdict(stop)


def keep_agent_files(attempt: Path) -> None:
    """Write the files a broken machine's raw read returned (lines "BASE64 NAME") into the
    attempt's top level, where the stop stage would have put them."""
    encoded = attempt / runfolder.AGENT_FILES_B64
    if not encoded.is_file():
        return
    for line in encoded.read_text(errors="replace").splitlines():
        data, _, name = line.strip().rpartition(" ")
        if name in runfolder.AGENT_FILES and data:
            try:
                (attempt / name).write_bytes(base64.b64decode(data, validate=True))
            except binascii.Error:
                continue
    encoded.unlink()


def _unpack_logs(source: Path | bytes, dest: Path) -> str | None:
    """Unpack the verifier's logs into dest; None, or why they could not be."""
    try:
        _unpack_into(source, dest, **LOGS_LIMITS)
    except archives.ArchiveRefused as exc:
        return f"the verifier's logs could not be unpacked: {exc}"
    return None


def _unpack_b64(encoded: Path, dest: Path) -> str | None:
    """Unpack the base64 tar.gz the verifier's pack step printed; None, or why it could not."""
    try:
        return unpack_packed_logs(encoded.read_bytes(), dest)
    except OSError as exc:
        return f"the verifier's logs could not be unpacked ({type(exc).__name__})"
    finally:
        encoded.unlink(missing_ok=True)


def unpack_packed_logs(packed: bytes, dest: Path) -> str | None:
    """The verifier's logs as its pack step printed them (base64 of a tar.gz, the machine's to
    shape) unpacked into DEST under the logs' limits; None, or why they could not be."""
    try:
        raw = base64.b64decode(b"".join(packed.split()), validate=True)
    except binascii.Error as exc:
        return f"the verifier's logs could not be unpacked ({type(exc).__name__})"
    return _unpack_logs(raw[:MAX_LOGS_BYTES], dest)


def _archive_refusals(attempt: Path) -> str:
    """The ARCHIVE lines unpack_state added to the attempt's scan file."""
    text = _text(attempt / runfolder.TAMPER_SCAN) or ""
    return "".join(f"{line}\n" for line in text.splitlines() if line.startswith(ARCHIVE_REFUSED))


def _text(path: Path | None) -> str | None:
    if path is None or not path.is_file():
        return None
    return path.read_bytes().decode("utf-8", errors="replace")


def judge(
    attempt: Path,
    rc: int | None,
    seconds: float,
    task_id: str | None = None,
    scan: Path | None = None,
    probe: Path | None = None,
    ran: bool = True,
) -> dict:
    """verdict.json and verify.json of an attempt. `scan` and `probe` hold the raw lines of the
    tamper scan and of the probe of the machine (deploybench/verify/integrity.py); `ran` says
    whether the experiment ran (it does not on a machine that failed its integrity judgment)."""
    logs = attempt / runfolder.VERIFIER_DIR
    logs.mkdir(parents=True, exist_ok=True)
    unpack_error = None
    if (attempt / runfolder.VERIFIER_B64).is_file():
        unpack_error = _unpack_b64(attempt / runfolder.VERIFIER_B64, logs)
    elif (attempt / runfolder.VERIFIER_TARBALL).is_file():  # the logs as a file, not base64
        unpack_error = _unpack_logs(attempt / runfolder.VERIFIER_TARBALL, logs)
        (attempt / runfolder.VERIFIER_TARBALL).unlink()
    scan_text = _text(scan)
    own_scan = attempt / runfolder.TAMPER_SCAN
    if scan is None or scan.resolve() != own_scan.resolve():
        # A state archive unpack_state refused counts also where no scan ran (a broken machine)
        # or the scan's lines were kept elsewhere.
        refusals = _archive_refusals(attempt)
        if refusals:
            scan_text = (scan_text or "") + refusals
    # What changed in the doors of the login during the agent (deploybench/verify/doors.py).
    machine = integrity.judge(scan_text, _text(probe), _text(attempt / runfolder.DOOR_FINDINGS))
    for raw in (scan, probe, own_scan):
        if raw is not None and raw.is_file() and raw.parent != logs:
            shutil.move(raw, logs / raw.name)
    timed_out = rc in TIMEOUT_CODES
    spec = verification.load_checks(task_id) if task_id and ran and machine["passed"] else None
    verdict = verification.verdict_from_logs(
        logs, seconds, spec, timed_out=timed_out and ran, machine=machine
    )
    if unpack_error:
        verdict["layer2"]["checks"].append(
            {"name": "logs_collected", "passed": False, "detail": unpack_error}
        )
        verdict["layer2"]["passed"] = verdict["passed"] = False
    variant = runfolder.read_variant(attempt) if task_id else None
    if variant:
        _judge_variant(verdict, task_id, variant, logs, spec is not None)
    if spec is not None:
        judge_repairs(verdict, task_id, spec, logs)
    runfolder.write_verdict(attempt, verdict)
    runfolder.write_verify(
        attempt,
        runfolder.Verify(
            verifier_rc=rc,
            seconds=round(seconds, 3),
            timed_out=timed_out and ran,
            variant=_shown(variant),
        ),
    )
    return verdict


def _shown(variant: dict | None) -> dict | None:
    """What verify.json says of the variant: its id, inputs and bank, never the answers (a
    verifier that declares no variants: `bank: none`, `declared: false`)."""
    if not variant:
        return None
    if not variant.get("declared"):
        return {"bank": variant["bank"], "declared": False}
    return {k: variant[k] for k in ("bank", "id", "inputs", "reused") if k in variant}


def _judge_variant(verdict: dict, task_id: str, variant: dict, logs: Path, judged: bool) -> None:
    """The bank's comparison, as Layer 2 checks `variant_<result>`: with a bank, each result of
    the drawn variant must be what the real code gave; without one (or a verifier that declares
    no variants), nothing is compared and the verdict says so (`bank: none`)."""
    from deploybench.verify import bank

    verdict["bank"] = variant["bank"]
    verdict["variant"] = variant.get("id")
    if variant["bank"] != "present" or not judged:
        return
    checks = bank.judge(bank.spec_of(task_id), variant, logs)
    verdict["layer2"]["checks"].extend(checks)
    if not all(c["passed"] for c in checks):
        verdict["layer2"]["passed"] = verdict["passed"] = False


def judge_repairs(verdict: dict, task_id: str, spec: list, logs: Path) -> None:
    """Changed experiment files no check accepts: a compatibility repair where the bank's
    results were reproduced and the diff is small (verify/repairs.py), else a failure."""
    from deploybench import catalog as catalog_mod
    from deploybench.catalog import sources
    from deploybench.verify import repairs

    task = catalog_mod.load_task(task_id)
    repairs.judge(verdict, spec, logs, lambda blob: sources.blob_text(task, blob))


def judge_volume_scan(attempt: Path, raw: str) -> dict:
    """Judge the attempt again with the scan of its machine's volume read from outside
    (backends/volume_scan.py): a volume that fails the integrity judgment fails the attempt,
    whatever the stages through the machine found; the verdict then says `trust: scanned`."""
    logs = attempt / runfolder.VERIFIER_DIR
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "volume_scan.txt").write_text(raw)
    verdict = runfolder.read_verdict(attempt)
    judged = integrity.judge(raw)
    machine = verdict["machine"]
    machine["recorded"] = (machine.get("recorded", []) + judged["recorded"])[
        : integrity.MAX_EVIDENCE * 5
    ]
    if not judged["passed"]:
        if machine["passed"]:
            machine.update(passed=False, category=judged["category"], evidence=[])
        machine["evidence"] = (machine["evidence"] + judged["evidence"])[: integrity.MAX_EVIDENCE]
        verdict["passed"] = False
    verdict["trust"] = "scanned"
    runfolder.write_verdict(attempt, verdict)
    return verdict
