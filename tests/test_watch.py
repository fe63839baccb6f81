"""Watching a run: `deploybench status` (each running attempt's stage, times and tokens, from
run/live.py's live.json) and `deploybench logs -f` (the agent's log from its machine while it
runs, from the run folder after)."""

import json
import re
import subprocess
import threading
import time

import pytest
import yaml

from deploybench import runfolder
from deploybench.commands.watch import _shown
from deploybench.paths import PLAYBOOKS_DIR
from deploybench.run import live
from tests.conftest import DEPLOYBENCH, REPO, run_cli, start_run
from tests.scripted_llm import Reply, ScriptedLLM, legacycalc_solution
from tests.test_real_agent import DUMMY_KEY, TASK, agent_config


def _plays(path):
    names = []
    for play in yaml.safe_load(path.read_text()):
        if "import_playbook" in play or "ansible.builtin.import_playbook" in play:
            names += _plays(path.parent / (play.get("import_playbook") or play[
                "ansible.builtin.import_playbook"]))  # fmt: skip
        else:
            names.append(play["name"])
    return names


def test_every_play_of_an_attempt_has_its_stage():
    # A renamed play would leave watchers on the stage before it: the map is held to the names.
    plays = _plays(PLAYBOOKS_DIR / "run_task.yml")
    assert plays and set(plays) == set(live.PLAY_STAGES), set(plays) ^ set(live.PLAY_STAGES)


def test_a_watch_never_goes_back_and_status_reads_it(tmp_path):
    folder = runfolder.attempt_dir(tmp_path, "t1", "a1", 1)
    folder.mkdir(parents=True)
    watch = live.Watch(folder, "t1", "a1", 1, 600)

    def play(name):
        return {"event": "playbook_on_play_start", "event_data": {"play": name}}

    watch.on_event(play("Prepare the machine"))
    assert live.read(folder).stage == "stage"
    watch.on_event({"event": "runner_on_start", "event_data": {"task_action": "timed"}})
    # A stage once reached is never left for an earlier one.
    watch.on_event(play("Launch the agent under its time budget"))
    (folder / runfolder.MODEL_CALLS).write_text(
        json.dumps({"input_tokens": 100, "output_tokens": 7}) + "\n"
        + json.dumps({"input_tokens": 50, "output_tokens": 3}) + "\n{\"input_tok"
    )  # fmt: skip
    [row] = live.running(tmp_path)
    assert row["stage"] == "agent" and row["controller"] == "running"
    assert (row["calls"], row["input_tokens"], row["output_tokens"]) == (2, 150, 10)
    watch.stage("done")
    assert live.running(tmp_path) == []


def test_a_log_cannot_drive_the_watchers_terminal():
    raw = b"ok\n\x1b]0;owned\x07\x1b[2J\rhidden\n\xff"
    shown = _shown(raw)
    assert "\x1b" not in shown and "\x07" not in shown and "\r" not in shown
    assert shown.startswith("ok\n") and "\\x1b]0;owned" in shown


def test_status_and_logs_say_what_is_wrong(runs, tmp_path):
    out = run_cli("status", "nope", check=False)
    assert out.returncode == 2 and "no run 'nope'" in out.stderr
    run_dir = runs / "r1"
    run_dir.mkdir(parents=True)
    (run_dir / runfolder.RUN_META).write_text(
        json.dumps(
            {"run_id": "r1", "backend": "local", "tasks": ["t1"], "agents": ["a1"], "attempts": 1}
        )  # fmt: skip
    )
    out = run_cli("logs", "r1", "t1", "a1", check=False)
    assert out.returncode == 2 and "no attempt t1 a1 #1 in run r1" in out.stderr
    out = run_cli("status", "r1")
    assert "0 of 1 attempts finished" in out.stdout and "no attempt is running" in out.stdout


def _sleepy_solution():
    """The demo's solution with a long first look, so the agent is seen at work mid-run."""
    steps = legacycalc_solution()
    wait = Reply(
        "Let me watch the machine for a moment.",
        "for i in 1 2 3 4 5 6; do echo tick-$i; sleep 5; done",
    )
    return [steps[0], wait, *steps[1:]]


@pytest.mark.slow
@pytest.mark.privileged
def test_status_and_logs_follow_a_real_attempt(root_host, runs, state_home, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", DUMMY_KEY)
    monkeypatch.setenv("COLUMNS", "200")  # the status table unwrapped, as on a wide terminal
    with ScriptedLLM(_sleepy_solution()) as llm:
        config = agent_config(tmp_path, {"mini-swe-agent": {"base_url": llm.base_url}})
        proc = start_run(
            "run", "--agent", "mini-swe-agent", "--agent-config", config, "--tasks", TASK,
            "--run-id", "watched", quiet=True,
        )  # fmt: skip
        attempt = runs / "watched" / TASK / "mini-swe-agent" / "1"
        seen, follower, lines, follow_from = None, None, [], None

        def read():
            for line in follower.stdout:
                lines.append((time.monotonic(), line))

        try:
            deadline = time.monotonic() + 900
            while time.monotonic() < deadline and proc.poll() is None:
                if (runs / "watched" / runfolder.RUN_META).exists():
                    rows = run_cli("status", "watched", "--json").stdout.splitlines()
                    row = json.loads(rows[0]) if rows else {}
                    if follower is None and row.get("stage") in ("install", "agent"):
                        # Followed from before the agent's first line.
                        assert not (attempt / runfolder.AGENT_LOG).exists()
                        follow_from = row["stage"]
                        follower = subprocess.Popen(
                            [*DEPLOYBENCH, "logs", "watched", TASK, "mini-swe-agent", "-f"],
                            stdout=subprocess.PIPE, text=True, cwd=REPO,
                        )  # fmt: skip
                        threading.Thread(target=read, daemon=True).start()
                    if row.get("stage") == "agent" and row.get("calls", 0) >= 2:
                        seen = row, run_cli("status", "watched").stdout
                        break
                time.sleep(1)
            assert seen, "the attempt was never seen in its agent stage with two calls made"
            row, table = seen
            # Tokens so far as the gateway counted them, the time against the budget.
            assert row["input_tokens"] > 0 and row["output_tokens"] > 0, row
            assert 0 < row["seconds"] < row["budget_seconds"], row
            assert re.search(
                rf"{TASK} .* mini-swe-agent .* agent .* \d+:\d\d / \d+:\d\d .* "
                rf"{row['input_tokens']:,} in",
                table.replace("│", " "),
            ), table
            assert proc.wait(timeout=900) == 0
            ended = time.monotonic()
            follower.wait(timeout=60)
            time.sleep(1)
        finally:
            if proc.poll() is None:
                proc.kill()
            if follower is not None and follower.poll() is None:
                follower.kill()
    assert follower.returncode == 0
    # Lines came while the agent ran, not only at the end, and the whole log came in the end.
    text = "".join(line for _, line in lines)
    assert text == _shown((attempt / runfolder.AGENT_LOG).read_bytes())
    # Its first lines, written after the follower started, came while the agent still ran
    # (its 30 s command was still to come), not in one piece at the attempt's end.
    assert follow_from in ("install", "agent")
    early = [line for at, line in lines if at < ended - 20]
    assert any("This is mini-swe-agent" in line for line in early), [
        (round(at - ended, 1), line[:40]) for at, line in lines
    ]
    assert live.read(attempt).stage == "done"
    assert "no attempt is running" in run_cli("status", "watched").stdout


def test_a_live_read_of_the_machine_never_follows_the_agents_links(tmp_path):
    # The agent owns its control folder: its log made a link to a host file, or the folder a
    # link to the host's /etc, is read as nothing, never as the host's file.
    from deploybench.local import layers

    upper, lower = tmp_path / "upper", tmp_path / "lower"
    control = upper / "home/vm/.deploybench"
    control.mkdir(parents=True)
    lower.mkdir()
    secret = tmp_path / "host_secret"
    secret.write_text("the controller's own file\n")
    m = layers.Machine(upper, lower)
    (control / "agent.log").write_text("line one\nline two\n")
    assert m.read_from("home/vm/.deploybench/agent.log", 5, 1 << 20) == b"one\nline two\n"
    (control / "agent.log").unlink()
    (control / "agent.log").symlink_to(secret)
    assert m.read_from("home/vm/.deploybench/agent.log", 0, 1 << 20) is None
    (control / "agent.log").unlink()
    control.rmdir()
    control.symlink_to(tmp_path)
    assert m.read_from("home/vm/.deploybench/host_secret", 0, 1 << 20) is None


@pytest.mark.slow
def test_run_draws_the_running_attempt_under_its_bar_in_place(
    root_host, runs, state_home, tmp_path
):
    # On a terminal, `deploybench run` shows the attempts under way under its bar, redrawn in
    # place (cursor moves, no scroll): a real local attempt of an agent that sleeps, read off
    # a pseudo-terminal as a user's terminal would get it.
    import os
    import pty
    import select

    config = tmp_path / "agents.yaml"
    config.write_text(json.dumps({"sleeper": {"command": "sleep 8"}}))
    main, side = pty.openpty()
    proc = subprocess.Popen(
        [*DEPLOYBENCH, "run", "--agent", "sleeper", "--agent-config", str(config), "--tasks",
         TASK, "--run-id", "drawn"],
        stdin=side, stdout=side, stderr=side, cwd=REPO, start_new_session=True,
        env={**os.environ, "COLUMNS": "200", "LINES": "50", "TERM": "xterm"},
    )  # fmt: skip
    os.close(side)
    out = b""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        ready, _, _ = select.select([main], [], [], 1)
        if ready:
            try:
                chunk = os.read(main, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    proc.wait(timeout=60)
    os.close(main)
    text = out.decode("utf-8", "replace")
    assert proc.returncode == 0, text[-3000:]
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
    # The table's row for the attempt, in its agent stage, with its budget.
    assert re.search(rf"{TASK}\s*│\s*sleeper\s*│\s*1\s*│\s*agent\s*│", plain), plain[-3000:]
    # Redrawn in place: rich moves the cursor up over the previous drawing.
    assert re.search(r"\x1b\[\d*A", text) or "\x1b[2K" in text, text[-2000:]
    assert "sleeper #1: FAIL" in plain
