"""Unpack an archive that came from an agent's machine, on the controller, as root.

The agent held root on that machine, so every byte of such an archive is its to shape. Python's
own `tarfile.extractall(filter="data")` is not enough to trust with that: Python 3.11.7's filter
has a path-length bypass (CVE-2025-4517, fixed in 3.11.13/3.12.11/3.13.4) by which a crafted
archive wrote outside the destination, and a link member makes it raise an exception that the
harness would take for an infrastructure error (retried, never counted: a way to dodge a
verdict). So `safe_unpack` never lets tarfile write anything: tarfile only parses headers and
hands out the members' bytes; this module decides what is written and writes it itself:

- only regular files and folders; a link, device, fifo or sparse member refuses the archive;
- names relative, normalized, printable, no `..`, no backslash, depth and length bounded,
  optionally from an allow-list;
- members counted, each file's and the archive's bytes bounded by the bytes actually read,
  and the decompressed stream itself bounded (a gzip bomb stops at the bound, in headers too);
- files created with O_CREAT|O_EXCL|O_NOFOLLOW relative to folder descriptors opened with
  O_NOFOLLOW|O_DIRECTORY, one component at a time: nothing is followed even if a link existed;
- after the last member only zero blocks may follow: tarfile stops quietly at the first block
  that is not a valid header, so a header that understates its size would otherwise pass with
  the rest of the archive silently dropped.

Any violation, and any archive gzip or tarfile cannot read, raises ArchiveRefused with a one-line
reason. Whatever was written is then removed: a half-unpacked archive would be read downstream as
if it were whole (a refused state's RUNBOOK.MD counted as the agent's claim), so the evidence of a
refusal is the archive the caller received, left unopened, and the reason."""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import posixpath
import shutil
import tarfile
from collections.abc import Iterable
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from deploybench.errors import DeployBenchError

MiB = 1024 * 1024
NAME_MAX = 255  # bytes of one component (Linux's NAME_MAX)
MAX_NAME_BYTES = 1024  # bytes of a whole member name, well below PATH_MAX
CHUNK = 64 * 1024
# What a member may add to the tar stream beside its data: its header, a pax or GNU long-name
# header for a name of MAX_NAME_BYTES, the padding of its data to a 512-byte block.
MEMBER_OVERHEAD = 8 * 1024
# The end of an archive: two zero blocks, padded to tar's 10 KiB record (and some slack).
END_OVERHEAD = 64 * 1024
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_TYPES = (tarfile.REGTYPE, tarfile.AREGTYPE)
_KINDS = {
    tarfile.SYMTYPE: "a symbolic link",
    tarfile.LNKTYPE: "a hard link",
    tarfile.CHRTYPE: "a character device",
    tarfile.BLKTYPE: "a block device",
    tarfile.FIFOTYPE: "a fifo",
    tarfile.CONTTYPE: "a contiguous file",
    tarfile.GNUTYPE_SPARSE: "a sparse file",
}


class ArchiveRefused(DeployBenchError):
    """An archive from the machine broke a rule of safe_unpack; its message is one line."""


def shown(name: str, limit: int = 160) -> str:
    """A member's name as one printable ASCII line (it is the agent's: it may hold newlines)."""
    text = name.encode("unicode_escape").decode("ascii")
    return text if len(text) <= limit else text[:limit] + "..."


class _Bounded:
    """The decompressed tar stream, cut at `cap` bytes, keeping its last bytes so the archive's
    end can be checked after tarfile stopped reading (tarfile reads ahead by one record)."""

    WINDOW = 64 * 1024

    def __init__(self, inner: Any, cap: int) -> None:
        self.inner = inner
        self.cap = cap
        self.pos = 0  # bytes handed out
        self.tail = bytearray()  # the last WINDOW bytes handed out, ending at pos

    def read(self, size: int = -1) -> bytes:
        want = CHUNK if size is None or size < 0 else size
        if self.pos + want > self.cap:
            want = self.cap - self.pos + 1  # one byte past the cap tells a longer stream
        try:
            data = self.inner.read(want)
        except Exception as exc:  # gzip and zlib raise several types on a corrupt stream
            why = f"not a readable gzip stream ({type(exc).__name__}: {shown(str(exc), 120)})"
            raise ArchiveRefused(why) from None
        self.pos += len(data)
        if self.pos > self.cap:
            raise ArchiveRefused(f"the tar stream is longer than {self.cap} bytes")
        self.tail += data
        del self.tail[: max(0, len(self.tail) - self.WINDOW)]
        return bytes(data)

    def zeros_from(self, offset: int) -> bool:
        """Whether every byte from `offset` to the end of the stream is zero."""
        start = self.pos - len(self.tail)
        if offset < start:
            return False
        if self.tail[offset - start :].strip(b"\0"):
            return False
        while data := self.read(CHUNK):
            if data.strip(b"\0"):
                return False
        return True


def _reading(what: str, call, *args):
    """Call tarfile on the agent's bytes: any failure there is the archive's, one line."""
    try:
        return call(*args)
    except ArchiveRefused:
        raise
    except Exception as exc:
        raise ArchiveRefused(f"{what}: {type(exc).__name__}: {shown(str(exc), 120)}") from None


def _name(member: tarfile.TarInfo, max_depth: int) -> str:
    """The member's name, relative and normalized, "" for the archive's root folder."""
    raw = member.name
    why = None
    if not all(ch.isprintable() for ch in raw):
        why = "an unprintable character in its name"  # NUL, newline, undecodable bytes
    elif "\\" in raw:
        why = "a backslash in its name"
    elif raw.startswith("/"):
        why = "an absolute name"
    if why:
        raise ArchiveRefused(f"member '{shown(raw)}': {why}")
    name = raw
    while name.startswith("./"):  # tar -C DIR . writes ./NAME
        name = name[2:]
    if member.isdir():
        name = name.rstrip("/")
    if name in ("", "."):
        return ""
    parts = name.split("/")
    if any(part in ("", ".", "..") for part in parts) or posixpath.normpath(name) != name:
        why = "a name that is not normalized or climbs with '..'"
    elif len(parts) > max_depth:
        why = f"deeper than {max_depth} components"
    elif len(name.encode()) > MAX_NAME_BYTES or any(len(p.encode()) > NAME_MAX for p in parts):
        why = f"a name longer than {MAX_NAME_BYTES} bytes or a component over {NAME_MAX}"
    if why:
        raise ArchiveRefused(f"member '{shown(raw)}': {why}")
    return name


def _open_folder(root: int, parts: list[str], made: set[str]) -> int:
    """A descriptor of the folder `parts` under `root`, made as needed, never following a
    link (O_NOFOLLOW on every component). The caller closes it."""
    fd = os.dup(root)
    try:
        for i, part in enumerate(parts):
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o700, dir_fd=fd)
            made.add("/".join(parts[: i + 1]))
            child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _fresh(dest: Path) -> bool:
    """Make dest, or check that it is an empty folder (not a link); True when made here."""
    try:
        os.mkdir(dest, 0o700)
        return True
    except FileExistsError:
        pass
    fd = os.open(dest, _DIR_FLAGS)  # a link at dest fails here (ELOOP/ENOTDIR)
    try:
        if os.listdir(fd):
            raise DeployBenchError(f"{dest} is not empty: an archive is unpacked into a new folder")
    finally:
        os.close(fd)
    return False


def _undo(dest: Path, made_dest: bool) -> None:
    """Remove what was written (all of dest's content: it was empty before)."""
    if made_dest:
        shutil.rmtree(dest, ignore_errors=True)
        return
    for child in os.listdir(dest):
        path = dest / child
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def _stream(raw: Any) -> Any:
    """The tar stream of `raw`: gunzipped when it starts with gzip's magic, else as it is."""
    head = raw.read(2)
    raw.seek(0)
    return gzip.GzipFile(fileobj=raw, mode="rb") if head == b"\x1f\x8b" else raw


def safe_unpack(
    source: Path | str | bytes,
    dest: Path,
    *,
    allowed: Iterable[str] | None = None,
    max_depth: int = 16,
    max_members: int = 4096,
    max_file_bytes: int = 64 * MiB,
    max_total_bytes: int = 256 * MiB,
) -> list[str]:
    """Unpack the tar or tar.gz `source` (a file's path or its bytes) into `dest`, which must
    not exist or be an empty folder; the names of the files written, relative to dest.

    `allowed`: exact names or glob patterns (fnmatch, `*` crosses `/`) every member's
    normalized name must match (the root folder `.`/`./` always passes). Files are written
    0600 and folders 0700 whatever the archive says; no owner, time or mode is taken from it.
    Raises ArchiveRefused (and leaves dest empty) on any violation or unreadable archive."""
    dest = Path(dest)
    made_dest = _fresh(dest)
    root = os.open(dest, _DIR_FLAGS)
    try:
        return _unpack_source(
            source, root, allowed, max_depth, max_members, max_file_bytes, max_total_bytes
        )
    except BaseException:
        os.close(root)
        root = -1
        _undo(dest, made_dest)
        raise
    finally:
        if root >= 0:
            os.close(root)


def _unpack_source(
    source: Path | str | bytes,
    root: int,
    allowed: Iterable[str] | None = None,
    max_depth: int = 16,
    max_members: int = 4096,
    max_file_bytes: int = 64 * MiB,
    max_total_bytes: int = 256 * MiB,
) -> list[str]:
    """safe_unpack's work into the folder open as `root`."""
    patterns = None if allowed is None else tuple(allowed)
    with io.BytesIO(source) if isinstance(source, bytes) else open(source, "rb") as raw:
        stream = _Bounded(
            _stream(raw), max_total_bytes + (max_members + 1) * MEMBER_OVERHEAD + END_OVERHEAD
        )
        return _unpack(
            stream, root, patterns, max_depth, max_members, max_file_bytes, max_total_bytes
        )


def _unpack(
    stream: _Bounded,
    root: int,
    patterns: tuple[str, ...] | None,
    max_depth: int,
    max_members: int,
    max_file_bytes: int,
    max_total_bytes: int,
) -> list[str]:
    # Stream mode ("r|"): headers and bytes are read once, in order; nothing seeks back.
    tar = _reading("not a tar archive", tarfile.open, None, "r|", stream)
    files: list[str] = []
    taken: set[str] = set()  # the files' names
    folders: set[str] = set()
    total = 0
    count = 0
    while (member := _reading("a bad tar header", tar.next)) is not None:
        count += 1
        if count > max_members:
            raise ArchiveRefused(f"more than {max_members} members")
        name = _name(member, max_depth)
        if not (member.isdir() or member.type in _FILE_TYPES):
            kind = _KINDS.get(member.type, f"a member of type {member.type!r}")
            raise ArchiveRefused(f"member '{shown(member.name)}': {kind}, not a file or folder")
        if not name:
            if not member.isdir():
                raise ArchiveRefused(f"member '{shown(member.name)}': a file named like the root")
            continue
        if patterns is not None and not any(fnmatchcase(name, p) for p in patterns):
            raise ArchiveRefused(f"member '{shown(name)}': not a name this archive may hold")
        parts = name.split("/")
        if any("/".join(parts[:i]) in taken for i in range(1, len(parts))):
            raise ArchiveRefused(f"member '{shown(name)}': a file is used as its folder")
        if member.isdir():
            if name in taken:
                raise ArchiveRefused(f"member '{shown(name)}': a folder where a file was")
            os.close(_open_folder(root, parts, folders))
            continue
        if name in taken or name in folders:
            raise ArchiveRefused(f"member '{shown(name)}': a second member of that name")
        if member.size > max_file_bytes or total + member.size > max_total_bytes:
            raise ArchiveRefused(
                f"member '{shown(name)}': {member.size} bytes, over the bound of "
                f"{max_file_bytes} per file or {max_total_bytes} in all"
            )
        parent = _open_folder(root, parts[:-1], folders)
        try:
            fd = os.open(parts[-1], _FILE_FLAGS, 0o600, dir_fd=parent)
        finally:
            os.close(parent)
        files.append(name)
        taken.add(name)
        got = 0
        with os.fdopen(fd, "wb") as out:
            data = _reading(f"member '{shown(name)}'", tar.extractfile, member)
            # The bytes actually read are counted, whatever the header said.
            while chunk := _reading(f"member '{shown(name)}'", data.read, CHUNK):
                got += len(chunk)
                total += len(chunk)
                if got > max_file_bytes or total > max_total_bytes:
                    raise ArchiveRefused(f"member '{shown(name)}': more bytes than its bound")
                out.write(chunk)
        if got != member.size:
            raise ArchiveRefused(
                f"member '{shown(name)}': its header says {member.size} bytes, it holds {got}"
            )
    # tarfile stopped at `tar.offset` (a zero block, the stream's end, or a block that is no
    # header); from there on only zeros may follow.
    if not _reading("the archive's end", stream.zeros_from, tar.offset):
        raise ArchiveRefused(
            f"data after the last member at byte {tar.offset}: a header that lies about its "
            "size, or a member tarfile could not parse"
        )
    return files


# The account an archive is unpacked as when the controller runs as root (Debian's `nobody`).
UNPACK_UID = 65534


def unpack_unprivileged(source: Path | str | bytes, dest: Path, **rules: Any) -> tuple[list, int]:
    """safe_unpack in a child process that has given up root first (uid and gid UNPACK_UID, no
    supplementary groups), so that even a flaw in the unpacking could write nowhere but the
    fresh folder it was given (made here, its only writable place); the files are handed back
    to root afterwards. Returns (the names written, the uid the child unpacked as). Without
    root it is safe_unpack, in this process. Raises ArchiveRefused as safe_unpack does."""
    import json
    import traceback

    if os.geteuid() != 0:
        return safe_unpack(source, dest, **rules), os.geteuid()
    dest = Path(dest)
    made_dest = _fresh(dest)
    os.chown(dest, UNPACK_UID, UNPACK_UID)
    raw = source if isinstance(source, bytes) else Path(source).read_bytes()
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: only this function's own work, then _exit (no cleanup handlers)
        code = 0
        try:
            os.close(reader)
            # Opened while still root: the folders above it may be root's alone.
            root = os.open(dest, _DIR_FLAGS)
            os.setgroups([])
            os.setgid(UNPACK_UID)
            os.setuid(UNPACK_UID)
            try:
                reply = {"names": _unpack_source(raw, root, **rules), "uid": os.geteuid()}
            except ArchiveRefused as exc:
                reply = {"refused": str(exc)}
            os.write(writer, json.dumps(reply).encode())
        except BaseException:
            code = 1
            with contextlib.suppress(BaseException):
                os.write(writer, json.dumps({"error": traceback.format_exc()[-2000:]}).encode())
        finally:
            os._exit(code)
    os.close(writer)
    with os.fdopen(reader, "rb") as pipe:
        answer = pipe.read()
    os.waitpid(pid, 0)
    try:
        reply = json.loads(answer or b"{}")
        if "refused" in reply:
            raise ArchiveRefused(reply["refused"])
        if "names" not in reply:
            raise DeployBenchError(f"unpacking failed: {reply.get('error', 'no answer')}")
        # Hand everything back to root; the child made only folders and regular files.
        for top, folders, files in os.walk(dest):
            for name in folders + files:
                os.lchown(os.path.join(top, name), 0, 0)
        os.chown(dest, 0, 0)
        return reply["names"], int(reply["uid"])
    except BaseException:
        _undo(dest, made_dest)
        if not made_dest:
            os.chown(dest, 0, 0)
        raise
