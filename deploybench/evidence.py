"""Evidence of one attempt on the controller: the agent's state after it stopped and the
verifier's logs, unpacked from what the playbook fetched, and the verdict judged from them.

Called by the agent_stop and verify_hidden roles as `python -m deploybench.evidence ...`, so a
playbook run by hand leaves the same files as `deploybench run`."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import click

from deploybench import verification

# Exit codes of `timeout`: 124 when the budget ran out, 137 when it had to SIGKILL.
TIMEOUT_CODES = {124, 137}


def _unpack(tarball: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tarball) as tar:
        tar.extractall(dest, filter="data")
    tarball.unlink()


def unpack_state(attempt: Path, rc: int, seconds: float, killed: int) -> dict:
    state = attempt / "state"
    if (attempt / "state.tar.gz").is_file():
        _unpack(attempt / "state.tar.gz", state)
    # The files the analysis reads sit at the attempt's top level.
    for name in ("RUNBOOK.MD", "trajectory.jsonl", "agent.log"):
        if (state / name).is_file():
            shutil.move(state / name, attempt / name)
    stop = {
        "agent_rc": rc,
        "agent_seconds": round(seconds, 3),
        "timed_out": rc in TIMEOUT_CODES,
        "killed_processes": killed,
    }
    (attempt / "stop.json").write_text(json.dumps(stop, indent=2))
    return stop


def judge(attempt: Path, rc: int, seconds: float) -> dict:
    logs = attempt / "verifier"
    if (attempt / "verifier.tar.gz").is_file():
        _unpack(attempt / "verifier.tar.gz", logs)
    timed_out = rc in TIMEOUT_CODES
    verdict = verification.verdict_from_logs(logs, seconds, timed_out=timed_out)
    (attempt / "verdict.json").write_text(json.dumps(verdict, indent=2))
    (attempt / "verify.json").write_text(
        json.dumps({"verifier_rc": rc, "seconds": round(seconds, 3), "timed_out": timed_out})
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
@click.option("--rc", type=int, required=True)
@click.option("--seconds", type=float, required=True)
def _verdict(attempt: Path, rc: int, seconds: float) -> None:
    verdict = judge(attempt, rc, seconds)
    click.echo(f"passed={verdict['passed']}")


if __name__ == "__main__":
    main()
