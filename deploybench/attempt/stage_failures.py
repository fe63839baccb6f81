"""What a playbook run that ended without a verdict means: in one line (`reason`), and whether the
agent is to blame (`judge`). Once the agent has run, the machine is the agent's doing: the
harness's stages (the machine check, the stop stage, the verifier) are fixed scripts that work
on a fresh machine, so when one of them fails on the machine, or the machine still answers but
every session of the harness dies, the agent broke the machine (FAIL, layer 0, machine_broken).
Left an infrastructure error, it would be tried again and never counted against the agent: a way
to dodge a verdict.

What stays an infrastructure error: anything before the agent's run began, a failure on the
controller (the side door), a machine that no longer answers at all, and a login that timed out
(a host too loaded to answer in time is not the agent's doing)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from deploybench import runfolder, trajectories
from deploybench.attempt import sidedoor
from deploybench.backends import inventory

# The agent's run is the one `timed` action of an attempt (roles/run/tasks/timed.yml).
AGENT_RUN_ACTION = "timed"
CONTROLLER_ACTIONS = ("sidedoor",)
_TIMED_OUT = re.compile(r"timed? ?out", re.IGNORECASE)


def _data(event: dict[str, Any]) -> dict[str, Any]:
    return event.get("event_data") or {}


def judge(
    result: Any,
    events: list[dict[str, Any]],
    machines: dict[str, dict[str, Any]],
    attempt: Path,
) -> bool:
    """Judge the attempt machine_broken when a stage failed on the machine after the agent's
    run began; True when it did."""
    if result.ok or runfolder.has_verdict(attempt):
        return False
    launched = [e for e in events if _data(e).get("task_action") == AGENT_RUN_ACTION]
    failures = [
        e
        for e in events
        if e.get("event") in ("runner_on_unreachable", "runner_on_failed")
        and not _data(e).get("ignore_errors")
    ]
    if not launched or not failures:
        return False
    last = failures[-1]
    if last.get("counter", 0) < launched[0].get("counter", 0):
        return False
    if _data(last).get("task_action") in CONTROLLER_ACTIONS:
        return False
    said = reason(result, events)
    res = _data(last).get("res") or {}
    told = [ln.strip() for ln in str(res.get("stderr") or "").splitlines() if ln.strip()]
    if told:  # what the machine said last, e.g. "mktemp: ... Read-only file system"
        said = f"{told[-1][:160]}; {said}"
    if last["event"] == "runner_on_unreachable":
        if _TIMED_OUT.search(str(res.get("msg"))):
            return False
        if not all(inventory.answers_ssh(m) for m in machines.values()):
            return False
        what = "ssh", "the machine answers, but the harness's sessions were cut"
    else:
        what = "stage", "a harness stage failed on the machine the agent left"
    ended = next(
        (_data(e).get("res") or {} for e in launched if e.get("event") == "runner_on_ok"), {}
    )
    seconds = ended.get("seconds")
    if seconds is None:  # lost during the agent's run: from its start to the loss
        seconds = (trajectories.event_time(last) or 0) - (trajectories.event_time(launched[0]) or 0)
    sidedoor.broken_by_agent(
        attempt, int(ended.get("rc_read", -1)), max(0.0, float(seconds)), *what, said
    )
    return True


def agent_began(events: list[dict[str, Any]]) -> bool:
    """Whether the agent's run began (its `timed` action started)."""
    return any(_data(e).get("task_action") == AGENT_RUN_ACTION for e in events)


def agent_end(events: list[dict[str, Any]]) -> tuple[int, float]:
    """The agent run's exit code and seconds as the events tell them: -1 and the time from its
    start to the last event when the run was lost before it ended."""
    launched = [e for e in events if _data(e).get("task_action") == AGENT_RUN_ACTION]
    if not launched:
        return -1, 0.0
    ended = next(
        (_data(e).get("res") or {} for e in launched if e.get("event") == "runner_on_ok"), {}
    )
    if ended.get("seconds") is not None:
        return int(ended.get("rc_read", -1)), float(ended["seconds"])
    last = events[-1]
    seconds = (trajectories.event_time(last) or 0) - (trajectories.event_time(launched[0]) or 0)
    return -1, max(0.0, float(seconds))


def reason(result: Any, events: list[dict[str, Any]]) -> str:
    """Why a playbook run ended without a verdict, in one line: its last failed or unreachable
    task and what Ansible said, else how the run ended."""
    for event in reversed(events):
        if event.get("event") in ("runner_on_unreachable", "runner_on_failed"):
            data = event.get("event_data") or {}
            if data.get("ignore_errors"):
                continue
            msg = (data.get("res") or {}).get("msg") or ""
            kind = "unreachable" if event["event"] == "runner_on_unreachable" else "failed"
            return f"{kind} in {data.get('play', '?')!r}, task {data.get('task', '?')!r}: {msg}"[
                :500
            ]
    errors = [
        line.strip()
        for event in events
        for line in (event.get("stdout") or "").splitlines()
        if "ERROR" in line or "fatal:" in line
    ]
    detail = f": {errors[-1][:300]}" if errors else ""
    return f"playbook ended {result.status} (rc {result.rc}) without a verdict{detail}"
