"""The controller's cache of agent scaffolds (deploybench/attempt/scaffold_cache.py), on real
files and real processes: one build among attempts that start at once, a damaged or partial
archive never handed out, a dead builder's claim taken over, a new key for a changed spec or
another platform. The role that uses it runs for real in tests/test_openhands.py (four
attempts, one install) and tests/test_real_agent.py."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import time

import pytest

from deploybench.attempt import scaffold_cache
from deploybench.attempt.scaffold_cache import Entry
from deploybench.errors import DeployBenchError


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("DEPLOYBENCH_HOME", str(tmp_path))
    return tmp_path


def entry(install: str = "uv pip install x", arch: str = "x86_64", image: str = "debian13"):
    digest = scaffold_cache.install_digest("openhands", install, ["tmux"])
    return Entry.of("openhands", digest, "local", image, arch)


def build_archive(e: Entry, content: bytes = b"a scaffold") -> None:
    """What the role's fetch leaves: the machine's archive at the partial path."""
    e.partial.write_bytes(content)


def test_a_cold_cache_gives_the_build_then_the_published_archive(home):
    e = entry()
    assert scaffold_cache.claim(e, wait_seconds=5) == {"build": str(e.partial)}
    build_archive(e)
    published = scaffold_cache.publish(e)
    assert published["use"] == str(e.archive) and not e.partial.exists()
    assert not e.claim_file.exists()
    again = scaffold_cache.claim(e, wait_seconds=5)
    assert again == {"use": str(e.archive), "sha256": published["sha256"]}
    assert e.checksum.read_text().strip() == published["sha256"]
    assert oct(os.stat(scaffold_cache.cache_dir()).st_mode & 0o777) == "0o700"


def _claim_then_build(home: str, barrier, results) -> None:
    os.environ["DEPLOYBENCH_HOME"] = home
    e = entry()
    barrier.wait()
    got = scaffold_cache.claim(e, wait_seconds=60)
    if "build" in got:
        time.sleep(1.5)  # the install, while the others wait
        build_archive(e, b"built once")
        got = scaffold_cache.publish(e) | {"built": True}
    results.put(got)


def test_attempts_that_start_at_once_build_once_and_all_get_the_archive(home):
    context = multiprocessing.get_context("fork")
    barrier, results = context.Barrier(4), context.Queue()
    workers = [
        context.Process(target=_claim_then_build, args=(str(home), barrier, results))
        for _ in range(4)
    ]
    for w in workers:
        w.start()
    got = [results.get(timeout=60) for _ in workers]
    for w in workers:
        w.join(timeout=10)
    assert sum(bool(g.get("built")) for g in got) == 1, got
    assert {g["use"] for g in got} == {str(entry().archive)}
    assert len({g["sha256"] for g in got}) == 1
    assert entry().archive.read_bytes() == b"built once"


def test_a_damaged_archive_is_removed_and_built_again_never_handed_out(home):
    e = entry()
    scaffold_cache.claim(e, wait_seconds=5)
    build_archive(e, b"whole archive")
    scaffold_cache.publish(e)
    with open(e.archive, "r+b") as f:  # a disk error, a copy cut short, a hand edit
        f.write(b"W")
    assert scaffold_cache.claim(e, wait_seconds=5) == {"build": str(e.partial)}
    assert not e.archive.exists() and not e.checksum.exists()


def test_an_archive_without_its_checksum_is_not_used(home):
    e = entry()
    scaffold_cache.cache_dir().mkdir(parents=True)
    e.archive.write_bytes(b"renamed, but the writer died before the sha256")
    assert "build" in scaffold_cache.claim(e, wait_seconds=5)


def test_a_dead_builders_claim_is_taken_over(home):
    e = entry()
    scaffold_cache.cache_dir().mkdir(parents=True)
    gone = subprocess.Popen(["true"])
    gone.wait()
    e.claim_file.write_text(json.dumps({"pid": gone.pid, "at": time.time()}))
    e.partial.write_bytes(b"half an archive")
    assert scaffold_cache.claim(e, wait_seconds=5) == {"build": str(e.partial)}
    assert not e.partial.exists()  # the dead builder's half is not published by the next one
    assert json.loads(e.claim_file.read_text())["pid"] == os.getppid()


def test_a_live_claim_is_waited_for_until_it_outlives_the_install_limit(home, monkeypatch):
    monkeypatch.setattr(scaffold_cache, "POLL_SECONDS", 0.1)
    e = entry()
    scaffold_cache.cache_dir().mkdir(parents=True)
    e.claim_file.write_text(json.dumps({"pid": os.getpid(), "at": time.time()}))
    started = time.monotonic()
    assert scaffold_cache.claim(e, wait_seconds=1.0) == {"build": str(e.partial)}
    assert time.monotonic() - started >= 0.9


def test_a_released_build_lets_the_next_attempt_build(home):
    e = entry()
    scaffold_cache.claim(e, wait_seconds=5)
    build_archive(e, b"from a failed install")
    scaffold_cache.release(e)
    assert not e.partial.exists() and not e.claim_file.exists()
    assert "build" in scaffold_cache.claim(e, wait_seconds=5)


def test_a_changed_spec_or_another_platform_is_another_entry(home):
    keys = {
        entry().key,
        entry(install="uv pip install y").key,
        entry(arch="aarch64").key,
        entry(image="ubuntu2204").key,
    }
    assert len(keys) == 4
    assert entry().key == entry().key
    assert scaffold_cache.install_digest("a", "x", ["p", "q"]) == scaffold_cache.install_digest(
        "a", "x", ["q", "p"]
    )


def test_publish_without_an_arrived_archive_is_an_error(home):
    e = entry()
    scaffold_cache.claim(e, wait_seconds=5)
    with pytest.raises(DeployBenchError, match="no archive arrived"):
        scaffold_cache.publish(e)
