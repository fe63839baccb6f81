"""OpenHands' saved trajectory (SAVE_TRAJECTORY_PATH, openhands-ai 1.6.0) into contract 5.

The file is one JSON list of OpenHands events, as `controller.get_trajectory()` serialises them:
actions (`"action": "run" | "read" | "edit" | "write" | "message" | "think" | "task_tracking" |
"finish" | "system" | ...`, arguments in `args`) and observations (`"observation": "run" |
"read" | "edit" | "error" | ...`, with `cause` = the id of the action they answer, the result
in `content` and `extras`). An action the model chose carries `tool_call_metadata` with the
model's response (its id and usage) and `llm_metrics` (accumulated cost and tokens).

One model call is one step: the actions of one response share its id. Per kind:
- `run` (execute_bash) -> a `command`; its observation gives the exit code and output. A
  command the shell stopped waiting for (OpenHands' soft timeout: no new output for a while, or
  the tool's own timeout) has exit code -1 and is marked soft_timeout; keys sent to a running
  command (`is_input`) are a command line starting "# input to the running command".
- `read` / `edit` / `write` (str_replace_editor view, create, str_replace, insert, undo_edit)
  -> `file_read` / `file_edit` with the path.
- `message` and `think` from the agent -> `message` / `think`; `task_tracking` -> `task_tracker`.
- `finish` -> `finish` (self_stop).
- An `error` observation -> an `error` event; "Agent reached maximum iteration" (the step limit:
  OpenHands still exits 0) -> a `message` at the last step, so the attempt's steps reach the
  limit with no finish (max_steps).
Tokens: the response's `usage` on the step's first event; cost: the growth of
`llm_metrics.accumulated_cost` at that step, when it is known (litellm knows no price for a
local model: then there is none)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from deploybench.trajectories.events import OUTPUT_LIMIT
from deploybench.trajectories.events import event as make_event

MAX_ITERATION_MARK = "reached maximum iteration"
# What OpenHands' shell appends when it stops waiting for a command that is still running
# (openhands-ai 1.6.0, runtime/utils/bash.py:409 no new output for a while, :442 the tool's
# own timeout); the command's exit code is then -1.
SOFT_TIMEOUT_NOTES = ("has no new output after", "timed out after")
# Keys sent to a running command (`is_input`) are not a shell command of their own: written
# behind this prefix (a shell comment), which recovery rule 2 (analysis/recovery_rules.yaml)
# reads as input to the command that stopped answering.
INPUT_PREFIX = "# input to the running command: "


def _time(event: dict[str, Any]) -> float | None:
    try:
        return datetime.fromisoformat(str(event["timestamp"])).timestamp()
    except (KeyError, ValueError):
        return None


def _usage(event: dict[str, Any]) -> dict[str, Any]:
    meta = event.get("tool_call_metadata") or {}
    response = meta.get("model_response") or {}
    usage = response.get("usage") if isinstance(response, dict) else None
    return usage if isinstance(usage, dict) else {}


def _response_id(event: dict[str, Any]) -> str | None:
    meta = event.get("tool_call_metadata") or {}
    response = meta.get("model_response") or {}
    rid = response.get("id") if isinstance(response, dict) else None
    return str(rid) if rid else None


def _accumulated_cost(event: dict[str, Any]) -> float | None:
    metrics = event.get("llm_metrics") or {}
    cost = metrics.get("accumulated_cost") if isinstance(metrics, dict) else None
    return float(cost) if isinstance(cost, (int, float)) else None


def from_openhands(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    stamps = [t for t in map(_time, rows) if t is not None]
    t0 = min(stamps, default=0.0)
    events: list[dict[str, Any]] = []
    by_id: dict[Any, dict[str, Any]] = {}
    step, last_response, last_cost = 0, None, 0.0
    t = 0.0

    def begin_step(row: dict[str, Any]) -> bool:
        """A new step when this agent action comes from a model response not seen before."""
        nonlocal step, last_response
        rid = _response_id(row)
        if rid is None and row.get("source") != "agent":
            return False
        if rid is not None and rid == last_response:
            return False
        step += 1
        last_response = rid
        return True

    def charge(ev: dict[str, Any], row: dict[str, Any]) -> None:
        nonlocal last_cost
        usage = _usage(row)
        ev["tokens_in"] = usage.get("prompt_tokens")
        ev["tokens_out"] = usage.get("completion_tokens")
        cost = _accumulated_cost(row)
        if cost is not None and cost > last_cost:
            ev["cost_usd"] = round(cost - last_cost, 8)
            last_cost = cost

    for row in rows:
        if not isinstance(row, dict):
            continue
        stamp = _time(row)
        if stamp is not None:
            t = stamp - t0
        action, observation = row.get("action"), row.get("observation")
        args = row.get("args") or {}
        extras = row.get("extras") or {}
        if action and row.get("source") == "agent":
            if action in ("system", "recall", "change_agent_state", "null"):
                continue
            new_step = begin_step(row)
            made: list[dict[str, Any]] = []
            thought = args.get("thought")
            if isinstance(thought, str) and thought.strip() and action != "think":
                made.append(make_event(max(step, 1), t, "think", output=thought))
            if action == "run":
                ev = make_event(max(step, 1), t, "command", command=args.get("command"))
                if args.get("is_input"):
                    ev["command"] = f"{INPUT_PREFIX}{args.get('command')}"
            elif action == "read":
                ev = make_event(max(step, 1), t, "file_read", path=args.get("path"))
            elif action in ("edit", "write"):
                ev = make_event(max(step, 1), t, "file_edit", path=args.get("path"))
            elif action == "think":
                ev = make_event(max(step, 1), t, "think", output=args.get("thought") or "")
            elif action == "task_tracking":
                tasks = args.get("task_list") or []
                summary = "; ".join(
                    f"[{x.get('status')}] {x.get('title')}" for x in tasks if isinstance(x, dict)
                )
                ev = make_event(
                    max(step, 1), t, "task_tracker", output=f"{args.get('command')}: {summary}"
                )
            elif action == "finish":
                ev = make_event(max(step, 1), t, "finish", output=args.get("final_thought") or "")
            elif action == "message":
                ev = make_event(max(step, 1), t, "message", output=args.get("content") or "")
            else:
                ev = make_event(
                    max(step, 1), t, "message", output=f"{action}: {row.get('message') or ''}"
                )
            made.append(ev)
            if new_step:
                charge(made[0], row)
            events.extend(made)
            if row.get("id") is not None:
                by_id[row["id"]] = ev
        elif observation:
            cause = by_id.get(row.get("cause"))
            content = row.get("content") if isinstance(row.get("content"), str) else ""
            if observation == "run" and cause is not None and cause["kind"] == "command":
                metadata = extras.get("metadata") or {}
                code = metadata.get("exit_code")
                cause["exit_code"] = code if isinstance(code, int) else None
                # -1 is also what an input sent with no command running gets; only the shell's
                # own notes (runtime/utils/bash.py:409, :442) say it stopped waiting.
                note = f"{metadata.get('suffix') or ''}\n{content}"
                cause["soft_timeout"] = code == -1 and any(m in note for m in SOFT_TIMEOUT_NOTES)
                cause["output"] = content[-OUTPUT_LIMIT:]
            elif observation in ("read", "edit") and cause is not None:
                cause["output"] = content[-OUTPUT_LIMIT:]
            elif observation == "error":
                kind = "message" if MAX_ITERATION_MARK in content else "error"
                events.append(make_event(max(step, 1), t, kind, output=content))
            elif observation == "agent_state_changed" and extras.get("agent_state") == "error":
                reason = extras.get("reason") or ""
                if MAX_ITERATION_MARK in reason and not any(
                    MAX_ITERATION_MARK in (e.get("output") or "") for e in events
                ):
                    events.append(make_event(max(step, 1), t, "message", output=reason))
    return [{k: v for k, v in e.items() if v is not None} for e in events]
