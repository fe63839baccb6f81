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
taken over."""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from deploybench.errors import DeployBenchError
from deploybench.paths import state_home

PREFIX_ROOT = "/opt/deploybench-agent"
ARCHIVE_SUFFIX = ".tar.gz"
POLL_SECONDS = 2.0


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
