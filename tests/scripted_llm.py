"""A scripted model server on loopback: real agent scaffolds run against it with no network and
no key. It speaks three APIs, by path: OpenAI's chat completions (`/chat/completions`),
OpenAI's Responses API (`/responses`, streamed as server-sent events, which Codex CLI reads) and
Anthropic's Messages API (`/messages`, streamed or not, which Claude Code reads).

Each POST .../chat/completions gets the next reply of the script: an assistant message that
calls one tool (OpenAI tool calling, which mini-swe-agent, OpenHands and most scaffolds use),
with `usage` token counts. By default the tool is `bash` with {"command": ...} (mini-swe-agent);
`dialect="openhands"` calls OpenHands' own tools instead: `execute_bash` with its required
`security_risk`, and a reply may name any other tool (`finish`, `str_replace_editor`,
`task_tracker`, `think`) with its arguments. A request with `"stream": true` gets the same reply
as server-sent chunks (OpenAI's streaming format, usage in the last chunk). Requests, replies
and the usage sent are recorded so a test can compare them with what the harness reports. When
the script runs out, the last reply is repeated (an agent that never finishes).

`dialect="codex"`: a command is Codex's `exec_command` {"cmd"}; when Codex answers that a command
is still running ("session ID N", its 30 s cap on waiting), the server polls it with
`write_stdin` as a model would, without moving on in the script. `dialect="claude"`: a command is
Claude Code's `Bash` tool. In both, a reply with neither command nor tool is a plain text answer,
the agent's end of turn. Claude Code's side requests (those that offer no Bash tool) get a
short text answer and are recorded apart (`side_requests`), outside the script and its usage.

`first_call_seconds` times an attempt from its machine being ready to the agent's first request
to its server, the figure the README gives for each agent."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@dataclass
class Reply:
    """One assistant turn: some reasoning text and one bash command, or another tool (by name,
    with its arguments)."""

    content: str
    command: str = ""
    tool: str | None = None
    arguments: dict[str, Any] | None = None

    @property
    def is_text(self) -> bool:
        return not self.tool and not self.command

    def call(self, dialect: str) -> tuple[str, dict[str, Any]]:
        if self.tool:
            return self.tool, dict(self.arguments or {})
        if dialect == "openhands":
            return "execute_bash", {"command": self.command, "security_risk": "LOW"}
        if dialect == "codex":
            # 30 s is the most Codex waits before it hands back a session to poll.
            return "exec_command", {"cmd": self.command, "yield_time_ms": 30000}
        if dialect == "claude":
            # Its Bash tool waits up to 10 minutes (in ms) for a foreground command.
            return "Bash", {"command": self.command, "description": "Run", "timeout": 600000}
        return "bash", {"command": self.command}


# Codex's answer for a command that outlived its wait: the command goes on in that session.
_CODEX_RUNNING = re.compile(r"Process running with session ID (\d+)")


@dataclass
class ScriptedLLM:
    script: list[Reply]
    model: str = "scripted"
    dialect: str = "bash"  # or "openhands", "codex", "claude"
    requests: list[dict[str, Any]] = field(default_factory=list)
    # Requests answered outside the script: Claude Code's side requests, Codex's polls.
    side_requests: list[dict[str, Any]] = field(default_factory=list)
    polls: int = 0
    headers: list[dict[str, str]] = field(default_factory=list)
    usage_sent: list[dict[str, int]] = field(default_factory=list)
    # Wall-clock time (time.time()) of each request, e.g. to time the agent's first call.
    times: list[float] = field(default_factory=list)
    # Called (in the server's thread) when the first request arrives, before it is answered:
    # the agent has started and done nothing yet, e.g. to look at its machine then.
    on_first_request: Callable[[], None] | None = None
    # A provider outage: from the fail_at-th request of the script (1-based), fail_times requests
    # are answered with fail_status; after them the script starts again from its first reply
    # (the attempt was retried on a fresh machine).
    fail_at: int | None = None
    fail_times: int = 0
    fail_status: int = 500
    failures: int = 0
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

    def turn(self, request: dict[str, Any], prompt: Any) -> tuple[int, Reply, dict[str, int]]:
        """The next reply of the script for this request, and the usage reported for it."""
        with self._lock:
            n = len(self.requests)
            if n == 0 and self.on_first_request is not None:
                self.on_first_request()
            self.requests.append(request)
            self.times.append(time.time())
            reply = self.script[min(n, len(self.script) - 1)]
            if self.dialect == "codex":
                reply = self._codex_poll(request) or reply
            arguments = {} if reply.is_text else reply.call(self.dialect)[1]
            # Deterministic, plausible counts: about 4 characters a token.
            usage = {
                "prompt_tokens": len(json.dumps(prompt)) // 4,
                "completion_tokens": (len(reply.content) + len(json.dumps(arguments))) // 4 + 8,
            }
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
            self.usage_sent.append(usage)
        return n, reply, usage

    def _codex_poll(self, request: dict[str, Any]) -> Reply | None:
        """A poll of the command Codex reports still running, as a model would send; the
        script does not move on (the request is taken back from `requests`)."""
        items = [i for i in request.get("input") or [] if isinstance(i, dict)]
        outputs = [i for i in items if i.get("type") == "function_call_output"]
        if not outputs or items[-1] is not outputs[-1]:
            return None
        running = _CODEX_RUNNING.search(json.dumps(outputs[-1].get("output")))
        if running is None:
            return None
        self.side_requests.append(self.requests.pop())
        self.polls += 1
        return Reply(
            "Still running; waiting for it.",
            tool="write_stdin",
            arguments={"session_id": int(running.group(1)), "chars": "", "yield_time_ms": 300000},
        )

    def completion(self, request: dict[str, Any]) -> dict[str, Any]:
        n, reply, usage = self.turn(request, request.get("messages", []))
        name, arguments = reply.call(self.dialect)
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

    def responses_events(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        """A Responses API reply as the server-sent events Codex reads: the response created,
        each output item done (the text as a message, the call as a function_call), then
        completed with its usage."""
        n, reply, usage = self.turn(request, request.get("input", []))
        rid = f"resp_scripted_{n + 1}_{self.polls}"
        items: list[dict[str, Any]] = []
        if reply.content:
            items.append(
                {
                    "type": "message",
                    "id": f"msg_{rid}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": reply.content, "annotations": []}],
                }
            )
        if not reply.is_text:
            name, arguments = reply.call(self.dialect)
            items.append(
                {
                    "type": "function_call",
                    "id": f"fc_{rid}",
                    "call_id": f"call_{rid}",
                    "name": name,
                    "arguments": json.dumps(arguments),
                    "status": "completed",
                }
            )
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": {"id": rid, "status": "in_progress"}}
        ]
        for i, item in enumerate(items):
            events.append({"type": "response.output_item.added", "output_index": i, "item": item})
            events.append({"type": "response.output_item.done", "output_index": i, "item": item})
        events.append(
            {
                "type": "response.completed",
                "response": {
                    "id": rid,
                    "status": "completed",
                    "output": items,
                    "usage": {
                        "input_tokens": usage["prompt_tokens"],
                        "input_tokens_details": {"cached_tokens": 0},
                        "output_tokens": usage["completion_tokens"],
                        "output_tokens_details": {"reasoning_tokens": 0},
                        "total_tokens": usage["total_tokens"],
                    },
                },
            }
        )
        return events

    def message(self, request: dict[str, Any]) -> dict[str, Any]:
        """An Anthropic Messages API reply: the text, then the tool_use block."""
        tools = {t.get("name") for t in request.get("tools") or [] if isinstance(t, dict)}
        if "Bash" not in tools:  # a side request of Claude Code's (a title, a check)
            with self._lock:
                self.side_requests.append(request)
            reply, usage = Reply("OK", tool=None), {"prompt_tokens": 1, "completion_tokens": 1}
            n = len(self.side_requests) + 1000
        else:
            n, reply, usage = self.turn(request, [request.get("system"), request.get("messages")])
        content: list[dict[str, Any]] = []
        if reply.content:
            content.append({"type": "text", "text": reply.content})
        if not reply.is_text:
            name, arguments = reply.call(self.dialect)
            content.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_scripted_{n + 1}",
                    "name": name,
                    "input": arguments,
                }
            )
        return {
            "id": f"msg_scripted_{n + 1}",
            "type": "message",
            "role": "assistant",
            "model": request.get("model") or self.model,
            "content": content,
            "stop_reason": "end_turn" if reply.is_text else "tool_use",
            "stop_sequence": None,
            "usage": {
                "input_tokens": usage["prompt_tokens"],
                "output_tokens": usage["completion_tokens"],
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        }

    @staticmethod
    def message_events(message: dict[str, Any]) -> list[dict[str, Any]]:
        """The Anthropic reply as its streaming events: message_start (input usage), one
        block each (text as a text_delta, a tool's input as one input_json_delta),
        message_delta (stop reason, output usage), message_stop."""
        usage = message["usage"]
        start = {**message, "content": [], "stop_reason": None}
        start["usage"] = {**usage, "output_tokens": 1}
        events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
        for i, block in enumerate(message["content"]):
            if block["type"] == "text":
                opening = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": block["text"]}
            else:
                opening = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            events += [
                {"type": "content_block_start", "index": i, "content_block": opening},
                {"type": "content_block_delta", "index": i, "delta": delta},
                {"type": "content_block_stop", "index": i},
            ]
        events.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            }
        )
        events.append({"type": "message_stop"})
        return events

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

    def _failing(self) -> bool:
        with self._lock:
            due = self.fail_at is not None and len(self.requests) + 1 >= self.fail_at
            if not due or self.failures >= self.fail_times:
                return False
            self.failures += 1
            if self.failures == self.fail_times:
                self.requests.clear()
                self.usage_sent.clear()
                self.fail_at = None
            return True

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
                if llm._failing():
                    self._send(llm.fail_status, {"error": {"message": "scripted outage"}})
                    return
                path = self.path.split("?")[0].rstrip("/")
                with llm._lock:
                    llm.headers.append(dict(self.headers))
                if path.endswith("/responses"):
                    self._events(llm.responses_events(request), named=True)
                    return
                if path.endswith("/messages"):
                    message = llm.message(request)
                    if request.get("stream"):
                        self._events(llm.message_events(message), named=True)
                    else:
                        self._send(200, message)
                    return
                if not path.endswith("/chat/completions"):
                    with llm._lock:
                        llm.headers.pop()
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
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

            def _events(self, events: list[dict[str, Any]], named: bool) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                for event in events:
                    head = f"event: {event['type']}\n" if named else ""
                    self.wfile.write(f"{head}data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
                self.close_connection = True

            def do_HEAD(self) -> None:  # Claude Code's reachability check
                self.send_response(200)
                self.end_headers()

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


def first_call_seconds(attempt: Path, llm: ScriptedLLM) -> float | None:
    """Machine ready to the agent's first model call, for one attempt (its folder) and the
    server it called: from the earliest event of the attempt's playbook (ansible-runner stamps
    each with a UTC `created`; the playbook starts once the machine is up) to the server's first
    scripted request. It spans staging, the agent's install and the scaffold's own start. None
    when the attempt has no playbook events or the agent never called."""
    created = [
        datetime.fromisoformat(json.loads(f.read_text())["created"]).timestamp()
        for f in attempt.glob("ansible/artifacts/*/job_events/*.json")
    ]
    return llm.times[0] - min(created) if created and llm.times else None


def print_first_calls(attempts: dict[str, tuple[Path, ScriptedLLM]]) -> dict[str, float | None]:
    """Prints, for each named attempt, its time from machine ready to the first model call
    (one line each, the same wording in every agent's test) and returns the figures."""
    seconds = {name: first_call_seconds(*pair) for name, pair in attempts.items()}
    for name, s in seconds.items():
        shown = "no playbook event or no model call" if s is None else f"{s:.1f} s"
        print(f"{name}: machine ready to first model call: {shown}")
    return seconds


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
