"""Deployments, tracked in the state folder so `machines` and `destroy` work from any later
process, also after a crash: those of `deploybench provision` and those of the attempts of
`deploybench run` (owner.json names their run). A deployment's folder and record exist before
its machines are started, so a controller killed at any instant leaves nothing unlisted."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
from pathlib import Path

from deploybench.backends import Backend, MachineRequest, get_backend
from deploybench.errors import DeployBenchError
from deploybench.paths import state_home


def deployments_dir() -> Path:
    return state_home() / "deployments"


def new_id() -> str:
    return "p" + secrets.token_hex(3)


# open_for's folder while it is being made: .<id>.<pid>.making
_MAKING = ".making"


def open_for(request: MachineRequest, owner: dict | None = None) -> Path:
    """The deployment's folder in the state folder, made (with who owns it) before any machine
    is; the backend then records the request there before it starts anything.

    It appears whole: made under a hidden name that carries our pid, owner.json written, then
    renamed. A controller killed in between leaves a hidden folder that listed() forgets once
    its maker is dead, never a visible folder without an owner, which no run's cleanup would
    claim and which would stay listed for good."""
    root = deployments_dir()
    root.mkdir(parents=True, exist_ok=True)
    folder = root / request.run_id
    if folder.exists():
        raise FileExistsError(f"deployment {request.run_id!r} exists: {folder}")
    making = root / f".{request.run_id}.{os.getpid()}{_MAKING}"
    making.mkdir(mode=0o700)
    if owner is not None:
        (making / "owner.json").write_text(json.dumps(owner))
    making.rename(folder)
    return folder


def _forget_unfinished(root: Path) -> None:
    """Remove the hidden folders of open_for whose maker died before renaming them: no machine
    was started for them (that comes after the rename). A living maker's folder is kept."""
    for making in root.glob(f".*{_MAKING}"):
        pid = making.name[: -len(_MAKING)].rsplit(".", 1)[-1]
        if pid.isdigit() and Path(f"/proc/{pid}").exists():
            continue
        shutil.rmtree(making, ignore_errors=True)


def owner(folder: Path) -> dict:
    try:
        return json.loads((folder / "owner.json").read_text())
    except (OSError, ValueError):
        return {}


def end_workers(folder: Path) -> None:
    """Kill what a killed controller left working on this deployment (Terraform, whose command
    line names the deployment's variables file), so nothing new starts while it is destroyed."""
    marker = str(folder.resolve()).encode() + b"/"
    for proc in Path("/proc").glob("[0-9]*"):
        if int(proc.name) == os.getpid():
            continue
        try:
            argv = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if marker in argv:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(proc.name), signal.SIGKILL)


def destroy_folder(backend: Backend, folder: Path) -> None:
    """Destroy one deployment and forget it; a failed destroy keeps its record for later."""
    end_workers(folder)
    backend.destroy(folder)
    shutil.rmtree(folder, ignore_errors=True)


# What of a deployment is evidence: how Terraform made and destroyed it.
EVIDENCE = ("deployment.json", "terraform.log", "terraform.tfstate", "machines.json")


def keep_evidence(folder: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for name in EVIDENCE:
        if (folder / name).is_file():
            shutil.copyfile(folder / name, dest / name)


def failed_dir() -> Path:
    """Where the evidence of a deployment that failed to come up is kept (its own folder goes
    with the destroy, and with it the Terraform log an error points at)."""
    return state_home() / "failed-deployments"


def provision(backend_name: str, request: MachineRequest) -> tuple[Path, dict]:
    """Make the machines; on any failure destroy what was made, so nothing is left half-made,
    and keep the deployment's evidence in failed_dir(), which the error then names."""
    backend = get_backend(backend_name)
    backend.check(request)
    folder = open_for(request)
    try:
        machines = backend.provision(request, folder)
    except BaseException as exc:
        kept = failed_dir() / folder.name
        try:
            backend.destroy(folder)
        finally:
            keep_evidence(folder, kept)
            shutil.rmtree(folder, ignore_errors=True)
        if isinstance(exc, DeployBenchError):
            message = str(exc).replace(str(folder), str(kept))
            raise type(exc)(f"{message} (evidence kept in {kept})") from exc
        raise
    return folder, machines


def listed() -> list[tuple[str, Path, dict]]:
    """(backend, folder, record) of every deployment, oldest first."""
    rows = []
    root = deployments_dir()
    if not root.is_dir():
        return rows
    _forget_unfinished(root)
    for folder in sorted(
        (p for p in root.iterdir() if not p.name.startswith(".")), key=lambda p: p.stat().st_mtime
    ):
        try:
            record = json.loads((folder / "deployment.json").read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            record = {"backend": "local"}
        rows.append((record.get("backend", "local"), folder, record))
    return rows


def all_machines() -> dict[str, dict]:
    out = {}
    for backend_name, folder, _ in listed():
        try:
            found = get_backend(backend_name).machines(folder)
        except ValueError:  # a record cut short by a killed controller: `destroy` ends it
            found = {}
        for name, machine in found.items():
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
        destroy_folder(get_backend(backend_name), folder)
        done.append(folder.name)
    return done
