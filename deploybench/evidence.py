"""Evidence of one attempt on the controller: the agent's state after it stopped and the
verifier's logs, unpacked from what the playbook fetched, and the verdict judged from them
(the machine's integrity from the tamper scan's raw lines, then Layers 1 and 2).

Called by the agent_stop and verify_hidden roles as `python -m deploybench.evidence ...`, so a
playbook run by hand leaves the same files as `deploybench run`."""

from __future__ import annotations

import base64
import binascii
import io
import json
import shutil
import tarfile
from dataclasses import asdict
from pathlib import Path

import click

from deploybench import integrity, runfolder, toolkit, verification

# Exit codes of `timeout`: 124 when the budget ran out (GNU), 143 (busybox: SIGTERM), 137
# when it had to SIGKILL.
TIMEOUT_CODES = {124, 137, 143}
# The verifier's logs arrive base64-encoded in a task's output; this caps them on the controller.
MAX_LOGS_BYTES = 16 * 1024 * 1024


def _unpack(tarball: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tarball) as tar:
        tar.extractall(dest, filter="data")
    tarball.unlink()


def unpack_state(attempt: Path, rc: int, seconds: float, killed: int) -> dict:
    state = attempt / runfolder.STATE_DIR
    if (attempt / runfolder.STATE_TARBALL).is_file():
        _unpack(attempt / runfolder.STATE_TARBALL, state)
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


AGENT_FILES = runfolder.AGENT_FILES


def keep_agent_files(attempt: Path) -> None:
    """Write the files a broken machine's raw read returned (lines "BASE64 NAME") into the
    attempt's top level, where the stop stage would have put them."""
    encoded = attempt / runfolder.AGENT_FILES_B64
    if not encoded.is_file():
        return
    for line in encoded.read_text(errors="replace").splitlines():
        data, _, name = line.strip().rpartition(" ")
        if name in AGENT_FILES and data:
            try:
                (attempt / name).write_bytes(base64.b64decode(data, validate=True))
            except binascii.Error:
                continue
    encoded.unlink()


def _unpack_b64(encoded: Path, dest: Path) -> str | None:
    """Unpack the base64 tar.gz the verifier's pack step printed; None, or why it could not."""
    dest.mkdir(parents=True, exist_ok=True)
    try:
        raw = base64.b64decode(b"".join(encoded.read_bytes().split()), validate=True)
        with tarfile.open(fileobj=io.BytesIO(raw[:MAX_LOGS_BYTES]), mode="r:gz") as tar:
            tar.extractall(dest, filter="data")
    except (OSError, binascii.Error, tarfile.TarError, EOFError) as exc:
        return f"the verifier's logs could not be unpacked ({type(exc).__name__})"
    finally:
        encoded.unlink(missing_ok=True)
    return None


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
    tamper scan and of the probe of the machine (deploybench/integrity.py); `ran` says whether
    the experiment ran (it does not on a machine that failed its integrity judgment)."""
    logs = attempt / runfolder.VERIFIER_DIR
    logs.mkdir(parents=True, exist_ok=True)
    if (attempt / runfolder.VERIFIER_TARBALL).is_file():
        _unpack(attempt / runfolder.VERIFIER_TARBALL, logs)
    unpack_error = None
    if (attempt / runfolder.VERIFIER_B64).is_file():
        unpack_error = _unpack_b64(attempt / runfolder.VERIFIER_B64, logs)
    machine = integrity.judge(_text(scan), _text(probe))
    for raw in (scan, probe):
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
    runfolder.write_verdict(attempt, verdict)
    runfolder.write_verify(
        attempt,
        runfolder.Verify(verifier_rc=rc, seconds=round(seconds, 3), timed_out=timed_out and ran),
    )
    return verdict


@click.group()
def main() -> None:
    """Evidence helpers run on the controller by the run_task playbook."""


@main.command("unpack-state")
@click.argument("attempt", type=click.Path(file_okay=False, path_type=Path))
@click.option("--rc", type=int, required=True)
@click.option("--seconds", type=float, required=True)
@click.option("--killed", type=int, default=0)
def _unpack_state(attempt: Path, rc: int, seconds: float, killed: int) -> None:
    click.echo(json.dumps(unpack_state(attempt, rc, seconds, killed)))


@main.command("verdict")
@click.argument("attempt", type=click.Path(file_okay=False, path_type=Path))
@click.option("--rc", type=int, default=None)
@click.option("--seconds", type=float, required=True)
@click.option("--task", "task_id", default=None, help="Judge this task's checks.yaml.")
@click.option("--scan", type=click.Path(dir_okay=False, path_type=Path), default=None)
@click.option("--probe", type=click.Path(dir_okay=False, path_type=Path), default=None)
@click.option("--ran/--not-ran", default=True, help="Whether the experiment ran.")
def _verdict(attempt, rc, seconds, task_id, scan, probe, ran) -> None:
    verdict = judge(attempt, rc, seconds, task_id, scan, probe, ran)
    click.echo(f"passed={verdict['passed']}")


@main.command("broken")
@click.argument("attempt", type=click.Path(file_okay=False, path_type=Path))
@click.option("--rc", type=int, required=True)
@click.option("--seconds", type=float, required=True)
@click.option("--probe", type=click.Path(dir_okay=False, path_type=Path), required=True)
def _broken(attempt: Path, rc: int, seconds: float, probe: Path) -> None:
    """Judge a machine the agent broke: keep what it wrote, record how it stopped, and write the
    verdict (machine_broken) from the probe's raw lines; the experiment is not run."""
    keep_agent_files(attempt)
    unpack_state(attempt, rc, seconds, 0)
    verdict = judge(attempt, None, 0.0, scan=None, probe=probe, ran=False)
    click.echo(f"passed={verdict['passed']} category={verdict['machine']['category']}")


@main.command("integrity")
@click.argument("scan", type=click.Path(dir_okay=False, path_type=Path))
def _integrity(scan: Path) -> None:
    """Print the integrity judgment of a tamper scan's raw lines (passed=True|False)."""
    result = integrity.judge(_text(scan))
    click.echo(f"passed={result['passed']} category={result['category']}")


@main.command("busybox")
def _busybox() -> None:
    """Print the path of the controller's static busybox (the verifier's trusted tools)."""
    click.echo(toolkit.busybox())


@main.command("machine-script")
@click.argument("task_id")
@click.argument("out", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--cpu-only", is_flag=True, help="The CPU validation of a GPU task (CPU_ONLY=1).")
def _machine_script(task_id: str, out: Path, cpu_only: bool) -> None:
    """Write what runs on the machine for TASK_ID (the preamble, then its experiment.sh)."""
    verification.load_checks(task_id)  # a task whose checks do not validate is not run
    out.write_text(verification.machine_script(task_id, cpu_only=cpu_only))
    out.chmod(0o600)


if __name__ == "__main__":
    main()
