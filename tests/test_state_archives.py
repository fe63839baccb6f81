"""The controller unpacks archives that came from the agent's machine (the state after the
agent, the verifier's logs) as root. Each test here plays the attacker with a real crafted
archive and checks that deploybench/verify/archives.py refuses it, that nothing was written outside
the destination (a sentinel path outside it never appears), and that a refused state archive
is a `tampered` verdict, never an exception. Then the stop stage's own collect_state.sh: its
real archive unpacks, and git there runs nothing the agent's .git/config names."""

from __future__ import annotations

import base64
import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zlib
from pathlib import Path

import pytest

from deploybench import runfolder
from deploybench.errors import DeployBenchError
from deploybench.verify import archives, evidence, verification
from deploybench.verify.archives import ArchiveRefused
from tests.conftest import REPO

COLLECT = REPO / "roles/agent_stop/files/collect_state.sh"
MiB = 1024 * 1024


# ---------- building archives ----------
def _file(name: str, data: bytes = b"x\n") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    if not name.isprintable():  # in a pax header, where a NUL is not the end of the name
        info.pax_headers = {"path": name}
    return info, data


def _member(name: str, kind: bytes, linkname: str = "") -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    return info, None


def _tar(members, gz: bool = True) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz" if gz else "w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def _header(name: str, size: int) -> bytes:
    """One ustar header block that says `size` bytes follow."""
    info = tarfile.TarInfo(name)
    info.size = size
    return info.tobuf(format=tarfile.USTAR_FORMAT)


@pytest.fixture
def where(tmp_path):
    """(dest, sentinel): the destination, and a path outside it no archive may create."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "run").mkdir()
    return tmp_path / "run" / "dest", outside / "pwned"


def _refused(source, dest: Path, sentinel: Path, **rules) -> str:
    with pytest.raises(ArchiveRefused) as info:
        archives.safe_unpack(source, dest, **rules)
    reason = str(info.value)
    assert "\n" not in reason and reason.isprintable(), reason
    assert not sentinel.exists() and not (sentinel.parent / "pwned").exists()
    # Whatever was written before the refusal is gone.
    assert not dest.exists() or not any(dest.iterdir()), list(dest.rglob("*"))
    return reason


# ---------- names that escape ----------
@pytest.mark.parametrize(
    "name",
    [
        "{sentinel}",  # absolute
        "../outside/pwned",
        "a/../../outside/pwned",
        "./../outside/pwned",
        "a/b/../../../outside/pwned",
        "a\\..\\..\\outside\\pwned",
        "a\x00/pwned",
        "a\n/pwned",
        "a//pwned",
    ],
)
def test_a_name_that_escapes_or_is_odd_is_refused(where, name):
    dest, sentinel = where
    name = name.format(sentinel=sentinel)
    reason = _refused(_tar([_file("ok.txt"), _file(name, b"pwned\n")]), dest, sentinel)
    assert "member" in reason


def _long_path_escape(target: Path, dest: Path) -> bytes:
    """The CVE-2025-4517 archive: 16 nested folders of 247-character names, each beside a
    one-letter link to it, so the links' path is short where the real one passes PATH_MAX
    (os.path.realpath stops resolving there and tarfile's filter believes the link stays
    inside); a link through them climbs out, another points at `target`, and a file is
    written through it."""
    comp = "d" * 247
    steps = "abcdefghijklmnop"
    members = []
    path = ""
    for step in steps:
        members.append(_member(os.path.join(path, comp), tarfile.DIRTYPE))
        members.append(_member(os.path.join(path, step), tarfile.SYMTYPE, comp))
        path = os.path.join(path, comp)
    linkpath = os.path.join("/".join(steps), "l" * 254)
    members.append(_member(linkpath, tarfile.SYMTYPE, "../" * len(steps)))
    up = os.path.relpath(target, dest)  # from dest to the target folder
    members.append(_member("escape", tarfile.SYMTYPE, f"{linkpath}/{up}"))
    members.append(_file("escape/pwned", b"pwned\n"))
    return _tar(members)


def _tarfile_vulnerable() -> bool:
    """Whether this Python's tarfile has the flaw (fixed in 3.11.13, 3.12.11, 3.13.4)."""
    v = sys.version_info[:3]
    return v < (3, 11, 13) or (3, 12) <= v < (3, 12, 11) or (3, 13) <= v < (3, 13, 4)


def test_the_long_path_bypass_is_refused(where, tmp_path):
    dest, sentinel = where
    archive = _long_path_escape(sentinel.parent, dest)
    # The archive is a real attack: on a Python whose tarfile has the flaw, extractall with
    # filter="data" writes outside its destination.
    if _tarfile_vulnerable():
        other = tmp_path / "run" / "other"
        other.mkdir(parents=True)
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(other, filter="data")
        assert sentinel.read_bytes() == b"pwned\n"
        sentinel.unlink()
    reason = _refused(archive, dest, sentinel)
    assert "symbolic link" in reason


def test_a_deep_path_of_long_names_is_refused(where):
    # The same depth and lengths, with folders only: refused for its length and depth alone.
    dest, sentinel = where
    deep = "/".join(["d" * 247] * 16)
    reason = _refused(_tar([_file(f"{deep}/pwned")]), dest, sentinel)
    assert "longer than" in reason or "deeper than" in reason
    too_deep = "/".join("abcdefghijklmnopq")
    assert "deeper than" in _refused(_tar([_file(too_deep)]), dest, sentinel, max_depth=16)


# ---------- members that are no file ----------
@pytest.mark.parametrize(
    ("kind", "linkname", "what"),
    [
        (tarfile.SYMTYPE, "{outside}", "symbolic link"),
        (tarfile.SYMTYPE, "../../outside", "symbolic link"),
        (tarfile.LNKTYPE, "{sentinel}", "hard link"),
        (tarfile.LNKTYPE, "ok.txt", "hard link"),
        (tarfile.CHRTYPE, "", "character device"),
        (tarfile.BLKTYPE, "", "block device"),
        (tarfile.FIFOTYPE, "", "fifo"),
    ],
)
def test_links_devices_and_fifos_are_refused(where, kind, linkname, what):
    dest, sentinel = where
    linkname = linkname.format(outside=sentinel.parent, sentinel=sentinel)
    members = [_file("ok.txt"), _member("link", kind, linkname), _file("link/pwned", b"pwned\n")]
    reason = _refused(_tar(members), dest, sentinel)
    assert what in reason and "'link'" in reason


def test_too_many_members_are_refused(where):
    dest, sentinel = where
    members = [_file(f"f{i}.txt") for i in range(11)]
    assert "more than 10" in _refused(_tar(members), dest, sentinel, max_members=10)
    archives.safe_unpack(_tar(members[:10]), dest, max_members=10)
    assert len(list(dest.iterdir())) == 10


# ---------- sizes and bombs ----------
def test_a_header_that_understates_its_size_is_refused(where):
    # The header says 5 bytes; 1024 follow. tarfile alone stops quietly at the next block
    # that is not a header, and the rest of the archive would be dropped unseen.
    dest, sentinel = where
    raw = _header("a.txt", 5) + b"A" * 1024 + _header("b.txt", 0) + bytes(1024)
    for source in (raw, gzip.compress(raw)):
        reason = _refused(source, dest, sentinel)
        assert "data after the last member" in reason


def test_a_header_that_overstates_its_size_is_refused(where):
    dest, sentinel = where
    raw = _header("a.txt", 4096) + b"A" * 100
    reason = _refused(gzip.compress(raw), dest, sentinel)
    assert "'a.txt'" in reason


def _zeros_gz(mib: int) -> bytes:
    """`mib` MiB of zeros as a gzip stream of ~1 KiB per MiB (one member, repeated)."""
    return gzip.compress(bytes(MiB), compresslevel=9) * mib


def test_a_gzip_bomb_stops_at_the_bound(where):
    dest, sentinel = where
    # Files within the per-file bound whose sum is over the total bound: 8 x 1 MiB.
    bomb = b"".join(gzip.compress(_header(f"f{i}", MiB)) + _zeros_gz(1) for i in range(8))
    assert len(bomb) < 64 * 1024
    reason = _refused(bomb, dest, sentinel, max_file_bytes=MiB, max_total_bytes=4 * MiB)
    assert "bound" in reason
    # One file's header over the bound is refused before a byte of it is read.
    assert "bound" in _refused(
        gzip.compress(_header("big", 1 << 32)), dest, sentinel, max_file_bytes=MiB
    )
    # A small archive followed by a GiB of zeros: the stream stops at its own bound.
    tail_bomb = gzip.compress(_header("a", 1) + b"a".ljust(512, b"\0")) + _zeros_gz(1024)
    assert "longer than" in _refused(tail_bomb, dest, sentinel, max_total_bytes=MiB)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x1f\x8b" + b"garbage" * 100,
        gzip.compress(b"not a tar at all" * 100),
        zlib.compress(b"x" * 1000),
        os.urandom(4096),
    ],
    ids=["empty", "bad_gzip", "not_tar", "zlib", "random"],
)
def test_a_corrupt_archive_is_refused(where, data):
    dest, sentinel = where
    _refused(data, dest, sentinel)


def test_a_truncated_gzip_is_refused(where):
    dest, sentinel = where
    whole = _tar([_file("a.txt", os.urandom(64 * 1024)), _file("b.txt", b"b\n")])
    _refused(whole[: len(whole) // 2], dest, sentinel)
    _refused(whole[:-4], dest, sentinel)  # the gzip trailer cut
    archives.safe_unpack(whole, dest)
    assert (dest / "b.txt").read_bytes() == b"b\n"


def test_the_allow_list_and_a_good_archive(where):
    dest, sentinel = where
    members = [
        _member(".", tarfile.DIRTYPE),
        _file("./RUNBOOK.MD", b"STATUS: SUCCESS\n"),
        _member("./logs", tarfile.DIRTYPE),
        _file("./logs/run.log", b"ok\n"),
    ]
    reason = _refused(_tar(members), dest, sentinel, allowed=["RUNBOOK.MD", "logs/*"])
    assert "'logs'" in reason  # the folder itself is not allowed
    names = archives.safe_unpack(_tar(members), dest, allowed=["RUNBOOK.MD", "logs", "logs/*"])
    assert names == ["RUNBOOK.MD", "logs/run.log"]
    assert (dest / "logs/run.log").read_bytes() == b"ok\n"
    assert (dest / "RUNBOOK.MD").stat().st_mode & 0o777 == 0o600
    with pytest.raises(DeployBenchError) as info:  # dest must be new or empty: not the archive's
        archives.safe_unpack(_tar(members), dest)
    assert type(info.value) is DeployBenchError


# ---------- through the evidence of an attempt ----------
def _attempt(tmp_path: Path, state: bytes) -> Path:
    attempt = tmp_path / "attempt"
    for folder in (runfolder.STATE_DIR, runfolder.VERIFIER_DIR):
        (attempt / folder).mkdir(parents=True)
    (attempt / runfolder.STATE_TARBALL).write_bytes(state)
    (attempt / runfolder.TAMPER_SCAN).write_text("CHECKED 4000 40\n")
    return attempt


def _judged(attempt: Path) -> dict:
    evidence.unpack_state(attempt, 0, 1.0, 0)
    return evidence.judge(
        attempt, 0, 1.0, "legacycalc_demo24", attempt / runfolder.TAMPER_SCAN, ran=True
    )


STATE_ATTACKS = {
    "not_allowed": [_file("./RUNBOOK.MD"), _file("./evil.sh", b"#!/bin/sh\n")],
    "symlink": [_file("./git_status.txt"), _member("./RUNBOOK.MD", tarfile.SYMTYPE, "/etc/shadow")],
    "hardlink": [_member("./agent.log", tarfile.LNKTYPE, "/etc/shadow")],
    "traversal": [_file("./../../../outside/pwned", b"pwned\n")],
    "folder": [_member("./git_diff.patch", tarfile.DIRTYPE), _file("./git_diff.patch/x")],
    "big": [_file("./trajectory.jsonl", bytes(2 * MiB))],  # within bounds: unpacks
}


@pytest.mark.parametrize("attack", sorted(STATE_ATTACKS))
def test_a_refused_state_is_a_tampered_verdict(tmp_path, attack):
    attempt = _attempt(tmp_path, _tar(STATE_ATTACKS[attack]))
    verdict = _judged(attempt)
    if attack == "big":
        assert (attempt / runfolder.TRAJECTORY).stat().st_size == 2 * MiB
        assert verification.failure_of(verdict)[1] != "tampered"
        return
    assert verdict["passed"] is False
    assert verification.failure_of(verdict) == (0, "tampered")
    line = verdict["machine"]["evidence"][0]
    assert line.startswith("ARCHIVE state refused: member "), line
    # Nothing of it was unpacked; the archive is kept, unopened, as the evidence.
    assert not any((attempt / runfolder.STATE_DIR).iterdir())
    assert not (attempt / runfolder.RUNBOOK).exists()
    assert (attempt / runfolder.STATE_TARBALL).is_file()
    assert not (tmp_path / "outside").exists()
    assert json.loads((attempt / runfolder.STOP).read_text())["agent_rc"] == 0
    assert "ARCHIVE" in (attempt / runfolder.VERIFIER_DIR / runfolder.TAMPER_SCAN).read_text()


def test_a_refused_state_counts_on_a_broken_machine_too(tmp_path):
    # No scan ran there (the machine failed its probe): the refusal is still tampering.
    attempt = _attempt(tmp_path, gzip.compress(b"\0garbage"))
    (attempt / runfolder.TAMPER_SCAN).unlink()
    (attempt / runfolder.MACHINE_PROBE).write_text("PROBE sudo broken no sudo\n")
    evidence.unpack_state(attempt, 0, 1.0, 0)
    verdict = evidence.judge(attempt, None, 0.0, probe=attempt / runfolder.MACHINE_PROBE, ran=False)
    assert verification.failure_of(verdict) == (0, "tampered")


def test_a_bomb_state_is_a_tampered_verdict(tmp_path):
    # The real bounds: a GiB of zeros behind a one-file archive (about 1 MiB on the wire).
    state = gzip.compress(_header("RUNBOOK.MD", 1) + b"S".ljust(512, b"\0")) + _zeros_gz(1024)
    verdict = _judged(_attempt(tmp_path, state))
    assert verification.failure_of(verdict) == (0, "tampered")
    assert "longer than" in verdict["machine"]["evidence"][0]


@pytest.mark.parametrize(
    "logs",
    [
        b"not base64 at all!",
        base64.b64encode(b"\x1f\x8b garbage"),
        base64.b64encode(_tar([_member("l", tarfile.SYMTYPE, "/etc/shadow")])),
        base64.b64encode(_tar([_file("../../outside/pwned")])),
    ],
    ids=["not_base64", "corrupt_gzip", "symlink", "traversal"],
)
def test_refused_verifier_logs_fail_logs_collected(tmp_path, logs):
    attempt = tmp_path / "attempt"
    (attempt / runfolder.VERIFIER_DIR).mkdir(parents=True)
    (attempt / runfolder.VERIFIER_B64).write_bytes(logs)
    (attempt / "scan.txt").write_text("CHECKED 1 1\n")
    verdict = evidence.judge(attempt, 0, 1.0, None, attempt / "scan.txt", ran=True)
    failed = [c for c in verdict["layer2"]["checks"] if c["name"] == "logs_collected"]
    assert failed and failed[0]["passed"] is False, verdict
    assert verdict["passed"] is False and verdict["machine"]["passed"] is True
    assert not (tmp_path / "outside").exists()
    assert not (attempt / runfolder.VERIFIER_B64).exists()


def test_good_verifier_logs_unpack(tmp_path):
    attempt = tmp_path / "attempt"
    (attempt / runfolder.VERIFIER_DIR).mkdir(parents=True)
    packed = _tar([_member(".", tarfile.DIRTYPE), _file("./demo.log", b"ok\n"), _file("./x.rc")])
    (attempt / runfolder.VERIFIER_B64).write_bytes(base64.encodebytes(packed))
    (attempt / "scan.txt").write_text("CHECKED 1 1\n")
    verdict = evidence.judge(attempt, 0, 1.0, None, attempt / "scan.txt", ran=True)
    assert not [c for c in verdict["layer2"]["checks"] if c["name"] == "logs_collected"]
    assert (attempt / runfolder.VERIFIER_DIR / "demo.log").read_bytes() == b"ok\n"


# ---------- collect_state.sh ----------
def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


def _repo(tmp_path: Path) -> tuple[Path, str, str]:
    """A workdir at a pinned commit, one commit more on its branch, and edits: (workdir,
    pinned commit, HEAD's commit)."""
    work = tmp_path.resolve() / "work"
    work.mkdir()
    _git(work, "init", "-q", "-b", "main")
    _git(work, "config", "user.email", "t@example.org")
    _git(work, "config", "user.name", "t")
    (work / "a.txt").write_text("a\n")
    (work / "b.txt").write_text("b\n")
    _git(work, "add", ".")
    _git(work, "commit", "-qm", "pinned")
    pinned = _git(work, "rev-parse", "HEAD")
    (work / "b.txt").write_text("b2\n")
    _git(work, "commit", "-qam", "the agent's")
    head = _git(work, "rev-parse", "HEAD")
    (work / "a.txt").write_text("a, changed\n")
    (work / "RUNBOOK.MD").write_text("STATUS: SUCCESS\n")
    return work, pinned, head


def _collect(tmp_path: Path, work: Path, pinned: str) -> Path:
    """Run collect_state.sh; the attempt folder holding its tarball as the playbook fetched it."""
    control = tmp_path.resolve() / "control"
    control.mkdir(exist_ok=True)
    (control / "agent.log").write_text("the agent's log\n")
    proc = subprocess.run(
        ["bash", str(COLLECT), str(work), pinned, str(control)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    tarball = Path(proc.stdout.strip().rsplit("STATE_TARBALL=", 1)[1])
    attempt = tmp_path / "attempt"
    (attempt / runfolder.STATE_DIR).mkdir(parents=True, exist_ok=True)
    try:
        shutil.copy(tarball, attempt / runfolder.STATE_TARBALL)
    finally:
        shutil.rmtree(tarball.parent)
    return attempt


def test_the_collected_state_unpacks(tmp_path):
    work, pinned, head = _repo(tmp_path)
    attempt = _collect(tmp_path, work, pinned)
    evidence.unpack_state(attempt, 0, 1.0, 0)
    assert not (attempt / runfolder.STATE_TARBALL).exists()
    assert (attempt / runfolder.RUNBOOK).read_text() == "STATUS: SUCCESS\n"
    assert (attempt / runfolder.AGENT_LOG).read_text() == "the agent's log\n"
    state = attempt / runfolder.STATE_DIR
    for name in ("git_status.txt", "git_head.txt", "git_diff.patch", "dpkg.txt"):
        assert (state / name).is_file(), name
    assert "processes_after_stop.txt" in os.listdir(state)
    assert (state / "git_status.txt").read_text().splitlines() == [" M a.txt", "?? RUNBOOK.MD"]
    assert (state / "git_head.txt").read_text().strip() == head
    diff = (state / "git_diff.patch").read_text()
    assert "+a, changed" in diff and "+b2" in diff  # committed and uncommitted edits


def _plant(work: Path, sentinels: Path) -> None:
    """What an agent with root leaves in its repository for the root that runs git there."""
    sentinels.mkdir()
    for key, value in {
        "filter.evil.clean": f"touch {sentinels}/clean; cat",
        "filter.evil.smudge": f"touch {sentinels}/smudge; cat",
        "filter.evil.process": f"touch {sentinels}/process",
        "core.fsmonitor": f"touch {sentinels}/fsmonitor; false",
        "core.pager": f"touch {sentinels}/pager; cat",
        "diff.external": f"touch {sentinels}/external",
        "diff.evil.textconv": f"touch {sentinels}/textconv; cat",
        "diff.evil.command": f"touch {sentinels}/diffcommand",
        "core.hooksPath": str(work / "hooks"),
    }.items():
        _git(work, "config", key, value)
    (work / ".gitattributes").write_text("* filter=evil diff=evil\n")
    hooks = work / "hooks"
    hooks.mkdir()
    for hook in (hooks / "post-index-change", work / ".git/hooks/post-index-change"):
        hook.write_text(f"#!/bin/sh\ntouch {sentinels}/hook\n")
        hook.chmod(0o755)


@pytest.mark.parametrize("refs", ["loose", "packed", "hostile"])
def test_git_runs_nothing_the_workdir_configures(tmp_path, refs):
    work, pinned, head = _repo(tmp_path)
    sentinels = tmp_path / "sentinels"
    _plant(work, sentinels)
    if refs == "packed":
        _git(work, "pack-refs", "--all")
        assert not (work / ".git/refs/heads/main").exists()
    if refs == "hostile":  # HEAD through a link: not followed, the pinned commit is used
        (work / ".git/HEAD").unlink()
        (work / ".git/HEAD").symlink_to("refs/heads/main")  # git itself accepts it
        head = pinned
    attempt = _collect(tmp_path, work, pinned)
    assert not sentinels.exists() or not any(sentinels.iterdir()), list(sentinels.iterdir())
    evidence.unpack_state(attempt, 0, 1.0, 0)
    state = attempt / runfolder.STATE_DIR
    status = (state / "git_status.txt").read_text()
    assert " M a.txt" in status.splitlines(), status
    assert (state / "git_head.txt").read_text().strip() == head
    assert "+a, changed" in (state / "git_diff.patch").read_text()
    # The agent's repository is left as it was: git wrote only into its own copy.
    assert _git(work, "config", "core.pager").startswith("touch")


@pytest.mark.privileged
def test_the_controller_unpacks_as_an_unprivileged_user(root_host, tmp_path):
    # The folders above the destination are root's alone: the child opens its folder before it
    # gives up root, and can write nowhere else.
    private = tmp_path / "attempt"
    private.mkdir(mode=0o700)
    dest = private / "fresh"
    names, uid = archives.unpack_unprivileged(
        _tar([_file("RUNBOOK.MD", b"STATUS: SUCCESS\n"), _file("logs/a.log")]), dest
    )
    assert uid == archives.UNPACK_UID != 0
    assert sorted(names) == ["RUNBOOK.MD", "logs/a.log"]
    assert (dest / "RUNBOOK.MD").read_bytes() == b"STATUS: SUCCESS\n"
    for path in (dest, dest / "RUNBOOK.MD", dest / "logs", dest / "logs/a.log"):
        assert (path.stat().st_uid, path.stat().st_gid) == (0, 0), path
    # A refused archive is refused the same way, and nothing of it stays.
    second = private / "second"
    with pytest.raises(ArchiveRefused, match="link"):
        archives.unpack_unprivileged(
            _tar([_file("ok.txt"), _member("evil", tarfile.SYMTYPE, "/etc/passwd")]), second
        )
    assert not second.exists()
