"""What a run is doing now: each running attempt's stage, how long it has been at it, its budget
and the tokens its agent spent so far. The runner keeps one small `live.json` per attempt while
the attempt runs (`Watch`); `deploybench status` and the run's live table read them back
(`running`), with the tokens summed from the attempt's `model_calls.jsonl`, which the gateway
appends as each call ends. Nothing here is read by a verdict: it is for people watching."""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.table import Table

from deploybench import runfolder

# The stages a watcher sees, in order (docs/design.md's six stages, as a researcher names them).
STAGES = ("provision", "stage", "install", "agent", "stop", "verify", "done")

# The plays of playbooks/run_task.yml (and stage_task.yml, which it imports), by the stage they
# are part of; a test holds this to the playbooks' own names.
PLAY_STAGES = {
    "Validate the inputs, load the task and check the machine": "stage",
    "Prepare the machine": "stage",
    "Stage the paper and the repository at the pinned commit": "stage",
    "Launch the agent under its time budget": "install",
    "Hand the attempt over to the stages run from outside the machine": "stop",
    "Check the machine the agent left": "stop",
    "Stop the agent and collect the machine's state": "stop",
    "Verify with the hidden verifier": "verify",
}
# The stages while which an attempt's gateway key opens anything (run/gateway.py's Lease.active):
# the play that puts the scaffold in and runs the agent. Not the agent's `timed` task alone: its
# start event reaches the controller after the agent may have made its first call.
KEY_STAGES = ("install", "agent")
# The agent's own run is the one `timed` action of an attempt (roles/run/tasks/timed.yml).
AGENT_ACTION = "timed"


@dataclass
class Live:
    task_id: str
    agent: str
    attempt: int
    stage: str
    started: float  # the attempt's start (this try's), seconds since the epoch
    stage_since: float
    budget_seconds: int | None
    deployment: str  # the folder of its machines' deployment (backends/deployments.py)
    controller_pid: int
    updated: float


class Watch:
    """The runner's hand on one attempt's live.json: written whole at every stage change."""

    def __init__(self, folder: Path, task_id: str, agent: str, number: int, budget: int | None):
        now = time.time()
        self.folder = Path(folder)
        self.lock = threading.Lock()
        self.live = Live(
            task_id, agent, number, "provision", now, now, budget, "", os.getpid(), now
        )
        self._write()

    def deployment(self, folder: Path) -> None:
        self.live.deployment = str(folder)
        self._write()

    def stage(self, name: str) -> None:
        if name not in STAGES:  # a harness bug, never input
            raise ValueError(f"no stage {name!r}")
        with self.lock:
            if STAGES.index(name) <= STAGES.index(self.live.stage):
                return  # a stage's late events never take the attempt back
            self.live.stage, self.live.stage_since = name, time.time()
        self._write()

    @property
    def key_open(self) -> bool:
        """Whether the attempt's gateway key may open the gateway now (KEY_STAGES)."""
        return self.live.stage in KEY_STAGES

    def on_event(self, event: dict[str, Any]) -> None:
        """An Ansible event of the attempt's playbook: the stage it starts, if any."""
        data = event.get("event_data") or {}
        if event.get("event") == "playbook_on_play_start":
            stage = PLAY_STAGES.get(str(data.get("play") or data.get("name") or ""))
            if stage:
                self.stage(stage)
        elif event.get("event") == "runner_on_start" and data.get("task_action") == AGENT_ACTION:
            self.stage("agent")

    def _write(self) -> None:
        with self.lock:
            self.live.updated = time.time()
            target = self.folder / runfolder.LIVE
            tmp = target.with_name(target.name + ".tmp")
            tmp.write_text(json.dumps(asdict(self.live)))
            tmp.replace(target)


def tokens(folder: Path) -> dict[str, int]:
    """Calls and tokens so far, from the gateway's record of the attempt's calls."""
    path = Path(folder) / runfolder.MODEL_CALLS
    out = {"calls": 0, "input_tokens": 0, "output_tokens": 0}
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return out
    for line in runfolder.complete_lines(text, path):
        try:
            call = json.loads(line)
        except json.JSONDecodeError:
            continue
        out["calls"] += 1
        out["input_tokens"] += int(call.get("input_tokens") or 0)
        out["output_tokens"] += int(call.get("output_tokens") or 0)
    return out


def alive(pid: int) -> bool:
    """Whether the process that runs the attempt is still there."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read(folder: Path) -> Live | None:
    try:
        data = json.loads((Path(folder) / runfolder.LIVE).read_text())
        return Live(**data)
    except (OSError, ValueError, TypeError):
        return None


def running(run_dir: Path, now: float | None = None) -> list[dict[str, Any]]:
    """The run's attempts that are under way, one row each: who, stage, seconds in the stage and
    in the attempt, the budget, calls and tokens; `controller` says when the process that runs
    them is gone (a crash: `--resume` picks them up)."""
    now = time.time() if now is None else now
    rows = []
    for path in sorted(Path(run_dir).glob(f"*/*/*/{runfolder.LIVE}")):
        live = read(path.parent)
        if live is None or live.stage == "done":
            continue
        rows.append(
            {
                **asdict(live),
                "folder": str(path.parent),
                "stage_seconds": max(0.0, now - live.stage_since),
                "seconds": max(0.0, now - live.started),
                "controller": "running" if alive(live.controller_pid) else "gone",
                **tokens(path.parent),
            }
        )
    return rows


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(seconds)
    if s >= 3600:
        return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"
    return f"{s // 60}:{s % 60:02d}"


def table(rows: list[dict[str, Any]]) -> Table:
    """The running attempts as a table (`running`'s rows)."""
    out = Table("task", "agent", "#", "stage", "in stage", "elapsed / budget", "calls", "tokens")
    for r in rows:
        stage = r["stage"] if r["controller"] == "running" else f"{r['stage']} (controller gone)"
        out.add_row(
            r["task_id"],
            r["agent"],
            str(r["attempt"]),
            stage,
            _clock(r["stage_seconds"]),
            f"{_clock(r['seconds'])} / {_clock(r['budget_seconds'])}",
            str(r["calls"]),
            f"{r['input_tokens']:,} in / {r['output_tokens']:,} out",
        )
    return out
