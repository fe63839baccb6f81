"""The mini-swe-agent converter on trajectories written by mini-swe-agent 2.4.6 itself (run
against tests/scripted_llm.py; only the long rendered prompt and config were shortened)."""

import json
from pathlib import Path

from deploybench import jsonl, trajectories

FIXTURES = Path(__file__).parent / "fixtures" / "mini_swe_agent"


def convert(name: str, tmp_path: Path) -> list[dict]:
    out = tmp_path / "trajectory.jsonl"
    events = trajectories.convert(FIXTURES / f"{name}.traj.json", "mini-swe-agent", out)
    assert jsonl.read(out) == events
    return trajectories.from_contract5(events)


def test_submitted_run_becomes_commands_thoughts_and_a_finish(tmp_path):
    events = convert("ok", tmp_path)
    assert [(e["step"], e["kind"]) for e in events] == [
        (1, "think"),
        (1, "command"),
        (2, "think"),
        (2, "command"),
        (3, "think"),
        (3, "finish"),
    ]
    ls = events[1]
    assert ls["command"] == "ls -la" and ls["exit_code"] == 0 and "total" in ls["output"]
    assert ls["soft_timeout"] is False
    # The submit command is the finish, not a command that ran.
    assert not any("COMPLETE_TASK" in (e.get("command") or "") for e in events)
    assert events[0]["tokens_in"] == 768 and events[0]["tokens_out"] == 10
    summary = trajectories.summary(events)
    assert summary["finished"] and summary["steps"] == 3
    assert (summary["tokens_in"], summary["tokens_out"]) == (768 + 861 + 934, 10 + 13 + 19)
    assert summary["cost_usd"] is None  # 0.0 with cost tracking off: unknown, not free


def test_step_limit_is_not_a_finish(tmp_path):
    events = convert("limit", tmp_path)
    assert events[-1] == {
        "step": 3,
        "t": events[-1]["t"],
        "kind": "message",
        "output": "exit: LimitsExceeded",
    }
    summary = trajectories.summary(events)
    assert summary["steps"] == 3 and not summary["finished"]


def test_failed_commands_timeouts_and_format_errors(tmp_path):
    doc = json.loads((FIXTURES / "ok.traj.json").read_text())
    tool = doc["messages"][3]
    tool["extra"].update(
        returncode=-1, raw_output="partial", exception_type="TimeoutExpired", exception_info="x"
    )
    bad = {
        "role": "user",
        "content": "Tool call error: No tool calls found in the response.",
        "extra": {
            "interrupt_type": "FormatError",
            "response": {"usage": {"prompt_tokens": 5, "completion_tokens": 2}},
            "cost": 0.25,
        },
    }
    doc["messages"].insert(4, bad)
    doc["messages"][-1] = {
        "role": "exit",
        "content": "boom",
        "extra": {"exit_status": "RuntimeError", "exception_str": "boom", "submission": ""},
    }
    native = tmp_path / "native.json"
    native.write_text(json.dumps(doc))
    events = trajectories.convert(native, "mini-swe-agent", tmp_path / "t.jsonl")
    trajectories.from_contract5(events)
    assert events[1]["exit_code"] == -1 and events[1]["soft_timeout"] is True
    assert events[2] == {
        "step": 2,
        "t": events[2]["t"],
        "kind": "error",
        "output": bad["content"],
        "tokens_in": 5,
        "tokens_out": 2,
        "cost_usd": 0.25,
    }
    assert events[-1]["kind"] == "error" and "RuntimeError: boom" in events[-1]["output"]
    assert not trajectories.summary(events)["finished"]
