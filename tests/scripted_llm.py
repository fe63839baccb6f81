"""A scripted OpenAI-compatible chat-completions server on loopback: real agent scaffolds run
against it with no network and no key.

Each POST .../chat/completions gets the next reply of the script: an assistant message that
calls one tool (OpenAI tool calling, which mini-swe-agent, OpenHands and most scaffolds use),
with `usage` token counts. By default the tool is `bash` with {"command": ...} (mini-swe-agent);
`dialect="openhands"` calls OpenHands' own tools instead: `execute_bash` with its required
`security_risk`, and a reply may name any other tool (`finish`, `str_replace_editor`,
`task_tracker`, `think`) with its arguments. A request with `"stream": true` gets the same reply
as server-sent chunks (OpenAI's streaming format, usage in the last chunk). Requests, replies
and the usage sent are recorded so a test can compare them with what the harness reports. When
the script runs out, the last reply is repeated (an agent that never finishes)."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One assistant turn: some reasoning text and one bash command, or another tool (by name,
    with its arguments)."""

    content: str
    command: str = ""
    tool: str | None = None
    arguments: dict[str, Any] | None = None

    def call(self, dialect: str) -> tuple[str, dict[str, Any]]:
        if self.tool:
            return self.tool, dict(self.arguments or {})
        if dialect == "openhands":
            return "execute_bash", {"command": self.command, "security_risk": "LOW"}
        return "bash", {"command": self.command}


@dataclass
class ScriptedLLM:
    script: list[Reply]
    model: str = "scripted"
    dialect: str = "bash"  # or "openhands"
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    usage_sent: list[dict[str, int]] = field(default_factory=list)
    # Wall-clock time (time.time()) of each request, e.g. to time the agent's first call.
    times: list[float] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() first"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def tokens_in(self) -> int:
        return sum(u["prompt_tokens"] for u in self.usage_sent)

    @property
    def tokens_out(self) -> int:
        return sum(u["completion_tokens"] for u in self.usage_sent)

    def completion(self, request: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            n = len(self.requests)
            self.requests.append(request)
            self.times.append(time.time())
            reply = self.script[min(n, len(self.script) - 1)]
            name, arguments = reply.call(self.dialect)
            # Deterministic, plausible counts: about 4 characters a token.
            usage = {
                "prompt_tokens": len(json.dumps(request.get("messages", []))) // 4,
                "completion_tokens": (len(reply.content) + len(json.dumps(arguments))) // 4 + 8,
            }
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
            self.usage_sent.append(usage)
        return {
            "id": f"chatcmpl-scripted-{n + 1}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model") or self.model,
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": reply.content,
                        "tool_calls": [
                            {
                                "id": f"call_{n + 1}",
                                "type": "function",
                                "function": {"name": name, "arguments": json.dumps(arguments)},
                            }
                        ],
                    },
                }
            ],
            "usage": usage,
        }

    @staticmethod
    def chunks(reply: dict[str, Any]) -> list[dict[str, Any]]:
        """The reply as OpenAI's streaming chunks: the role and text, each tool call whole
        (name, id and arguments in one delta), the finish reason, then the usage."""
        message = reply["choices"][0]["message"]
        base = {k: reply[k] for k in ("id", "created", "model")}
        base["object"] = "chat.completion.chunk"

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        out = [chunk({"role": "assistant", "content": message.get("content") or ""})]
        for i, call in enumerate(message.get("tool_calls") or []):
            out.append(chunk({"tool_calls": [{"index": i, **call}]}))
        out.append(chunk({}, reply["choices"][0]["finish_reason"]))
        out.append({**base, "choices": [], "usage": reply["usage"]})
        return out

    def start(self) -> ScriptedLLM:
        llm = self

        class Handler(BaseHTTPRequestHandler):
            def _send(self, code: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    request = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    self._send(400, {"error": {"message": "body is not JSON"}})
                    return
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                with llm._lock:
                    llm.headers.append(dict(self.headers))
                reply = llm.completion(request)
                if not request.get("stream"):
                    self._send(200, reply)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                for chunk in llm.chunks(reply):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": llm.model}]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> ScriptedLLM:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


# mini-swe-agent ends when a command's output starts with this line (and its exit code is 0).
MINI_SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"

RUNBOOK = """STATUS: SUCCESS

# RUNBOOK: legacycalc_demo24

The 2013 sources use dynamic exception specifications, which g++ 12's default (gnu++17)
rejects; they build unchanged with -std=gnu++11.

    sudo apt-get install -y g++ make
    make legacycalc CXXFLAGS="-O2 -Wall -std=gnu++11"
    ./legacycalc < examples/formulas.txt
    make check CXXFLAGS="-O2 -Wall -std=gnu++11"   # check: OK
"""


def legacycalc_solution(submit: str = MINI_SUBMIT) -> list[Reply]:
    """How an agent solves legacycalc_demo24: look, install, fail, read, fix, run, write."""
    return [
        Reply("Let me see what the repository holds.", "ls -la && cat README.md"),
        Reply(
            "It is a C++ project built with make. I install the toolchain.",
            "sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive "
            "apt-get install -y -qq g++ make > /tmp/apt.log 2>&1; echo apt=$?; g++ --version",
        ),
        Reply("Now the build, as the README says.", "make"),
        Reply(
            "The build fails on dynamic exception specifications, which C++17 removed. "
            "The Makefile takes CXXFLAGS, so I build with an older standard.",
            "cat Makefile",
        ),
        Reply(
            "Rebuilding with -std=gnu++11.",
            'make clean && make legacycalc CXXFLAGS="-O2 -Wall -std=gnu++11"',
        ),
        Reply(
            "Running the designated experiment and comparing with the expected output.",
            './legacycalc < examples/formulas.txt && make check CXXFLAGS="-O2 -Wall -std=gnu++11"',
        ),
        Reply(
            "It matches. Writing the runbook.",
            f"cat > RUNBOOK.MD <<'EOF'\n{RUNBOOK}EOF\nhead -n 1 RUNBOOK.MD",
        ),
        Reply("Done.", submit),
    ]


def never_finishes() -> list[Reply]:
    """An agent that keeps looking around and never submits."""
    return [Reply("Let me look again.", "ls")]
