"""runs/<run_id>/results.jsonl (contract 3): one line per attempt, appended whole.

Each line goes out in one write() on a file opened for appending and is fsynced, so a crash
leaves at most a line without its newline at the end; loading drops such a tail."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from deploybench import contracts, jsonl

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
        return jsonl.parse(raw.decode(), self.path)

    def append(self, row: dict[str, Any]) -> None:
        contracts.check(contracts.RESULT, row, "results.jsonl line")
        with self._lock:
            jsonl.append(self.path, row, durable=True)

    def finished(self) -> set[tuple[str, str, int]]:
        return {(r["task_id"], r["agent"], r["attempt"]) for r in self.load()}
