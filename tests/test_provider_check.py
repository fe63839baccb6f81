"""The pre-flight call to an agent's model provider (deploybench/attempt/provider_check.py):
the rule row by row, then real HTTP servers on loopback that accept, refuse or are not there,
for both APIs, and `deploybench run` refusing in one line before any machine."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml

from deploybench.attempt import agents, provider_check
from tests.conftest import run_cli


@pytest.mark.parametrize(
    ("status", "says"),
    [
        (200, None),
        (404, None),
        (405, None),
        (401, "refused the key"),
        (403, "refused the key"),
        (429, "is out of quota or rate-limiting"),
        (500, "answered with a server error (500)"),
        (503, "answered with a server error (503)"),
        (418, "answered 418"),
    ],
)
def test_what_each_answer_means(status, says):
    assert provider_check.meaning(status) == says


class Provider:
    """A model provider on loopback that answers GET .../models with `status` and keeps the
    headers and paths it was sent."""

    def __init__(self, status: int):
        self.status, self.seen = status, []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                outer.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                body = json.dumps({"data": []} if status == 200 else {"error": "no"}).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def spec(name: str, base_url: str, api: str = "openai", key: str = "OPENAI_API_KEY"):
    return agents.AgentSpec(
        name=name, kind="command", base_url=base_url, api=api, env_from_controller=[key]
    )


def test_an_accepting_provider_is_called_once_with_the_key_in_its_own_way():
    openai, anthropic = Provider(200), Provider(200)
    try:
        specs = [
            spec("a", f"{openai.url}/v1"),
            spec("b", f"{openai.url}/v1"),  # the same provider and key: one call
            spec("c", anthropic.url, api="anthropic", key="ANTHROPIC_API_KEY"),
        ]
        environ = {"OPENAI_API_KEY": "sk-one", "ANTHROPIC_API_KEY": "sk-two"}
        assert provider_check.problems(specs, environ) == []
    finally:
        openai.close()
        anthropic.close()
    [(path, headers)] = openai.seen
    assert path == "/v1/models" and headers["authorization"] == "Bearer sk-one"
    [(path, headers)] = anthropic.seen
    assert path == "/v1/models" and headers["x-api-key"] == "sk-two"
    assert "authorization" not in headers


def test_a_refusing_or_absent_provider_is_one_line_each():
    refusing = Provider(401)
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    try:
        lines = provider_check.problems(
            [spec("r", f"{refusing.url}/v1"), spec("gone", f"http://127.0.0.1:{closed}/v1")],
            {"OPENAI_API_KEY": "sk-bad"},
        )
    finally:
        refusing.close()
    assert len(lines) == 2
    assert lines[0].startswith(f"agent r: the model provider at {refusing.url}/v1 refused the key")
    assert "agent gone:" in lines[1] and "cannot be reached" in lines[1]
    assert all("sk-bad" not in line for line in lines)


def test_a_spec_without_a_provider_or_a_key_is_not_called():
    assert provider_check.problems([agents.AgentSpec(name="x", kind="command")], {}) == []


def test_run_with_a_refused_key_makes_no_machine(runs, state_home, tmp_path):
    refusing = Provider(401)
    config = tmp_path / "agents.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "refused": {
                    "command": "true",
                    "base_url": f"{refusing.url}/v1",
                    "env_from_controller": ["OPENAI_API_KEY"],
                }
            }
        )
    )
    try:
        proc = run_cli(
            "run", "--agent", "refused", "--agent-config", config,
            "--tasks", "legacycalc_demo24", "--run-id", "refused",
            env={"OPENAI_API_KEY": "sk-refused-7c1e"}, check=False,
        )  # fmt: skip
    finally:
        refusing.close()
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "refused the key" in line and "sk-refused-7c1e" not in line, line
    assert not (runs / "refused").exists()
    deployments = state_home / "deployments"
    assert not deployments.exists() or not any(deployments.iterdir())
