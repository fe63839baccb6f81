"""The source cache and staging from it, with small git repositories made here: an upstream
repository with a submodule, mirrors in every layout the harness accepts, a snapshot that lacks a
blob, and a network remote (file:// behind a url rewrite)."""

import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml

from deploybench import catalog
from deploybench.catalog import load_tasks, sources, staging
from deploybench.errors import DeployBenchError
from tests.conftest import REPO, run_cli

IDENTITY = {
    "GIT_AUTHOR_NAME": "T",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "T",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}


def git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-c", "commit.gpgsign=false", *args],
        cwd=cwd,
        env={**os.environ, **IDENTITY},
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout.strip()


class Upstream:
    """alice/app (three commits; the second is pinned) with submodule lib -> bob/lib."""

    def __init__(self, root: Path):
        self.root = root
        self.lib = root / "lib"
        self.lib.mkdir(parents=True)
        git(self.lib, "init", "-q")
        (self.lib / "lib.c").write_text("int lib(void) { return 1; }\n")
        git(self.lib, "add", ".")
        git(self.lib, "commit", "-q", "-m", "lib")
        self.lib_commit = git(self.lib, "rev-parse", "HEAD")

        self.app = root / "app"
        self.app.mkdir()
        git(self.app, "init", "-q")
        (self.app / "README").write_text("first\n")
        git(self.app, "add", ".")
        git(self.app, "commit", "-q", "-m", "first")
        (self.app / "README").write_text("the app\n")
        (self.app / "run.sh").write_text("#!/bin/sh\necho run\n")
        (self.app / "run.sh").chmod(0o755)
        (self.app / "data").mkdir()
        (self.app / "data" / "big.bin").write_bytes(b"large data\n" * 1000)
        os.symlink("README", self.app / "README.link")
        (self.app / ".gitmodules").write_text(
            '[submodule "lib"]\n\tpath = lib\n\turl = https://github.com/bob/lib.git\n'
        )
        git(self.app, "add", ".")
        git(self.app, "update-index", "--add", "--cacheinfo", f"160000,{self.lib_commit},lib")
        git(self.app, "commit", "-q", "-m", "second")
        self.commit = git(self.app, "rev-parse", "HEAD")
        self.big_blob = git(self.app, "rev-parse", "HEAD:data/big.bin")
        (self.app / "README").write_text("newer, never staged\n")
        git(self.app, "commit", "-q", "-am", "third")
        self.newest = git(self.app, "rev-parse", "HEAD")

    def bare(self, repo: Path, dest: Path) -> Path:
        """A bare copy with loose objects (so one can be deleted), as a snapshot can be."""
        shutil.copytree(repo / ".git", dest)
        git(dest, "config", "core.bare", "true")
        return dest


@pytest.fixture
def upstream(tmp_path):
    return Upstream(tmp_path / "upstream")


@pytest.fixture
def tasks_dir(tmp_path):
    folder = tmp_path / "tasks"
    folder.mkdir()
    shutil.copy(REPO / "tasks" / "schema.json", folder / "schema.json")
    return folder


def write_task(tasks_dir: Path, task_id: str, commit: str, sub_commit: str | None, **repo):
    data = yaml.safe_load((REPO / "tests" / "fixtures" / "sources_task.yaml").read_text())
    data["id"] = task_id
    data["repo"]["commit"] = commit
    if sub_commit:
        data["repo"]["submodules"] = [
            {"path": "lib", "url": "https://github.com/bob/lib", "commit": sub_commit}
        ]
    data["repo"].update(repo)
    (tasks_dir / task_id).mkdir(exist_ok=True)
    (tasks_dir / task_id / "task.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return load_tasks(tasks_dir)


def mirror_slash(root: Path, up: Upstream) -> Path:
    """<owner>/<name>: a non-bare app, a bare lib.git."""
    mirror = root / "mirror-slash"
    (mirror / "alice").mkdir(parents=True)
    (mirror / "bob").mkdir()
    shutil.copytree(up.app, mirror / "alice" / "app", symlinks=True)
    up.bare(up.lib, mirror / "bob" / "lib.git")
    return mirror


def mirror_plus(root: Path, up: Upstream) -> Path:
    """<owner>+<name> as the snapshot fetcher lays it out (<owner>+<name>/repo, bare), with the
    big blob's object deleted, and a non-bare lib."""
    mirror = root / "mirror-plus"
    (mirror / "alice+app").mkdir(parents=True)
    bare = up.bare(up.app, mirror / "alice+app" / "repo")
    loose = bare / "objects" / up.big_blob[:2] / up.big_blob[2:]
    loose.unlink()
    shutil.copytree(up.lib, mirror / "bob+lib", symlinks=True)
    return mirror


def unpack(tar: str, dest: Path) -> Path:
    with tarfile.open(tar) as archive:
        archive.extractall(dest, filter="tar")
    return dest


@pytest.mark.parametrize("layout", [mirror_slash, mirror_plus])
def test_sync_from_a_mirror_caches_the_pinned_commits(layout, upstream, tasks_dir, state_home):
    mirror = layout(upstream.root.parent, upstream)
    tasks = write_task(tasks_dir, "app_test24", upstream.commit, upstream.lib_commit)
    records = staging.sync(tasks, mirror)
    record = records["app_test24"]
    assert record["commit"] == upstream.commit
    assert record["submodules"][0]["commit"] == upstream.lib_commit
    cached = sources.cached_repo("https://github.com/alice/app")
    assert cached == state_home / "sources" / "alice+app.git"
    assert sources.has_commit(cached, upstream.commit)
    # Only the pinned commit came, never the history nor the newer commit.
    assert not sources.has_commit(cached, upstream.newest)
    assert git(cached, "rev-list", "--count", upstream.commit) == "1"
    lacks = ["data/big.bin"] if layout is mirror_plus else []
    assert record["missing_files"] == lacks
    assert record["paper"]["status"] == "missing"
    rows = {r["repo"]: r for r in sources.listing()}
    assert rows["alice+app.git"]["commits"] == {
        upstream.commit: {"tasks": ["app_test24"], "missing_files": lacks}
    }
    assert rows["bob+lib.git"]["commits"] == {
        upstream.lib_commit: {"tasks": ["app_test24"], "missing_files": []}
    }
    assert rows["alice+app.git"]["bytes"] > 0
    # A second sync finds everything cached and fetches nothing.
    again = staging.sync(tasks, mirror=None)
    assert again["app_test24"]["commit"] == upstream.commit


def test_sync_over_the_network_fetches_one_commit(upstream, tasks_dir, state_home, monkeypatch):
    # https://github.com/<owner>/<name> is rewritten to local folders laid out the same way:
    # the real `git fetch --depth 1 <url> <commit>` the network path runs, without a network.
    net = upstream.root.parent / "net"
    for owner, repo in (("alice", upstream.app), ("bob", upstream.lib)):
        dest = net / owner / repo.name
        shutil.copytree(repo, dest, symlinks=True)
        git(dest, "config", "uploadpack.allowAnySHA1InWant", "true")  # as GitHub allows
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", f"url.file://{net}/.insteadOf")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "https://github.com/")
    tasks = write_task(tasks_dir, "app_test24", upstream.commit, upstream.lib_commit)
    record = staging.sync(tasks)["app_test24"]
    assert record["from"] == "https://github.com/alice/app"
    cached = sources.cached_repo("https://github.com/alice/app")
    assert sources.has_commit(cached, upstream.commit)
    assert not sources.has_commit(cached, upstream.newest)
    assert record["paper"] == {"status": "missing", "reason": "task.yaml gives no paper.pdf_url"}
    # A repository the network does not have: one line, and no empty repository left cached.
    tasks = write_task(tasks_dir, "app_test24", upstream.commit, None, url="https://github.com/x/y")
    with pytest.raises(DeployBenchError, match=r"^app_test24: repository: cannot fetch commit"):
        staging.sync(tasks)
    assert not sources.cached_repo("https://github.com/x/y").exists()


def test_missing_commit_repository_and_submodule_are_one_line_each(upstream, tasks_dir, state_home):
    mirror = mirror_slash(upstream.root.parent, upstream)
    absent = "0123456789abcdef0123456789abcdef01234567"
    tasks = write_task(tasks_dir, "app_test24", absent, None)
    with pytest.raises(DeployBenchError) as caught:
        staging.sync(tasks, mirror)
    assert str(caught.value) == (
        f"app_test24: repository: commit {absent} is not in the mirror's alice+app "
        f"({mirror / 'alice' / 'app' / '.git'})"
    )
    tasks = write_task(tasks_dir, "app_test24", upstream.commit, None, url="https://github.com/x/y")
    with pytest.raises(DeployBenchError, match=r"^app_test24: repository: the mirror .* has no "):
        staging.sync(tasks, mirror)
    assert not sources.cached_repo("https://github.com/x/y").exists()
    shutil.rmtree(mirror / "bob")
    tasks = write_task(tasks_dir, "app_test24", upstream.commit, upstream.lib_commit)
    with pytest.raises(DeployBenchError) as caught:
        staging.sync(tasks, mirror)
    assert str(caught.value).startswith(
        f"app_test24: submodule lib: the mirror {mirror} has no repository bob+lib"
    )
    # A submodule pinned at another commit than the tree's gitlink is refused too.
    tasks = write_task(tasks_dir, "app_test24", upstream.commit, upstream.lib_commit)
    (mirror / "bob").mkdir()
    shutil.copytree(upstream.lib, mirror / "bob" / "lib", symlinks=True)
    git(mirror / "bob" / "lib", "commit", "-q", "--allow-empty", "-m", "later")
    later = git(mirror / "bob" / "lib", "rev-parse", "HEAD")
    tasks = write_task(tasks_dir, "app_test24", upstream.commit, later)
    with pytest.raises(DeployBenchError, match=f"pins {later} but the pinned tree records"):
        staging.sync(tasks, mirror)


def test_staged_tree_is_the_pinned_commit_clean_without_history(upstream, tasks_dir, state_home):
    mirror = mirror_slash(upstream.root.parent, upstream)
    tasks = write_task(tasks_dir, "app_test24", upstream.commit, upstream.lib_commit)
    record = staging.sync(tasks, mirror)["app_test24"]
    # sync built the staged tarball once; staging an attempt reuses it.
    built = staging.staged_tree(tasks["app_test24"], record)
    assert built["reused"] is True and built["tar"] == record["staged"]["tar"]
    work = unpack(built["tar"], upstream.root.parent / "machine")
    assert git(work, "rev-parse", "HEAD") == upstream.commit
    assert git(work, "status", "--porcelain") == ""
    assert git(work, "rev-list", "--count", "HEAD") == "1"
    assert (work / ".git" / "shallow").read_text().split() == [upstream.commit]
    assert "HEAD detached at" in git(work, "status")
    assert (work / "README").read_text() == "the app\n"  # the pinned content, not the newest
    assert os.access(work / "run.sh", os.X_OK)
    assert os.readlink(work / "README.link") == "README"
    assert git(work / "lib", "rev-parse", "HEAD") == upstream.lib_commit
    assert (work / "lib" / "lib.c").is_file()
    assert git(work / "lib", "rev-list", "--count", "HEAD") == "1"
    # Git works on it: a change shows in diff, and checkout restores it from the .git.
    (work / "README").write_text("changed\n")
    assert "+changed" in git(work, "diff")
    git(work, "checkout", "--", "README")
    assert git(work, "status", "--porcelain") == ""
    # Rebuilt when it is gone.
    Path(built["tar"]).unlink()
    assert staging.staged_tree(tasks["app_test24"], record)["reused"] is False
    assert Path(built["tar"]).is_file()


def test_missing_file_is_recorded_and_needed_file_stops(upstream, tasks_dir, state_home, tmp_path):
    mirror = mirror_plus(upstream.root.parent, upstream)
    tasks = write_task(tasks_dir, "app_test24", upstream.commit, upstream.lib_commit)
    (tasks_dir / "app_test24" / "paper.md").write_text("# The app paper\n")
    staging.sync(tasks, mirror)
    plan = staging.plan_attempt(
        catalog.load_task("app_test24", tasks_dir), tmp_path / "attempt", tasks_dir
    )
    record = json.loads((tmp_path / "attempt" / "staging.json").read_text())
    assert record["missing_files"] == ["data/big.bin"] == plan["missing_files"]
    assert record["needed_missing"] == []
    # The paper could not be had: recorded, and the task's paper text staged instead.
    assert record["paper"]["status"] == "missing"
    assert record["paper"]["staged"] == ["paper.md"]
    assert [p["name"] for p in plan["papers"]] == ["paper.md"]
    work = unpack(plan["tar"], tmp_path / "machine")
    assert not (work / "data" / "big.bin").exists()
    assert git(work, "status", "--porcelain") == ""  # skip-worktree: not reported deleted
    assert git(work, "rev-parse", "HEAD") == upstream.commit

    write_task(
        tasks_dir,
        "app_test24",
        upstream.commit,
        upstream.lib_commit,
        needed_files=["data/*.bin"],
    )
    with pytest.raises(DeployBenchError, match=r"^app_test24: the source lacks 1 file\(s\) .*big"):
        staging.plan_attempt(
            catalog.load_task("app_test24", tasks_dir), tmp_path / "stopped", tasks_dir
        )
    stopped = json.loads((tmp_path / "stopped" / "staging.json").read_text())
    assert stopped["needed_missing"] == ["data/big.bin"] and stopped["stopped"]
    with pytest.raises(DeployBenchError, match="needed_files"):
        staging.ensure(load_tasks(tasks_dir), mirror)
    env = {"DEPLOYBENCH_REPO": str(checkout_with(tmp_path, tasks_dir))}
    proc = run_cli("sources", "sync", "--source-mirror", mirror, env=env, check=False)
    assert proc.returncode == 2
    assert "error: app_test24: the source lacks 1 file(s) the task needs" in proc.stderr
    # The progress line's last word is no "done" for a sync that failed.
    assert ": done in" not in proc.stderr and "1 problem(s) after" in proc.stderr, proc.stderr


def test_paper_pdf_from_the_mirror_is_staged(upstream, tasks_dir, state_home, tmp_path):
    mirror = mirror_slash(upstream.root.parent, upstream)
    (mirror / "papers").mkdir()
    (mirror / "papers" / "app_test24.pdf").write_bytes(b"%PDF-1.4 the paper\n")
    tasks = write_task(tasks_dir, "app_test24", upstream.commit, upstream.lib_commit)
    assert staging.sync(tasks, mirror)["app_test24"]["paper"]["status"] == "cached"
    plan = staging.plan_attempt(
        catalog.load_task("app_test24", tasks_dir), tmp_path / "attempt", tasks_dir
    )
    assert plan["paper"] == {"status": "cached", "staged": ["paper.pdf"]}
    assert Path(plan["papers"][0]["src"]).read_bytes().startswith(b"%PDF")


def test_demo_task_stages_as_before(state_home, tmp_path):
    # A demo task needs no cache: its artifact folder becomes the one-commit repository.
    tasks = load_tasks()
    demo = next(t for t in tasks.values() if t.get("demo"))
    assert staging.sync({demo["id"]: demo}) == {}
    plan = staging.plan_attempt(demo, tmp_path / "attempt")
    assert plan["paper"] == {"status": "text", "staged": ["paper.md"]}
    work = unpack(plan["tar"], tmp_path / "machine")
    assert git(work, "rev-parse", "HEAD") == demo["repo"]["commit"]
    assert git(work, "status", "--porcelain") == ""


def checkout_with(tmp_path: Path, tasks_dir: Path) -> Path:
    """A checkout whose tasks/ is tasks_dir (DEPLOYBENCH_REPO), the rest the real one."""
    root = tmp_path / "checkout"
    root.mkdir()
    for item in REPO.iterdir():
        if item.name not in ("tasks", "verifiers", "reference_setups", ".git"):
            (root / item.name).symlink_to(item)
    (root / "tasks").symlink_to(tasks_dir)
    # A verifier and a reference setup, so that run and validate-references reach the sources.
    for task in tasks_dir.glob("*/task.yaml"):
        (root / "verifiers" / task.parent.name).mkdir(parents=True)
        (root / "verifiers" / task.parent.name / "experiment.sh").write_text("exit 0\n")
        (root / "verifiers" / task.parent.name / "checks.yaml").write_text(
            "checks:\n  - {name: ran, kind: exists, file: verifier_stdout.log, empty_ok: true}\n"
        )
        (root / "reference_setups" / task.parent.name / "tasks").mkdir(parents=True)
    return root


def test_cli_sync_list_and_errors_before_any_machine(
    upstream, tasks_dir, state_home, runs, tmp_path
):
    mirror = mirror_plus(upstream.root.parent, upstream)
    absent = "0123456789abcdef0123456789abcdef01234567"
    write_task(tasks_dir, "app_test24", upstream.commit, upstream.lib_commit)
    write_task(tasks_dir, "gone_test24", absent, None)
    write_task(tasks_dir, "nowhere_test24", upstream.commit, None, url="https://github.com/x/y")
    env = {"DEPLOYBENCH_REPO": str(checkout_with(tmp_path, tasks_dir))}
    out = run_cli("sources", "sync", "--source-mirror", mirror, "--tasks", "app_test24", env=env)
    assert upstream.commit in out.stdout
    assert "app_test24: the source lacks data/big.bin (not staged)" in out.stdout
    listed = run_cli("sources", "list", env=env).stdout
    assert "alice+app" in listed and "bob+lib" in listed and upstream.commit in listed
    for command in (
        ["stage", "--task"],
        ["run", "--agent", "nop", "--tasks"],
        ["validate-references", "--tasks"],
    ):
        for task_id, says in (
            ("gone_test24", f"gone_test24: repository: commit {absent} is not in the mirror"),
            ("nowhere_test24", "nowhere_test24: repository: the mirror"),
        ):
            proc = run_cli(*command, task_id, "--source-mirror", mirror, env=env, check=False)
            assert proc.returncode == 2, proc.stderr
            lines = proc.stderr.strip().splitlines()
            assert len(lines) == 1 and says in lines[0], proc.stderr
    # No machine was made: no deployment, no machine folder.
    assert not any((state_home / "deployments").glob("*"))
    assert not any((state_home / "machines").glob("*"))


@pytest.mark.slow
@pytest.mark.privileged
def test_stage_onto_a_fresh_local_machine(
    root_host, upstream, tasks_dir, state_home, runs, tmp_path
):
    mirror = mirror_plus(upstream.root.parent, upstream)
    write_task(tasks_dir, "app_test24", upstream.commit, upstream.lib_commit)
    env = {"DEPLOYBENCH_REPO": str(checkout_with(tmp_path, tasks_dir))}
    out = run_cli(
        "stage", "--task", "app_test24", "--source-mirror", mirror, "--keep", env=env
    ).stdout
    assert f"staged app_test24 at {upstream.commit}" in out
    assert "missing from the source (not staged, not needed): data/big.bin" in out
    assert "stage time:" in out
    ssh = next(line for line in out.splitlines() if line.startswith("kept: ")).split(" ", 1)[1]
    workdir = "/home/vm/Desktop/app_test24"
    remote = subprocess.run(
        f"{ssh} -o LogLevel=ERROR 'cd {workdir} && git rev-parse HEAD && git status --porcelain "
        "&& git rev-list --count HEAD && git -C lib rev-parse HEAD && stat -c %U README'",
        shell=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert remote.returncode == 0, remote.stderr
    assert remote.stdout.split() == [upstream.commit, "1", upstream.lib_commit, "vm"]
    # The staging logged in once (the machine's sshd logs each login to its console): the
    # preparation and both streams of the tree and the paper went over Ansible's one
    # connection; the check above is the second login.
    (console,) = (state_home / "machines").glob("*/console.log")
    assert console.read_text().count("Accepted publickey for vm") == 2
    deployment = next(line for line in out.splitlines() if "destroy --deployment" in line)
    run_cli("destroy", "--deployment", deployment.rsplit(" ", 1)[1], env=env)
    assert not any((state_home / "deployments").glob("*"))


# It makes a local machine to stage onto, as the test above does.
@pytest.mark.slow
@pytest.mark.privileged
def test_stage_of_a_demo_task_names_its_paper_text(root_host, state_home, runs):
    out = run_cli("stage", "--task", "legacycalc_demo24").stdout
    assert "paper: paper.md (the task's paper text)" in out
    assert "stage time:" in out
    assert not any((state_home / "deployments").glob("*"))
