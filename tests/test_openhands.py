"""The paper's agent, OpenHands (openhands-ai 1.6.0, agents/openhands.yaml), driven for real
through the pipeline by the scripted chat-completions server on loopback (OpenHands' own tools,
native tool calling): no network to a model provider, no key. The machine is a local one made
from the debian13 image (OpenHands needs Python 3.12+); it shares the host's network, so it
reaches the server. The install (uv, openhands-ai and its ~350 packages from PyPI) runs before
the budget starts.

The same `deploybench run` also runs three scenario attempts beside the solving one, each
against its own scripted server; each attempt has the budget its scenario needs (the spec's
`agent_seconds`: the task's 10 minutes for those that stop on their own, TIMEOUT_BUDGET for the
one that must be killed by it, so the run does not wait out a long budget):
- `openhands-overclaim`: a command that outlives OpenHands' wait for output (a soft timeout,
  exit code -1), an empty input to it and Ctrl-C (both sent as input to the running command),
  an import-only check, a SUCCESS runbook and finish: a failed self-stop that claims SUCCESS
  (an overclaim, a shallow check only) and a Loop in the report's recovery table (rule 2);
- `openhands-steps`: never finishes: the step limit (max_steps);
- `openhands-timeout`: a command that blocks past the budget: the budget kills it (timeout),
  and nothing it started (OpenHands, its runtime, the tmux shell, the command) is running
  when the verifier starts.
While each attempt runs, its machine's disk is searched for the canary key before the machine
goes (tests/test_cli_agents.py, UpperLayerWatch).

Wall time: all four attempts run at once (`--parallel 4`); one installs OpenHands, the others
wait for its prefix's archive in the controller's cache and copy it in (roles/agent_command/
tasks/scaffold.yml), so the run takes one install, then the longest scenario."""

import json
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from deploybench import runfolder, trajectories
from deploybench.analysis import recovery
from deploybench.trajectories.openhands import INPUT_PREFIX
from tests.conftest import REPO, run_cli
from tests.fresh_env import ENV_COMMAND, fresh_login, seen
from tests.scripted_llm import (
    RUNBOOK,
    Reply,
    ScriptedLLM,
    legacycalc_solution,
    never_finishes,
    print_first_calls,
)
from tests.test_cli_agents import UpperLayerWatch

pytestmark = [pytest.mark.slow, pytest.mark.privileged, pytest.mark.timeout(3000)]

TASK = "legacycalc_demo24"
WORKDIR = f"/home/vm/Desktop/{TASK}"
SPEC = REPO / "agents" / "openhands.yaml"
CANARY = "sk-canary-openhands-deploybench-5c21e9"
# The timeout attempt's budget: OpenHands starts (34 to 69 s from launch to its first call at
# load 3 to 5), sends its commands and blocks; the budget then kills it.
TIMEOUT_BUDGET = 180
# Sleeps of lengths nothing else on a machine uses, found by number in any process list.
SOFT_SLEEP = "sleep 301"
BLOCKING_SLEEP = "sleep 4447"


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
    runbook = write_runbook("It matches. Writing the runbook.")
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


def write_runbook(content: str) -> Reply:
    """The agent writes the SUCCESS runbook with OpenHands' own file editor."""
    arguments = {"command": "create", "path": f"{WORKDIR}/RUNBOOK.MD", "file_text": RUNBOOK}
    return Reply(content, tool="str_replace_editor", arguments=arguments | {"security_risk": "LOW"})


def bash(content: str, command: str, **extra) -> Reply:
    return Reply(
        content,
        tool="execute_bash",
        arguments={"command": command, "security_risk": "LOW", **extra},
    )


def overclaim_script() -> list[Reply]:
    """Waits on a command that prints nothing (OpenHands stops waiting: exit code -1), asks
    for more of its output with an empty input, interrupts it, checks only that Python
    imports, then claims SUCCESS and finishes: nothing was built."""
    return [
        bash("Let me see the project.", "ls"),
        bash("Waiting for the machine to settle.", SOFT_SLEEP),
        bash("No output yet; more of it.", "", is_input="true"),
        bash("Interrupting it.", "C-c", is_input="true"),
        bash("An import check is enough.", "python3 -c 'import os, subprocess; print(1)'"),
        write_runbook("Writing the runbook."),
        Reply("", tool="finish", arguments={"message": "Deployed."}),
    ]


def blocking_script() -> list[Reply]:
    """A look, then a command the shell waits on (the tool's own timeout, far past the
    budget, so no soft timeout ends the wait): the budget runs out first."""
    return [
        bash("Let me see the project.", "ls"),
        bash("Waiting for the build server.", BLOCKING_SLEEP, timeout=4447),
    ]


def files_holding(folder: Path, needle: str) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def test_openhands_solves_the_demo_and_its_scenarios(root_host, runs, state_home, tmp_path):
    script, overclaim, blocking = openhands_solution(), overclaim_script(), blocking_script()
    run_dir = runs / "oh"
    names = ("openhands-timeout", "openhands", "openhands-overclaim", "openhands-steps")
    attempts = {name: run_dir / TASK / name / "1" for name in names}
    with (
        ScriptedLLM(script, dialect="openhands") as llm,
        ScriptedLLM(overclaim, dialect="openhands") as claiming,
        ScriptedLLM(never_finishes(), dialect="openhands") as looping,
        ScriptedLLM(blocking, dialect="openhands") as waiting,
    ):
        servers = {
            "openhands": llm,
            "openhands-overclaim": claiming,
            "openhands-steps": looping,
            "openhands-timeout": waiting,
        }
        base = yaml.safe_load(SPEC.read_text())["openhands"]
        config = tmp_path / "agents.yaml"
        steps = {"openhands-steps": 3}
        budgets = {"openhands-timeout": {"agent_seconds": TIMEOUT_BUDGET}}
        config.write_text(
            yaml.safe_dump(
                {
                    name: {
                        **base,
                        "model": "scripted",
                        "base_url": servers[name].base_url,
                        "max_steps": steps.get(name, 20),
                        **budgets.get(name, {}),
                    }
                    for name in names
                }
            )
        )
        started = time.monotonic()
        with UpperLayerWatch(state_home, list(attempts.values()), CANARY) as watch:
            run_cli(
                "run", "--agent", ",".join(names), "--agent-config", config,
                "--image", "debian13", "--tasks", TASK, "--run-id", "oh", "--parallel", "4",
                env={"OPENAI_API_KEY": CANARY}, timeout=2700,
            )  # fmt: skip
        print(f"four attempts at once: {time.monotonic() - started:.1f} s")
    rows = {
        r["agent"]: r for r in map(json.loads, (run_dir / "results.jsonl").read_text().splitlines())
    }
    for name, row in rows.items():
        keys = ("status", "passed", "stop_type", "runbook_status", "steps", "tokens_in")
        print(name, {k: row.get(k) for k in (*keys, "tokens_out", "agent_seconds")})
        print(f"  model calls served: {len(servers[name].requests)}")
    # One install for the four: the first attempt installed the scaffold and archived its
    # prefix on the controller, the other three waited for it and copied it in.
    made = {name: json.loads((attempts[name] / runfolder.SCAFFOLD).read_text()) for name in names}
    print("scaffolds:", {name: sorted(m) for name, m in made.items()})
    built = [name for name, m in made.items() if "publish" in m]
    assert len(built) == 1, made
    sha = made[built[0]]["publish"]["sha256"]
    assert all(m["claim"]["sha256"] == sha for n, m in made.items() if n not in built), made
    # Its tmux lives in the prefix (Debian's packages unpacked there at install), so the
    # harness installs no system package for it.
    assert all(m["system_packages"] == [] for m in made.values()), made
    # Machine ready to the first model call, for all four.
    first_calls = print_first_calls({name: (attempts[name], servers[name]) for name in names})
    attempt = attempts["openhands"]
    infra = run_dir / "infra_errors.jsonl"
    assert set(rows) == set(names), infra.read_text() if infra.is_file() else rows
    row = rows["openhands"]
    log = (
        (attempt / "agent.log").read_text(errors="replace")
        if (attempt / "agent.log").is_file()
        else ""
    )
    assert row["status"] == "completed", row
    assert row["passed"], log[-4000:]
    assert row["stop_type"] == "self_stop"
    assert row["runbook_status"] == "SUCCESS"
    # Each agent called its server after its machine was ready: the README's figure.
    assert all(s is not None and s > 0 for s in first_calls.values()), first_calls

    # Every model call of every attempt reached its server, with the key from the
    # controller's environment. (OpenAI's Python client, which litellm uses, sends
    # "Authorization" capitalised.)
    assert len(llm.requests) == len(script)
    for server in servers.values():
        sent = [{k.lower(): v for k, v in h.items()} for h in server.headers]
        assert sent and all(h.get("authorization") == f"Bearer {CANARY}" for h in sent)
    assert row["tokens_in"] == llm.tokens_in and row["tokens_out"] == llm.tokens_out
    assert row["steps"] == len(llm.requests)

    events = [json.loads(x) for x in (attempt / "trajectory.jsonl").read_text().splitlines()]
    trajectories.from_contract5(events)
    commands = [e for e in events if e["kind"] == "command"]
    assert len(commands) == 6 and all(isinstance(e.get("exit_code"), int) for e in commands)
    # The first `make` fails. Under load OpenHands' own tmux shell now and then hands a command
    # the output of the one before it, with or without its exit code (docs/agents.md: seen with
    # both shifted, and on 2026-12-05 with the output shifted alone, `cat Makefile` holding
    # make's error with exit code 0); the converter reports what OpenHands reported. So the
    # trajectory must show the failure where OpenHands put it: make's error in an observation
    # and a non-zero exit code on make's command or on the one its output landed on.
    # And once (2026-12-06, the first minutes of `make test`: four OpenHands attempts beside the
    # other worker's machines) OpenHands lost make's output altogether: its own event stream
    # (trajectory.native.jsonl) holds no make error either. The converter must show the error
    # exactly when OpenHands recorded it: never drop it, never invent it.
    native = (attempt / "trajectory.native.jsonl").read_text()
    failed_make = [e for e in commands if "make: ***" in (e.get("output") or "")]
    print(
        "observations holding make's error:", [(e["command"], e["exit_code"]) for e in failed_make],
        "; in OpenHands' own events:", "make: ***" in native,
    )  # fmt: skip
    assert bool(failed_make) == ("make: ***" in native), [
        (e["command"], e["exit_code"]) for e in commands
    ]
    if failed_make:
        makes = [e for e in commands if e["command"].strip() == "make"]
        assert any(e["exit_code"] != 0 for e in [*failed_make, *makes]), commands
    assert [e["kind"] for e in events].count("task_tracker") == 1
    assert events[-1]["kind"] == "finish"
    assert (attempt / "trajectory.native.jsonl").is_file()

    # The overclaim: a failed self-stop that claims SUCCESS after an import check only.
    row = rows["openhands-overclaim"]
    assert row["status"] == "completed", row
    assert not row["passed"] and row["stop_type"] == "self_stop", row
    assert row["runbook_status"] == "SUCCESS"
    assert len(claiming.requests) == len(overclaim)
    assert row["tokens_in"] == claiming.tokens_in and row["tokens_out"] == claiming.tokens_out
    events = trajectories.from_contract5(
        [json.loads(x) for x in (attempts["openhands-overclaim"] / "trajectory.jsonl").open()]
    )
    [sleep] = [e for e in events if e["kind"] == "command" and e["command"] == SOFT_SLEEP]
    assert (sleep["exit_code"], sleep["soft_timeout"]) == (-1, True), sleep
    assert events[-1]["kind"] == "finish"
    # What follows the soft timeout is input to the still running command, as the converter
    # writes it: recovery rule 2 reads it as a Loop.
    actions = recovery.actions_of(events)
    labels = {
        actions[i].command: (rule, label) for i, rule, label in recovery.label_attempt(actions)
    }
    print("overclaim's recovery labels:", labels)
    # The sleep is followed by a soft-timed-out empty input, that one by Ctrl-C: both Loop by
    # rule 2 (the second only as rule 2 reads the converter's INPUT_PREFIX).
    assert labels[SOFT_SLEEP] == (2, "Loop"), labels
    assert labels[INPUT_PREFIX] == (2, "Loop"), labels

    # The step limit: three model calls, no finish.
    row = rows["openhands-steps"]
    assert row["status"] == "completed", row
    assert row["stop_type"] == "max_steps" and not row["passed"], row
    assert row["steps"] == 3 and len(looping.requests) == 3

    # The budget: the blocking command was sent and the attempt was killed when the budget
    # ran out; nothing it started was running when the verifier took its process list.
    row = rows["openhands-timeout"]
    attempt = attempts["openhands-timeout"]
    assert row["status"] == "completed", row
    assert row["stop_type"] == "timeout" and not row["passed"], row
    # Once (of several runs) under load OpenHands asked a third time before the budget ran out;
    # the server answers every call past its script with the blocking command again, so the
    # attempt still ends only by the budget.
    assert len(waiting.requests) >= len(blocking)
    assert TIMEOUT_BUDGET - 1 <= row["agent_seconds"] < TIMEOUT_BUDGET + 30, row
    assert (attempt / "verdict.json").is_file()
    text = (attempt / "verifier/processes_before_verify.txt").read_text()
    # Nor its runtime's tmux server (the scaffold's, started by its action server).
    left = [
        x for x in text.splitlines() if any(n in x for n in ("openhands", "tmux", BLOCKING_SLEEP))
    ]
    assert "PID" in text.splitlines()[0] and left == [], text
    # Local machines are stopped from the host (the whole container ends), after the budget's
    # `timeout`: what that stop found is listed, whatever it was.
    assert (attempt / "state/processes_at_stop.txt").is_file()

    # The report on this run: the soft timeout followed by input to the command is a Loop;
    # the overclaim is counted among the failed self-stops, with a shallow check only.
    out = tmp_path / "report"
    run_cli("report", run_dir, "--out", out)
    per_agent = pd.read_csv(out / "tables" / "7_recovery_per_agent.csv", index_col=0)
    [column] = [c for c in per_agent.columns if c.startswith("openhands-overclaim")
                and c.endswith("failed")]  # fmt: skip
    assert per_agent.loc["Loop", column] >= 1, per_agent[column]
    completion = pd.read_csv(out / "tables" / "8_completion.csv", index_col=0)
    [column] = [c for c in completion.columns if c.startswith("openhands-overclaim")]
    assert completion.loc["of those, RUNBOOK claimed SUCCESS", column] == 1, completion
    assert completion.loc["of those, shallow check only", column] == 1, completion
    stop_types = pd.read_csv(out / "tables" / "8_stop_types.csv", index_col=0)
    [column] = [c for c in stop_types.columns if c.startswith("openhands-timeout")]
    assert stop_types.loc["timeout, failed", column] == 1, stop_types

    # The canary key reached the agents (the servers saw it) and is nowhere in the evidence,
    # the state folder, or any machine's disk (searched before each machine was destroyed).
    assert files_holding(runs, CANARY) == []
    assert files_holding(state_home, CANARY) == []
    watch.check(attempts["openhands"])
    watch.check(attempts["openhands-overclaim"])
    watch.check(
        attempts["openhands-steps"], holding="opt/deploybench-agent/openhands/venv/bin/python"
    )
    watch.check(
        attempts["openhands-timeout"], holding="opt/deploybench-agent/openhands/venv/bin/python"
    )


def test_the_scaffold_clears_no_hurdle_the_task_sets_its_agent(
    root_host, runs, state_home, tmp_path
):
    # kvservice_demo24 and tinytrain_demo24 name python3-venv as the hurdle. OpenHands' install
    # (its prefix, the tmux in it) must not clear it for the agent: a scripted OpenHands that never
    # installs it, makes its venv anyway and claims success fails where nop fails, at the same
    # layer and in the same category. (Both references pass on debian12: make demo; OpenHands
    # needs debian13's Python, where tinytrain's pinned numpy has no wheel.)
    def script(task: str) -> list[Reply]:
        workdir = f"/home/vm/Desktop/{task}"
        return [
            bash("Let me see the project.", f"cd {workdir} && ls"),
            # Not the first command: OpenHands hands its shell's first output back empty.
            bash("What this machine has.", ENV_COMMAND),
            # What the venv said also goes into the runbook, which the host reads from the
            # machine's layers: OpenHands' shell now and then hands a command's output back
            # empty (seen once in ~10 runs), and the claim below must not hang on that.
            bash(
                "The environment.",
                f"cd {workdir} && {{ python3 -m venv env; echo venv=$?; }} > venv.txt 2>&1;"
                " cat venv.txt",
            ),
            bash(
                "Done.",
                f"cd {workdir} && {{ printf 'STATUS: SUCCESS\\n'; cat venv.txt; }} > RUNBOOK.MD",
            ),
            Reply("", tool="finish", arguments={"message": "Deployed."}),
        ]

    # What a login shell of vm sees on a fresh machine of the same image.
    fresh = seen(fresh_login("debian13"))
    base = yaml.safe_load(SPEC.read_text())["openhands"]
    for task in ("kvservice_demo24", "tinytrain_demo24"):
        with ScriptedLLM(script(task), dialect="openhands") as llm:
            config = tmp_path / f"agents-{task}.yaml"
            spec = {**base, "model": "scripted", "base_url": llm.base_url, "max_steps": 10}
            config.write_text(yaml.safe_dump({"openhands": spec}))
            run_cli(
                "run", "--agent", "openhands,nop", "--agent-config", config,
                "--image", "debian13", "--tasks", task, "--run-id", f"hurdle-{task}",
                "--parallel", "2", env={"OPENAI_API_KEY": CANARY}, timeout=2700,
            )  # fmt: skip
            calls = len(llm.requests)
        rows = {
            r["agent"]: r
            for r in map(
                json.loads, (runs / f"hurdle-{task}" / "results.jsonl").read_text().splitlines()
            )
        }
        print(
            task,
            {a: (r["passed"], r["failure_layer"], r["failure_category"]) for a, r in rows.items()},
        )
        assert calls >= 3, calls  # the scripted agent did run its commands
        oh, nop = rows["openhands"], rows["nop"]
        assert oh["status"] == nop["status"] == "completed"
        assert not oh["passed"] and not nop["passed"]
        assert (oh["failure_layer"], oh["failure_category"]) == (
            nop["failure_layer"],
            nop["failure_category"],
        )
        assert oh["runbook_status"] == "SUCCESS"
        # The venv failed on the machine as on a fresh one: the scaffold brought no ensurepip.
        events = [
            json.loads(x)
            for x in (runs / f"hurdle-{task}" / task / "openhands" / "1" / "trajectory.jsonl")
            .read_text()
            .splitlines()
        ]
        # OpenHands' commands (its action server's shell) ran in the machine's own environment.
        [looked] = [e for e in events if e["kind"] == "command" and e["command"] == ENV_COMMAND]
        print("fresh:", fresh, "\nopenhands:", seen(looked["output"]))
        assert seen(looked["output"]) == fresh
        [venv] = [e for e in events if e["kind"] == "command" and "venv env" in e["command"]]
        runbook = (runs / f"hurdle-{task}" / task / "openhands" / "1" / "RUNBOOK.MD").read_text()
        assert runbook.startswith("STATUS: SUCCESS\n"), runbook
        assert "venv=1" in runbook and "ensurepip" in runbook, runbook
        # Where OpenHands did hand the output back, it says the same.
        assert not venv["output"].strip() or "venv=1" in venv["output"], venv
