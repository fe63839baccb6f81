"""Machines kept after their verdict (`run --keep-failed N`), for the agentic diagnosis to enter
(`diagnose --agentic`). A kept machine is an ordinary deployment of the state folder with a
`kept.json` beside its record: which attempt it was, until when it may live, and, while a
diagnosis works on it, which controller process does. Everything that ends machines reads it
here: `destroy` ends kept machines like any other, `sweep` ends those whose time ran out or
whose diagnosis lost its controller, and a run's own clean-up leaves the others alone."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from deploybench.backends import deployments, get_backend

KEPT = "kept.json"


def mark(deployment: Path, attempt: Path, hours: float) -> dict:
    """Record DEPLOYMENT as kept for ATTEMPT, for HOURS from now."""
    now = time.time()
    record = {
        "attempt": str(attempt.resolve()),
        "kept_at": now,
        "expires_at": now + hours * 3600,
    }
    _write(deployment, record)
    return record


def read(deployment: Path) -> dict | None:
    try:
        return json.loads((deployment / KEPT).read_text())
    except (OSError, ValueError):
        return None


def _write(deployment: Path, record: dict) -> None:
    tmp = deployment / (KEPT + ".tmp")
    tmp.write_text(json.dumps(record, indent=2))
    tmp.replace(deployment / KEPT)


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def abandoned(record: dict, now: float | None = None) -> str | None:
    """Why a kept machine is to be ended by a sweep, or None while it may stay."""
    if (now or time.time()) >= record.get("expires_at", 0):
        return "its time to live ran out"
    pid = record.get("diagnosis_pid")
    if pid and not _alive(pid):
        # A diagnosis ends its machine whatever happens; a controller killed during one
        # leaves the machine for the sweep.
        return "its diagnosis lost its controller"
    return None


def listed() -> list[tuple[str, Path, dict]]:
    """(backend, deployment folder, kept record) of every kept machine."""
    return [
        (backend, folder, record)
        for backend, folder, _ in deployments.listed()
        if (record := read(folder)) is not None
    ]


def of_attempt(attempt: Path) -> tuple[str, Path, dict] | None:
    """The kept machine of ATTEMPT (its folder), if any."""
    wanted = str(attempt.resolve())
    for row in listed():
        if row[2].get("attempt") == wanted:
            return row
    return None


def claim_for_diagnosis(deployment: Path) -> None:
    """Note that this process diagnoses the machine: from now on it is ended after the
    diagnosis, or by a sweep if this process dies first."""
    record = read(deployment) or {}
    record["diagnosis_pid"] = os.getpid()
    _write(deployment, record)


def end(backend_name: str, deployment: Path) -> None:
    deployments.destroy_folder(get_backend(backend_name), deployment)


def sweep(
    backend_name: str | None = None, dry_run: bool = False, everything: bool = False
) -> list[str]:
    """End every kept machine (of BACKEND, or any) whose time ran out or whose diagnosis lost
    its controller (EVERYTHING: every kept machine); return what was (or would be) ended."""
    found = []
    for backend, folder, record in listed():
        if backend_name and backend != backend_name:
            continue
        why = abandoned(record) or ("swept with every machine of this host" if everything else None)
        if why is None:
            continue
        found.append(f"kept machine {folder.name} ({why})")
        if not dry_run:
            end(backend, folder)
    return found


def until(record: dict) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(record.get("expires_at", 0)))


class Slots:
    """How many failed attempts of a run may still keep their machine (--keep-failed N),
    shared by the run's workers."""

    def __init__(self, count: int):
        self._left = max(0, int(count))
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            if self._left <= 0:
                return False
            self._left -= 1
            return True
