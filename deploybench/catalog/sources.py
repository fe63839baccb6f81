"""The controller's source cache: the only place a task's repository, submodules and paper
come from on their way to a machine.

Layout under <state folder>/sources/:
  <owner>+<name>.git   one bare, shallow repository per upstream repository, holding only the
                       pinned commits (refs/pinned/<commit>) and their trees, never the history
  papers/<id>.pdf      the paper PDF of a task, when it could be had
  staged/<id>/<commit>.tar.gz (+ .json)   the staged tree of a task, built once and reused
  index.json           what was checked for which task, from where, and what was missing

`sync` fills the cache from each repository's URL (git fetch) or from a folder of existing git
repositories (a mirror, for hosts without a network). Snapshots may lack large blobs: the cache
then lacks them too, and `missing_files` names the files that cannot be staged."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from deploybench.errors import DeployBenchError
from deploybench.paths import TASKS_DIR, state_home

DEMO_PREFIX = "demo:"
PAPER_TIMEOUT_S = 30


def cache_root() -> Path:
    return state_home() / "sources"


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def is_demo(task: dict[str, Any]) -> bool:
    return str(task["repo"]["url"]).startswith(DEMO_PREFIX)


# ---------- git ----------
def _git_env() -> dict[str, str]:
    # No user or system configuration (hooks, url rewrites aside) may change what is cached.
    env = dict(os.environ)
    env.update({"LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "/bin/true"})
    return env


def git(gitdir: Path | None, *args: str, input: bytes | None = None, check: bool = True) -> str:
    cmd = ["git"] + ([f"--git-dir={gitdir}"] if gitdir is not None else []) + list(args)
    proc = subprocess.run(cmd, input=input, capture_output=True, env=_git_env(), check=False)
    if check and proc.returncode != 0:
        last = (proc.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
        raise DeployBenchError(f"git {args[0]} failed: {last}")
    return proc.stdout.decode(errors="replace")


def has_commit(gitdir: Path, commit: str) -> bool:
    return (
        gitdir.is_dir()
        and subprocess.run(
            ["git", f"--git-dir={gitdir}", "cat-file", "-e", f"{commit}^{{commit}}"],
            capture_output=True,
            env=_git_env(),
        ).returncode
        == 0
    )


def objects_of(gitdir: Path, commit: str) -> tuple[list[str], list[str]]:
    """(present, missing) object lines of one commit: the commit, its trees and blobs, no
    parent. Present lines are `<id> <path>` as pack-objects takes them."""
    out = git(gitdir, "rev-list", "--objects", "--no-walk", "--missing=print", commit)
    present, missing = [], []
    for line in out.splitlines():
        (missing if line.startswith("?") else present).append(line.lstrip("?"))
    return present, missing


def copy_objects(src: Path, dest: Path, commit: str) -> None:
    """Copy exactly one commit's objects from repository src into dest, as one pack streamed
    from pack-objects into index-pack (a large tree never sits in memory)."""
    present, _ = objects_of(src, commit)
    with tempfile.TemporaryFile() as wanted, tempfile.TemporaryFile() as errors:
        wanted.write(("\n".join(present) + "\n").encode())
        wanted.seek(0)
        packer = subprocess.Popen(
            ["git", f"--git-dir={src}", "pack-objects", "--stdout", "-q"],
            stdin=wanted,
            stdout=subprocess.PIPE,
            stderr=errors,
            env=_git_env(),
        )
        indexer = subprocess.run(
            ["git", f"--git-dir={dest}", "index-pack", "--stdin", "--fix-thin"],
            stdin=packer.stdout,
            capture_output=True,
            env=_git_env(),
        )
        assert packer.stdout is not None
        packer.stdout.close()
        if packer.wait() != 0:
            errors.seek(0)
            last = errors.read().decode(errors="replace").strip()[-200:]
            raise DeployBenchError(f"git pack-objects in {src} failed: {last}")
    if indexer.returncode != 0:
        last = indexer.stderr.decode(errors="replace").strip()[-200:]
        raise DeployBenchError(f"git index-pack into {dest} failed: {last}")


def pin(gitdir: Path, commit: str) -> None:
    """Keep the commit (a ref, so no gc drops it) and mark it shallow: its parents are absent."""
    git(gitdir, "update-ref", f"refs/pinned/{commit}", commit)
    shallow = gitdir / "shallow"
    known = set(shallow.read_text().split()) if shallow.is_file() else set()
    if commit not in known:
        with shallow.open("a") as f:
            f.write(commit + "\n")


def missing_blobs(gitdir: Path, commit: str) -> dict[str, str]:
    """{path: blob id} of the commit's files whose content the repository lacks."""
    out = git(gitdir, "ls-tree", "-r", "-z", "--full-tree", commit)
    blobs: dict[str, str] = {}
    for entry in out.split("\0"):
        if not entry:
            continue
        meta, path = entry.split("\t", 1)
        _mode, kind, oid = meta.split()
        if kind == "blob":
            blobs.setdefault(oid, path)
    if not blobs:
        return {}
    check = subprocess.run(
        ["git", f"--git-dir={gitdir}", "cat-file", "--batch-check"],
        input=("\n".join(blobs) + "\n").encode(),
        capture_output=True,
        env=_git_env(),
        check=True,
    ).stdout.decode()
    lacking = {line.split()[0] for line in check.splitlines() if line.endswith(" missing")}
    # A blob id can stand for several identical files: name every one of them.
    return {
        path: oid
        for entry in out.split("\0")
        if entry
        for meta, path in [entry.split("\t", 1)]
        for oid in [meta.split()[2]]
        if oid in lacking
    }


def gitlink(gitdir: Path, commit: str, path: str) -> str | None:
    """The commit a tree records for a submodule path, or None if that path is no gitlink."""
    out = git(gitdir, "ls-tree", commit, "--", path).strip()
    if not out:
        return None
    mode, kind, oid = out.split("\t", 1)[0].split()
    return oid if kind == "commit" else None


def blob_text(task: dict[str, Any], blob: str, limit: int = 1 << 20) -> bytes | None:
    """The content of one blob of the task's pinned trees (at most `limit` bytes), from the
    controller's cache (a demo task: its artifact folder), or None where it is not held."""
    if not re.fullmatch(r"[0-9a-f]{40}", blob):
        return None
    if is_demo(task):
        from deploybench.catalog.demo import demo_artifact_dir

        for path in sorted(demo_artifact_dir(task["repo"]["url"]).rglob("*")):
            if path.is_file() and not path.is_symlink() and path.stat().st_size <= limit:
                data = path.read_bytes()
                if hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == blob:
                    return data
        return None
    for source in sources_of(task):
        gitdir = cached_repo(source.url)
        if not gitdir.is_dir():
            continue
        proc = subprocess.run(
            ["git", f"--git-dir={gitdir}", "cat-file", "blob", blob],
            capture_output=True,
            env=_git_env(),
        )
        if proc.returncode == 0 and len(proc.stdout) <= limit:
            return proc.stdout
    return None


# ---------- where repositories are ----------
def owner_name(url: str) -> tuple[str, str]:
    """('QEF', 'q-e') from https://github.com/QEF/q-e(.git); the last two path parts of any
    other host (gitlab groups nest)."""
    path = re.sub(r"^[a-z+]+://[^/]+/|^[^@/]+@[^:]+:", "", url.strip()).strip("/")
    path = re.sub(r"\.git$", "", path)
    parts = [p for p in path.split("/") if p]
    if len(parts) < 2:
        raise DeployBenchError(f"cannot tell owner and name from repository url {url!r}")
    return parts[-2], parts[-1]


def repo_key(url: str) -> str:
    owner, name = owner_name(url)
    return f"{owner}+{name}"


def cached_repo(url: str) -> Path:
    return cache_root() / f"{repo_key(url)}.git"


def _git_dir_in(folder: Path) -> Path | None:
    """The git directory of a mirror entry: bare, a work tree's .git, or a snapshot's repo/."""
    for candidate in (folder, folder / ".git", folder / "repo", folder / "repo" / ".git"):
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate
    return None


def find_in_mirror(mirror: Path, url: str) -> Path | None:
    """The repository of `url` in a mirror folder laid out as <owner>/<name> or <owner>+<name>,
    with or without .git; names compare without case, as GitHub's do."""
    owner, name = owner_name(url)
    wanted = {
        f"{owner}/{name}".lower(),
        f"{owner}/{name}.git".lower(),
        f"{owner}+{name}".lower(),
        f"{owner}+{name}.git".lower(),
    }
    if not mirror.is_dir():
        raise DeployBenchError(f"source mirror {mirror} is not a folder")
    entries = []
    for top in mirror.iterdir():
        if top.is_dir():
            entries.append((top.name, top))
            if top.name.lower() == owner.lower():
                entries += [(f"{top.name}/{sub.name}", sub) for sub in top.iterdir()]
    for label, folder in sorted(entries):
        if label.lower() in wanted and folder.is_dir():
            found = _git_dir_in(folder)
            if found is not None:
                return found
    return None


# ---------- the index ----------
@contextlib.contextmanager
def locked() -> Iterator[None]:
    """One writer at a time: parallel attempts and a sync may touch the cache together."""
    cache_root().mkdir(parents=True, exist_ok=True)
    with open(cache_root() / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def load_index() -> dict[str, Any]:
    path = cache_root() / "index.json"
    return json.loads(path.read_text()) if path.is_file() else {"tasks": {}}


def _save_index(index: dict[str, Any]) -> None:
    path = cache_root() / "index.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)


# ---------- sync ----------
@dataclass(frozen=True)
class Source:
    """One repository a task needs at one commit: the task's own (path "") or a submodule."""

    task_id: str
    path: str
    url: str
    commit: str

    @property
    def what(self) -> str:
        return "repository" if not self.path else f"submodule {self.path}"


def sources_of(task: dict[str, Any]) -> list[Source]:
    repo = task["repo"]
    found = [Source(task["id"], "", repo["url"], repo["commit"])]
    for sub in repo.get("submodules") or []:
        found.append(Source(task["id"], sub["path"], sub["url"], sub["commit"]))
    return found


def _fetch(source: Source, mirror: Path | None) -> str:
    """Bring source.commit into the cache; return where it came from."""
    dest = cached_repo(source.url)
    where = f"{source.task_id}: {source.what}"
    if mirror is not None:
        found = find_in_mirror(mirror, source.url)
        if found is None:
            raise DeployBenchError(
                f"{where}: the mirror {mirror} has no repository {repo_key(source.url)} "
                f"(looked for <owner>/<name> and <owner>+<name>, for {source.url})"
            )
        if not has_commit(found, source.commit):
            raise DeployBenchError(
                f"{where}: commit {source.commit} is not in the mirror's {repo_key(source.url)} "
                f"({found})"
            )
        _init(dest)
        copy_objects(found, dest, source.commit)
        origin = f"mirror {found}"
    else:
        fresh = _init(dest)
        proc = subprocess.run(
            ["git", f"--git-dir={dest}", "fetch", "--quiet", "--no-tags", "--depth=1"]
            + [source.url, source.commit],
            capture_output=True,
            text=True,
            env=_git_env(),
            timeout=3600,
        )
        if proc.returncode != 0:
            if fresh:  # no empty repository is left to be listed as cached
                shutil.rmtree(dest, ignore_errors=True)
            last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
            raise DeployBenchError(
                f"{where}: cannot fetch commit {source.commit} from {source.url}: {last}"
            )
        origin = source.url
    if not has_commit(dest, source.commit):
        raise DeployBenchError(f"{where}: commit {source.commit} did not arrive from {origin}")
    pin(dest, source.commit)
    return origin


def _init(dest: Path) -> bool:
    """Make the bare cache repository if it does not exist; True if it was made now."""
    if dest.is_dir():
        return False
    git(None, "init", "--quiet", "--bare", str(dest))
    return True


def _paper(task: dict[str, Any], mirror: Path | None) -> dict[str, Any]:
    """Bring the paper PDF into the cache when it can be had; say why when it cannot."""
    target = cache_root() / "papers" / f"{task['id']}.pdf"
    if target.is_file():
        return {"status": "cached", "file": str(target)}
    target.parent.mkdir(parents=True, exist_ok=True)
    if mirror is not None:
        candidate = mirror / "papers" / f"{task['id']}.pdf"
        if candidate.is_file():
            shutil.copyfile(candidate, target)
            return {"status": "cached", "file": str(target), "from": str(candidate)}
        return {"status": "missing", "reason": f"no {candidate}"}
    url = (task.get("paper") or {}).get("pdf_url")
    if not url:
        return {"status": "missing", "reason": "task.yaml gives no paper.pdf_url"}
    try:
        with urllib.request.urlopen(url, timeout=PAPER_TIMEOUT_S) as answer:
            body = answer.read()
    except (OSError, ValueError) as exc:
        return {"status": "missing", "reason": f"{url}: {exc}"}
    if not body.startswith(b"%PDF"):
        return {"status": "missing", "reason": f"{url} did not answer with a PDF"}
    tmp = target.with_suffix(".part")
    tmp.write_bytes(body)
    tmp.replace(target)
    return {"status": "cached", "file": str(target), "from": url}


def check_task(task: dict[str, Any]) -> dict[str, Any]:
    """What the cache holds for a task, or a one-line error naming what is missing."""
    record: dict[str, Any] = {"submodules": []}
    for source in sources_of(task):
        repo = cached_repo(source.url)
        if not has_commit(repo, source.commit):
            raise DeployBenchError(
                f"{source.task_id}: {source.what}: commit {source.commit} of {source.url} is "
                "not in the source cache (run: deploybench sources sync)"
            )
        entry = {
            "url": source.url,
            "repo": repo.name,
            "commit": source.commit,
            "missing_files": sorted(missing_blobs(repo, source.commit)),
        }
        if source.path:
            top = task["repo"]
            recorded = gitlink(cached_repo(top["url"]), top["commit"], source.path)
            if recorded != source.commit:
                raise DeployBenchError(
                    f"{source.task_id}: submodule {source.path}: task.yaml pins {source.commit} "
                    f"but the pinned tree records {recorded or 'no gitlink there'}"
                )
            record["submodules"].append({"path": source.path, **entry})
        else:
            record.update(entry)
    return record


def sync(
    tasks: dict[str, dict[str, Any]],
    mirror: Path | None = None,
    on_step: Callable[[str], None] | None = None,
    problems: list[str] | None = None,
    build_tree: Callable[[dict, dict], dict] | None = None,
) -> dict[str, dict[str, Any]]:
    """Make the cache hold every task's pinned commits (and paper, when it can be had).
    Commits already cached are not fetched again. A problem is a one-line error naming the task
    and what is missing: raised at once, or, given a `problems` list, added to it while the
    other tasks go on. build_tree(task, record): the staged tree of a task whose sources are
    whole, recorded in the index beside them (staging.sync passes staging's)."""
    step = on_step or (lambda _msg: None)
    mirror = Path(mirror).resolve() if mirror is not None else None
    records: dict[str, dict[str, Any]] = {}
    with locked():
        index = load_index()
        for task_id, task in tasks.items():
            if is_demo(task):
                continue
            try:
                origins = {}
                for source in sources_of(task):
                    step(f"{task_id}: {source.what} {repo_key(source.url)} @ {source.commit[:12]}")
                    if has_commit(cached_repo(source.url), source.commit):
                        origins[source.path] = "cache"
                    else:
                        origins[source.path] = _fetch(source, mirror)
                step(f"{task_id}: paper")
                paper = _paper(task, mirror)
                record = check_task(task)
                if build_tree is not None and not needed_missing(task, all_missing(record)):
                    # Built now, once per commit, so that staging an attempt only copies it.
                    step(f"{task_id}: staged tree")
                    built = build_tree(task, record)
                    record["staged"] = {k: built[k] for k in ("tar", "tar_bytes", "files")}
            except DeployBenchError as exc:
                if problems is None:
                    raise
                problems.append(str(exc))
                continue
            record.update({"from": origins[""], "paper": paper, "checked_at": now()})
            index["tasks"][task_id] = record
            records[task_id] = record
            _save_index(index)
    return records


def ensure(
    tasks: dict[str, dict[str, Any]],
    mirror: Path | None = None,
    build_tree: Callable[[dict, dict], dict] | None = None,
) -> None:
    """Before any machine is made: every non-demo task's sources are cached (fetched from the
    mirror or the network now if they are not), and no missing file is one the task needs."""
    records = sync(tasks, mirror, build_tree=build_tree)
    for task_id, record in records.items():
        needed = needed_missing(tasks[task_id], all_missing(record))
        if needed:
            raise DeployBenchError(f"{task_id}: {needed_message(needed)}")


def all_missing(record: dict[str, Any]) -> list[str]:
    files = list(record.get("missing_files", []))
    for sub in record.get("submodules", []):
        files += [f"{sub['path']}/{f}" for f in sub["missing_files"]]
    return files


def needed_missing(task: dict[str, Any], missing: list[str]) -> list[str]:
    globs = task["repo"].get("needed_files") or []
    return [f for f in missing if any(fnmatchcase(f, g) for g in globs)]


def needed_message(needed: list[str]) -> str:
    return (
        f"the source lacks {len(needed)} file(s) the task needs (repo.needed_files): "
        + ", ".join(needed[:5])
        + (" ..." if len(needed) > 5 else "")
    )


def listing() -> list[dict[str, Any]]:
    """One row per cached repository: its size and, per commit checked, the tasks it was
    checked for and the files the cache lacks."""
    index = load_index()
    rows: dict[str, dict[str, Any]] = {}
    for repo in sorted(cache_root().glob("*.git")):
        rows[repo.name] = {"repo": repo.name, "commits": {}, "bytes": _size(repo)}
    for task_id, record in sorted(index.get("tasks", {}).items()):
        for entry in [record, *record.get("submodules", [])]:
            row = rows.get(entry["repo"])
            if row is not None:
                seen = row["commits"].setdefault(
                    entry["commit"], {"tasks": [], "missing_files": entry["missing_files"]}
                )
                seen["tasks"].append(task_id)
    return list(rows.values())


def _size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def paper_texts(task_id: str, tasks_dir: Path = TASKS_DIR) -> list[Path]:
    from deploybench import catalog

    return catalog.Task(task_id, tasks_dir=Path(tasks_dir)).papers
