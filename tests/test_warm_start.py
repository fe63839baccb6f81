"""The four shipped scaffolds (mini-swe-agent, Codex CLI, Claude Code, OpenHands) started from a
warm scaffold cache on local machines: the figure issue 32 asks for, time from machine ready to
the agent's first model call, measured in one `deploybench run` (`--parallel 1`, so each attempt
has the machine to itself as far as this run goes), and the rule that holds while it is fast:
the machine is bare when the agent starts.

A first run fills the cache (each scaffold installed for real on a debian13 machine, archived
and published). In the second, every machine gets its scaffold's prefix as a read-only layer of
the host's cache (scaffold.json says `layer`, checked against the layer's manifest). At each
agent's first model call its machine's upper layer (everything changed on its disk) holds
nothing of the prefix and nothing a `nop` machine of the same run does not hold, but the
harness's own folder and sshd's login records (OpenHands: nothing in the system's folders or the
package database, its tmux coming in its prefix; its start writes its own files in vm's home).
Each agent's script is one reply that ends it (the scripted server, tests/scripted_llm.py), so
the run measures starts, not work."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from deploybench import runfolder
from tests.conftest import REPO, run_cli
from tests.scripted_llm import MINI_SUBMIT, Reply, ScriptedLLM, print_first_calls
from tests.test_cli_agents import beyond_the_prefix, looker

pytestmark = [pytest.mark.slow, pytest.mark.privileged, pytest.mark.timeout(3600)]

TASK = "legacycalc_demo24"
KEY = "sk-warm-start-deploybench-3a9c"
# Each scaffold's dialect and the one reply that ends it.
SCAFFOLDS = {
    "mini-swe-agent": ("bash", Reply("Nothing to do.", MINI_SUBMIT)),
    "codex": ("codex", Reply("Nothing to do.")),
    "claude-code": ("claude", Reply("Nothing to do.")),
    "openhands": ("openhands", Reply("", tool="finish", arguments={"message": "done"})),
}


def config(tmp_path: Path, servers: dict[str, ScriptedLLM]) -> Path:
    specs = {}
    for name, server in servers.items():
        spec = yaml.safe_load((REPO / "agents" / f"{name}.yaml").read_text())[name]
        # Anthropic's SDK adds /v1/messages to the base URL itself.
        url = server.base_url.removesuffix("/v1") if name == "claude-code" else server.base_url
        specs[name] = {**spec, "model": "scripted", "base_url": url, "agent_seconds": 600}
    path = tmp_path / f"agents-{time.monotonic_ns()}.yaml"
    path.write_text(yaml.safe_dump(specs))
    return path


def run(agents: str, path: Path, run_id: str, parallel: int) -> None:
    run_cli(
        "run", "--agent", agents, "--agent-config", path, "--tasks", TASK,
        "--image", "debian13", "--parallel", str(parallel), "--run-id", run_id,
        env={"OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": KEY}, timeout=3000,
    )  # fmt: skip


def test_every_scaffold_starts_from_the_warm_cache_on_a_bare_machine(
    root_host, runs, state_home, tmp_path
):
    names = list(SCAFFOLDS)
    # Cold: every scaffold installed once and published in the controller's cache.
    cold = {n: ScriptedLLM([reply], dialect=d) for n, (d, reply) in SCAFFOLDS.items()}
    for server in cold.values():
        server.__enter__()
    try:
        started = time.monotonic()
        run(",".join(names), config(tmp_path, cold), "cold", parallel=2)
        print(f"cold run: {time.monotonic() - started:.0f} s")
    finally:
        for server in cold.values():
            server.__exit__(None, None, None)
    for name in names:
        made = json.loads((runs / "cold" / TASK / name / "1" / runfolder.SCAFFOLD).read_text())
        assert "publish" in made, made

    # Warm: one run, one attempt at a time, a nop beside them for what the harness changes.
    attempts = {n: runs / "warm" / TASK / n / "1" for n in names}
    seen: dict[str, list[str]] = {n: [] for n in names}
    warm = {
        n: ScriptedLLM(
            [reply], dialect=d, on_first_request=looker(state_home, attempts[n], seen[n])
        )
        for n, (d, reply) in SCAFFOLDS.items()
    }
    for server in warm.values():
        server.__enter__()
    try:
        started = time.monotonic()
        run(",".join([*names, "nop"]), config(tmp_path, warm), "warm", parallel=1)
        print(f"warm run: {time.monotonic() - started:.0f} s")
    finally:
        for server in warm.values():
            server.__exit__(None, None, None)
    first_calls = print_first_calls({n: (attempts[n], warm[n]) for n in names})
    assert all(s is not None and s > 0 for s in first_calls.values()), first_calls

    nop_rows = (runs / "warm" / TASK / "nop" / "1" / "state" / "changed_files.txt").read_text()
    for name in names:
        made = json.loads((attempts[name] / runfolder.SCAFFOLD).read_text())
        print(name, "scaffold:", {k: v for k, v in made.items() if k != "system_packages"})
        # The prefix came as the cache's layer: nothing claimed, copied or installed.
        assert set(made) >= {"layer"} and not {"claim", "publish"} & set(made), made
        layer = Path(made["layer"]["layer"])
        manifest = json.loads(layer.with_name(layer.name + ".json").read_text())
        assert made["layer"]["tree"] == manifest["tree"]
        assert made["layer"]["sha256"] == manifest["archive_sha256"]
        # At the first call: the look found the machine (the harness's folder at least), and
        # nothing of the prefix nor anything a nop machine lacks was on its disk.
        rows = seen[name]
        assert rows and not [r for r in rows if r.startswith("look failed")], rows
        assert any("/home/vm/.deploybench/" in r for r in rows), rows
        assert not [r for r in rows if "/opt/deploybench-agent/" in r], (name, rows)
        beyond = beyond_the_prefix(rows, nop_rows.splitlines(), name)
        if name == "openhands":
            # OpenHands' start writes its own runtime files (its tmux socket, its file viewer's
            # URL, its state in vm's home); its tmux comes in its prefix, so the machine's
            # packages and system folders are a fresh machine's.
            print("openhands beyond its prefix:", beyond)
            system = ("/usr/", "/etc/", "/var/lib/dpkg/", "/var/lib/apt/", "/var/cache/apt/")
            assert not [r for r in beyond if r.split("\t", 1)[1].startswith(system)], beyond
        else:
            assert beyond == [], (name, rows)
