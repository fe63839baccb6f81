"""One file lock shape for the controller's own folders: parallel attempts (threads or
processes) of one run take turns where they read and then write shared state."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def held(path: Path) -> Iterator[None]:
    """An exclusive flock on PATH (made if missing) for the body's time. Each call opens the
    file anew, so two threads of one process wait for each other as two processes do."""
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
