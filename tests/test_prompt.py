"""The prompt a command agent gets names the paper files that were really staged beside the
repository (staging.json's `paper.staged`), not a fixed name."""

import json

import pytest
import yaml

from tests.conftest import run_cli

pytestmark = [pytest.mark.slow, pytest.mark.privileged]

TASK = "tinytrain_demo24"


def test_the_prompt_names_the_staged_paper(root_host, runs, tmp_path):
    config = tmp_path / "agents.yaml"
    config.write_text(yaml.safe_dump({"reader": {"command": "cat {prompt_file}; ls"}}))
    run_cli(
        "run", "--agent", "reader", "--agent-config", config, "--tasks", TASK,
        "--agent-seconds", "60", "--run-id", "prompt", timeout=900,
    )  # fmt: skip
    attempt = runs / "prompt" / TASK / "reader" / "1"
    staged = json.loads((attempt / "staging.json").read_text())["paper"]["staged"]
    log = (attempt / "agent.log").read_text()
    workdir = f"/home/vm/Desktop/{TASK}"
    named = " and ".join(f"{workdir}/{name}" for name in staged)
    assert staged and f"the paper is {named}." in log, (staged, log[:1500])
    for name in staged:  # and it is there
        assert f"\n{name}\n" in f"\n{log}\n", log
    # Written whole (one raw command on the machine, roles/agent_command/tasks/main.yml): its
    # last line, ended by its newline, then the next command's output.
    assert log.startswith("You are on a fresh Linux machine as user vm"), log[:300]
    assert "the versions you installed.\n" in log, log
