"""trajectory.jsonl (contract 5): every agent's log normalised into one event per line.

Converters turn a native log into contract-5 events; `summary` reads back steps, tokens and
cost for results.jsonl. The analysis reads only this format, never a native log."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from deploybench import contracts
from deploybench.errors import DeployBenchError

OUTPUT_LIMIT = 4000


def _event(step: int, t: float, kind: str, **fields: Any) -> dict[str, Any]:
    event = {"step": step, "t": round(float(t), 3), "kind": kind}
    event.update({k: v for k, v in fields.items() if v is not None})
    if isinstance(event.get("output"), str):
        event["output"] = event["output"][-OUTPUT_LIMIT:]
    return event


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise DeployBenchError(f"{path}:{number}: not JSON ({exc.msg})") from None
    return rows


def from_contract5(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for number, row in enumerate(rows, start=1):
        contracts.check(contracts.TRAJECTORY_EVENT, row, f"trajectory event {number}")
    return rows


def from_claude_stream_json(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Claude Code `-p --output-format stream-json`: assistant tool_use blocks, then user
    tool_result blocks that carry the output; a final `result` message ends the run."""
    events: list[dict[str, Any]] = []
    pending: dict[str, dict[str, Any]] = {}
    step = 0
    for row in rows:
        message = row.get("message") or {}
        usage = message.get("usage") or {}
        for block in message.get("content") or []:
            if not isinstance(block, dict):
                continue
            if row.get("type") == "assistant" and block.get("type") == "tool_use":
                step += 1
                name, args = block.get("name", ""), block.get("input") or {}
                if name == "Bash":
                    ev = _event(step, 0, "command", command=args.get("command"))
                elif name in ("Read", "Glob", "Grep"):
                    ev = _event(
                        step, 0, "file_read", path=args.get("file_path") or args.get("path")
                    )
                elif name in ("Edit", "Write", "MultiEdit"):
                    ev = _event(step, 0, "file_edit", path=args.get("file_path"))
                elif name == "TodoWrite":
                    ev = _event(step, 0, "task_tracker")
                else:
                    ev = _event(step, 0, "message", output=f"tool {name}")
                ev["tokens_in"] = usage.get("input_tokens")
                ev["tokens_out"] = usage.get("output_tokens")
                pending[block.get("id", "")] = ev
                events.append(ev)
            elif row.get("type") == "assistant" and block.get("type") == "text":
                step += 1
                events.append(_event(step, 0, "message", output=block.get("text", "")))
            elif row.get("type") == "user" and block.get("type") == "tool_result":
                ev = pending.pop(block.get("tool_use_id", ""), None)
                if ev is not None and ev["kind"] == "command":
                    content = block.get("content")
                    text = content if isinstance(content, str) else json.dumps(content)
                    ev["output"] = text[-OUTPUT_LIMIT:]
                    ev["exit_code"] = 1 if block.get("is_error") else 0
        if row.get("type") == "result":
            step += 1
            events.append(
                _event(
                    step,
                    (row.get("duration_ms") or 0) / 1000,
                    "finish",
                    cost_usd=row.get("total_cost_usd"),
                )
            )
    return [{k: v for k, v in e.items() if v is not None} for e in events]


CONVERTERS: dict[str, Callable[[list[dict[str, Any]]], list[dict[str, Any]]]] = {
    "contract5": from_contract5,
    "claude-stream-json": from_claude_stream_json,
}


def convert(native: Path, converter: str, out: Path) -> list[dict[str, Any]]:
    if converter not in CONVERTERS:
        raise DeployBenchError(
            f"unknown trajectory converter {converter!r}: {', '.join(CONVERTERS)}"
        )
    events = CONVERTERS[converter](read_jsonl(native)) if native.is_file() else []
    write(events, out)
    return events


def write(events: Iterable[dict[str, Any]], out: Path) -> None:
    out.write_text("".join(json.dumps(e) + "\n" for e in events))


def from_ansible_events(
    events: list[dict[str, Any]], role: str, started: float | None
) -> list[dict]:
    """The reference agent's trajectory: each task its reference setup role ran, as a command
    (the command line where the module had one, else the module and task name)."""
    out: list[dict[str, Any]] = []
    for event in events:
        if event.get("event") not in ("runner_on_ok", "runner_on_failed"):
            continue
        data = event.get("event_data") or {}
        if data.get("role") != role:
            continue
        res = data.get("res") or {}
        cmd = res.get("cmd")
        command = " ".join(cmd) if isinstance(cmd, list) else cmd
        if not command:
            command = f"# ansible {data.get('task_action', '?')}: {data.get('task', '')}"
        failed = event["event"] == "runner_on_failed"
        out.append(
            _event(
                len(out) + 1,
                0,
                "command",
                command=command,
                exit_code=res.get("rc", 1 if failed else 0),
                soft_timeout=False,
                output=((res.get("stdout") or "") + (res.get("stderr") or "")) or res.get("msg"),
            )
        )
    out.append(_event(len(out) + 1, 0, "finish", output="reference setup applied"))
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
