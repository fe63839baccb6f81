"""A scaffold's cached prefix as a read-only layer of local machines (deploybench/attempt/
scaffold_cache.py, `layer`), on real machines: the first attempt installs a small scaffold for
real and publishes its archive; later machines get the archive unpacked once on the host and
laid under their own disk. An agent that holds root writes into the prefix to forge what the
next machines run: its writes land in its own machine's upper layer, the host's layer and its
manifest stay as they were, and the next machine runs the genuine prefix. A machine with the
layer has nothing of the prefix in its upper layer: what changed on its disk is only what the
harness and its agent wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from deploybench import runfolder
from deploybench.attempt import scaffold_cache
from tests.conftest import run_cli

pytestmark = [pytest.mark.slow, pytest.mark.privileged, pytest.mark.timeout(1200)]

TASK = "legacycalc_demo24"
PREFIX = "/opt/deploybench-agent/probe"
GENUINE = "genuine scaffold 5e1f"
INSTALL = (
    "set -e; mkdir -p {prefix}/bin {prefix}/lib;"
    f" printf '#!/bin/sh\\necho {GENUINE}\\n' > {{prefix}}/bin/tool; chmod 755 {{prefix}}/bin/tool;"
    " echo kept > {prefix}/lib/keep.txt"
)
# What the agent saw of its prefix: the tool's output, the files there, whether it may write.
LOOK = (
    "echo tool: $({prefix}/bin/tool); ls {prefix}/bin {prefix}/lib | tr '\\n' ' '; echo;"
    " touch {prefix}/bin/as-vm 2>/dev/null && echo vm-writes || echo vm-refused"
)
# Root on its machine, it rewrites the tool, plants a file, removes one and changes a mode.
FORGE = (
    'sudo sh -c \'printf "#!/bin/sh\\necho forged\\n" > {prefix}/bin/tool;'
    " touch {prefix}/bin/planted; rm {prefix}/lib/keep.txt; chmod 777 {prefix}/bin';"
    " echo after: $({prefix}/bin/tool)"
)


def agents(tmp_path: Path) -> Path:
    base = {"scaffold": "probe", "install": INSTALL, "agent_seconds": 60}
    config = tmp_path / "agents.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "prober": {**base, "command": LOOK},
                "forger": {**base, "command": f"{LOOK}; {FORGE}"},
            }
        )
    )
    return config


def run(config: Path, runs: Path, run_id: str, agent: str) -> Path:
    run_cli(
        "run", "--agent", agent, "--agent-config", config, "--tasks", TASK,
        "--run-id", run_id, timeout=900,
    )  # fmt: skip
    attempt = runs / run_id / TASK / agent / "1"
    assert json.loads((runs / run_id / "results.jsonl").read_text())["status"] == "completed"
    return attempt


def seen(attempt: Path) -> str:
    return (attempt / runfolder.AGENT_LOG).read_text(errors="replace")


def changed(attempt: Path) -> list[str]:
    return (attempt / runfolder.STATE_DIR / runfolder.CHANGED_FILES).read_text().splitlines()


def test_an_agent_that_writes_into_its_layered_prefix_changes_only_its_own_machine(
    root_host, runs, state_home, tmp_path
):
    config = agents(tmp_path)
    # Cold: a real install on the machine, archived and published on the controller.
    built = run(config, runs, "cold", "prober")
    record = json.loads((built / runfolder.SCAFFOLD).read_text())
    assert "publish" in record and "layer" not in record, record
    assert f"tool: {GENUINE}" in seen(built)

    # Warm: the forger's machine holds the prefix as a layer, unpacked once on the host.
    forged = run(config, runs, "forge", "forger")
    record = json.loads((forged / runfolder.SCAFFOLD).read_text())
    assert "claim" not in record and "publish" not in record, record
    layer = record["layer"]
    entry_layer = Path(layer["layer"])
    manifest = json.loads(entry_layer.with_name(entry_layer.name + ".json").read_text())
    assert layer["sha256"] == manifest["archive_sha256"] and layer["tree"] == manifest["tree"]
    log = seen(forged)
    # It saw the genuine prefix, could not write it as vm, and as root changed its own copy.
    assert f"tool: {GENUINE}" in log and "keep.txt" in log and "vm-refused" in log, log
    assert "after: forged" in log, log
    # Those writes are its machine's: copied up into its own upper layer.
    rows = changed(forged)
    assert f"written\t{PREFIX}/bin/tool" in rows, rows
    assert f"written\t{PREFIX}/bin/planted" in rows, rows
    assert f"deleted\t{PREFIX}/lib/keep.txt" in rows, rows

    # The host's layer is as it was unpacked: the same tree, the genuine tool, nothing planted.
    tool = entry_layer / PREFIX.lstrip("/") / "bin" / "tool"
    assert GENUINE in tool.read_text()
    assert not (tool.parent / "planted").exists() and not (tool.parent / "as-vm").exists()
    assert (entry_layer / PREFIX.lstrip("/") / "lib" / "keep.txt").is_file()
    assert scaffold_cache._tree_digest(entry_layer)[0] == manifest["tree"]

    # The next machine runs the genuine prefix from the same, unchanged layer, and nothing of
    # the prefix is in its upper layer: its disk changed only where the harness wrote.
    after = run(config, runs, "after", "prober")
    record = json.loads((after / runfolder.SCAFFOLD).read_text())
    assert record["layer"]["tree"] == layer["tree"], record
    assert f"tool: {GENUINE}" in seen(after) and "planted" not in seen(after), seen(after)
    assert not [r for r in changed(after) if PREFIX in r], changed(after)
