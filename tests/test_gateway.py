"""The model gateway (deploybench/run/gateway.py) for real over HTTP, in front of the scripted
model server (the three APIs our agents speak, streamed and not) and of a provider that fails:
per-call records equal what the server counted, keys are the attempt's alone and die with it,
the provider's key never leaves the controller, provider failures are retried and then the
infrastructure's, an agent's bad request stays the agent's, and caps refuse further calls."""

import http.client
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest

from deploybench import jsonl, runfolder
from deploybench.run import gateway as gw
from deploybench.run import provider_failures as rule
from tests.scripted_llm import Reply, ScriptedLLM

REAL_KEY = "sk-canary-provider-key-0123456789"


def call(url, key, path, body=None, method="POST", header="Authorization"):
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    value = f"Bearer {key}" if header == "Authorization" else key
    data = json.dumps(body).encode() if body is not None else None
    headers = {header: value, "Content-Type": "application/json"}
    conn.request(method, parts.path.rstrip("/") + path, body=data, headers=headers)
    response = conn.getresponse()
    raw = response.read()
    conn.close()
    return response.status, raw


def sse(raw):
    return [json.loads(line[5:]) for line in raw.splitlines() if line.startswith(b"data: {")]


@pytest.fixture
def llm():
    with ScriptedLLM([Reply("look", command="ls"), Reply("done", command="echo hi")]) as server:
        yield server


@pytest.fixture
def gateway():
    g = gw.Gateway(retries=2, backoff=0.01, timeout=10).start()
    yield g
    g.stop()


def lease_for(gateway, tmp_path, base_url, api="openai", **caps):
    attempt = tmp_path / "attempt"
    attempt.mkdir(exist_ok=True)
    lease = gateway.open(attempt, gw.Upstream(base_url, api, REAL_KEY), **caps)
    return lease, gateway.url_for(lease.upstream)


def ledger(lease):
    return jsonl.read(lease.attempt / runfolder.MODEL_CALLS)


def test_chat_completions_streamed_and_not_are_counted_as_the_server_counted(
    llm, gateway, tmp_path
):
    lease, url = lease_for(gateway, tmp_path, llm.base_url)
    messages = [{"role": "user", "content": "hello there"}]
    status, raw_first = call(
        url, lease.key, "/chat/completions", {"model": "m", "messages": messages}
    )
    assert status == 200 and json.loads(raw_first)["choices"][0]["message"]
    body = {"model": "m", "messages": messages, "stream": True}
    status, raw = call(url, lease.key, "/chat/completions", body)
    assert status == 200 and sse(raw)[-1]["usage"] == llm.usage_sent[-1]
    calls = ledger(lease)
    assert [c["input_tokens"] for c in calls] == [u["prompt_tokens"] for u in llm.usage_sent]
    assert [c["output_tokens"] for c in calls] == [u["completion_tokens"] for u in llm.usage_sent]
    assert [c["status"] for c in calls] == [200, 200] and calls[0]["model"] == json.loads(
        raw_first
    )["model"]
    summary = gateway.close(lease)
    assert summary["tokens_in"] == llm.tokens_in and summary["tokens_out"] == llm.tokens_out
    assert summary["provider_error"] is None and summary["calls"] == 2
    # The provider saw its own key, never the attempt's; the attempt's key now opens nothing.
    assert {h.get("Authorization") for h in llm.headers} == {f"Bearer {REAL_KEY}"}
    assert call(url, lease.key, "/chat/completions", body)[0] == 401
    assert len(llm.requests) == 2


def test_responses_and_anthropic_messages_are_counted(gateway, tmp_path):
    with ScriptedLLM([Reply("a", command="ls")], dialect="codex") as codex:
        lease, url = lease_for(gateway, tmp_path, codex.base_url)
        body = {"model": "m", "input": [{"role": "user", "content": "hi"}], "stream": True}
        assert call(url, lease.key, "/responses", body)[0] == 200
        assert ledger(lease)[-1]["input_tokens"] == codex.usage_sent[-1]["prompt_tokens"]
        assert ledger(lease)[-1]["output_tokens"] == codex.usage_sent[-1]["completion_tokens"]
        gateway.close(lease)
    with ScriptedLLM([Reply("a", command="ls")], dialect="claude") as claude:
        base = claude.base_url.removesuffix("/v1")
        lease, url = lease_for(gateway, tmp_path, base, api="anthropic")
        body = {"model": "m", "system": "s", "messages": [{"role": "user", "content": "hi"}],
                "tools": [{"name": "Bash", "input_schema": {"type": "object"}}]}  # fmt: skip
        for stream in (False, True):
            status, _ = call(url, lease.key, "/v1/messages", {**body, "stream": stream},
                             header="x-api-key")  # fmt: skip
            assert status == 200
        sent = claude.usage_sent[-2:]
        assert [c["input_tokens"] for c in ledger(lease)[-2:]] == [u["prompt_tokens"] for u in sent]
        assert [c["output_tokens"] for c in ledger(lease)[-2:]] == [
            u["completion_tokens"] for u in sent
        ]
        # Anthropic's key header carries the provider's key; the attempt's never left.
        assert {h.get("x-api-key") for h in claude.headers} == {REAL_KEY}


class Flaky:
    """A provider that answers the statuses of `plan` in turn (then 200 with usage)."""

    def __init__(self, plan):
        self.plan = list(plan)
        self.seen = 0
        flaky = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status = flaky.plan[flaky.seen] if flaky.seen < len(flaky.plan) else 200
                flaky.seen += 1
                body = {"model": "m", "usage": {"prompt_tokens": 10, "completion_tokens": 5}}
                if status != 200:
                    body = {"error": {"message": f"status {status}"}}
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize(
    ("plan", "status", "seen", "provider_error"),
    [
        ([500, 503], 200, 3, False),  # retried past two server errors: fine
        ([500, 500, 500], 500, 3, True),  # the retries spent: the provider's
        ([429, 429, 429], 429, 3, True),  # a rate limit that outlasts the retries
        ([401], 401, 1, True),  # the key refused: never retried
        ([400], 400, 1, False),  # the agent's own request: passed back, the agent's
    ],
)
def test_provider_failures_are_retried_then_the_infrastructures(
    gateway, tmp_path, plan, status, seen, provider_error
):
    flaky = Flaky(plan)
    try:
        lease, url = lease_for(gateway, tmp_path, flaky.url)
        got, _ = call(url, lease.key, "/chat/completions", {"model": "m", "messages": []})
        assert got == status and flaky.seen == seen
        assert (lease.provider_error is not None) is provider_error, lease.provider_error
        assert ledger(lease)[-1]["retries"] == seen - 1
        # After a provider error nothing more of the attempt reaches the provider.
        again, _ = call(url, lease.key, "/chat/completions", {"model": "m", "messages": []})
        assert (again == 503) is provider_error and flaky.seen == seen + (not provider_error)
    finally:
        flaky.close()


def test_an_unreachable_provider_is_the_infrastructures(gateway, tmp_path):
    import socket

    # A port bound and never listened on: refused, and no other test's server can take it.
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{held.getsockname()[1]}/v1"
    lease, gw_url = lease_for(gateway, tmp_path, url)
    status, raw = call(gw_url, lease.key, "/chat/completions", {"model": "m", "messages": []})
    assert status == 502 and b"unreachable" in raw
    assert lease.provider_error and "Error" in lease.provider_error
    held.close()


def test_a_token_cap_refuses_the_call_after_it(llm, gateway, tmp_path):
    lease, url = lease_for(gateway, tmp_path, llm.base_url, max_tokens=20)
    body = {"model": "m", "messages": [{"role": "user", "content": "x" * 200}]}
    assert call(url, lease.key, "/chat/completions", body)[0] == 200
    assert lease.tokens_in + lease.tokens_out >= 20
    status, raw = call(url, lease.key, "/chat/completions", body)
    assert status == 400 and json.loads(raw)["error"]["type"] == "budget_tokens"
    assert lease.budget == "budget_tokens" and len(llm.requests) == 1


def test_a_cost_cap_needs_a_price_and_refuses_past_it(llm, gateway, tmp_path):
    prices = {"m": (1_000_000.0, 1_000_000.0), "scripted": (1_000_000.0, 1_000_000.0)}  # $1/token
    lease, url = lease_for(gateway, tmp_path, llm.base_url, max_cost_usd=5.0, prices=prices)
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    assert call(url, lease.key, "/chat/completions", body)[0] == 200
    assert ledger(lease)[0]["cost_usd"] == pytest.approx(lease.tokens_in + lease.tokens_out)
    status, raw = call(url, lease.key, "/chat/completions", body)
    assert status == 400 and json.loads(raw)["error"]["type"] == "budget_cost"


def test_a_path_outside_the_upstreams_is_refused_and_no_key_opens_anything(llm, gateway, tmp_path):
    lease, url = lease_for(gateway, tmp_path, llm.base_url)
    root = url.removesuffix("/v1")
    assert call(root, lease.key, "/admin", {})[0] == 404
    for key in ("", "dbgw-guess", REAL_KEY):
        assert call(url, key, "/chat/completions", {"messages": []})[0] == 401
    assert not llm.requests


@pytest.mark.parametrize(
    ("status", "first", "last"),
    [
        (None, rule.RETRY, rule.PROVIDER),
        (200, rule.OK, rule.OK),
        (400, rule.AGENT, rule.AGENT),
        (401, rule.PROVIDER, rule.PROVIDER),
        (403, rule.PROVIDER, rule.PROVIDER),
        (404, rule.PROVIDER, rule.PROVIDER),
        (413, rule.AGENT, rule.AGENT),
        (429, rule.RETRY, rule.PROVIDER),
        (500, rule.RETRY, rule.PROVIDER),
        (503, rule.RETRY, rule.PROVIDER),
        (529, rule.RETRY, rule.PROVIDER),
        (418, rule.AGENT, rule.AGENT),
    ],
)
def test_whose_failure_a_status_is(status, first, last):
    assert rule.first(status) == first and rule.last(status) == last


def test_usage_of_each_api():
    assert gw.usage_of({"model": "a", "usage": {"prompt_tokens": 3, "completion_tokens": 4,
                        "prompt_tokens_details": {"cached_tokens": 2}}}) == {
        "model": "a", "input": 3, "output": 4, "cached": 2}  # fmt: skip
    event = {
        "type": "response.completed",
        "response": {
            "model": "b",
            "usage": {
                "input_tokens": 7,
                "output_tokens": 1,
                "input_tokens_details": {"cached_tokens": 0},
            },
        },
    }
    assert gw.usage_of(event) == {"model": "b", "input": 7, "output": 1, "cached": 0}
    start = {"type": "message_start", "message": {"model": "c", "usage": {
        "input_tokens": 5, "output_tokens": 1, "cache_read_input_tokens": 10,
        "cache_creation_input_tokens": 2}}}  # fmt: skip
    assert gw.usage_of(start) == {"model": "c", "input": 17, "output": 1, "cached": 10}
    assert gw.usage_of({"usage": {"prompt_tokens": True}}) == {}
    assert gw.usage_of("nope") == {}


def test_cloud_machines_reach_the_gateway_by_a_reverse_forward_local_ones_by_the_bridge():
    from deploybench.backends import get_backend, inventory

    machine = {"host": "203.0.113.7", "port": 22, "user": "vm", "private_key_file": "/k",
               "known_hosts_file": "/kh", "backend": "aws", "image": "ubuntu2204",
               "gpu_count": 0}  # fmt: skip
    hosts = inventory.as_data({"m": machine}, [43121])["all"]["children"]["machines"]["hosts"]
    args = hosts["m"]["ansible_ssh_common_args"]
    assert args.endswith("-R 127.0.0.1:43121:127.0.0.1:43121"), args
    assert "StrictHostKeyChecking=yes" in args
    assert "-R" not in inventory.as_data({"m": machine})["all"]["children"]["machines"][
        "hosts"]["m"]["ansible_ssh_common_args"]  # fmt: skip
    # The machine's side binds its own loopback only; the controller opens no port to it (the
    # AWS security group admits SSH from the operator alone: tests/test_aws_backend.py).
    assert get_backend("aws").loopback_by_ssh and get_backend("gcp").loopback_by_ssh
    assert not get_backend("local").loopback_by_ssh


def test_a_cost_cap_without_prices_is_one_line_and_no_machine(tmp_path):
    from tests.conftest import run_cli

    proc = run_cli(
        "run", "--agent", "nop", "--demo", "--max-cost-usd", "1", "--run-id", "nocost",
        check=False,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert (
        proc.stderr.strip()
        .splitlines()[-1]
        .endswith("--max-cost-usd needs --prices FILE (a cost is counted from them)")
    ), proc.stderr


def test_an_attempts_key_opens_the_gateway_only_while_its_agent_is_installed_and_runs(
    llm, gateway, tmp_path
):
    # The runner opens each attempt's lease closed and sets it from the attempt's watch at every
    # playbook event (run/runner.py): here the same watch, fed the events of a real attempt's
    # plays in order, and the gateway asked at each stage.
    from deploybench.run import live

    lease, url = lease_for(gateway, tmp_path, llm.base_url)
    lease.active = False
    watch = live.Watch(tmp_path / "attempt", "t", "a", 1, 60)
    answers = {}
    plays = {v: k for k, v in reversed(live.PLAY_STAGES.items())}
    for stage in ("stage", "install", "agent", "stop", "verify"):
        if stage == "agent":
            event = {"event": "runner_on_start", "event_data": {"task_action": live.AGENT_ACTION}}
        else:
            event = {"event": "playbook_on_play_start", "event_data": {"play": plays[stage]}}
        watch.on_event(event)
        lease.active = watch.key_open
        assert watch.live.stage == stage
        answers[stage] = call(url, lease.key, "/chat/completions", {"messages": []})[0]
    assert answers == {"stage": 401, "install": 200, "agent": 200, "stop": 401, "verify": 401}
    assert len(llm.requests) == 2
