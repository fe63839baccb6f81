"""The controller's cache of agent scaffolds: a scaffold installs into one prefix on the machine
(/opt/deploybench-agent/<scaffold>, docs/agents.md), so the prefix, archived once after a real
install, can be copied into every later machine of the same platform instead of installing
again.

An archive is keyed by the digest of what the install does (the spec's install text, its system
packages, the prefix) and of the platform it ran on (backend, image, machine architecture). It
is published only whole: written under a partial name, hashed, renamed, and its sha256 written
beside it last, so a reader that finds the sha256 finds the whole archive; a reader checks the
archive against it before use, and a mismatch (a partial copy, a disk error, a hand edit) is
removed and built again, never sent to a machine.

Attempts that start at once on a cold cache do not all install: the first claims the build
(an O_EXCL claim file naming the attempt's playbook process) and the others wait for its
archive. A claim whose process is gone, or that is older than the install's time limit, is
taken over.

A backend whose machines are overlays on this host (local) does not copy the archive in: the
entry's layer, the archive unpacked once on the host (its sha256 checked first) into a folder of
the cache, becomes an extra read-only lower layer of each later machine, under the machine's
own upper layer, so a write into the prefix from the machine lands in that machine's upper
layer and never in the cache. The layer is unpacked under a partial name and renamed whole,
with a manifest of every entry's status beside it (inode, mode, owner, size, change time: the
change time moves with any write, chmod, chown or rename, and cannot be set back); before each
use the tree is walked and compared with the manifest, and a tree that differs, or has none,
is set aside (renamed: a running machine's overlay keeps it) and unpacked again from the
checked archive."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from deploybench.errors import DeployBenchError
from deploybench.paths import state_home

PREFIX_ROOT = "/opt/deploybench-agent"
ARCHIVE_SUFFIX = ".tar.gz"
POLL_SECONDS = 2.0
# A replaced layer is renamed aside, not removed: a running machine's overlay holds it as its
# lower layer (a rename leaves a mount alone; removing its files would not). Removed once older
# than any attempt's machine lives (its budgets, and a kept machine's hours).
RETIRED_KEEP_SECONDS = 2 * 24 * 3600


def cache_dir() -> Path:
    return state_home() / "scaffolds"


def prefix(scaffold: str) -> str:
    return f"{PREFIX_ROOT}/{scaffold}"


def install_digest(scaffold: str, install: str, system_packages: list[str]) -> str:
    """What the install does, as one digest: a changed spec is a new archive."""
    text = json.dumps(
        {"scaffold": scaffold, "install": install, "system_packages": sorted(system_packages)},
        sort_keys=True,
    )
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Entry:
    """One archive of the cache: <scaffold>-<key>.tar.gz and its .sha256 beside it."""

    scaffold: str
    key: str

    @classmethod
    def of(cls, scaffold: str, digest: str, backend: str, image: str, arch: str) -> Entry:
        platform = json.dumps([digest, backend, image, arch])
        return cls(scaffold, hashlib.sha256(platform.encode()).hexdigest()[:24])

    @property
    def stem(self) -> Path:
        return cache_dir() / f"{self.scaffold}-{self.key}"

    @property
    def archive(self) -> Path:
        return self.stem.with_name(self.stem.name + ARCHIVE_SUFFIX)

    @property
    def checksum(self) -> Path:
        return self.stem.with_name(self.stem.name + ".sha256")

    @property
    def partial(self) -> Path:
        """Where the builder's archive arrives from the machine before it is published."""
        return self.stem.with_name(self.stem.name + ".partial" + ARCHIVE_SUFFIX)

    @property
    def claim_file(self) -> Path:
        return self.stem.with_name(self.stem.name + ".claim")

    @property
    def layer(self) -> Path:
        """The archive unpacked for a machine's lower layer: <layer>/opt/deploybench-agent/..."""
        return self.stem.with_name(self.stem.name + ".layer")

    @property
    def manifest(self) -> Path:
        return self.stem.with_name(self.stem.name + ".layer.json")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def usable(entry: Entry) -> str | None:
    """The archive's sha256 when the archive is whole; a damaged one is removed."""
    if not entry.checksum.is_file():
        return None
    wanted = entry.checksum.read_text().strip()
    if entry.archive.is_file() and _sha256(entry.archive) == wanted:
        return wanted
    entry.archive.unlink(missing_ok=True)
    entry.checksum.unlink(missing_ok=True)
    return None


def _claim_is_live(entry: Entry, stale_after: float) -> bool:
    try:
        held = json.loads(entry.claim_file.read_text())
    except (OSError, ValueError):
        # Being written this instant, or gone: look again at the next poll.
        return True
    try:
        os.kill(int(held["pid"]), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, KeyError, TypeError, ValueError):
        pass
    return time.time() - float(held.get("at", 0)) < stale_after


def claim(entry: Entry, wait_seconds: float) -> dict[str, str]:
    """{"use": archive, "sha256": ...} when an archive is (or becomes) ready; {"build":
    partial} when this process is to install and publish it. Another's claim is waited for
    while its process lives, and at most wait_seconds from when it was made (the install's
    own limit): a builder that overran it has failed, and this one builds instead."""
    cache_dir().mkdir(parents=True, exist_ok=True)
    os.chmod(cache_dir(), 0o700)
    while True:
        sha = usable(entry)
        if sha:
            return {"use": str(entry.archive), "sha256": sha}
        try:
            fd = os.open(entry.claim_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            if not _claim_is_live(entry, stale_after=wait_seconds):
                entry.claim_file.unlink(missing_ok=True)
                continue
        else:
            with os.fdopen(fd, "w") as f:
                # The side door answers in a short-lived Ansible worker; its parent, the
                # attempt's ansible-playbook, lives as long as the build does.
                json.dump({"pid": os.getppid(), "at": time.time()}, f)
            entry.partial.unlink(missing_ok=True)
            return {"build": str(entry.partial)}
        time.sleep(POLL_SECONDS)


def publish(entry: Entry) -> dict[str, str]:
    """The builder's archive, arrived whole at the partial path, becomes the entry."""
    if not entry.partial.is_file():
        raise DeployBenchError(f"scaffold {entry.scaffold}: no archive arrived at {entry.partial}")
    sha = _sha256(entry.partial)
    os.replace(entry.partial, entry.archive)
    staged = entry.checksum.with_name(entry.checksum.name + ".new")
    staged.write_text(sha + "\n")
    os.replace(staged, entry.checksum)
    entry.claim_file.unlink(missing_ok=True)
    return {"use": str(entry.archive), "sha256": sha}


def release(entry: Entry) -> dict[str, str]:
    """The builder failed: drop its partial archive and its claim, so another may build."""
    entry.partial.unlink(missing_ok=True)
    entry.claim_file.unlink(missing_ok=True)
    return {}


def _tree_digest(root: Path) -> tuple[str, int]:
    """A digest of every entry's status below root (never following a link) and their count:
    any change to the tree after it was unpacked (a write, chmod, chown, a file added, removed
    or renamed) changes some entry's change time or the set of entries."""
    digest = hashlib.sha256()
    count = 0
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in [folder, *(os.path.join(folder, n) for n in sorted(dirs + files))]:
            st = os.lstat(name)
            rel = os.path.relpath(name, root)
            digest.update(
                f"{rel}\0{st.st_ino} {st.st_mode} {st.st_uid} {st.st_gid} {st.st_size} "
                f"{st.st_ctime_ns}\n".encode(errors="surrogateescape")
            )
            count += 1
    return digest.hexdigest(), count


def _layer_is_whole(entry: Entry, sha: str) -> dict | None:
    """The manifest when the unpacked tree is exactly as it was unpacked from this archive."""
    try:
        noted = json.loads(entry.manifest.read_text())
    except (OSError, ValueError):
        return None
    if noted.get("archive_sha256") != sha or not entry.layer.is_dir():
        return None
    tree, count = _tree_digest(entry.layer)
    return noted if (tree, count) == (noted.get("tree"), noted.get("entries")) else None


def _unpack(entry: Entry, uid_base: int) -> None:
    """The archive (already checked) unpacked under a partial name, every entry's owner moved
    into the machines' id range (root inside is uid_base on the host), /opt and the prefixes'
    folder made as a fresh machine would (root's, 0755); renamed whole."""
    partial = entry.layer.with_name(f"{entry.layer.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    prefixes = partial / PREFIX_ROOT.lstrip("/")
    prefixes.mkdir(parents=True, mode=0o755)
    try:
        subprocess.run(
            ["tar", "-xzf", str(entry.archive), "--numeric-owner", "-C", str(prefixes)],
            check=True,
            capture_output=True,
        )
        top = prefixes / entry.scaffold
        if not top.is_dir() or [p.name for p in prefixes.iterdir()] != [entry.scaffold]:
            raise DeployBenchError(f"scaffold {entry.scaffold}: its archive holds other folders")
        for folder, dirs, files in os.walk(partial):
            for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
                st = os.lstat(name)
                inside = st.st_uid if st.st_uid < 65536 else 0
                group = st.st_gid if st.st_gid < 65536 else 0
                os.lchown(name, uid_base + inside, uid_base + group)
        for folder in (partial, partial / "opt", prefixes):
            os.chmod(folder, 0o755)
        _retire(entry)
        os.replace(partial, entry.layer)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    tree, count = _tree_digest(entry.layer)
    sha = entry.checksum.read_text().strip()
    staged = entry.manifest.with_name(entry.manifest.name + ".new")
    staged.write_text(json.dumps({"archive_sha256": sha, "tree": tree, "entries": count}) + "\n")
    os.replace(staged, entry.manifest)


def _retire(entry: Entry) -> None:
    """Move the entry's layer out of use (renamed aside; machines on it keep it) and remove the
    retired layers of this entry that no machine can still be on."""
    entry.manifest.unlink(missing_ok=True)
    if entry.layer.is_dir():
        aside = entry.layer.with_name(f"{entry.layer.name}.retired-{time.time_ns()}")
        os.replace(entry.layer, aside)
    for old in entry.layer.parent.glob(f"{entry.layer.name}.retired-*"):
        try:
            age = time.time() - int(old.name.rsplit("-", 1)[1]) / 1e9
        except ValueError:
            continue
        if age > RETIRED_KEEP_SECONDS:
            shutil.rmtree(old, ignore_errors=True)


def layer(entry: Entry, uid_base: int) -> dict[str, str] | None:
    """{"layer": folder, "sha256": the archive's, "tree": the manifest's digest} of the entry's
    unpacked prefix, checked against its manifest (unpacked now from the checked archive when
    there is none or the tree differs); None when the cache has no whole archive for the entry
    (the attempt then claims it or its build in the playbook)."""
    if not entry.checksum.is_file():
        return None
    cache_dir().mkdir(parents=True, exist_ok=True)
    os.chmod(cache_dir(), 0o700)
    lock = entry.layer.with_name(entry.layer.name + ".lock")
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        sha = entry.checksum.read_text().strip() if entry.checksum.is_file() else ""
        noted = _layer_is_whole(entry, sha) if sha else None
        if noted is None:
            # No tree, a partial one, one that changed since it was unpacked, or one of an
            # older archive: it goes, and the archive is checked before it is unpacked again.
            _retire(entry)
            sha = usable(entry) or ""
            if not sha:
                return None
            _unpack(entry, uid_base)
            noted = _layer_is_whole(entry, sha)
            if noted is None:
                raise DeployBenchError(
                    f"scaffold {entry.scaffold}: its layer changed as it was made"
                )
    return {"layer": str(entry.layer), "sha256": sha, "tree": noted["tree"]}
