"""A moto server on a free loopback port, shared by the cloud tests (boto3 and Terraform's AWS
provider both reach it through the standard AWS_ENDPOINT_URL variable)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
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
