"""Progress shown on long work: one live status line with elapsed time (rich)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

from rich.console import Console

console = Console(stderr=True)


@contextlib.contextmanager
def status_line(title: str) -> Iterator[Callable[[str], None]]:
    """Yield update(detail): the line shows the title, the elapsed time and the last detail."""
    started = time.monotonic()
    with console.status(title) as status:

        def update(detail: str) -> None:
            status.update(f"{title} [{time.monotonic() - started:4.0f}s] {detail[:80]}")

        yield update
    console.print(f"{title}: done in {time.monotonic() - started:.0f}s")
