"""Codex CLI (`codex exec --json`) and Claude Code (`claude -p --output-format stream-json
--verbose`) event streams into contract 5.

Written from the tools' documented event formats and checked on logs the real tools wrote here
against the scripted model server (tests/fixtures/codex/, tests/fixtures/claude_code/;
docs/agents.md says what was and was not exercised).

Codex (`codex exec --json`, JSON lines): `thread.started`, `turn.started`, `item.started` /
`item.updated` / `item.completed` with an `item` (`agent_message` and `reasoning` with `text`,
`command_execution` with `command`, `aggregated_output`, `exit_code`, `status`, `file_change`
with `changes: [{path, kind}]`, `todo_list` with `items: [{text, completed}]`, `mcp_tool_call`,
`web_search`, `error`), `turn.completed` with `usage {input_tokens, cached_input_tokens,
output_tokens}`, `turn.failed` with `error {message}`, and a top-level `error`. The stream does
not mark model calls, so each completed item is a step; the turn's usage goes on its last
event. A completed turn is the agent's own stop (a finish event carrying its last message).

Claude Code (stream-json, JSON lines): `system` (subtype `init`), `assistant` lines whose
`message` (an Anthropic message: `id`, `content` blocks `text` / `thinking` / `tool_use
{id, name, input}`, `usage`) may be split over several lines with one id, `user` lines carrying
`tool_result {tool_use_id, content, is_error}` blocks, and a last `result` line (`subtype`
`success`, `error_max_turns`, `error_during_execution`; `num_turns`, `total_cost_usd`,
`usage`). One message id is one step, its usage on the step's first event. Claude Code copies
the usage of the stream's message_start onto every line, whose output count is a placeholder
(1 in the real logs of tests/fixtures/claude_code/); the real counts are only in the result's
`usage`, so the result's event carries what the steps' lines leave out of that total. The Bash tool
reports no exit code of its own: a result that is not an error is exit code 0; an error takes
the code from a leading "Exit code N" line, else 1; "Command timed out" marks a soft timeout
(exit code -1); a command the tool refused to run (its result starts with <tool_use_error>)
has no exit code. The run's total_cost_usd goes on the last event (Claude Code's own estimate,
from its price table: it prices an unknown model too)."""

from __future__ import annotations

import json
import re
from typing import Any

from deploybench.trajectories.events import OUTPUT_LIMIT
from deploybench.trajectories.events import event as make_event


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content blocks
        return "\n".join(str(b.get("text", "")) if isinstance(b, dict) else str(b) for b in value)
    return "" if value is None else json.dumps(value)


def _clean(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if v is not None} for e in events]


def from_codex(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    step, turn_start, last_message = 0, 0, ""
    for row in rows:
        kind = row.get("type")
        if kind == "turn.started":
            turn_start = len(events)
        elif kind == "item.completed" and isinstance(row.get("item"), dict):
            item = row["item"]
            itype = item.get("type") or item.get("item_type")
            step += 1
            if itype == "command_execution":
                code = item.get("exit_code")
                events.append(
                    make_event(
                        step,
                        0,
                        "command",
                        command=item.get("command"),
                        exit_code=code if isinstance(code, int) else None,
                        soft_timeout=False,
                        output=_text(item.get("aggregated_output")),
                    )
                )
            elif itype == "file_change":
                for change in item.get("changes") or [{}]:
                    events.append(
                        make_event(
                            step, 0, "file_edit", path=change.get("path"), output=change.get("kind")
                        )
                    )
            elif itype == "reasoning":
                events.append(make_event(step, 0, "think", output=_text(item.get("text"))))
            elif itype == "agent_message":
                last_message = _text(item.get("text"))
                events.append(make_event(step, 0, "message", output=last_message))
            elif itype == "todo_list":
                todo = "; ".join(
                    f"[{'x' if x.get('completed') else ' '}] {x.get('text')}"
                    for x in item.get("items") or []
                    if isinstance(x, dict)
                )
                events.append(make_event(step, 0, "task_tracker", output=todo))
            elif itype == "error":
                events.append(make_event(step, 0, "error", output=_text(item.get("message"))))
            else:
                detail = item.get("tool") or item.get("query") or ""
                events.append(make_event(step, 0, "message", output=f"{itype}: {detail}".strip()))
        elif kind == "turn.completed":
            usage = row.get("usage") or {}
            finish = make_event(max(step, 1), 0, "finish", output=last_message)
            events.append(finish)
            target = events[-1] if len(events) > turn_start else finish
            target["tokens_in"] = usage.get("input_tokens")
            target["tokens_out"] = usage.get("output_tokens")
        elif kind in ("turn.failed", "error"):
            error = row.get("error") if isinstance(row.get("error"), dict) else row
            events.append(make_event(max(step, 1), 0, "error", output=_text(error.get("message"))))
    return _clean(events)


def _remainder_of_usage(ev: dict[str, Any], usage: Any, events: list[dict[str, Any]]) -> None:
    """Put on `ev` the part of the run's total usage that the steps' events do not hold."""
    if not isinstance(usage, dict):
        return
    keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    total_in = sum(v for k in keys if isinstance(v := usage.get(k), int))
    total_out = usage.get("output_tokens")
    seen_in = sum(e.get("tokens_in") or 0 for e in events)
    seen_out = sum(e.get("tokens_out") or 0 for e in events)
    if total_in > seen_in:
        ev["tokens_in"] = total_in - seen_in
    if isinstance(total_out, int) and total_out > seen_out:
        ev["tokens_out"] = total_out - seen_out


_EXIT = re.compile(r"^\s*Exit code (-?\d+)")
# Claude Code's answer for a tool call it did not run (e.g. "Blocked: sleep 35 followed by ...").
_REFUSED = "<tool_use_error>"
CLAUDE_EDIT_TOOLS = {"Edit", "MultiEdit", "Write", "NotebookEdit"}


def from_claude_code(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    by_tool: dict[str, dict[str, Any]] = {}
    steps: dict[str, int] = {}
    step = 0
    for row in rows:
        kind = row.get("type")
        message = row.get("message") if isinstance(row.get("message"), dict) else {}
        if kind == "assistant":
            mid = str(message.get("id") or f"line-{len(events)}")
            first = mid not in steps
            if first:
                step += 1
                steps[mid] = step
            made = []
            for block in message.get("content") or []:
                if not isinstance(block, dict):
                    continue
                btype = block.get("type")
                if btype == "text" and block.get("text", "").strip():
                    made.append(make_event(steps[mid], 0, "message", output=block["text"]))
                elif btype == "thinking":
                    made.append(
                        make_event(steps[mid], 0, "think", output=block.get("thinking", ""))
                    )
                elif btype == "tool_use":
                    name, args = block.get("name"), block.get("input") or {}
                    if name == "Bash":
                        ev = make_event(steps[mid], 0, "command", command=args.get("command"))
                    elif name == "Read":
                        ev = make_event(steps[mid], 0, "file_read", path=args.get("file_path"))
                    elif name in CLAUDE_EDIT_TOOLS:
                        path = args.get("file_path") or args.get("notebook_path")
                        ev = make_event(steps[mid], 0, "file_edit", path=path)
                    elif name == "TodoWrite":
                        todo = "; ".join(
                            f"[{x.get('status')}] {x.get('content')}"
                            for x in args.get("todos") or []
                            if isinstance(x, dict)
                        )
                        ev = make_event(steps[mid], 0, "task_tracker", output=todo)
                    else:
                        ev = make_event(
                            steps[mid], 0, "message", output=f"{name}: {json.dumps(args)}"
                        )
                    made.append(ev)
                    if block.get("id"):
                        by_tool[block["id"]] = ev
            if made and first:
                usage = message.get("usage") or {}
                prompt = [
                    usage.get(k)
                    for k in (
                        "input_tokens",
                        "cache_creation_input_tokens",
                        "cache_read_input_tokens",
                    )
                    if isinstance(usage.get(k), int)
                ]
                made[0]["tokens_in"] = sum(prompt) if prompt else None
                made[0]["tokens_out"] = usage.get("output_tokens")
            events.extend(made)
        elif kind == "user":
            for block in message.get("content") or []:
                if not isinstance(block, dict) or block.get("type") != "tool_result":
                    continue
                ev = by_tool.pop(block.get("tool_use_id") or "", None)
                if ev is None:
                    continue
                output = _text(block.get("content"))
                if ev["kind"] == "command" and output.startswith(_REFUSED):
                    pass  # the tool refused to run it: the command has no exit code
                elif ev["kind"] == "command":
                    error = bool(block.get("is_error"))
                    timed_out = "Command timed out" in output
                    found = _EXIT.match(output)
                    ev["exit_code"] = (
                        -1 if timed_out else int(found.group(1)) if found else 1 if error else 0
                    )
                    ev["soft_timeout"] = timed_out
                ev["output"] = output[-OUTPUT_LIMIT:]
        elif kind == "result":
            subtype = row.get("subtype")
            if subtype == "success":
                ev = make_event(max(step, 1), 0, "finish", output=_text(row.get("result")))
            elif subtype == "error_max_turns":
                ev = make_event(max(step, 1), 0, "message", output="exit: error_max_turns")
            else:
                ev = make_event(max(step, 1), 0, "error", output=f"exit: {subtype}")
            if isinstance(row.get("total_cost_usd"), (int, float)):
                ev["cost_usd"] = row["total_cost_usd"]
            _remainder_of_usage(ev, row.get("usage"), events)
            events.append(ev)
    return _clean(events)
