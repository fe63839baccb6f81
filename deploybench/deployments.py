"""Deployments made by `deploybench provision`, tracked in the state folder so `machines` and
`destroy` work from any later process, also after a crash."""

from __future__ import annotations

import json
import secrets
import shutil
from pathlib import Path

from deploybench.backends import MachineRequest, get_backend
from deploybench.errors import DeployBenchError
from deploybench.paths import state_home


def deployments_dir() -> Path:
    return state_home() / "deployments"


def new_id() -> str:
    return "p" + secrets.token_hex(3)


def provision(backend_name: str, request: MachineRequest) -> tuple[Path, dict]:
    """Make the machines; on any failure destroy what was made, so nothing is left half-made."""
    backend = get_backend(backend_name)
    backend.sanity_check(request)
    folder = deployments_dir() / request.run_id
    try:
        machines = backend.provision(request, folder)
    except BaseException:
        try:
            backend.destroy(folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder, machines


def listed() -> list[tuple[str, Path, dict]]:
    """(backend, folder, record) of every deployment, oldest first."""
    rows = []
    root = deployments_dir()
    for folder in sorted(root.glob("*"), key=lambda p: p.stat().st_mtime) if root.is_dir() else []:
        try:
            record = json.loads((folder / "deployment.json").read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            record = {"backend": "local"}
        rows.append((record.get("backend", "local"), folder, record))
    return rows


def all_machines() -> dict[str, dict]:
    out = {}
    for backend_name, folder, _ in listed():
        for name, machine in get_backend(backend_name).machines(folder).items():
            out[name] = {**machine, "deployment": folder.name}
    return out


def destroy(deployment: str | None = None) -> list[str]:
    """Destroy one deployment or all; return the ids destroyed."""
    done = []
    rows = listed()
    if deployment is not None:
        rows = [r for r in rows if r[1].name == deployment]
        if not rows:
            raise DeployBenchError(f"no deployment {deployment!r} (see `deploybench machines`)")
    for backend_name, folder, _ in rows:
        get_backend(backend_name).destroy(folder)
        shutil.rmtree(folder, ignore_errors=True)
        done.append(folder.name)
    return done
