"""The model gateway: every model call of a run's agents passes through the controller.

The runner starts one gateway per run on the controller's loopback, in front of the real
provider(s). Each attempt gets a lease: a key of its own, valid from when its agent starts until
its agent stage ends. The machine sees only that key and the gateway's address (a local machine
reaches it through its bridged loopback port); the provider's key stays in the controller's
memory. Per call the gateway records, in the attempt's model_calls.jsonl: time, model, path,
status, seconds, retries, input/output/cached tokens, and cost where a price is known. Those
records are the attempt's token and cost figures. A call the provider fails for its own reasons
(run/provider_failures.py) marks the lease `provider_error`: every later call of the attempt is
refused without reaching the provider, and the runner counts the attempt as an infrastructure
error, never as the model's failure. Past a lease's token or cost cap every
further call is refused with a clear message and the lease says `budget_tokens` or
`budget_cost`.

Why our own and not LiteLLM's proxy: per-attempt keys that die with the attempt and per-key caps
need LiteLLM's key management, which keeps its keys in a Postgres database; a pass-through that
relays bytes and reads usage from the three APIs our agents speak (OpenAI chat completions and
responses, Anthropic messages, streamed or not) is this file, with the standard library only.
docs/agents.md has the figures."""

from __future__ import annotations

import contextlib
import http.client
import json
import secrets
import ssl
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from deploybench import jsonl, runfolder
from deploybench.run import provider_failures as rule

HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailers",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
    "authorization",
    "x-api-key",
    "accept-encoding",  # the answer is read for its usage: uncompressed
}
MAX_BODY = 64 * 1024 * 1024  # a request larger than this is refused (413)
MAX_PARSE = 8 * 1024 * 1024  # a non-streamed answer is parsed for its usage up to this size
KEY_PREFIX = "dbgw-"


@dataclass(frozen=True)
class Upstream:
    """A real provider endpoint: its base URL, its API (openai or anthropic) and its key."""

    base_url: str
    api: str = "openai"
    key: str = field(default="", repr=False)


@dataclass
class Lease:
    """One attempt's access to the gateway."""

    key: str = field(repr=False)
    attempt: Path
    upstream: Upstream
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cached: int = 0
    cost_usd: float = 0.0
    priced: bool = True
    provider_error: str | None = None
    budget: str | None = None
    # Whether the key opens anything now: an attempt's lease is opened closed, and the runner
    # lets it open the gateway only while the play that installs and runs the agent goes
    # (run/runner.py); other holders (a diagnosis) open it at once.
    active: bool = True
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def over_budget(self) -> str | None:
        if self.max_tokens is not None and self.tokens_in + self.tokens_out >= self.max_tokens:
            return "budget_tokens"
        if self.max_cost_usd is not None and self.cost_usd >= self.max_cost_usd:
            return "budget_cost"
        return None

    def summary(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "tokens_cached": self.tokens_cached,
            "cost_usd": round(self.cost_usd, 6) if self.priced and self.calls else None,
            "provider_error": self.provider_error,
            "budget": self.budget,
        }


def usage_of(obj: Any) -> dict[str, Any]:
    """Tokens and model of one JSON answer or stream event, in any of the three APIs."""
    if not isinstance(obj, dict):
        return {}
    found: dict[str, Any] = {}
    for holder in (obj, obj.get("response"), obj.get("message")):
        if not isinstance(holder, dict):
            continue
        if isinstance(holder.get("model"), str):
            found.setdefault("model", holder["model"])
        usage = holder.get("usage")
        if not isinstance(usage, dict):
            continue
        tin = usage.get("prompt_tokens", usage.get("input_tokens"))
        tout = usage.get("completion_tokens", usage.get("output_tokens"))
        details = usage.get("prompt_tokens_details") or usage.get("input_tokens_details") or {}
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        if "cache_read_input_tokens" in usage:  # Anthropic counts cache reads apart
            cached = usage.get("cache_read_input_tokens") or 0
            if isinstance(tin, int):
                tin += cached + (usage.get("cache_creation_input_tokens") or 0)
        for name, value in (("input", tin), ("output", tout), ("cached", cached)):
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                found[name] = max(found.get(name, 0), value)
    return found


def _merge(into: dict[str, Any], more: dict[str, Any]) -> None:
    # Stream events repeat or grow the counts (Anthropic's message_delta carries the output so
    # far): the largest of each is the call's.
    for key, value in more.items():
        if key == "model":
            into.setdefault("model", value)
        else:
            into[key] = max(into.get(key, 0), value)


class Gateway:
    """One run's model gateway on 127.0.0.1 of the controller."""

    def __init__(self, retries: int = 3, backoff: float = 1.0, timeout: float = 600.0):
        self.retries = retries
        self.backoff = backoff
        self.timeout = timeout
        self._leases: dict[str, Lease] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # ---- the run's side ----
    def start(self) -> Gateway:
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                gateway._handle(self, "POST")

            def do_GET(self) -> None:
                gateway._handle(self, "GET")

            def do_HEAD(self) -> None:
                gateway._handle(self, "HEAD")

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
        ).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        with self._lock:
            self._leases.clear()

    @property
    def port(self) -> int:
        assert self._server is not None, "start() first"
        return int(self._server.server_address[1])

    def url_for(self, upstream: Upstream) -> str:
        """The base URL an agent is given for this upstream: the gateway, with the upstream's
        path (so /v1/chat/completions stays /v1/chat/completions)."""
        path = urlsplit(upstream.base_url).path.rstrip("/")
        return f"http://127.0.0.1:{self.port}{path}"

    def open(
        self,
        attempt: Path,
        upstream: Upstream,
        max_tokens: int | None = None,
        max_cost_usd: float | None = None,
        prices: dict[str, tuple[float, float]] | None = None,
        active: bool = True,
    ) -> Lease:
        lease = Lease(
            key=KEY_PREFIX + secrets.token_urlsafe(24),
            attempt=Path(attempt),
            upstream=upstream,
            max_tokens=max_tokens,
            max_cost_usd=max_cost_usd,
            prices=dict(prices or {}),
            active=active,
        )
        with self._lock:
            self._leases[lease.key] = lease
        return lease

    def close(self, lease: Lease) -> dict[str, Any]:
        """The lease's key stops working; its totals."""
        with self._lock:
            self._leases.pop(lease.key, None)
        return lease.summary()

    # ---- the agent's side ----
    def _lease_of(self, handler: BaseHTTPRequestHandler) -> Lease | None:
        key = handler.headers.get("x-api-key") or ""
        auth = handler.headers.get("Authorization") or ""
        if auth.lower().startswith("bearer "):
            key = key or auth[7:].strip()
        with self._lock:
            lease = self._leases.get(key.strip())
        return lease if lease is not None and lease.active else None

    @staticmethod
    def _answer(handler: BaseHTTPRequestHandler, status: int, kind: str, message: str) -> None:
        body = json.dumps({"error": {"type": kind, "message": message}}).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.send_header("Connection", "close")
        handler.end_headers()
        if handler.command != "HEAD":
            handler.wfile.write(body)

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        lease = self._lease_of(handler)
        if lease is None:
            self._answer(
                handler, 401, "deploybench_gateway",
                "deploybench gateway: this key is not valid here (a key lives only while its "
                "attempt's agent runs)",
            )  # fmt: skip
            return
        base = urlsplit(lease.upstream.base_url).path.rstrip("/")
        path = handler.path
        if base and not (
            path == base or path.startswith(base + "/") or path.startswith(base + "?")
        ):
            self._answer(handler, 404, "deploybench_gateway", f"no route {path[:200]}")
            return
        length = int(handler.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self._answer(handler, 413, "deploybench_gateway", "request too large")
            return
        body = handler.rfile.read(length) if length else b""
        if lease.provider_error:
            # The attempt is the infrastructure's already (it will be tried again on a fresh
            # machine): nothing more of it reaches the provider, and the agent is told.
            self._answer(
                handler, 503, "deploybench_provider_error",
                "deploybench gateway: the model provider failed this attempt; it will be tried "
                "again on a fresh machine",
            )  # fmt: skip
            return
        if method == "POST":
            with lease.lock:
                over = lease.budget or lease.over_budget()
                lease.budget = over
            if over:
                what = "tokens" if over == "budget_tokens" else "cost"
                self._answer(
                    handler, 400, over,
                    f"deploybench gateway: this attempt's {what} budget is spent; no further "
                    "model calls are allowed",
                )  # fmt: skip
                return
        self._relay(handler, lease, method, path, body)

    def _headers(self, handler: BaseHTTPRequestHandler, lease: Lease) -> dict[str, str]:
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in HOP_BY_HOP}
        if lease.upstream.key:
            if lease.upstream.api == "anthropic":
                headers["x-api-key"] = lease.upstream.key
            else:
                headers["Authorization"] = f"Bearer {lease.upstream.key}"
        headers["Accept-Encoding"] = "identity"
        return headers

    def _connect(self, upstream: Upstream) -> http.client.HTTPConnection:
        parts = urlsplit(upstream.base_url)
        if parts.scheme == "https":
            return http.client.HTTPSConnection(
                parts.hostname or "", parts.port or 443, timeout=self.timeout,
                context=ssl.create_default_context(),
            )  # fmt: skip
        return http.client.HTTPConnection(
            parts.hostname or "", parts.port or 80, timeout=self.timeout
        )

    def _relay(
        self, handler: BaseHTTPRequestHandler, lease: Lease, method: str, path: str, body: bytes
    ) -> None:
        started = time.monotonic()
        status: int | None = None
        error = ""
        response = conn = None
        tries = 0
        while True:
            tries += 1
            try:
                conn = self._connect(lease.upstream)
                conn.request(method, path, body=body or None, headers=self._headers(handler, lease))
                response = conn.getresponse()
                status, error = response.status, ""
            except (OSError, http.client.HTTPException) as exc:
                status, error, response = None, f"{type(exc).__name__}: {exc}", None
            if rule.first(status) != rule.RETRY or tries > self.retries:
                break
            if response is not None:
                response.read()
            if conn is not None:
                conn.close()
            time.sleep(self.backoff * 2 ** (tries - 1))
        verdict = rule.last(status) if rule.first(status) != rule.OK else rule.OK
        if response is None:
            # Recorded before the answer: the agent's next call, sent the moment this one is
            # answered, must already meet the lease's provider error.
            self._record(lease, path, None, started, tries, {}, error)
            self._answer(handler, 502, "deploybench_gateway", f"provider unreachable: {error}")
            return
        usage: dict[str, Any] = {}
        try:
            self._pass_back(handler, response, usage, method)
        except OSError:
            pass  # the agent went away; what was read is still recorded
        finally:
            conn.close()
        if verdict == rule.PROVIDER:
            error = f"HTTP {status} from the provider"
        self._record(
            lease, path, status, started, tries, usage, error if verdict != rule.OK else ""
        )

    @staticmethod
    def _pass_back(
        handler: BaseHTTPRequestHandler,
        response: http.client.HTTPResponse,
        usage: dict[str, Any],
        method: str,
    ) -> None:
        handler.send_response(response.status)
        streamed = "text/event-stream" in (response.getheader("Content-Type") or "")
        for name, value in response.getheaders():
            if name.lower() not in HOP_BY_HOP:
                handler.send_header(name, value)
        handler.send_header("Connection", "close")
        handler.end_headers()
        if method == "HEAD":
            return
        if streamed:
            # Line by line: each event reaches the agent as it comes, and is read for usage.
            while True:
                line = response.readline()
                if not line:
                    break
                handler.wfile.write(line)
                if line.startswith(b"data:"):
                    handler.wfile.flush()
                    with contextlib.suppress(ValueError):
                        _merge(usage, usage_of(json.loads(line[5:].strip() or b"null")))
            handler.wfile.flush()
            return
        data = response.read()
        handler.wfile.write(data)
        if len(data) <= MAX_PARSE:
            with contextlib.suppress(ValueError):
                _merge(usage, usage_of(json.loads(data or b"null")))

    @staticmethod
    def _record(
        lease: Lease,
        path: str,
        status: int | None,
        started: float,
        tries: int,
        usage: dict[str, Any],
        error: str,
    ) -> None:
        tin, tout = usage.get("input", 0), usage.get("output", 0)
        model = usage.get("model")
        price = lease.prices.get(model) if model else None
        cost = (tin * price[0] + tout * price[1]) / 1e6 if price else None
        call = {
            "t": round(time.time(), 3),
            "path": path.split("?")[0][:200],
            "model": model,
            "status": status,
            "seconds": round(time.monotonic() - started, 3),
            "retries": tries - 1,
            "input_tokens": tin,
            "output_tokens": tout,
            "cached_tokens": usage.get("cached", 0),
            "cost_usd": None if cost is None else round(cost, 6),
            "error": error or None,
        }
        with lease.lock:
            lease.calls += 1
            lease.tokens_in += tin
            lease.tokens_out += tout
            lease.tokens_cached += call["cached_tokens"]
            if cost is None:
                lease.priced = lease.priced and not (tin or tout)
            else:
                lease.cost_usd += cost
            if error and rule.last(status) == rule.PROVIDER and status not in range(200, 400):
                lease.provider_error = lease.provider_error or f"{call['path']}: {error}"
            jsonl.append(lease.attempt / runfolder.MODEL_CALLS, call)
