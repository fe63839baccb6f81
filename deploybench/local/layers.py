"""Reading a local machine's files from the host, after the agent: its overlay's upper layer
(exactly what changed on the machine) over the image it started from (the lower layer, which
the machine never wrote).

Every path below the layers was the agent's to shape, and the host reads it as root, where an
absolute link in the upper layer would point into the host's own files. So nothing here follows
a link: each path is opened component by component from the layer's folder with O_NOFOLLOW,
only regular files are read, and every read is capped."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def _parts(rel: str) -> list[str]:
    parts = [p for p in rel.strip("/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ValueError(f"not a path below the layer: {rel!r}")
    return parts


def _open_dir(root: Path, parts: list[str]) -> int | None:
    """A descriptor of root/parts, every component a real folder; None when any is not."""
    try:
        fd = os.open(root, _DIR_FLAGS)
    except OSError:
        return None
    for part in parts:
        try:
            nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
        except OSError:
            os.close(fd)
            return None
        os.close(fd)
        fd = nxt
    return fd


def lstat(root: Path, rel: str) -> os.stat_result | None:
    """The entry's own status (a link is not followed), or None when it is not there or a
    folder on the way is a link."""
    parts = _parts(rel)
    if not parts:
        return os.lstat(root)
    fd = _open_dir(root, parts[:-1])
    if fd is None:
        return None
    try:
        return os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
    except OSError:
        return None
    finally:
        os.close(fd)


def read(
    root: Path, rel: str, cap: int, tail: bool = False, offset: int = 0
) -> tuple[bytes, int] | None:
    """The first (or, with tail, the last; or from `offset` on) `cap` bytes of a regular file
    and its full size; None when the path is not a regular file reached through real
    folders."""
    parts = _parts(rel)
    if not parts:
        return None
    fd = _open_dir(root, parts[:-1])
    if fd is None:
        return None
    try:
        # Only a regular file is opened: a device node in the upper layer is a real device on
        # the host (the machine's mount is nodev, the host's view of the layer is not).
        try:
            if not stat.S_ISREG(os.stat(parts[-1], dir_fd=fd, follow_symlinks=False).st_mode):
                return None
            ffd = os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
        except OSError:
            return None
        with os.fdopen(ffd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                return None
            if tail and st.st_size > cap:
                f.seek(st.st_size - cap)
            elif offset:
                f.seek(offset)
            return f.read(cap), st.st_size
    finally:
        os.close(fd)


def walk(root: Path, rel: str = "") -> Iterator[tuple[str, os.stat_result]]:
    """Every entry below root/rel (links and whiteouts included, never followed), as paths
    relative to root, parents before children."""
    fd = _open_dir(root, _parts(rel))
    if fd is None:
        return
    try:
        names = sorted(os.listdir(fd))
    finally:
        os.close(fd)
    base = "/".join(_parts(rel))
    for name in names:
        path = f"{base}/{name}" if base else name
        st = lstat(root, path)
        if st is None:
            continue
        yield path, st
        if stat.S_ISDIR(st.st_mode):
            yield from walk(root, path)


def is_whiteout(st: os.stat_result) -> bool:
    """overlayfs marks a file deleted on the machine with a 0/0 character device."""
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


class Machine:
    """The machine's files as it saw them: the upper layer over the lower one (whiteouts hide;
    opaque folders, rare in practice, are read as if merged)."""

    def __init__(self, upper: Path, lower: Path):
        self.upper, self.lower = Path(upper), Path(lower)

    def read(self, rel: str, cap: int) -> tuple[bytes, int] | None:
        st = lstat(self.upper, rel)
        if st is not None:
            return None if is_whiteout(st) else read(self.upper, rel, cap)
        return read(self.lower, rel, cap)

    def read_from(self, rel: str, offset: int, cap: int) -> bytes | None:
        """At most `cap` bytes of the file from `offset` on; None when it is not there."""
        st = lstat(self.upper, rel)
        root = self.upper if st is not None else self.lower
        if st is not None and is_whiteout(st):
            return None
        got = read(root, rel, cap, offset=offset)
        return None if got is None else got[0]

    def listdir(self, rel: str) -> list[str]:
        names: set[str] = set()
        for root in (self.lower, self.upper):
            fd = _open_dir(root, _parts(rel))
            if fd is None:
                continue
            try:
                names.update(os.listdir(fd))
            finally:
                os.close(fd)
        kept = []
        for name in sorted(names):
            st = lstat(self.upper, f"{rel}/{name}")
            if st is None or not is_whiteout(st):
                kept.append(name)
        return kept


def copy_capped(machine: Machine, rel: str, dest: Path, cap: int) -> str | None:
    """Copy a regular file of the machine to dest (mode 600), cut at cap; a note when it was
    refused or cut, None when it was copied whole or is not there."""
    st = lstat(machine.upper, rel) or lstat(machine.lower, rel)
    if st is None:
        return None
    if stat.S_ISLNK(st.st_mode):
        return f"/{rel}: a symbolic link, not copied"
    got = machine.read(rel, cap)
    if got is None:
        return f"/{rel}: not a regular file reached through real folders, not copied"
    data, size = got
    with contextlib.suppress(FileNotFoundError):
        dest.unlink()
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return f"{dest.name}: {size} bytes, cut to {cap}" if size > cap else None
