"""A key a spec names in `env_from_controller` reaches the agent's process, from the controller's
environment, and nothing else on the way keeps it: not the run folder (events, logs, the state
the stop stage collected) and not the machine's disk outside the agent's own process. The agent
here plays the one that looks for it: it prints the key's digest (to prove it had it) and then
searches its own machine for the key's text."""

import hashlib

import pytest
import yaml

from tests.conftest import run_cli

TASK = "legacycalc_demo24"
KEY = "canaryKey-agent-keys-test-5f3a9c"


@pytest.mark.slow
@pytest.mark.privileged
def test_a_named_key_reaches_the_agent_and_no_file(root_host, runs, state_home, tmp_path):
    config = tmp_path / "agents.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "keyed": {
                    "env_from_controller": ["KEYS_TEST_API_TOKEN"],
                    "command": (
                        'printf %s "$KEYS_TEST_API_TOKEN" | sha256sum | sed "s/^/DIGEST=/"\n'
                        # What an agent might try: find the key in files the harness left.
                        f"sudo grep -rlsF {KEY[:20]} /etc /home /root /tmp /var /opt"
                        " | sed 's/^/FOUND=/'; true\n"
                    ),
                }
            }
        )
    )
    run_cli(
        "run", "--agent", "keyed", "--agent-config", config, "--tasks", TASK, "--run-id", "keys",
        env={"KEYS_TEST_API_TOKEN": KEY}, timeout=900,
    )  # fmt: skip
    attempt = runs / "keys" / TASK / "keyed" / "1"
    log = (attempt / "agent.log").read_text()
    assert f"DIGEST={hashlib.sha256(KEY.encode()).hexdigest()}" in log, log
    assert "FOUND=" not in log, log
    for path in [p for p in (runs / "keys").rglob("*") if p.is_file()]:
        assert KEY.encode() not in path.read_bytes(), f"the key is in {path}"
