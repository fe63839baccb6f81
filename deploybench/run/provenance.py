"""What produced a run, kept in its run.json: the harness (version, git commit, whether the
checkout had uncommitted changes) and a digest of every input that decides a verdict or an
agent's behaviour (each task's task.yaml, reference role and verifier; each agent's spec), with
one digest of them all per task. The report prints them and refuses to pool runs whose tasks
were judged by different inputs."""

from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import asdict
from importlib import metadata
from pathlib import Path
from typing import Any

from deploybench import catalog
from deploybench.attempt.agents import AgentSpec
from deploybench.paths import REPO_ROOT


def _tree_digest(path: Path) -> str | None:
    """sha256 over a file, or over a folder's files (relative path and content, sorted)."""
    if path.is_file():
        return hashlib.sha256(path.read_bytes()).hexdigest()
    if not path.is_dir():
        return None
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(str(f.relative_to(path)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO_ROOT), *args], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def harness() -> dict[str, Any]:
    try:
        version = metadata.version("deploybench")
    except metadata.PackageNotFoundError:
        version = None
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {
        "version": version,
        "commit": _git("rev-parse", "HEAD"),
        "dirty": None if status is None else bool(status),
    }


def task_digests(task_ids: list[str], root: Path = REPO_ROOT) -> dict[str, dict[str, str | None]]:
    out = {}
    for task_id in task_ids:
        task = catalog.Task(task_id, root=root)
        parts = {
            "task": _tree_digest(task.folder),
            "reference_setup": _tree_digest(task.role),
            "verifier": _tree_digest(task.verifier),
        }
        whole = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()
        out[task_id] = {**parts, "all": whole}
    return out


def agent_digests(agents: list[AgentSpec]) -> dict[str, str]:
    return {
        a.name: hashlib.sha256(
            json.dumps(asdict(a), sort_keys=True, default=str).encode()
        ).hexdigest()
        for a in agents
    }


def record(task_ids: list[str], agents: list[AgentSpec]) -> dict[str, Any]:
    return {
        "harness": harness(),
        "tasks": task_digests(task_ids),
        "agents": agent_digests(agents),
    }
