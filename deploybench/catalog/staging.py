"""Staging: what goes into an attempt's workdir. A catalog task gets its pinned tree from the
source cache (built once per commit, sources.py keeps it); a demo task gets its artifact as a
one-commit repository (demo.py); the paper goes beside either."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from deploybench.catalog.demo import demo_artifact_dir, make_demo_repo
from deploybench.errors import DeployBenchError
from deploybench.paths import TASKS_DIR


# ---------- catalog tasks: the pinned tree from the source cache ----------
def _cat_files(gitdir: Path, entries: list[tuple[str, str, str]], dest: Path) -> int:
    """Write (mode, blob id, path) entries under dest from one `git cat-file --batch`; return
    the bytes written. Objects are streamed in order, never the repository's history."""
    proc = subprocess.Popen(
        ["git", f"--git-dir={gitdir}", "cat-file", "--batch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )

    def feed() -> None:
        assert proc.stdin is not None
        for _mode, oid, _path in entries:
            proc.stdin.write(f"{oid}\n".encode())
        proc.stdin.close()

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    total = 0
    assert proc.stdout is not None
    for mode, oid, path in entries:
        header = proc.stdout.readline().decode().split()
        if len(header) != 3:
            proc.kill()
            raise DeployBenchError(f"git cat-file in {gitdir}: cannot read {oid} ({path})")
        body = proc.stdout.read(int(header[2]))
        proc.stdout.read(1)
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if mode == "120000":
            os.symlink(body.decode(), target)
        else:
            target.write_bytes(body)
            if mode == "100755":
                target.chmod(0o755)
        total += len(body)
    writer.join()
    proc.wait()
    return total


def _tree_entries(gitdir: Path, commit: str) -> list[tuple[str, str, str, str]]:
    out = _run_git(gitdir, "ls-tree", "-r", "-z", "--full-tree", commit)
    rows = []
    for entry in out.split("\0"):
        if entry:
            meta, path = entry.split("\t", 1)
            mode, kind, oid = meta.split()
            rows.append((mode, kind, oid, path))
    return rows


def _run_git(gitdir: Path | None, *args: str, work: Path | None = None, stdin: str = "") -> str:
    cmd = ["git"] + ([f"--git-dir={gitdir}"] if gitdir else [])
    cmd += [f"--work-tree={work}"] if work else []
    proc = subprocess.run(
        cmd + list(args),
        input=stdin.encode(),
        capture_output=True,
        env={**os.environ, "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1"},
        check=False,
    )
    if proc.returncode != 0:
        raise DeployBenchError(f"git {args[0]} failed: {proc.stderr.decode().strip()[-300:]}")
    return proc.stdout.decode(errors="replace")


def shallow_checkout(
    source: Path,
    commit: str,
    url: str,
    work: Path,
    gitdir: Path,
    missing: dict[str, str],
    skip_dirs: tuple[str, ...] = (),
) -> dict[str, int]:
    """Make `work` the tree of `commit` (from the bare repository `source`) and `gitdir` a
    shallow repository holding that one commit's objects only: HEAD is the commit, `git status`
    is clean, `git rev-list --count HEAD` is 1. Files whose blob `source` lacks are left out,
    marked skip-worktree and the repository made a partial clone of `url`, so git neither
    reports them deleted nor takes the repository for a broken one."""
    from deploybench.catalog import sources

    gitdir.mkdir(parents=True, exist_ok=True)
    _run_git(None, "init", "--quiet", "--bare", str(gitdir))
    _run_git(gitdir, "config", "core.bare", "false")
    _run_git(gitdir, "config", "remote.origin.url", url)
    _run_git(gitdir, "config", "remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*")
    sources.copy_objects(source, gitdir, commit)
    (gitdir / "shallow").write_text(commit + "\n")
    (gitdir / "HEAD").write_text(commit + "\n")
    # A checkout line in HEAD's reflog makes `git status` say "HEAD detached at <commit>".
    (gitdir / "logs").mkdir(exist_ok=True)
    (gitdir / "logs" / "HEAD").write_text(
        f"{'0' * 40} {commit} DeployBench <stage@deploybench.invalid> 1700000000 +0000\t"
        f"checkout: moving from pinned to {commit}\n"
    )
    if missing:
        _run_git(gitdir, "config", "core.repositoryformatversion", "1")
        _run_git(gitdir, "config", "extensions.partialClone", "origin")
        _run_git(gitdir, "config", "remote.origin.promisor", "true")
        _run_git(gitdir, "config", "remote.origin.partialclonefilter", "blob:limit=4m")
        for pack in (gitdir / "objects" / "pack").glob("*.pack"):
            pack.with_suffix(".promisor").touch()
    tree = _tree_entries(source, commit)
    entries = [
        (mode, oid, path)
        for mode, kind, oid, path in tree
        if kind == "blob" and path not in missing
    ]
    work.mkdir(parents=True, exist_ok=True)
    written = _cat_files(source, entries, work)
    for _mode, kind, _oid, path in tree:
        if kind == "commit" and path not in skip_dirs:
            (work / path).mkdir(parents=True, exist_ok=True)  # as git leaves an unused submodule
    _run_git(gitdir, "read-tree", commit, work=work)
    if missing:
        _run_git(
            gitdir,
            "update-index",
            "--skip-worktree",
            "-z",
            "--stdin",
            work=work,
            stdin="".join(f"{p}\0" for p in missing),
        )
    subprocess.run(
        ["git", f"--git-dir={gitdir}", f"--work-tree={work}", "update-index", "-q", "--refresh"],
        capture_output=True,
        check=False,
    )
    return {"files": len(entries), "bytes": written}


STAGED_FORMAT = 1  # bump when the staged tree's layout changes: cached tarballs are rebuilt


def _submodule_names(gitdir: Path, commit: str) -> dict[str, str]:
    """{path: name} from the pinned tree's .gitmodules (git keeps a submodule's repository
    under .git/modules/<name>)."""
    proc = subprocess.run(
        ["git", f"--git-dir={gitdir}", "config", "--blob", f"{commit}:.gitmodules"]
        + ["--get-regexp", r"^submodule\..*\.path$"],
        capture_output=True,
        text=True,
        check=False,
    )
    names = {}
    for line in proc.stdout.splitlines():
        key, _, path = line.partition(" ")
        names[path] = key[len("submodule.") : -len(".path")]
    return names


def staged_tree(task: dict, record: dict) -> dict:
    """The staged tarball of a catalog task (its pinned tree, pinned submodules, a one-commit
    shallow .git), built once per (task, commit) in the source cache and reused after."""
    from deploybench.catalog import sources

    repo = task["repo"]
    commit = repo["commit"]
    folder = sources.cache_root() / "staged" / task["id"]
    folder.mkdir(parents=True, exist_ok=True)
    tar, meta = folder / f"{commit}.tar.gz", folder / f"{commit}.json"
    key = {
        "format": STAGED_FORMAT,
        "commit": commit,
        "submodules": [[s["path"], s["commit"]] for s in repo.get("submodules") or []],
        "missing_files": sources.all_missing(record),
    }
    with open(folder / f"{commit}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # parallel attempts of one task build it once
        if tar.is_file() and meta.is_file():
            manifest = json.loads(meta.read_text())
            if manifest.get("key") == key:
                return {**manifest, "reused": True}
        started = time.monotonic()
        with tempfile.TemporaryDirectory(dir=folder, prefix="build-") as tmp:
            work = Path(tmp) / "tree"
            top = sources.cached_repo(repo["url"])
            subs = repo.get("submodules") or []
            counts = shallow_checkout(
                top,
                commit,
                repo["url"],
                work,
                work / ".git",
                sources.missing_blobs(top, commit),
                skip_dirs=tuple(s["path"] for s in subs),
            )
            names = _submodule_names(top, commit)
            for sub in subs:
                name = names.get(sub["path"], sub["path"])
                subwork, subgit = work / sub["path"], work / ".git" / "modules" / name
                source = sources.cached_repo(sub["url"])
                more = shallow_checkout(
                    source,
                    sub["commit"],
                    sub["url"],
                    subwork,
                    subgit,
                    sources.missing_blobs(source, sub["commit"]),
                )
                counts = {k: counts[k] + more[k] for k in counts}
                (subwork / ".git").write_text(f"gitdir: {os.path.relpath(subgit, subwork)}\n")
                _run_git(subgit, "config", "core.worktree", os.path.relpath(subwork, subgit))
                _run_git(work / ".git", "config", f"submodule.{name}.url", sub["url"])
                _run_git(work / ".git", "config", f"submodule.{name}.active", "true")
            status = _run_git(work / ".git", "status", "--porcelain", work=work)
            if status.strip():
                raise DeployBenchError(
                    f"{task['id']}: the staged tree is not clean: {status.splitlines()[0]}"
                )
            part = tar.with_suffix(".part")
            with tarfile.open(part, "w:gz", compresslevel=6) as out:
                out.add(work, arcname=".")
            part.replace(tar)
        manifest = {
            "key": key,
            "tar": str(tar),
            "tar_bytes": tar.stat().st_size,
            "files": counts["files"],
            "tree_bytes": counts["bytes"],
            "build_seconds": round(time.monotonic() - started, 2),
        }
        meta.write_text(json.dumps(manifest, indent=2) + "\n")
        return {**manifest, "reused": False}


def _paper(
    task_id: str, tasks_dir: Path, demo: bool
) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """The paper's record and the files to stage: the cached PDF, else the task's paper text.
    A demo task's paper is its text (paper.url demo:tasks/<id>/paper.md)."""
    from deploybench.catalog import sources

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


def plan_attempt(
    task: dict[str, Any], attempt_dir: Path, tasks_dir: Path = TASKS_DIR
) -> dict[str, Any]:
    """Plan the staging of one attempt of `task` on the controller: which tarball goes to the
    workdir (the pinned tree from the source cache, or a demo task's artifact) and which paper
    goes beside it. Records the plan, with every missing file and the paper's fate, in the
    attempt's staging.json; stops (one line) when a file the task needs is missing."""
    from deploybench import runfolder
    from deploybench.catalog import sources

    task_id = task["id"]
    attempt_dir.mkdir(parents=True, exist_ok=True)
    record_file = attempt_dir / runfolder.STAGING
    started = time.monotonic()
    demo = bool(task.get("demo")) or sources.is_demo(task)
    paper, papers = _paper(task_id, tasks_dir, demo)
    if demo:
        tar = attempt_dir / runfolder.STAGED_TARBALL
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
        built = staged_tree(task, cached)
        record.update({k: v for k, v in built.items() if k != "key"})
    record["paper"] = paper
    record["papers"] = papers
    record["plan_seconds"] = round(time.monotonic() - started, 2)
    record_file.write_text(json.dumps(record, indent=2) + "\n")
    return record


def _demo_tar(task: dict[str, Any], out: Path) -> str:
    with tempfile.TemporaryDirectory(prefix="deploybench-stage-") as tmp:
        repo = Path(tmp) / "repo"
        commit = make_demo_repo(demo_artifact_dir(task["repo"]["url"]), repo)
        if commit != task["repo"]["commit"]:
            raise DeployBenchError(
                f"{task['id']}: staged commit {commit} is not the pinned {task['repo']['commit']}"
            )
        with tarfile.open(out, "w:gz") as tar:
            tar.add(repo, arcname=".")
    return commit


def sync(
    tasks: dict[str, dict[str, Any]],
    mirror: Path | None = None,
    on_step: Any = None,
    problems: list[str] | None = None,
) -> dict[str, dict[str, Any]]:
    """The source cache (sources.sync) with each task's staged tree built beside it: the cache
    the attempts' staging copies from."""
    from deploybench.catalog import sources

    return sources.sync(tasks, mirror, on_step, problems, build_tree=staged_tree)


def ensure(tasks: dict[str, dict[str, Any]], mirror: Path | None = None) -> None:
    """sources.ensure, with the staged trees built (see sync)."""
    from deploybench.catalog import sources

    sources.ensure(tasks, mirror, build_tree=staged_tree)
