"""Build the staged tarball of a task: its repository at the pinned commit plus the paper.

Run on the controller by the artifact_stage role: python -m deploybench.staging_cli TASK OUT."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from deploybench import staging
from deploybench.catalog import load_tasks
from deploybench.errors import DeployBenchError
from deploybench.paths import TASKS_DIR


def clone_at(url: str, commit: str, dest: Path) -> str:
    """A real repository at its pinned commit (needs the network to reach its host)."""
    subprocess.run(["git", "clone", "--quiet", url, str(dest)], check=True)
    subprocess.run(["git", "-C", str(dest), "checkout", "--quiet", commit], check=True)
    return commit


def build(task_id: str, out: Path) -> str:
    task = load_tasks().get(task_id)
    if task is None:
        raise DeployBenchError(f"unknown task {task_id!r}")
    with tempfile.TemporaryDirectory(prefix="deploybench-stage-") as tmp:
        repo = Path(tmp) / "repo"
        url = task["repo"]["url"]
        if url.startswith(staging.DEMO_URL_PREFIX):
            commit = staging.make_demo_repo(staging.demo_artifact_dir(url), repo)
        else:
            commit = clone_at(url, task["repo"]["commit"], repo)
        if commit != task["repo"]["commit"]:
            raise DeployBenchError(
                f"{task_id}: staged commit {commit} is not the pinned {task['repo']['commit']}"
            )
        papers = sorted((TASKS_DIR / task_id).glob("paper.*"))
        out.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(out, "w:gz") as tar:
            tar.add(repo, arcname=".")
            for paper in papers:
                tar.add(paper, arcname=paper.name)
    return commit


if __name__ == "__main__":
    try:
        print(build(sys.argv[1], Path(sys.argv[2])))
    except DeployBenchError as exc:
        sys.exit(f"staging: {exc}")
