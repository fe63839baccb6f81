"""trajectory.jsonl (contract 5): every agent's log normalised into one event per line.

Converters turn a native log into contract-5 events; `summary` reads back steps, tokens and
cost for results.jsonl. The analysis reads only this format, never a native log."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from deploybench import contracts, runfolder
from deploybench.errors import DeployBenchError
from deploybench.trajectories.events import OUTPUT_LIMIT
from deploybench.trajectories.events import event as make_event

MAX_SHOWN = 10


def _lines(raw: bytes) -> tuple[list[tuple[int, Any]], list[str]]:
    """(number, value) of each JSON line of what an agent wrote, and why the others are bad."""
    rows, bad = [], []
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            bad.append(f"line {number}: not UTF-8")
            continue
        try:
            rows.append((number, json.loads(text)))
        except ValueError:
            bad.append(f"line {number}: not JSON")
    return rows, bad


def _record_bad(path: Path, bad: list[str]) -> None:
    """Count the lines left out, and show the first ones, in trajectory_errors.json."""
    if bad:
        errors = {"file": path.name, "bad_lines": len(bad), "first": bad[:MAX_SHOWN]}
        (path.parent / runfolder.TRAJECTORY_ERRORS).write_text(json.dumps(errors, indent=2))


def read_native(path: Path) -> list[dict[str, Any]]:
    """An agent's native log: JSON lines, or one JSON document (a dict is one row), as some
    scaffolds (mini-swe-agent) write their whole trajectory as a single indented object.
    Whatever the agent wrote is read: bad lines are left out, counted in trajectory_errors.json."""
    raw = Path(path).read_bytes()
    try:
        doc = json.loads(raw.decode("utf-8", errors="replace"))
    except ValueError:
        doc = None
    if isinstance(doc, dict):
        return [doc]
    if isinstance(doc, list):
        return doc
    rows, bad = _lines(raw)
    bad += [f"line {n}: not a JSON object" for n, row in rows if not isinstance(row, dict)]
    _record_bad(Path(path), bad)
    return [row for _, row in rows if isinstance(row, dict)]


def read_events(path: Path) -> list[dict[str, Any]]:
    """The contract-5 events of an attempt's trajectory.jsonl, whatever the agent wrote: a line
    that is not UTF-8, not JSON or not a contract-5 event is left out, never an error. When any
    is, the agent's file is kept as trajectory.agent.jsonl, trajectory.jsonl holds the good
    events, and trajectory_errors.json counts and shows the bad lines."""
    path = Path(path)
    raw = path.read_bytes()
    rows, bad = _lines(raw)
    events = []
    for number, row in rows:
        try:
            contracts.check(contracts.TRAJECTORY_EVENT, row, f"line {number}")
        except DeployBenchError as exc:
            bad.append(str(exc)[:300])
            continue
        events.append(row)
    if bad:
        bad.sort(key=lambda reason: int(reason.split()[1].rstrip(":")))
        path.with_name(runfolder.TRAJECTORY_AGENT).write_bytes(raw)
        write(events, path)
        _record_bad(path, bad)
    return events


def from_contract5(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for number, row in enumerate(rows, start=1):
        contracts.check(contracts.TRAJECTORY_EVENT, row, f"trajectory event {number}")
    return rows


MINI_SUBMIT_MARKER = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def from_mini_swe_agent(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """mini-swe-agent's `-o` trajectory (one JSON object, trajectory_format mini-swe-agent-1.x):
    `messages` in order. Each model call is a step: an assistant message (its text a think
    event, each of its `extra.actions` a command event, the call's usage on the step's first
    event), or a user message with `extra.interrupt_type: FormatError` (a reply it could not
    parse: an error event). Tool messages (or, for text-based models, user messages with
    `extra.returncode`) carry each command's exit code and output. The last message has role
    `exit`: `Submitted` (the agent echoed COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT, which is not
    run as a command) becomes the finish event; any other exit status (LimitsExceeded,
    TimeExceeded, RepeatedFormatError, an exception) a message or error event at the last step."""
    doc = rows[0] if len(rows) == 1 and "messages" in rows[0] else {"messages": rows}
    messages = [m for m in doc.get("messages") or [] if isinstance(m, dict)]
    stamps = [
        (m.get("extra") or {}).get("timestamp")
        for m in messages
        if isinstance((m.get("extra") or {}).get("timestamp"), (int, float))
    ]
    t0 = min(stamps, default=0.0)
    events: list[dict[str, Any]] = []
    by_call: dict[str, dict[str, Any]] = {}
    pending: list[dict[str, Any]] = []
    step, t = 0, 0.0

    def text_of(message: dict[str, Any]) -> str:
        content = message.get("content")
        if isinstance(content, list):  # multimodal blocks
            return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
        return content if isinstance(content, str) else ""

    def charge(first: dict[str, Any], extra: dict[str, Any]) -> None:
        usage = (
            (extra.get("response") or {}).get("usage")
            if isinstance(extra.get("response"), dict)
            else None
        )
        usage = usage or {}
        first["tokens_in"] = usage.get("prompt_tokens")
        first["tokens_out"] = usage.get("completion_tokens")
        if extra.get("cost"):  # 0.0 means unknown (cost tracking off), not free
            first["cost_usd"] = extra["cost"]

    for message in messages:
        role, extra = message.get("role"), message.get("extra") or {}
        if isinstance(extra.get("timestamp"), (int, float)):
            t = extra["timestamp"] - t0
        if role == "assistant":
            step += 1
            made: list[dict[str, Any]] = []
            if text_of(message).strip():
                made.append(make_event(step, t, "think", output=text_of(message)))
            for action in extra.get("actions") or []:
                ev = make_event(step, t, "command", command=action.get("command"))
                made.append(ev)
                pending.append(ev)
                if action.get("tool_call_id"):
                    by_call[action["tool_call_id"]] = ev
            if not made:
                made.append(make_event(step, t, "message", output=""))
            charge(made[0], extra)
            events.extend(made)
        elif role == "user" and extra.get("interrupt_type") == "FormatError":
            step += 1
            ev = make_event(step, t, "error", output=text_of(message))
            charge(ev, extra)
            events.append(ev)
        elif role == "tool" or (role == "user" and "returncode" in extra):
            ev = by_call.pop(message.get("tool_call_id") or "", None)
            if ev is None and pending:
                ev = pending[0]
            if ev is None:
                continue
            pending = [e for e in pending if e is not ev]
            output = extra.get("raw_output")
            ev["output"] = (output if isinstance(output, str) else text_of(message))[-OUTPUT_LIMIT:]
            ev["exit_code"] = extra.get("returncode")
            ev["soft_timeout"] = extra.get("exception_type") == "TimeoutExpired"
        elif role == "exit":
            status = extra.get("exit_status") or text_of(message)
            if status == "Submitted":
                last = next((e for e in reversed(events) if e["kind"] == "command"), None)
                submit = (
                    last is not None
                    and last.get("exit_code") is None
                    and MINI_SUBMIT_MARKER in (last.get("command") or "")
                )
                if submit:
                    events.remove(last)
                finish = make_event(max(step, 1), t, "finish", output=extra.get("submission") or "")
                if submit:
                    finish.update(
                        {k: last[k] for k in ("tokens_in", "tokens_out", "cost_usd") if k in last}
                    )
                events.append(finish)
            else:
                kind = "message" if status in ("LimitsExceeded", "TimeExceeded") else "error"
                detail = extra.get("exception_str") or ""
                events.append(
                    make_event(
                        step, t, kind, output=f"exit: {status}" + (f": {detail}" if detail else "")
                    )
                )
    return [{k: v for k, v in e.items() if v is not None} for e in events]


def from_openhands(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenHands' saved trajectory: see deploybench/trajectories/openhands.py."""
    from deploybench.trajectories.openhands import from_openhands as convert_openhands

    return convert_openhands(rows)


def _cli_agents() -> Any:
    """Codex and Claude Code: see deploybench/trajectories/cli_agents.py."""
    from deploybench.trajectories import cli_agents as trajectories_cli_agents

    return trajectories_cli_agents


CONVERTERS: dict[str, Callable[[list[dict[str, Any]]], list[dict[str, Any]]]] = {
    "contract5": from_contract5,
    "mini-swe-agent": from_mini_swe_agent,
    "openhands": from_openhands,
    "codex": lambda rows: _cli_agents().from_codex(rows),
    "claude-code": lambda rows: _cli_agents().from_claude_code(rows),
}


def convert(native: Path, converter: str, out: Path) -> list[dict[str, Any]]:
    if converter not in CONVERTERS:
        raise DeployBenchError(
            f"unknown trajectory converter {converter!r}: {', '.join(CONVERTERS)}"
        )
    events = CONVERTERS[converter](read_native(native)) if native.is_file() else []
    write(events, out)
    return events


def write(events: Iterable[dict[str, Any]], out: Path) -> None:
    out.write_text("".join(json.dumps(e) + "\n" for e in events))


def event_time(event: dict[str, Any]) -> float | None:
    """An Ansible event's time (epoch seconds), from ansible-runner's timestamp."""
    try:
        return datetime.fromisoformat(event["created"]).timestamp()
    except (KeyError, TypeError, ValueError):
        return None


def from_ansible_events(events: list[dict[str, Any]], role: str) -> list[dict]:
    """The reference agent's trajectory: each task its reference setup role ran, as a command
    (the command line where the module had one, else the module and task name), timed from
    the role's first event by ansible-runner's event timestamps."""
    mine = [e for e in events if (e.get("event_data") or {}).get("role") == role]
    stamps = [t for t in map(event_time, mine) if t is not None]
    t0 = min(stamps) if stamps else None

    def since(event: dict[str, Any]) -> float:
        t = event_time(event)
        return 0.0 if t is None or t0 is None else t - t0

    out: list[dict[str, Any]] = []
    for event in mine:
        if event.get("event") not in ("runner_on_ok", "runner_on_failed"):
            continue
        data = event["event_data"]
        res = data.get("res") or {}
        cmd = res.get("cmd")
        # The command module records its argv as a list: joined with the quotes a shell
        # would need (`-c 'import a; print(a)'`), so the split and the rules read it as typed.
        command = shlex.join(str(c) for c in cmd) if isinstance(cmd, list) else cmd
        if not command:
            command = f"# ansible {data.get('task_action', '?')}: {data.get('task', '')}"
        failed = event["event"] == "runner_on_failed"
        out.append(
            make_event(
                len(out) + 1,
                since(event),
                "command",
                command=command,
                exit_code=res.get("rc", 1 if failed else 0),
                soft_timeout=False,
                output=((res.get("stdout") or "") + (res.get("stderr") or "")) or res.get("msg"),
            )
        )
    end = max((since(e) for e in mine), default=0.0)
    out.append(make_event(len(out) + 1, end, "finish", output="reference setup applied"))
    return out


def summary(events: list[dict[str, Any]]) -> dict[str, Any]:
    def total(key: str) -> Any:
        values = [e[key] for e in events if e.get(key) is not None]
        return sum(values) if values else None

    return {
        "steps": max((e["step"] for e in events), default=0),
        "tokens_in": total("tokens_in"),
        "tokens_out": total("tokens_out"),
        "cost_usd": total("cost_usd"),
        "finished": any(e["kind"] == "finish" for e in events),
    }
