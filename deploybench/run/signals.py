"""Stop signals taken as Ctrl-C. `kill`, `timeout` and schedulers stop a command with SIGTERM,
and a closed terminal or SSH session sends SIGHUP; Python's default for both is to die at once,
which would leave a run's machines running and its playbooks (in sessions of their own) going
on. Every command already cleans up on Ctrl-C (the runner cancels its attempts and destroys
their machines; a provision destroys what it made), so a stop signal takes that path."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from typing import Any

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Stopped(KeyboardInterrupt):
    """Raised in the main thread by a stop signal; the command exits with 128 + signum."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def as_interrupt() -> Iterator[None]:
    """Inside, the first stop signal raises Stopped; later ones are ignored, so that clean-up
    can finish (SIGKILL still ends it). A signal the command was started with ignored (nohup)
    stays ignored. Entered by cli.main, in the main thread, where Python runs handlers."""

    def stop(signum: int, _frame: Any) -> None:
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        raise Stopped(signum)

    before = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    for sig, handler in before.items():
        if handler == signal.SIG_DFL:
            signal.signal(sig, stop)
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
