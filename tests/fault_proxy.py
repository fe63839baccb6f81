"""An HTTP proxy in front of the moto server that answers chosen API calls with an error and
passes everything else through: a cloud API's passing error, made on purpose.

It reproduces what CI once met: the AWS provider's RevokeSecurityGroupEgress answered with
InvalidPermission.NotFound just after the group was created."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


def ec2_error(code: str, message: str) -> bytes:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Response><Errors><Error><Code>{code}</Code><Message>{message}</Message></Error>"
        "</Errors><RequestID>fault-proxy</RequestID></Response>"
    ).encode()


@contextmanager
def failing(
    upstream: str, doomed: Callable[[bytes], bool], status: int, body: bytes
) -> Iterator[dict]:
    """Yield {"url": ..., "fired": 0}: every request whose body `doomed` answers True for
    gets `status` and `body` instead of reaching `upstream` ("fired" counts them). `doomed`
    is called under a lock, one request at a time, so it may keep state."""
    state = {"fired": 0}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _relay(self) -> None:
            data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with lock:
                fire = doomed(data)
                if fire:
                    state["fired"] += 1
            if fire:
                self._answer(status, {"Content-Type": "text/xml"}, body)
                return
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
            request = urllib.request.Request(
                upstream + self.path, data=data or None, headers=headers, method=self.command
            )
            try:
                with urllib.request.urlopen(request, timeout=60) as resp:
                    self._answer(resp.status, dict(resp.headers.items()), resp.read())
            except urllib.error.HTTPError as err:
                self._answer(err.code, dict(err.headers.items()), err.read())

        def _answer(self, code: int, headers: dict, payload: bytes) -> None:
            self.send_response(code)
            for key, value in headers.items():
                if key.lower() not in _HOP_BY_HOP:
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _relay

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state["url"] = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
