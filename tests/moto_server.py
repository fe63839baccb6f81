"""A moto server on a free loopback port, shared by the cloud tests (boto3 and Terraform's AWS
provider both reach it through the standard AWS_ENDPOINT_URL variable)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"
# Fake credentials, distinctive so a test can grep for them: they must never be written down.
ACCESS_KEY = "AKIADEPLOYBENCHTEST7"
SECRET_KEY = "dbTestSecret/NeverWriteMe+x9Qz2"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(log_path: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {
        **os.environ,
        # moto's default images have no Ubuntu 22.04 from Canonical: ship our own list, so
        # the module's real lookup (owner 099720109477, jammy name filter) runs.
        "MOTO_AMIS_PATH": str(FIXTURES / "moto_amis.json"),
    }
    moto = Path(sys.executable).with_name("moto_server")
    log = open(log_path, "w")  # noqa: SIM115 - lives as long as the server
    proc = subprocess.Popen(
        [str(moto), "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=log, env=env
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{url}/moto-api/", timeout=1).close()
            return proc, url
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"moto_server did not start; see {log_path}")


def set_env(monkeypatch, url: str) -> None:
    """Point boto3 and Terraform at moto with fake credentials, and nothing else."""
    for var in list(os.environ):
        if var.startswith(("AWS_", "DEPLOYBENCH_AWS_")):
            monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


class SlowDescribe:
    """A loopback proxy in front of moto that holds every DescribeInstances answer for `delay`
    seconds. moto makes an instance `running` at once, so Terraform's apply ends a moment after
    the instance appears; through this proxy it is still waiting on it for a few seconds, which
    gives a test a window in which the apply is surely in progress."""

    def __init__(self, upstream: str, delay: float) -> None:
        import http.server
        import threading

        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if b"Action=DescribeInstances&" in body:
                    proxy.held += 1
                    time.sleep(delay)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                request = urllib.request.Request(
                    upstream + self.path, data=body, headers=headers, method="POST"
                )
                try:
                    answer = urllib.request.urlopen(request, timeout=60)
                except urllib.error.HTTPError as error:
                    answer = error
                data = answer.read()
                self.send_response(answer.status)
                for key, value in answer.headers.items():
                    if key.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.held = 0
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
