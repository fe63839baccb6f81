"""The `openhands` converter on trajectories the real OpenHands (openhands-ai 1.6.0, local
runtime) saved with SAVE_TRAJECTORY_PATH while driven by tests/scripted_llm.py on this host
and on its machines (tests/fixtures/openhands/, recorded as said in docs/agents.md)."""

import json
from pathlib import Path

from deploybench import trajectories
from deploybench.analysis import recovery
from deploybench.trajectories.openhands import INPUT_PREFIX

FIXTURES = Path(__file__).parent / "fixtures" / "openhands"


def convert(tmp_path, name):
    events = trajectories.convert(FIXTURES / name, "openhands", tmp_path / "trajectory.jsonl")
    return trajectories.from_contract5(events)  # raises on anything outside contract 5


def test_finish_run_commands_files_tracker_think_and_tokens(tmp_path):
    native = json.loads((FIXTURES / "finish.traj.json").read_text())
    events = convert(tmp_path, "finish.traj.json")
    kinds = [e["kind"] for e in events]
    assert kinds.count("task_tracker") == 1 and events[0]["kind"] == "task_tracker"
    assert "in_progress" in events[0]["output"]
    commands = [e for e in events if e["kind"] == "command"]
    assert [c["command"] for c in commands][:3] == [
        "ls -la && cat hello.py", "python3 nope.py", "sleep 40; echo done",
    ]  # fmt: skip
    assert all(isinstance(c["exit_code"], int) for c in commands)
    assert commands[0]["exit_code"] == 0 and "hello.py" in commands[0]["output"]
    # OpenHands' own exit codes, as its shell reported them on this host (its output of one
    # command can land in the next one's observation: kept as it was).
    assert commands[2]["exit_code"] == 2
    # Keys sent with no command running: exit code -1, but not a soft timeout.
    assert commands[3]["command"].startswith("# input to the running command")
    assert commands[3]["exit_code"] == -1 and commands[3]["soft_timeout"] is False
    [read] = [e for e in events if e["kind"] == "file_read"]
    assert read["path"].endswith("/hello.py") and "print('hello')" in read["output"]
    edits = [e["path"].rsplit("/", 1)[1] for e in events if e["kind"] == "file_edit"]
    assert edits == ["hello.py", "RUNBOOK.MD"]
    assert any(e["kind"] == "think" and "It works now." in e["output"] for e in events)
    assert events[-1]["kind"] == "finish"
    assert events[-1]["output"] == "Done: hello.py prints hello world."

    # One step per model response; tokens per step add up to OpenHands' own running total.
    responses = {
        e["tool_call_metadata"]["model_response"]["id"]
        for e in native
        if e.get("action") and e.get("tool_call_metadata")
    }
    summary = trajectories.summary(events)
    assert summary["steps"] == len(responses) == 10
    usage = native[-1]["llm_metrics"]["accumulated_token_usage"]
    assert summary["tokens_in"] == usage["prompt_tokens"]
    assert summary["tokens_out"] == usage["completion_tokens"]
    assert summary["finished"] and summary["cost_usd"] is None  # no price for a local model


def test_step_limit_run_soft_timeout_and_no_finish(tmp_path):
    # `-i 3`: the shell stopped waiting for `sleep 45` (no new output after 10 s: exit code
    # -1, a soft timeout); the next two commands were refused while it ran (-1, no timeout);
    # then the controller hit its limit. OpenHands exits 0 and its saved trajectory has no
    # event for the limit; its log says so.
    events = convert(tmp_path, "max_iterations.traj.json")
    commands = [e for e in events if e["kind"] == "command"]
    assert [(c["command"], c["exit_code"], c["soft_timeout"]) for c in commands] == [
        ("sleep 45; echo waited", -1, True),
        ("ls", -1, False),
        ("ls", -1, False),
    ]
    summary = trajectories.summary(events)
    # The runner's rule: steps reached the spec's max_steps with no finish -> max_steps.
    assert summary["steps"] == 3 and not summary["finished"]
    log = (FIXTURES / "max_iterations.agent.log").read_text()
    assert "Agent reached maximum iteration. Current iteration: 3, max iteration: 3" in log


def test_machine_run_of_the_slow_test(tmp_path):
    # Saved by OpenHands on a local debian13 machine in tests/test_openhands.py's passing run:
    # 9 model calls, the first `make` failed (exit code 2), the editor wrote RUNBOOK.MD.
    events = convert(tmp_path, "legacycalc_machine.traj.json")
    commands = [e for e in events if e["kind"] == "command"]
    assert [c["exit_code"] for c in commands] == [0, 0, 2, 0, 0, 0]
    assert commands[2]["command"] == "make"
    [edit] = [e for e in events if e["kind"] == "file_edit"]
    assert edit["path"] == "/home/vm/Desktop/legacycalc_demo24/RUNBOOK.MD"
    summary = trajectories.summary(events)
    assert (summary["steps"], summary["tokens_in"], summary["tokens_out"]) == (9, 46182, 528)
    assert summary["finished"] and events[-1]["kind"] == "finish"


def test_machine_run_of_soft_timeout_and_input_to_the_running_command(tmp_path):
    # Saved by OpenHands on a local debian13 machine in tests/test_openhands.py's first passing
    # run with its scenarios (the `openhands-overclaim` attempt): `sleep 301` outlived the
    # shell's wait for output, an empty input to it waited again, Ctrl-C ended it (130).
    events = convert(tmp_path, "soft_timeout_input.traj.json")
    commands = [e for e in events if e["kind"] == "command"]
    assert [(c["command"], c["exit_code"], c["soft_timeout"]) for c in commands] == [
        ("ls", 0, False),
        ("sleep 301", -1, True),
        (INPUT_PREFIX, -1, True),
        (f"{INPUT_PREFIX}C-c", 130, False),
        ("python3 -c 'import os, subprocess; print(1)'", 0, False),
    ]
    # The recovery rules read what the converter wrote: the sleep and the empty input are
    # each followed by input to the still running command (rule 2, Loop); after Ctrl-C the
    # agent runs a different command of an action phase (rule 7).
    actions = recovery.actions_of(events)
    assert recovery.label_attempt(actions) == [(1, 2, "Loop"), (2, 2, "Loop"), (3, 7, "Adapt")]
    summary = trajectories.summary(events)
    assert (summary["steps"], summary["tokens_in"], summary["tokens_out"]) == (7, 30110, 298)
    assert summary["finished"] and events[-1]["kind"] == "finish"
