"""Static checks of the 51 reference roles against their tasks (docs/catalog-checks.md).

No machine and no network: the roles' YAML, the task files and, for "exists at the pinned
commit", a committed listing per task (tests/fixtures/pinned_trees/<task>.txt) taken from
`git ls-tree` at the pinned commit. The listings are made (and checked again) from a folder of
repository snapshots (<owner>+<name>/repo) with
`python -m tests.test_catalog_static MIRROR [--write]`; the tests below run that same code on a
real git repository they make, and on the demo tasks' own folders.
"""

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO

TASK_IDS = sorted(p.name for p in (REPO / "tasks").iterdir() if (p / "task.yaml").is_file())
FIXTURES = REPO / "tests" / "fixtures" / "pinned_trees"
FACT_RE = re.compile(
    r"ansible_facts|\bansible_(distribution|kernel|processor|memtotal|architecture|os_family|env|user_dir|lsb)"
)
CREATOR_RE = re.compile(
    r"git clone|mkdir|state: directory|ansible\.builtin\.git|unarchive|-m venv|virtualenv"
    r"| -B |cmake -B|tar x"
)
VAR_RE = re.compile(r"\{\{\s*([a-zA-Z0-9_]+)\s*\}\}")
WORKDIR = "@WORKDIR@"
# Words by which a task file says a host is gone for good (not merely unreachable from here).
DEAD_RE = re.compile(
    r"no longer answers|no longer serves|no longer exists|is dead|is gone|defunct|taken down"
)
HOST_RE = re.compile(r"\b((?:[a-z0-9-]+\.)+(?:com|org|edu|net|io|de|uk|ai))\b")
RUNNERS = ("ansible.builtin.command", "ansible.builtin.shell", "ansible.builtin.script")
# Tasks whose repository has no snapshot here, so no listing: each with why.
NO_SNAPSHOT = {"mmseg_github24": "the repository (734 MB) is over the snapshot tool's limit"}
DRIVER_RE = r"nvidia-driver|nvidia-headless|modprobe nvidia"
FLOATING_REFS = {"master", "main", "head", "develop", "dev", "trunk"}
# Era pins the tests could not make here, each with why (docs/catalog-checks.md).
KNOWN_UNPINNED = {
    (
        "ergo_coling22",
        "main",
    ): "Hugging Face model repository; its commit could not be looked up offline",
}


def _tasks(task_id):
    return yaml.safe_load((REPO / "tasks" / task_id / "task.yaml").read_text())


def _role_dir(task_id):
    return REPO / "reference_setups" / task_id


def _role_vars(task_id):
    out = {}
    for rel in ("defaults/main.yml", "vars/main.yml"):
        f = _role_dir(task_id) / rel
        if f.is_file():
            out.update(yaml.safe_load(f.read_text()) or {})
    out[f"{task_id}_workdir"] = WORKDIR
    return out


def _resolve(value, rvars, item=None):
    """The string with the role's own variables put in, or None when one is left unknown."""
    s = str(value)
    for _ in range(5):
        if item is not None:
            s = re.sub(r"\{\{\s*item\s*\}\}", str(item), s)

        def sub(m):
            v = rvars.get(m.group(1))
            return str(v) if isinstance(v, (str, int, float)) else m.group(0)

        s2 = VAR_RE.sub(sub, s)
        if s2 == s:
            break
        s = s2
    return None if "{{" in s or "{%" in s else s


def _flat_tasks(task_id):
    """The role's tasks in order (main.yml, then the other task files), blocks flattened."""
    tdir = _role_dir(task_id) / "tasks"
    files = [tdir / "main.yml"] + sorted(f for f in tdir.glob("*.yml") if f.name != "main.yml")
    out = []

    def walk(ts):
        for t in ts or []:
            if not isinstance(t, dict):
                continue
            out.append(t)
            for k in ("block", "rescue", "always"):
                walk(t.get(k))

    for f in files:
        walk(yaml.safe_load(f.read_text()))
    return out


def _module_args(t):
    for k, v in t.items():
        if k.startswith("ansible.builtin.") and isinstance(v, dict):
            return k, v
    return None, {}


def _loop_items(t, rvars):
    loop = t.get("loop")
    if isinstance(loop, str):
        name = VAR_RE.fullmatch(loop.strip())
        loop = rvars.get(name.group(1)) if name else None
    return loop if isinstance(loop, list) else [None]


def _named_repo_paths(task_id):
    """(path in the repository, kind, index of the task) for every chdir and stat the role names."""
    rvars = _role_vars(task_id)
    out = []
    ran = False  # a stat after the first command checks an output, not the repository
    for i, t in enumerate(_flat_tasks(task_id)):
        mod, args = _module_args(t)
        ran = ran or mod in (
            "ansible.builtin.command",
            "ansible.builtin.shell",
            "ansible.builtin.script",
        )
        keys = ["chdir"] + (["path"] if mod == "ansible.builtin.stat" and not ran else [])
        for key in keys:
            if key not in args:
                continue
            for item in _loop_items(t, rvars):
                if isinstance(item, dict):
                    continue
                s = _resolve(args[key], rvars, item)
                if s is None or not s.startswith(WORKDIR):
                    continue
                rel = s[len(WORKDIR) :].strip("/")
                out.append((rel, key, i))
    return out


def _made_paths(task_id, t):
    """The workdir-relative paths a task makes: a folder, a clone, an unpacked or copied tree, or
    what a command's `creates:` says it leaves (whose folders then exist too)."""
    rvars = _role_vars(task_id)
    mod, args = _module_args(t)
    keys = []
    if mod == "ansible.builtin.file":
        keys = ["path"]
    elif mod in ("ansible.builtin.git", "ansible.builtin.unarchive", "ansible.builtin.copy"):
        keys = ["dest"]
    elif mod in ("ansible.builtin.command", "ansible.builtin.shell"):
        keys = ["creates"]
    out = []
    for key in keys:
        if key not in args:
            continue
        for item in _loop_items(t, rvars):
            raw = str(args[key])
            if isinstance(item, dict):
                for k, v in item.items():
                    raw = re.sub(r"\{\{\s*item\." + k + r"\s*\}\}", str(v), raw)
                item = None
            state = str(args.get("state", ""))
            if mod == "ansible.builtin.file" and "{{ item }}" not in state and state != "directory":
                continue
            r = _resolve(raw, rvars, item)
            if r and r.startswith(WORKDIR):
                out.append(r[len(WORKDIR) :].strip("/"))
    return out


def _created_before(task_id, rel, index):
    """Whether a task before `index` makes the folder rel, a folder below it, or names it in a
    command that makes folders (git clone, mkdir, cmake -B, a venv)."""
    for t in _flat_tasks(task_id)[:index]:
        if any(m == rel or m.startswith(rel + "/") for m in _made_paths(task_id, t)):
            return True
        mod, _args = _module_args(t)
        text = yaml.safe_dump(t, width=10_000)
        creator = mod in RUNNERS and CREATOR_RE.search(text)
        named = re.search(r"(^|[/ '\"])" + re.escape(rel) + r"($|[ '\"\n;])", text, re.M)
        if (creator or mod == "ansible.builtin.unarchive") and named:
            return True
    return False


def _read_fixture(task_id):
    f = FIXTURES / f"{task_id}.txt"
    if not f.is_file():
        return None, {}
    lines = f.read_text().splitlines()
    header = lines[0].split()
    entries = dict(line.split("\t") for line in lines[1:] if line)
    return header, entries


def _pinned_kind(entries, rel):
    """'tree', 'blob', 'submodule' (under a gitlink, not listable here) or None (absent)."""
    if rel in ("", "."):
        return "tree"
    if rel in entries:
        return entries[rel]
    parts = rel.split("/")
    for n in range(1, len(parts)):
        if entries.get("/".join(parts[:n])) == "commit":
            return "submodule"
    return None


# ---- 1. A role that reads facts gathers them first --------------------------------------------


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_role_that_reads_facts_gathers_them(task_id):
    role = _role_dir(task_id)
    texts = [f.read_text() for f in role.rglob("*") if f.is_file() and f.suffix in (".yml", ".j2")]
    if not any(FACT_RE.search(t) for t in texts):
        return
    ts = _flat_tasks(task_id)
    gather = [
        i
        for i, t in enumerate(ts)
        if "ansible.builtin.setup" in t
        or (_module_args(t)[1].get("name") == "gpu_driver" and "ansible.builtin.include_role" in t)
    ]
    assert gather, f"{task_id} reads facts and no task gathers them (the plays: gather_facts false)"
    readers = [
        i
        for i, t in enumerate(ts)
        if "ansible.builtin.setup" not in t
        and FACT_RE.search(yaml.safe_dump({k: v for k, v in t.items() if k != "block"}))
    ]
    if readers:
        assert gather[0] < readers[0], (
            f"{task_id}: task {readers[0]} reads facts before they are gathered"
        )


# ---- 2. Every chdir exists at the pinned commit or is made earlier; every named path exists ----


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_named_paths_exist_at_pinned_commit_or_are_created(task_id):
    named = _named_repo_paths(task_id)
    header, entries = _read_fixture(task_id)
    if header is None:
        assert task_id in NO_SNAPSHOT, f"no pinned-tree listing for {task_id}: make it"
        return
    assert header[1] == _tasks(task_id)["repo"]["commit"], (
        "the listing is of another commit; make it again"
    )
    missing = []
    for rel, key, i in named:
        kind = _pinned_kind(entries, rel)
        if kind in ("tree", "submodule", "commit") or (kind == "blob" and key == "path"):
            continue
        if kind == "blob" and key == "chdir":
            missing.append(f"chdir into a file: {rel}")
        elif not _created_before(task_id, rel, i):
            missing.append(f"{key}: {rel}")
    assert not missing, (
        f"{task_id}: not in the pinned tree and not made earlier in the role: {missing}"
    )


def _wanted_paths(task_id):
    paths = set()
    for rel, _key, _i in _named_repo_paths(task_id):
        parts = [p for p in rel.split("/") if p]
        paths.update("/".join(parts[:n]) for n in range(1, len(parts) + 1))
    return sorted(paths)


def _listing_from_folder(task_id, folder, commit, url):
    """A demo task's artifact is a folder of this repository; its listing is taken from there."""
    rows = []
    for p in _wanted_paths(task_id):
        f = folder / p
        if f.is_dir():
            rows.append(f"{p}\ttree")
        elif f.is_file():
            rows.append(f"{p}\tblob")
    return "\n".join([f"# {commit} {url}", *rows]) + "\n"


def _listing_from_git(gitdir, commit, url, wanted):
    rows = []
    for p in wanted:
        out = subprocess.run(
            ["git", "--git-dir", str(gitdir), "ls-tree", commit, "--", p],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for line in out.splitlines():
            meta, name = line.split("\t", 1)
            if name == p:
                rows.append(f"{p}\t{meta.split()[1]}")
    return "\n".join([f"# {commit} {url}", *rows]) + "\n"


def _listing_from_snapshot(task_id, mirror):
    """The task's listing made from its repository's snapshot in `mirror` (None when the
    mirror has none), or from its folder for a demo task."""
    task = _tasks(task_id)
    url, commit = task["repo"]["url"], task["repo"]["commit"]
    if url.startswith("demo:"):
        return _listing_from_folder(task_id, REPO / url.removeprefix("demo:"), commit, url)
    slug = url.split("github.com/")[1].strip("/").removesuffix(".git").replace("/", "+")
    gitdir = Path(mirror) / slug / "repo"
    if (gitdir / ".git").is_dir():
        gitdir = gitdir / ".git"
    if not gitdir.is_dir():
        return None
    return _listing_from_git(gitdir, commit, url, _wanted_paths(task_id))


def test_a_listing_is_what_git_says_at_the_commit(tmp_path):
    # A real repository: a path that exists only after the pinned commit is not listed.
    def git(*args):
        return subprocess.run(
            ["git", "-C", str(tmp_path), *args], check=True, capture_output=True, text=True
        ).stdout.strip()

    git("init", "-q")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.c").write_text("int main(void) { return 0; }\n")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    pinned = git("rev-parse", "HEAD")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "x").write_text("later\n")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "two")
    made = _listing_from_git(
        tmp_path / ".git", pinned, "u", ["src", "src/main.c", "build", "build/x"]
    )
    assert made == f"# {pinned} u\nsrc\ttree\nsrc/main.c\tblob\n"


@pytest.mark.parametrize(
    "task_id", [t for t in TASK_IDS if _tasks(t)["repo"]["url"].startswith("demo:")]
)
def test_a_demo_tasks_listing_is_made_again_from_its_folder(task_id):
    assert (FIXTURES / f"{task_id}.txt").read_text() == _listing_from_snapshot(task_id, None)


def main(argv=None):
    """Make every task's listing again from a folder of snapshots: compare (default) or write."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tests.test_catalog_static")
    parser.add_argument("mirror", type=Path)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    differ, absent = [], []
    for task_id in TASK_IDS:
        made = _listing_from_snapshot(task_id, args.mirror)
        if made is None:
            absent.append(task_id)
            continue
        path = FIXTURES / f"{task_id}.txt"
        if args.write:
            path.write_text(made)
        elif not path.is_file() or path.read_text() != made:
            differ.append(task_id)
    print(f"{len(TASK_IDS) - len(absent)} made, {len(differ)} differ: {' '.join(differ)}")
    print(f"no snapshot: {' '.join(absent)}")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())


# ---- 3. No default URL is on a host the task calls gone --------------------------------------


def _dead_hosts(task_id):
    text = " ".join((REPO / "tasks" / task_id / "task.yaml").read_text().split())
    hosts = set()
    for sentence in re.split(r"(?<=[.;])\s", text):
        if DEAD_RE.search(sentence):
            hosts.update(HOST_RE.findall(sentence))
    return hosts


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_no_default_url_on_a_dead_host(task_id):
    dead = _dead_hosts(task_id)
    text = ""
    for rel in ("defaults/main.yml", "vars/main.yml", "meta/argument_specs.yml"):
        f = _role_dir(task_id) / rel
        if f.is_file():
            text += f.read_text()
    urls = re.findall(r"https?://([^/\s\"']+)", text)
    bad = sorted({u for u in urls if u in dead})
    assert not bad, f"{task_id}: default URLs on hosts the task file calls gone: {bad}"


# ---- 4. Era-sensitive dependencies are pinned ----------------------------------------------------


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_era_sensitive_dependencies_are_pinned(task_id):
    rvars = _role_vars(task_id)
    problems = []
    for t in _flat_tasks(task_id):
        mod, args = _module_args(t)
        text = yaml.safe_dump(t, width=10_000)
        if "rev-list" in text and "--before" in text:
            problems.append("git rev-list --before picks a commit by the time of day it runs")
        if mod == "ansible.builtin.git":
            version = _resolve(args.get("version", "HEAD"), rvars, None)
            for item in _loop_items(t, rvars):
                v = version
                if v is None and isinstance(item, dict):
                    v = _resolve(
                        re.sub(r"item\.(\w+)", r"item_\1", str(args.get("version"))),
                        {**rvars, **{f"item_{k}": val for k, val in item.items()}},
                    )
                if (
                    v is not None
                    and v.lower() in FLOATING_REFS
                    and (task_id, v) not in KNOWN_UNPINNED
                ):
                    problems.append(f"git checkout of the moving ref {v}")
        if mod == "ansible.builtin.get_url" and "checksum" not in args:
            url = _resolve(args.get("url", ""), rvars, None) or ""
            if re.search(r"get\.haskellstack\.org|releases/latest|/latest/", url):
                problems.append(f"download of whatever is newest: {url}")
        cmd = (
            str(args.get("cmd", "")) + " " + str(args.get("argv", ""))
            if args
            else str(t.get(mod, ""))
        )
        if re.search(r"raco pkg install --auto", cmd) and not any(
            "#" in str(_resolve(x.get(_module_args(x)[0], {}).get("cmd", ""), rvars) or "")
            for x in _flat_tasks(task_id)
            if "raco pkg install" in yaml.safe_dump(x) and "--name rosette" in yaml.safe_dump(x)
        ):
            problems.append("raco --auto pulls the catalog's newest Rosette; pin it first")
    assert not problems, f"{task_id}: {sorted(set(problems))}"


# ---- 5. The NVIDIA driver is installed by the shared role only ---------------------------------


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_gpu_driver_comes_from_the_shared_role(task_id):
    role = _role_dir(task_id)
    copies = [
        str(f.relative_to(REPO))
        for f in role.rglob("*")
        if f.suffix == ".yml" and re.search(DRIVER_RE, f.read_text())
    ]
    assert not copies, (
        f"{task_id} installs the NVIDIA driver itself; include roles/gpu_driver instead: {copies}"
    )
    if _tasks(task_id).get("gpu"):
        included = [
            t
            for t in _flat_tasks(task_id)
            if "ansible.builtin.include_role" in t
            and _module_args(t)[1].get("name") == "gpu_driver"
        ]
        assert included, f"{task_id} is a GPU task and does not include roles/gpu_driver"
