"""Progress shown on long work: one live status line with elapsed time (rich)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

from rich.console import Console

console = Console(stderr=True)


@contextlib.contextmanager
def status_line(title: str, problems: list[str] | None = None) -> Iterator[Callable[[str], None]]:
    """Yield update(detail): the line shows the title, the elapsed time and the last detail.
    Its last word is "done" only when the work raised nothing and left no `problems`."""
    started = time.monotonic()
    with console.status(title) as status:

        def update(detail: str) -> None:
            status.update(f"{title} [{time.monotonic() - started:4.0f}s] {detail[:80]}")

        try:
            yield update
        except BaseException:
            console.print(f"{title}: stopped after {time.monotonic() - started:.0f}s")
            raise
    seconds = time.monotonic() - started
    if problems:
        console.print(f"{title}: {len(problems)} problem(s) after {seconds:.0f}s")
    else:
        console.print(f"{title}: done in {seconds:.0f}s")
