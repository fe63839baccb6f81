"""Demo repositories: a git repository made from a task's artifact folder, with a commit id
that is the same on every host.

A demo task ships its artifact as plain files in `tasks/<id>/artifact/` (its task.yaml says
`repo.url: demo:tasks/<id>/artifact`). Staging turns that folder into a one-commit repository with
a fixed author, committer, dates and message, so `repo.commit` in task.yaml can pin it exactly
like a catalog task pins a GitHub commit."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from deploybench.errors import DeployBenchError
from deploybench.paths import REPO_ROOT

DEMO_URL_PREFIX = "demo:"
COMMIT_MESSAGE = "Artifact as published\n"
IDENTITY = {
    "GIT_AUTHOR_NAME": "DeployBench",
    "GIT_AUTHOR_EMAIL": "demo@deploybench.invalid",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
    "GIT_COMMITTER_NAME": "DeployBench",
    "GIT_COMMITTER_EMAIL": "demo@deploybench.invalid",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
}
# Build leftovers that are never part of an artifact, even if a developer ran it in place.
_SKIP = shutil.ignore_patterns(".git", "__pycache__", "*.pyc", "*.o", "env", "runs")


def demo_artifact_dir(repo_url: str, root: Path = REPO_ROOT) -> Path:
    """The artifact folder a `demo:` repo.url names (relative to the checkout)."""
    if not repo_url.startswith(DEMO_URL_PREFIX):
        raise DeployBenchError(f"not a demo repository url: {repo_url!r}")
    return Path(root) / repo_url[len(DEMO_URL_PREFIX) :]


def _git(dest: Path, *args: str) -> str:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(dest),
        "LC_ALL": "C",
        # No user or system configuration (hooks, signing, autocrlf) may change the commit.
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        **IDENTITY,
    }
    proc = subprocess.run(
        ["git", "-c", "commit.gpgsign=false", "-c", "core.autocrlf=false", *args],
        cwd=dest,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise DeployBenchError(f"git {args[0]} in {dest} failed: {proc.stderr.strip()}")
    return proc.stdout.strip()


def make_demo_repo(artifact_dir: Path | str, dest_dir: Path | str) -> str:
    """Copy artifact_dir into dest_dir (which must not exist or be empty), make it a git
    repository with one deterministic commit on branch main, and return the commit id."""
    src, dest = Path(artifact_dir), Path(dest_dir)
    if not src.is_dir():
        raise DeployBenchError(f"demo artifact folder not found: {src}")
    if dest.exists() and any(dest.iterdir()):
        raise DeployBenchError(f"staging destination is not empty: {dest}")
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(src, dest, ignore=_SKIP, dirs_exist_ok=True)
    _git(dest, "init", "--quiet", "--initial-branch=main")
    _git(dest, "add", "--all", "--force", ".")
    _git(dest, "commit", "--quiet", "--no-verify", "-m", COMMIT_MESSAGE)
    return _git(dest, "rev-parse", "HEAD")


def demo_repo_commit(artifact_dir: Path | str) -> str:
    """The commit id make_demo_repo produces for artifact_dir (made in a scratch folder)."""
    with tempfile.TemporaryDirectory(prefix="deploybench-stage-") as tmp:
        return make_demo_repo(artifact_dir, Path(tmp) / "repo")
