"""A real LLM agent scaffold (mini-swe-agent, pinned in agents/mini-swe-agent.yaml) driven end
to end through the pipeline by a scripted chat-completions server on loopback: no network to
a model provider, no key. The machine shares the host's network, so it reaches the server."""

import json
import time
from pathlib import Path

import pytest
import yaml

from deploybench import runfolder, trajectories
from tests.conftest import REPO, run_cli
from tests.scripted_llm import (
    Reply,
    ScriptedLLM,
    legacycalc_solution,
    never_finishes,
    print_first_calls,
)
from tests.test_cli_agents import beyond_the_prefix, looker

pytestmark = [pytest.mark.slow, pytest.mark.privileged]

TASK = "legacycalc_demo24"
SPEC = REPO / "agents" / "mini-swe-agent.yaml"
DUMMY_KEY = "sk-dummy-deploybench-never-on-disk-7f3a"


def agent_config(tmp_path: Path, specs: dict[str, dict]) -> Path:
    """One spec per name: the pinned mini-swe-agent spec with these fields changed."""
    base = yaml.safe_load(SPEC.read_text())["mini-swe-agent"]
    path = tmp_path / "agents.yaml"
    path.write_text(
        yaml.safe_dump({name: {**base, "model": "scripted", **o} for name, o in specs.items()})
    )
    return path


def files_holding(folder: Path, needle: str) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def test_mini_swe_agent_solves_the_demo_and_stops_at_its_step_limit(
    root_host, runs, state_home, tmp_path
):
    # Two attempts at once, each with its own scripted server named by its spec's base_url:
    # one that solves the task, one that never finishes and must stop at its step limit
    # (3 here, to keep it short).
    run_dir = runs / "mini"
    attempt = run_dir / TASK / "mini-swe-agent" / "1"
    at_first_call: list[str] = []
    environments: list[bytes] = []
    solving = ScriptedLLM(
        legacycalc_solution(),
        on_first_request=looker(state_home, attempt, at_first_call, environments),
    )
    with solving as llm, ScriptedLLM(never_finishes()) as looping:
        config = agent_config(
            tmp_path,
            {
                "mini-swe-agent": {"base_url": llm.base_url},
                "mini-looping": {"base_url": looping.base_url, "max_steps": 3},
            },
        )
        started = time.monotonic()
        run_cli(
            "run", "--agent", "mini-swe-agent,mini-looping,nop", "--agent-config", config,
            "--tasks", TASK, "--parallel", "3", "--run-id", "mini",
            env={"OPENAI_API_KEY": DUMMY_KEY},
        )  # fmt: skip
        print(f"both attempts: {time.monotonic() - started:.1f} s")
    # Machine ready to the first model call, as for the other agents (both installs at once).
    first_calls = print_first_calls(
        {
            "mini-swe-agent": (attempt, llm),
            "mini-looping": (run_dir / TASK / "mini-looping" / "1", looping),
        }
    )
    results = (run_dir / "results.jsonl").read_text().splitlines()
    rows = {r["agent"]: r for r in map(json.loads, results)}
    assert len(results) == 3 and set(rows) == {"mini-swe-agent", "mini-looping", "nop"}
    row = rows["mini-swe-agent"]
    assert row["status"] == "completed", row
    assert row["passed"], (attempt / "agent.log").read_text()[-3000:]
    assert row["stop_type"] == "self_stop"
    assert row["runbook_status"] == "SUCCESS"
    assert row["model"] == "scripted"
    # Both agents called their server after their machine was ready: the README's figure.
    assert all(s is not None and s > 0 for s in first_calls.values()), first_calls

    # The server saw every step, with the key from the controller's environment, put there by
    # the run's model gateway: the machine had only the attempt's own key.
    assert len(llm.requests) == len(legacycalc_solution())
    assert all(r["model"] == "scripted" for r in llm.requests)
    sent = [{k.lower(): v for k, v in h.items()} for h in llm.headers]
    assert all(h.get("authorization") == f"Bearer {DUMMY_KEY}" for h in sent)
    # The tokens of the row are the gateway's, call by call what the server counted.
    assert row["tokens_in"] == llm.tokens_in and row["tokens_out"] == llm.tokens_out
    calls = [json.loads(x) for x in (attempt / "model_calls.jsonl").read_text().splitlines()]
    assert [c["input_tokens"] for c in calls] == [u["prompt_tokens"] for u in llm.usage_sent]
    assert all(c["status"] == 200 and c["error"] is None for c in calls)
    gateway = json.loads((attempt / "gateway.json").read_text())
    assert gateway["calls"] == len(llm.requests) and gateway["provider_error"] is None
    assert row["steps"] == len(llm.requests)

    # trajectory.jsonl in contract 5: the commands with their exit codes, the failed make.
    events = [json.loads(x) for x in (attempt / "trajectory.jsonl").read_text().splitlines()]
    trajectories.from_contract5(events)  # raises on any event outside contract 5
    commands = [e for e in events if e["kind"] == "command"]
    assert all("exit_code" in e for e in commands)
    [make] = [e for e in commands if e["command"] == "make"]
    assert make["exit_code"] != 0 and "throw" in make["output"]
    rebuilt = [e for e in commands if "gnu++11" in e["command"]]
    assert rebuilt and all(e["exit_code"] == 0 for e in rebuilt)
    assert events[-1]["kind"] == "finish"
    assert (attempt / "trajectory.native.jsonl").is_file()  # mini-swe-agent's own, kept

    # Both agents share the scaffold (one spec's install): one attempt installed it and
    # archived its prefix on the controller, the other copied that archive in.
    made = [
        json.loads((run_dir / TASK / name / "1" / runfolder.SCAFFOLD).read_text())
        for name in ("mini-swe-agent", "mini-looping")
    ]
    print("scaffolds:", made)
    assert sorted("publish" in m for m in made) == [False, True], made
    [built] = [m for m in made if "publish" in m]
    [copied] = [m for m in made if "publish" not in m]
    assert built["claim"]["build"] and copied["claim"]["sha256"] == built["publish"]["sha256"]
    assert built["key"] == copied["key"] and built["system_packages"] == []

    # The machine was bare when the agent started: at its first model call, nothing had
    # changed on it but the scaffold's prefix, the harness's own folder and what the harness
    # changes for every agent (a nop attempt's machine, listed after its stop).
    nop_rows = (run_dir / TASK / "nop" / "1" / "state" / "changed_files.txt").read_text()
    print(f"at the first call: {len(at_first_call)} changed files")
    assert at_first_call, "the first call's look at the machine found nothing (not even the prefix)"
    assert any("/opt/deploybench-agent/mini-swe-agent/venv/" in r for r in at_first_call)
    assert beyond_the_prefix(at_first_call, nop_rows.splitlines(), "mini-swe-agent") == []

    # The agent that never finishes stopped at its step limit.
    row = rows["mini-looping"]
    assert row["stop_type"] == "max_steps", row
    assert row["steps"] == 3 and len(looping.requests) == 3
    assert not row["passed"]

    # The key came from the controller's environment and is nowhere in the evidence, nor in
    # the state folder, nor in the environment of any process on the machine while the agent
    # called its model (the agent's own process among them, holding the attempt's key).
    assert files_holding(runs, DUMMY_KEY) == []
    assert files_holding(state_home, DUMMY_KEY) == []
    assert len(environments) > 3, len(environments)
    assert not [e for e in environments if DUMMY_KEY.encode() in e]
    assert any(b"dbgw-" in e for e in environments)  # the attempt's key was there to find


def test_a_provider_outage_is_retried_and_never_scored(root_host, runs, state_home, tmp_path):
    # The provider answers 500 to the third model call, on every one of the gateway's retries
    # (4 tries): the attempt is the infrastructure's (provider_error), tried again on a fresh
    # machine, and the run holds one completed row for it, a PASS, and no FAIL.
    with ScriptedLLM(legacycalc_solution(), fail_at=3, fail_times=4) as llm:
        config = agent_config(tmp_path, {"mini-swe-agent": {"base_url": llm.base_url}})
        run_cli(
            "run", "--agent", "mini-swe-agent", "--agent-config", config, "--tasks", TASK,
            "--run-id", "outage", env={"OPENAI_API_KEY": DUMMY_KEY},
        )  # fmt: skip
        assert llm.failures == 4
    run_dir = runs / "outage"
    [row] = [json.loads(x) for x in (run_dir / "results.jsonl").read_text().splitlines()]
    assert row["status"] == "completed" and row["passed"] is True, row
    [infra] = [json.loads(x) for x in (run_dir / "infra_errors.jsonl").read_text().splitlines()]
    assert infra["reason"].startswith("provider_error: /v1/chat/completions: HTTP 500"), infra
    kept = run_dir / TASK / "mini-swe-agent" / "1.infra-1"
    calls = [json.loads(x) for x in (kept / "model_calls.jsonl").read_text().splitlines()]
    assert [c["status"] for c in calls] == [200, 200, 500] and calls[-1]["retries"] == 3
    out = run_cli("report", run_dir, "--out", tmp_path / "report").stdout
    notes = (tmp_path / "report" / "report.md").read_text()
    assert "1 try ended by a provider error" in notes, out


def test_a_token_cap_ends_the_attempt_as_budget_tokens(root_host, runs, state_home, tmp_path):
    with ScriptedLLM(never_finishes()) as llm:
        config = agent_config(
            tmp_path, {"mini-swe-agent": {"base_url": llm.base_url, "max_tokens": 3000}}
        )
        run_cli(
            "run", "--agent", "mini-swe-agent", "--agent-config", config, "--tasks", TASK,
            "--run-id", "capped", env={"OPENAI_API_KEY": DUMMY_KEY},
        )  # fmt: skip
    [row] = [json.loads(x) for x in (runs / "capped" / "results.jsonl").read_text().splitlines()]
    assert row["status"] == "completed" and row["stop_type"] == "budget_tokens", row
    assert row["passed"] is False
    # Stopped within one call of the cap: the calls before the last stayed under it.
    counted = [u["prompt_tokens"] + u["completion_tokens"] for u in llm.usage_sent]
    assert sum(counted) >= 3000 and sum(counted[:-1]) < 3000, counted
    assert row["tokens_in"] + row["tokens_out"] == sum(counted)


def test_resume_with_retry_reruns_exactly_the_provider_errors(
    root_host, runs, state_home, tmp_path
):
    # No infrastructure retries: the outage at the first call leaves an infra_error row. The
    # resumed run with --retry provider_error reruns that attempt alone (the provider is back):
    # its old row kept and marked superseded, nop's row untouched.
    with ScriptedLLM(legacycalc_solution(), fail_at=1, fail_times=4) as llm:
        config = agent_config(tmp_path, {"mini-swe-agent": {"base_url": llm.base_url}})
        run_cli(
            "run", "--agent", "mini-swe-agent,nop", "--agent-config", config, "--tasks", TASK,
            "--run-id", "retry", "--infra-retries", "0", env={"OPENAI_API_KEY": DUMMY_KEY},
        )  # fmt: skip
        run_dir = runs / "retry"
        first = [json.loads(x) for x in (run_dir / "results.jsonl").read_text().splitlines()]
        assert {(r["agent"], r["status"]) for r in first} == {
            ("mini-swe-agent", "infra_error"),
            ("nop", "completed"),
        }
        out = run_cli(
            "run", "--run-id", "retry", "--resume", "--retry", "provider_error",
            env={"OPENAI_API_KEY": DUMMY_KEY},
        ).stdout  # fmt: skip
        assert "--retry provider_error: 1 attempt(s) to run again" in out, out
        # Nothing else reruns: a second --retry finds nothing.
        out = run_cli("run", "--run-id", "retry", "--resume", "--retry", "infra,provider_error",
                      env={"OPENAI_API_KEY": DUMMY_KEY}).stdout  # fmt: skip
        assert "0 attempt(s) to run again" in out, out
    rows = [json.loads(x) for x in (run_dir / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 3, rows  # the two of the first round, the rerun's
    assert [(r["agent"], r["status"], r.get("superseded")) for r in rows] == [
        (first[0]["agent"], first[0]["status"], True if first[0]["agent"] != "nop" else None),
        (first[1]["agent"], first[1]["status"], True if first[1]["agent"] != "nop" else None),
        ("mini-swe-agent", "completed", None),
    ]
    assert rows[-1]["passed"] is True
    # Both tries of the first round and the rerun's folder are kept apart.
    mini = run_dir / TASK / "mini-swe-agent"
    assert (mini / "1").is_dir() and (mini / "1.infra-1").is_dir()


def test_two_models_are_two_agents_and_two_columns(root_host, runs, state_home, tmp_path):
    # run --model m1,m2: one attempt per model with that model in every request, each its own
    # agent in results.jsonl and its own column ("mini-swe-agent / m1") in the report.
    stop_at_once = [legacycalc_solution()[-1]]
    with ScriptedLLM(stop_at_once) as llm:
        config = agent_config(tmp_path, {"mini-swe-agent": {"base_url": llm.base_url}})
        out = run_cli(
            "run", "--agent", "mini-swe-agent", "--agent-config", config, "--tasks", TASK,
            "--model", "m1,m2", "--parallel", "2", "--run-id", "models",
            env={"OPENAI_API_KEY": DUMMY_KEY},
        )  # fmt: skip
    sent = sorted(r.get("model", "") for r in llm.requests)
    assert len(sent) == 2 and sent[0].endswith("m1") and sent[1].endswith("m2"), sent
    run_dir = runs / "models"
    rows = [json.loads(x) for x in (run_dir / "results.jsonl").read_text().splitlines()]
    assert sorted(r["agent"] for r in rows) == ["mini-swe-agent+m1", "mini-swe-agent+m2"], out
    run_cli("report", run_dir, "--out", tmp_path / "report")
    page = (tmp_path / "report" / "report.md").read_text()
    assert "mini-swe-agent / m1" in page and "mini-swe-agent / m2" in page, page[:3000]


ASK_ONCE = (
    "python3 - <<'PY'\n"
    "import json, os, urllib.request as u\n"
    "body = json.dumps(dict(model='scripted', messages=[dict(role='user', content='hi')]))\n"
    "r = u.Request('{llm_base_url}/chat/completions', data=body.encode(), headers=dict(\n"
    "    Authorization='Bearer ' + os.environ['OPENAI_API_KEY']))\n"
    "r.add_header('Content-Type', 'application/json')\n"
    "print('model answered', u.urlopen(r).status)\n"
    "PY\n"
    "exit 3"
)


def test_a_scaffold_that_ends_before_its_first_model_call_is_never_scored(
    root_host, runs, state_home, tmp_path
):
    # A scaffold that dies at its start (OpenHands' action server missing its 120 s on a loaded
    # host, seen in a full run) was scored as the model's FAIL. With no model call through the
    # gateway the attempt is the infrastructure's, tried again; one that asked the model once
    # and then failed is scored as before.
    with ScriptedLLM([Reply("fine", command="true")]) as llm:
        crash = {"base_url": llm.base_url, "install": "", "command": "echo starting; exit 3"}
        asks = {**crash, "command": ASK_ONCE}
        config = agent_config(tmp_path, {"crasher": crash, "asker": asks})
        run_cli(
            "run", "--agent", "crasher,asker", "--agent-config", config, "--tasks", TASK,
            "--run-id", "crash", "--infra-retries", "1", env={"OPENAI_API_KEY": DUMMY_KEY},
        )  # fmt: skip
    run_dir = runs / "crash"
    rows = {r["agent"]: r for r in map(json.loads, (run_dir / "results.jsonl").open())}
    assert rows["crasher"]["status"] == "infra_error", rows["crasher"]
    assert rows["asker"]["status"] == "completed" and rows["asker"]["passed"] is False, rows
    assert rows["asker"]["tokens_in"] > 0, rows["asker"]
    infra = [json.loads(x) for x in (run_dir / "infra_errors.jsonl").read_text().splitlines()]
    assert [i["agent"] for i in infra] == ["crasher", "crasher"], infra
    assert infra[0]["reason"] == (
        "scaffold_error: crasher exited 3 before its first model call (its agent.log says why)"
    )
    assert "starting" in (run_dir / TASK / "crasher" / "1.infra-1" / "agent.log").read_text()
