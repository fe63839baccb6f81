"""JSON lines, read and written the same way everywhere: a bad line is one error naming the
file and the line; a line is appended in one write() so no reader sees half of it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from deploybench.errors import DeployBenchError


def parse(text: str, where: Path | str) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise DeployBenchError(f"{where}:{number}: not JSON ({exc.msg})") from None
    return rows


def read(path: Path) -> list[dict[str, Any]]:
    return parse(Path(path).read_text(), path)


def append(path: Path, row: dict[str, Any], durable: bool = False) -> None:
    """Append one line in a single write(); durable also fsyncs it before returning."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(row, sort_keys=True) + "\n").encode())
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
