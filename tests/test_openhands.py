"""The paper's agent, OpenHands (openhands-ai 1.6.0, agents/openhands.yaml), driven for real
through the pipeline by the scripted chat-completions server on loopback (OpenHands' own tools,
native tool calling): no network to a model provider, no key. The machine is a local one made
from the debian13 image (OpenHands needs Python 3.12+); it shares the host's network, so it
reaches the server. The install (uv, openhands-ai and its ~350 packages from PyPI) runs before
the budget starts."""

import json
import time
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from deploybench import trajectories
from tests.conftest import REPO, run_cli
from tests.scripted_llm import RUNBOOK, Reply, ScriptedLLM, legacycalc_solution

pytestmark = [pytest.mark.slow, pytest.mark.privileged]

TASK = "legacycalc_demo24"
WORKDIR = f"/home/vm/Desktop/{TASK}"
SPEC = REPO / "agents" / "openhands.yaml"
CANARY = "sk-canary-openhands-deploybench-5c21e9"


def openhands_solution() -> list[Reply]:
    """The legacycalc solution with OpenHands' tools: a plan first, the same commands, the
    runbook written with its editor (its shell refuses a heredoc followed by another command:
    one command per call) and its finish tool instead of mini-swe-agent's submit line."""
    plan = Reply(
        "I plan the work first.",
        tool="task_tracker",
        arguments={
            "command": "plan",
            "task_list": [
                {"id": "1", "title": "Build legacycalc", "status": "in_progress"},
                {"id": "2", "title": "Run the experiment and write RUNBOOK.MD", "status": "todo"},
            ],
        },
    )
    runbook = Reply(
        "It matches. Writing the runbook.",
        tool="str_replace_editor",
        arguments={
            "command": "create",
            "path": f"{WORKDIR}/RUNBOOK.MD",
            "file_text": RUNBOOK,
            "security_risk": "LOW",
        },
    )
    finish = Reply(
        "", tool="finish", arguments={"message": "legacycalc builds and its check passes."}
    )
    # Each command blocks up to 900 s (the tool's `timeout`): apt-get prints nothing for longer
    # than OpenHands' 30 s soft timeout, after which its shell takes no new command.
    commands = [
        Reply(
            r.content,
            tool="execute_bash",
            arguments={"command": r.command, "security_risk": "LOW", "timeout": 900},
        )
        for r in legacycalc_solution()[:-2]
    ]
    return [plan, *commands, runbook, finish]


def files_holding(folder: Path, needle: str) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def test_openhands_solves_the_demo(root_host, runs, state_home, tmp_path):
    script = openhands_solution()
    with ScriptedLLM(script, dialect="openhands") as llm:
        base = yaml.safe_load(SPEC.read_text())["openhands"]
        config = tmp_path / "agents.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "openhands": {
                        **base,
                        "model": "scripted",
                        "base_url": llm.base_url,
                        "max_steps": 20,
                    }
                }
            )
        )
        started = time.monotonic()
        run_cli(
            "run", "--agent", "openhands", "--agent-config", config, "--image", "debian13",
            "--tasks", TASK, "--run-id", "oh", env={"OPENAI_API_KEY": CANARY}, timeout=900,
        )  # fmt: skip
        print(f"attempt: {time.monotonic() - started:.1f} s")
    # Machine ready (the playbook's first event) to the agent's first model call: staging, the
    # install and OpenHands' own start.
    attempt = runs / "oh" / TASK / "openhands" / "1"
    created = [
        datetime.fromisoformat(json.loads(f.read_text())["created"]).timestamp()
        for f in attempt.glob("ansible/artifacts/*/job_events/*.json")
    ]
    if created and llm.times:
        print(f"machine ready to first model call: {llm.times[0] - min(created):.1f} s")
    run_dir = runs / "oh"
    [row] = [json.loads(x) for x in (run_dir / "results.jsonl").read_text().splitlines()]
    log = (
        (attempt / "agent.log").read_text(errors="replace")
        if (attempt / "agent.log").is_file()
        else ""
    )
    infra = run_dir / "infra_errors.jsonl"
    assert row["status"] == "completed", infra.read_text() if infra.is_file() else row
    assert row["passed"], log[-4000:]
    assert row["stop_type"] == "self_stop"
    assert row["runbook_status"] == "SUCCESS"

    # Every model call reached the server, with the key from the controller's environment.
    assert len(llm.requests) == len(script)
    # (OpenAI's Python client, which litellm uses, sends "Authorization" capitalised.)
    sent = [{k.lower(): v for k, v in h.items()} for h in llm.headers]
    assert all(h.get("authorization") == f"Bearer {CANARY}" for h in sent)
    assert row["tokens_in"] == llm.tokens_in and row["tokens_out"] == llm.tokens_out
    assert row["steps"] == len(llm.requests)

    events = [json.loads(x) for x in (attempt / "trajectory.jsonl").read_text().splitlines()]
    trajectories.from_contract5(events)
    commands = [e for e in events if e["kind"] == "command"]
    assert len(commands) == 6 and all(isinstance(e.get("exit_code"), int) for e in commands)
    assert any(e["exit_code"] != 0 for e in commands)  # the first `make` fails
    assert [e["kind"] for e in events].count("task_tracker") == 1
    assert events[-1]["kind"] == "finish"
    assert (attempt / "trajectory.native.jsonl").is_file()

    # The canary key reached the agent (the server saw it) and is nowhere in the evidence
    # or the state folder.
    assert files_holding(runs, CANARY) == []
    assert files_holding(state_home, CANARY) == []
