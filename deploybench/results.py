"""runs/<run_id>/results.jsonl (contract 3): one line per attempt, appended whole.

Each line goes out in one write() on a file opened for appending and is fsynced, so a crash
leaves at most a line without its newline at the end; loading drops such a tail."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from deploybench import contracts
from deploybench.errors import DeployBenchError

RESULTS = "results.jsonl"


class ResultsStore:
    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / RESULTS
        self._lock = threading.Lock()

    def load(self) -> list[dict[str, Any]]:
        if not self.path.is_file():
            return []
        raw = self.path.read_bytes()
        if raw and not raw.endswith(b"\n"):
            # A crash mid-write: drop the partial tail so the next append starts clean.
            raw = raw[: raw.rfind(b"\n") + 1]
            self.path.write_bytes(raw)
        rows = []
        for number, line in enumerate(raw.decode().splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise DeployBenchError(f"{self.path}:{number}: not JSON ({exc.msg})") from None
        return rows

    def append(self, row: dict[str, Any]) -> None:
        contracts.check(contracts.RESULT, row, "results.jsonl line")
        data = (json.dumps(row, sort_keys=True) + "\n").encode()
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)

    def finished(self) -> set[tuple[str, str, int]]:
        return {(r["task_id"], r["agent"], r["attempt"]) for r in self.load()}


def append_jsonl(path: Path, row: dict[str, Any]) -> None:
    """A side log (e.g. infra errors) with the same one-write discipline."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(row, sort_keys=True) + "\n").encode())
    finally:
        os.close(fd)
