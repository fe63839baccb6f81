"""`deploybench status` and `deploybench logs`: a run watched while it goes (run/live.py keeps
what each running attempt is doing) and an attempt's agent log, from its machine while the agent
runs and from the run folder after."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import click
from rich.console import Console, Group
from rich.live import Live as RichLive

from deploybench import runfolder
from deploybench.errors import DeployBenchError
from deploybench.paths import runs_dir
from deploybench.run import live

# Terminal control sequences and other control bytes in a log are the agent's: shown escaped,
# so a log cannot move the watcher's cursor, retitle the terminal or hide lines.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")


def _shown(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace")
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _run_dir(run_id: str) -> Path:
    run_dir = runs_dir() / run_id
    if not (run_dir / runfolder.RUN_META).is_file():
        known = sorted(p.name for p in runs_dir().glob("*") if (p / runfolder.RUN_META).is_file())
        hint = f"; runs here: {', '.join(known[-8:])}" if known else ""
        raise DeployBenchError(f"no run {run_id!r} in {runs_dir()}{hint}")
    return run_dir


def status_view(run_dir: Path) -> Group:
    """The run's totals and one row per running attempt."""
    meta = runfolder.read_run_meta(run_dir)
    rows = runfolder.current(runfolder.ResultsStore(run_dir).load())
    planned = len(meta.get("tasks", [])) * len(meta.get("agents", [])) * meta.get("attempts", 1)
    done = sum(1 for r in rows if r.get("status") == "completed")
    infra = sum(1 for r in rows if r.get("status") != "completed")
    passed = sum(1 for r in rows if r.get("passed"))
    head = (
        f"run {run_dir.name}: {done + infra} of {planned} attempts finished "
        f"({done} judged, {passed} passed, {infra} infrastructure errors)"
    )
    running = live.running(run_dir)
    return Group(head, live.table(running) if running else "no attempt is running")


@click.command("status")
@click.argument("run_id")
@click.option(
    "--watch",
    "every",
    type=click.FloatRange(min=0.5),
    default=None,
    help="Redraw every SECONDS until Ctrl-C (one table, refreshed in place).",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the running attempts as JSON, one per line."
)
def status(run_id: str, every: float | None, as_json: bool) -> None:
    """Show what run RUN_ID is doing: its finished attempts, and for each running attempt its
    task, agent, stage (provision, stage, install, agent, stop, verify), time in that stage,
    time against the agent's budget, and the model calls and tokens its agent spent so far
    (counted at the run's gateway). Read from the run folder; works while the run goes, after
    it ends, and after a crash (attempts whose controller is gone are marked)."""
    run_dir = _run_dir(run_id)
    if as_json:
        for row in live.running(run_dir):
            click.echo(json.dumps(row))
        return
    console = Console()
    if every is None:
        console.print(status_view(run_dir))
        return
    with RichLive(status_view(run_dir), console=console, refresh_per_second=1) as view:
        try:
            while True:
                time.sleep(every)
                view.update(status_view(run_dir))
        except KeyboardInterrupt:
            pass


def _from_machine(run_dir: Path, folder: Path, offset: int) -> bytes | None:
    """New bytes of the agent's log on its running machine; None when the machine is not (or
    no longer) where they can be read."""
    from deploybench.backends import get_backend

    state = live.read(folder)
    hand = runfolder.read_handover(folder)
    if state is None or state.stage not in ("agent",) or not hand or not state.deployment:
        return None
    backend = get_backend(runfolder.read_run_meta(run_dir)["backend"])
    try:
        machines = backend.machines(Path(state.deployment))
    except (OSError, ValueError, DeployBenchError):
        return None
    if not machines:
        return None
    return backend.read_live(machines, f"{hand['control_dir']}/{runfolder.AGENT_LOG}", offset)


def _from_folder(folder: Path, offset: int) -> bytes:
    try:
        with open(folder / runfolder.AGENT_LOG, "rb") as f:
            f.seek(offset)
            return f.read()
    except OSError:
        return b""


@click.command("logs")
@click.argument("run_id")
@click.argument("task_id")
@click.argument("agent")
@click.option("--attempt", "number", type=click.IntRange(min=1), default=1, show_default=True)
@click.option(
    "-f", "--follow", is_flag=True, help="Keep printing new lines until the attempt ends."
)
def logs(run_id: str, task_id: str, agent: str, number: int, follow: bool) -> None:
    """Print the agent log of one attempt of run RUN_ID. While the agent runs, it is read from
    its machine (a local machine's files from the host; a cloud machine's over the harness's
    SSH login); after, from the run folder. Control characters in the log are shown escaped."""
    run_dir = _run_dir(run_id)
    folder = runfolder.attempt_dir(run_dir, task_id, agent, number)
    if not folder.is_dir():
        there = sorted(
            f"{p.parent.parent.name} {p.parent.name} {p.name}"
            for p in run_dir.glob("*/*/*")
            if p.is_dir() and p.name.isdigit()
        )
        hint = f"; attempts: {'; '.join(there[:12])}" if there else ""
        raise DeployBenchError(f"no attempt {task_id} {agent} #{number} in run {run_id}{hint}")
    offset = 0
    while True:
        state = live.read(folder)
        chunk = _from_machine(run_dir, folder, offset)
        if chunk is None:
            chunk = _from_folder(folder, offset)
        if chunk:
            sys.stdout.write(_shown(chunk))
            sys.stdout.flush()
            offset += len(chunk)
            continue
        if not follow or state is None or state.stage == "done":
            # The run folder's copy is the whole log: what the machine held, and any end the
            # machine had no time to show.
            rest = _from_folder(folder, offset)
            if rest:
                sys.stdout.write(_shown(rest))
            elif not offset and not (folder / runfolder.AGENT_LOG).exists():
                click.echo(f"no agent log (yet) in {folder}", err=True)
            return
        if not live.alive(state.controller_pid):
            click.echo("(the attempt's controller is gone; run --resume to continue)", err=True)
            return
        time.sleep(1.0)
