"""Codex CLI (agents/codex.yaml) and Claude Code (agents/claude-code.yaml), the real tools from
npm, driven through the pipeline by the scripted model server on loopback: Codex through
OpenAI's Responses API (`/v1/responses`, streamed events), Claude Code through Anthropic's
Messages API (`/v1/messages`, streamed events). No network to a model provider, no key. Both
attempts run at once in one `deploybench run`, each on a fresh local Debian 12 machine; both
tools ship a native binary inside their npm packages, installed before the budget starts.

While each attempt runs, the machine's overlay upper layer (everything the agent and the
harness changed on its disk) is searched for the canary key after the agent was stopped and
before the machine is destroyed (`UpperLayerWatch`)."""

from __future__ import annotations

import json
import shlex
import subprocess
import threading
import time
from pathlib import Path

import pytest
import yaml

from deploybench import runfolder, trajectories
from tests.conftest import REPO, run_cli
from tests.fresh_env import ENV_COMMAND, fresh_login, seen
from tests.scripted_llm import (
    RUNBOOK,
    Reply,
    ScriptedLLM,
    legacycalc_solution,
    print_first_calls,
)

# The two installs (nodejs, npm, the tools' native binaries) took 7.5 minutes at load average 15.
pytestmark = [pytest.mark.slow, pytest.mark.privileged, pytest.mark.timeout(2400)]

TASK = "legacycalc_demo24"
WORKDIR = f"/home/vm/Desktop/{TASK}"
CANARY = "sk-canary-cli-agents-deploybench-91d0b4"
RUNBOOK_PATH = f"{WORKDIR.lstrip('/')}/RUNBOOK.MD"
# Paths an upper layer is looked up for, relative to the machine's root.
PROBES = (
    RUNBOOK_PATH,
    "opt/deploybench-agent/openhands/venv/bin/python",
    "opt/deploybench-agent/codex/npm/bin/codex",
    "opt/deploybench-agent/claude-code/npm/bin/claude",
)


class UpperLayerWatch:
    """Searches an attempt's machine's overlay upper layer for a needle once its agent has
    been stopped and before the machine is destroyed. The first sign of the stop on the
    controller is the machine's state tarball, streamed into the attempt folder by the stop
    stage before the verifier runs; stop.json is written only with the verdict, a moment
    before the machine goes, so it is the sign only when the tarball came and was unpacked
    between two looks (a scan started that late can lose the race with the destroy). The
    upper layer is exactly what was written on the machine's disk; a scan records the files
    holding the needle and which of a few paths the layer held (the task's RUNBOOK.MD, an
    agent's install), which shows the scan saw the agent's work."""

    def __init__(self, state_home: Path, attempts: list[Path], needle: str):
        self.state_home = state_home
        self.pending = list(attempts)
        self.needle = needle
        self.scans: dict[Path, dict[str, dict]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._scanning: list[threading.Thread] = []

    def _uppers(self, attempt: Path) -> list[Path]:
        """The attempt's machines: its deployment (owner.json names the attempt) is <id>, its
        machines are named <prefix>-<id>-<n> (the local backend's naming)."""
        uppers = []
        for owner in self.state_home.glob("deployments/*/owner.json"):
            named = json.loads(owner.read_text()).get("attempt")
            if named and Path(named).resolve() == attempt.resolve():
                uppers += self.state_home.glob(f"machines/*-{owner.parent.name}-*/layer/upper")
        return sorted(uppers)

    def _scan(self, attempt: Path) -> dict[str, dict]:
        found: dict[str, dict] = {}
        for upper in self._uppers(attempt):
            proc = subprocess.run(
                ["grep", "-rlF", "--devices=skip", "--", self.needle, str(upper)],
                capture_output=True,
                text=True,
            )
            found[upper.parent.parent.name] = {
                "holding": proc.stdout.splitlines(),
                "grep_rc": proc.returncode,  # 1: searched, nothing found
                "grep_errors": proc.stderr.splitlines()[:20],
                "present": [p for p in PROBES if (upper / p).exists()],
            }
        return found

    def _watch(self) -> None:
        # Each scan in its own thread, started the moment its attempt stops: a scan of one
        # machine must not hold back another's while that machine is destroyed (attempts that
        # stop together; a scan of a large install takes a while on a loaded host).
        while self.pending and not self._stop.is_set():
            for attempt in [a for a in self.pending if self._stopped(a)]:
                scan = threading.Thread(target=self._scan_into, args=(attempt,), daemon=True)
                scan.start()
                self._scanning.append(scan)
                self.pending.remove(attempt)
            time.sleep(0.5)

    @staticmethod
    def _stopped(attempt: Path) -> bool:
        # On local machines the stages after the agent run from the host: the handover that
        # says the agent ended is written before them, the machine's disk kept until destroy.
        hand = runfolder.read_handover(attempt) or {}
        return hand.get("ended") is True or any(
            (attempt / name).exists() for name in (runfolder.STATE_TARBALL, runfolder.STOP)
        )

    def _scan_into(self, attempt: Path) -> None:
        self.scans[attempt] = self._scan(attempt)

    def __enter__(self) -> UpperLayerWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        for scan in self._scanning:
            scan.join()

    def check(self, attempt: Path, holding: str = RUNBOOK_PATH) -> None:
        """The attempt's one machine was scanned, its layer held `holding` (the agent's work),
        the search ran through (grep rc 1: nothing found; rc 2 only for files removed mid-scan) and
        no file held the needle."""
        scan = self.scans.get(attempt)
        assert scan, f"no scan of the upper layer for {attempt}"
        assert len(scan) == 1 and all(holding in m["present"] for m in scan.values()), scan
        assert all(not m["holding"] for m in scan.values()), scan
        # grep exits 2 when a file it listed is gone before it reads it: the verifier's scratch
        # files come and go on the live machine during the scan (the likely cause of an rc 2 seen
        # once in CI, when the errors were not yet recorded). Such a file
        # was removed after the agent stopped, so the stopped agent's disk is still all read;
        # any other error fails the check.
        for machine in scan.values():
            errors = machine["grep_errors"]
            vanished = [e for e in errors if e.endswith("No such file or directory")]
            assert machine["grep_rc"] == 1 or (
                machine["grep_rc"] == 2 and errors and errors == vanished
            ), scan


def shell_solution() -> list[Reply]:
    """What the machine has (the environment probe of tests/fresh_env.py), then legacycalc's
    commands, as either tool's shell calls, up to and without the runbook."""
    probe = Reply("First, what this machine has.", ENV_COMMAND)
    return [probe, *(Reply(r.content, r.command) for r in legacycalc_solution()[:-2])]


def codex_solution() -> list[Reply]:
    # The runbook by a heredoc in its shell; the end of turn is a plain text answer.
    runbook = legacycalc_solution()[-2]
    return [*shell_solution(), runbook, Reply("legacycalc builds and its check passes.")]


def claude_solution() -> list[Reply]:
    # The runbook by its Write tool (a file_edit in contract 5).
    write = Reply(
        "It matches. Writing the runbook.",
        tool="Write",
        arguments={"file_path": f"{WORKDIR}/RUNBOOK.MD", "content": RUNBOOK},
    )
    return [*shell_solution(), write, Reply("legacycalc builds and its check passes.")]


def spec(name: str, **changes) -> dict:
    return {**yaml.safe_load((REPO / "agents" / f"{name}.yaml").read_text())[name], **changes}


# The harness's own folder on the machine (the prompt, the agent's log and trajectory).
HARNESS_FOLDER = "/home/vm/.deploybench/"
# sshd's records of the harness's own logins: written whenever a session gets a terminal, as
# some of the scaffold step's do (a nop attempt's sessions may not have). Debian 13 keeps them
# in wtmpdb's database (pam_wtmpdb), /var/log/wtmp.db.
LOGIN_RECORDS = ("/var/log/wtmp", "/var/log/wtmp.db", "/var/log/lastlog", "/var/log/btmp")


def changes_now(state_home: Path, attempt: Path) -> list[str]:
    """What has been changed on the attempt's machine so far: its overlay's upper layer, less
    what the harness wrote before boot (deploybench.local.machine.changed_files)."""
    from deploybench.local import machine

    uppers = UpperLayerWatch(state_home, [], "")._uppers(attempt)
    assert len(uppers) == 1, uppers
    return machine.changed_files(state_home, uppers[0].parent.parent.name)


def environments_now(state_home: Path, attempt: Path) -> list[bytes]:
    """The environment of every process on the attempt's machine now, read by the host."""
    from deploybench.local import machine

    uppers = UpperLayerWatch(state_home, [], "")._uppers(attempt)
    mdir = uppers[0].parent.parent
    out = []
    for pid in machine.machine_processes(machine.read_info(mdir) or {}):
        try:
            out.append(Path(f"/proc/{pid}/environ").read_bytes())
        except OSError:
            continue  # ended since it was listed
    return out


def looker(state_home: Path, attempt: Path, into: list[str], envs: list[bytes] | None = None):
    """A first-request hook that keeps changes_now's rows in `into` (its error as a row: the
    server's thread must answer the agent whatever the look found), and with `envs` the
    environments of the machine's processes at that moment."""

    def look() -> None:
        try:
            into.extend(changes_now(state_home, attempt))
            if envs is not None:
                envs.extend(environments_now(state_home, attempt))
        except Exception as exc:  # noqa: BLE001 - shown by the test's assertion instead
            into.append(f"look failed\t{exc!r}")

    return look


def beyond_the_prefix(rows: list[str], nop_rows: list[str], scaffold: str) -> list[str]:
    """The changes a scaffold made outside its prefix: what its machine holds at the agent's
    first model call that a `nop` attempt's machine (same task, same stages) did not hold
    after its stop, other than the prefix and the harness's own folder."""
    nop = {row.split("\t", 1)[1] for row in nop_rows}
    prefix = f"/opt/deploybench-agent/{scaffold}/"
    return [
        row
        for row in rows
        if (path := row.split("\t", 1)[1]) not in nop
        and not path.startswith((prefix, HARNESS_FOLDER))
        and path not in LOGIN_RECORDS
    ]


def files_holding(folder: Path, needle: str) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def events_of(attempt: Path) -> list[dict]:
    events = [json.loads(x) for x in (attempt / "trajectory.jsonl").read_text().splitlines()]
    return trajectories.from_contract5(events)  # raises on any event outside contract 5


def probe_output(events: list[dict], folder: Path, name: str, fresh: str) -> str:
    """The output of the agent's first command, the environment probe (Codex wraps it in
    `/bin/bash -lc '...'`), saved beside the fresh login's output for the comparison."""
    first = next(e for e in events if e["kind"] == "command")
    assert ENV_COMMAND in (first["command"], *shlex.split(first["command"])), first
    (folder / "env-fresh-login.txt").write_text(fresh)
    (folder / f"env-{name}.txt").write_text(first["output"])
    print(f"fresh: {seen(fresh)}\n{name}: {seen(first['output'])}")
    return first["output"]


def test_codex_and_claude_code_solve_the_demo(root_host, runs, state_home, tmp_path):
    codex_script, claude_script = codex_solution(), claude_solution()
    # What a login shell of vm sees on a fresh machine of the same image (made and destroyed
    # before the run): each agent's first command must see the same.
    started = time.monotonic()
    fresh = fresh_login("debian12")
    print(f"fresh login: {time.monotonic() - started:.1f} s")
    run_dir = runs / "cli"
    attempts = {a: run_dir / TASK / a / "1" for a in ("codex", "claude-code")}
    at_first_call: dict[str, list[str]] = {"codex": [], "claude-code": []}
    with (
        ScriptedLLM(
            codex_script,
            dialect="codex",
            on_first_request=looker(state_home, attempts["codex"], at_first_call["codex"]),
        ) as codex,
        ScriptedLLM(
            claude_script,
            dialect="claude",
            on_first_request=looker(
                state_home, attempts["claude-code"], at_first_call["claude-code"]
            ),
        ) as claude,
    ):
        config = tmp_path / "agents.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "codex": spec("codex", model="scripted", base_url=codex.base_url),
                    "claude-code": spec(
                        "claude-code",
                        model="scripted",
                        # Anthropic's SDK adds /v1/messages to the base URL itself.
                        base_url=claude.base_url.removesuffix("/v1"),
                        max_steps=20,
                    ),
                }
            )
        )
        started = time.monotonic()
        with UpperLayerWatch(state_home, list(attempts.values()), CANARY) as watch:
            run_cli(
                "run", "--agent", "codex,claude-code,nop", "--agent-config", config,
                "--tasks", TASK, "--parallel", "3", "--run-id", "cli",
                # The task's 600 s were nearly used up by apt-get at load average 15.
                "--agent-seconds", "1500",
                env={"OPENAI_API_KEY": CANARY, "ANTHROPIC_API_KEY": CANARY}, timeout=2300,
            )  # fmt: skip
        print(f"both attempts: {time.monotonic() - started:.1f} s")
    first_calls = print_first_calls(
        {"codex": (attempts["codex"], codex), "claude-code": (attempts["claude-code"], claude)}
    )
    rows = {
        r["agent"]: r for r in map(json.loads, (run_dir / "results.jsonl").read_text().splitlines())
    }
    infra = run_dir / "infra_errors.jsonl"
    assert set(rows) == {"codex", "claude-code", "nop"}, (
        infra.read_text() if infra.is_file() else rows
    )
    for name in attempts:
        row = rows[name]
        log = (attempts[name] / "agent.log").read_text(errors="replace")
        assert row["status"] == "completed", row
        assert row["passed"], (name, log[-4000:])
        assert row["stop_type"] == "self_stop", row
        assert row["runbook_status"] == "SUCCESS"
        assert (attempts[name] / "trajectory.native.jsonl").is_file()

    # The machine was bare when each agent started: at its first model call nothing had
    # changed but its scaffold's prefix, the harness's own folder and what the harness changes
    # for every agent (the nop attempt's machine after its stop).
    nop_rows = (run_dir / TASK / "nop" / "1" / "state" / "changed_files.txt").read_text()
    for name, rows_then in at_first_call.items():
        print(f"{name}: {len(rows_then)} changed files at its first call")
        assert any(f"/opt/deploybench-agent/{name}/npm/" in r for r in rows_then), rows_then[:20]
        beyond = beyond_the_prefix(rows_then, nop_rows.splitlines(), name)
        assert beyond == [], (name, beyond)

    # Both agents called their server after their machine was ready: the README's figure.
    assert all(s is not None and s > 0 for s in first_calls.values()), first_calls

    # Codex: every script reply was asked for, plus the polls of commands that outlived its
    # 30 s wait; its turn's usage is the sum of what the server sent (polls included).
    assert len(codex.requests) == len(codex_script)
    sent = [{k.lower(): v for k, v in h.items()} for h in codex.headers]
    assert all(h.get("authorization") == f"Bearer {CANARY}" for h in sent)
    row = rows["codex"]
    assert row["tokens_in"] == codex.tokens_in and row["tokens_out"] == codex.tokens_out
    events = events_of(attempts["codex"])
    commands = [e for e in events if e["kind"] == "command"]
    assert len(commands) == 8 and all(isinstance(e.get("exit_code"), int) for e in commands)
    # Its commands ran in the machine's own environment, not its scaffold's (Node's, npm's).
    assert seen(probe_output(events, tmp_path, "codex", fresh)) == seen(fresh)
    [make] = [e for e in commands if e["command"] == "/bin/bash -lc make"]
    assert make["exit_code"] != 0 and "throw" in make["output"]
    assert events[-1]["kind"] == "finish"
    assert events[-1]["output"] == codex_script[-1].content

    # Claude Code: one step per model call of the script; the key in its x-api-key header;
    # its result's usage (the real output counts) equals what the server sent.
    assert len(claude.requests) == len(claude_script)
    sent = [{k.lower(): v for k, v in h.items()} for h in claude.headers]
    assert all(h.get("x-api-key") == CANARY for h in sent)
    row = rows["claude-code"]
    assert row["steps"] == len(claude.requests)
    assert row["tokens_in"] == claude.tokens_in and row["tokens_out"] == claude.tokens_out
    events = events_of(attempts["claude-code"])
    commands = [e for e in events if e["kind"] == "command"]
    assert len(commands) == 7 and all(isinstance(e.get("exit_code"), int) for e in commands)
    assert seen(probe_output(events, tmp_path, "claude-code", fresh)) == seen(fresh)
    [make] = [e for e in commands if e["command"] == "make"]
    assert make["exit_code"] != 0 and "throw" in make["output"]
    assert [e["path"] for e in events if e["kind"] == "file_edit"] == [f"{WORKDIR}/RUNBOOK.MD"]
    assert events[-1]["kind"] == "finish"

    # The canary reached both agents (the servers saw it) and is in no file of the run
    # folder, the state folder, or either machine's disk.
    assert files_holding(runs, CANARY) == []
    assert files_holding(state_home, CANARY) == []
    for attempt in attempts.values():
        watch.check(attempt)
