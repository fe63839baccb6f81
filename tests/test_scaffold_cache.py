"""The controller's cache of agent scaffolds (deploybench/attempt/scaffold_cache.py), on real
files and real processes: one build among attempts that start at once, a damaged or partial
archive never handed out, a dead builder's claim taken over, a new key for a changed spec or
another platform. The role that uses it runs for real in tests/test_openhands.py (four
attempts, one install) and tests/test_real_agent.py."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from deploybench.attempt import scaffold_cache
from deploybench.attempt.scaffold_cache import Entry
from deploybench.errors import DeployBenchError
from deploybench.local import images
from tests.conftest import require


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


# The layer a local machine gets instead of the archive's copy: the archive unpacked once on the
# host, owned by the machines' uid range, checked against its manifest before every use.
UID_BASE = images.UID_BASE


def publish_prefix(e: Entry, tmp_path, tool: bytes = b"#!/bin/sh\necho genuine\n") -> None:
    """A real archive of a prefix, as the role's `tar` makes it on the machine (root's files, a
    venv-like absolute link, a folder), claimed, arrived and published."""
    src = tmp_path / f"src-{time.monotonic_ns()}"
    (src / e.scaffold / "bin").mkdir(parents=True)
    (src / e.scaffold / "bin" / "tool").write_bytes(tool)
    os.chmod(src / e.scaffold / "bin" / "tool", 0o755)
    (src / e.scaffold / "bin" / "python").symlink_to("/usr/bin/python3")
    (src / e.scaffold / "lib").mkdir()
    (src / e.scaffold / "lib" / "keep.txt").write_text("kept\n")
    assert "build" in scaffold_cache.claim(e, wait_seconds=5)
    subprocess.run(["tar", "-C", src, "-czf", e.partial, e.scaffold], check=True)
    scaffold_cache.publish(e)


def layer_file(got: dict, e: Entry, rel: str) -> Path:
    return Path(got["layer"]) / "opt/deploybench-agent" / e.scaffold / rel


@pytest.fixture
def as_root():
    require(os.geteuid() == 0, "root (the layer's files are given to the machines' uid range)")


def test_no_layer_without_a_whole_archive(home, as_root):
    e = entry()
    assert scaffold_cache.layer(e, UID_BASE) is None
    scaffold_cache.cache_dir().mkdir(parents=True, exist_ok=True)
    e.archive.write_bytes(b"renamed, but the writer died before the sha256")
    assert scaffold_cache.layer(e, UID_BASE) is None
    assert not e.layer.exists()


def test_a_layer_is_the_checked_archive_unpacked_once_and_owned_by_the_machines(
    home, tmp_path, as_root
):
    e = entry()
    publish_prefix(e, tmp_path)
    got = scaffold_cache.layer(e, UID_BASE)
    assert got and got["sha256"] == e.checksum.read_text().strip()
    tool = layer_file(got, e, "bin/tool")
    assert tool.read_bytes() == b"#!/bin/sh\necho genuine\n"
    assert os.readlink(layer_file(got, e, "bin/python")) == "/usr/bin/python3"
    # Root inside the machine owns it; /opt and the prefixes' folder are as on a fresh machine.
    for path in (tool, layer_file(got, e, "lib"), Path(got["layer"]) / "opt"):
        assert (path.lstat().st_uid, path.lstat().st_gid) == (UID_BASE, UID_BASE), path
    assert oct(os.stat(Path(got["layer"]) / "opt/deploybench-agent").st_mode & 0o777) == "0o755"
    # Only the host's root reaches it: the cache's folder is root's alone.
    assert oct(os.stat(scaffold_cache.cache_dir()).st_mode & 0o777) == "0o700"
    # Used again as it is: not unpacked a second time.
    inode = tool.stat().st_ino
    again = scaffold_cache.layer(e, UID_BASE)
    assert again == got and tool.stat().st_ino == inode


def test_a_layer_changed_after_it_was_unpacked_is_never_used_but_unpacked_again(
    home, tmp_path, as_root
):
    e = entry()
    publish_prefix(e, tmp_path)
    got = scaffold_cache.layer(e, UID_BASE)
    tool = layer_file(got, e, "bin/tool")
    # A write through the host (a hand edit, a tool gone astray): the content, even with the
    # old size and times put back, moves the change time.
    st = tool.stat()
    tool.write_bytes(b"#!/bin/sh\necho forged\n")
    os.utime(tool, ns=(st.st_atime_ns, st.st_mtime_ns))
    again = scaffold_cache.layer(e, UID_BASE)
    assert layer_file(again, e, "bin/tool").read_bytes() == b"#!/bin/sh\necho genuine\n"
    # A file planted and one removed.
    (layer_file(again, e, "bin") / "planted").write_text("x")
    assert not (layer_file(scaffold_cache.layer(e, UID_BASE), e, "bin") / "planted").exists()
    layer_file(again, e, "lib/keep.txt").unlink()
    assert layer_file(scaffold_cache.layer(e, UID_BASE), e, "lib/keep.txt").is_file()


def test_a_partial_layer_is_never_used(home, tmp_path, as_root):
    e = entry()
    publish_prefix(e, tmp_path)
    got = scaffold_cache.layer(e, UID_BASE)
    # An unpack cut short leaves its partial folder and no manifest: neither is used.
    e.manifest.unlink()
    shutil.rmtree(layer_file(got, e, "lib"))
    stray = e.layer.with_name(e.layer.name + ".partial-1")
    stray.mkdir()
    again = scaffold_cache.layer(e, UID_BASE)
    assert again["layer"] == str(e.layer) and layer_file(again, e, "lib/keep.txt").is_file()


def test_a_damaged_archive_gives_no_layer_and_is_built_again(home, tmp_path, as_root):
    e = entry()
    publish_prefix(e, tmp_path)
    with open(e.archive, "r+b") as f:
        f.write(b"W")
    assert scaffold_cache.layer(e, UID_BASE) is None
    assert not e.archive.exists() and not e.layer.exists()
    assert scaffold_cache.claim(e, wait_seconds=5) == {"build": str(e.partial)}


def test_a_layer_follows_its_archive_when_the_entry_is_built_again(home, tmp_path, as_root):
    e = entry()
    publish_prefix(e, tmp_path)
    first = scaffold_cache.layer(e, UID_BASE)
    e.checksum.unlink()  # the archive went (damaged), and the entry is built once more
    publish_prefix(e, tmp_path, tool=b"#!/bin/sh\necho rebuilt\n")
    second = scaffold_cache.layer(e, UID_BASE)
    assert second["sha256"] != first["sha256"]
    assert layer_file(second, e, "bin/tool").read_bytes() == b"#!/bin/sh\necho rebuilt\n"


def test_a_replaced_layer_is_set_aside_for_the_machines_on_it_then_removed(
    home, tmp_path, as_root, monkeypatch
):
    e = entry()
    publish_prefix(e, tmp_path)
    got = scaffold_cache.layer(e, UID_BASE)
    held = layer_file(got, e, "bin/tool").open("rb")  # a machine's overlay on the old tree
    layer_file(got, e, "lib/keep.txt").write_text("changed\n")
    scaffold_cache.layer(e, UID_BASE)
    [aside] = scaffold_cache.cache_dir().glob(f"{e.layer.name}.retired-*")
    assert (aside / "opt/deploybench-agent/openhands/lib/keep.txt").read_text() == "changed\n"
    assert held.read() == b"#!/bin/sh\necho genuine\n"
    held.close()
    # Once no machine can be on it any more, the next replacement removes it.
    monkeypatch.setattr(scaffold_cache, "RETIRED_KEEP_SECONDS", 0)
    layer_file(scaffold_cache.layer(e, UID_BASE), e, "lib/keep.txt").unlink()
    scaffold_cache.layer(e, UID_BASE)
    assert not aside.exists()
    assert not list(scaffold_cache.cache_dir().glob(f"{e.layer.name}.retired-*"))
