"""Plan the staging of one attempt, on the controller: which tarball goes to the workdir (the
pinned tree from the source cache, or a demo task's artifact) and which paper goes beside it.

Run by the artifact_stage role: python -m deploybench.staging_cli TASK ATTEMPT_DIR. Prints the
plan as JSON and records it, with every missing file and the paper's fate, in
ATTEMPT_DIR/staging.json. Stops (non-zero, one line) when a file the task needs is missing."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from deploybench import sources, staging
from deploybench.catalog import load_tasks
from deploybench.errors import DeployBenchError
from deploybench.paths import TASKS_DIR


def _paper(
    task_id: str, tasks_dir: Path, demo: bool
) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """The paper's record and the files to stage: the cached PDF, else the task's paper text.
    A demo task's paper is its text (paper.url demo:tasks/<id>/paper.md)."""
    pdf = sources.cache_root() / "papers" / f"{task_id}.pdf"
    if demo:
        texts = sources.paper_texts(task_id, tasks_dir)
        return {"status": "text", "staged": [p.name for p in texts]}, [
            {"src": str(p), "name": p.name} for p in texts
        ]
    if pdf.is_file():
        return {"status": "cached", "staged": ["paper.pdf"]}, [
            {"src": str(pdf), "name": "paper.pdf"}
        ]
    texts = sources.paper_texts(task_id, tasks_dir)
    known = sources.load_index().get("tasks", {}).get(task_id, {}).get("paper", {})
    record = {
        "status": "missing",
        "reason": known.get("reason", "no PDF in the source cache"),
        "staged": [p.name for p in texts],
    }
    return record, [{"src": str(p), "name": p.name} for p in texts]


def plan(task_id: str, attempt_dir: Path, tasks_dir: Path = TASKS_DIR) -> dict[str, Any]:
    task = load_tasks(tasks_dir).get(task_id)
    if task is None:
        raise DeployBenchError(f"unknown task {task_id!r}")
    attempt_dir.mkdir(parents=True, exist_ok=True)
    record_file = attempt_dir / "staging.json"
    started = time.monotonic()
    demo = bool(task.get("demo")) or sources.is_demo(task)
    paper, papers = _paper(task_id, tasks_dir, demo)
    if demo:
        tar = attempt_dir / "staged.tar.gz"
        commit = _demo_tar(task, tar)
        record: dict[str, Any] = {
            "task_id": task_id,
            "repo": {"url": task["repo"]["url"], "commit": commit},
            "missing_files": [],
            "tar": str(tar),
            "reused": False,
        }
    else:
        cached = sources.check_task(task)
        missing = sources.all_missing(cached)
        record = {
            "task_id": task_id,
            "repo": {"url": task["repo"]["url"], "commit": task["repo"]["commit"]},
            "submodules": [
                {"path": s["path"], "url": s["url"], "commit": s["commit"]}
                for s in cached["submodules"]
            ],
            "missing_files": missing,
            "needed_missing": sources.needed_missing(task, missing),
        }
        if record["needed_missing"]:
            record["stopped"] = sources.needed_message(record["needed_missing"])
            record["paper"] = paper
            record_file.write_text(json.dumps(record, indent=2) + "\n")
            raise DeployBenchError(f"{task_id}: {record['stopped']}")
        built = staging.staged_tree(task, cached)
        record.update({k: v for k, v in built.items() if k != "key"})
    record["paper"] = paper
    record["papers"] = papers
    record["plan_seconds"] = round(time.monotonic() - started, 2)
    record_file.write_text(json.dumps(record, indent=2) + "\n")
    return record


def _demo_tar(task: dict[str, Any], out: Path) -> str:
    import tarfile
    import tempfile

    with tempfile.TemporaryDirectory(prefix="deploybench-stage-") as tmp:
        repo = Path(tmp) / "repo"
        commit = staging.make_demo_repo(staging.demo_artifact_dir(task["repo"]["url"]), repo)
        if commit != task["repo"]["commit"]:
            raise DeployBenchError(
                f"{task['id']}: staged commit {commit} is not the pinned {task['repo']['commit']}"
            )
        with tarfile.open(out, "w:gz") as tar:
            tar.add(repo, arcname=".")
    return commit


if __name__ == "__main__":
    try:
        print(json.dumps(plan(sys.argv[1], Path(sys.argv[2]))))
    except DeployBenchError as exc:
        sys.exit(f"staging: {exc}")
