"""The verifier's own tools: the controller's static busybox, copied to the machine only for
verification, called there by absolute path in a clean environment and removed after. Being
static, it loads no library of the machine (an /etc/ld.so.preload or a changed libc cannot
reach it); its applets (sh, timeout, md5sum, tar ...) replace the machine's for everything
the harness itself does on a machine the agent held as root."""

from __future__ import annotations

import os
import struct
from pathlib import Path

from deploybench.errors import DeployBenchError

CANDIDATES = ("/bin/busybox", "/usr/bin/busybox")
PT_INTERP = 3


def is_static_elf(path: Path) -> bool:
    """An ELF executable without a program interpreter (so no dynamic loader, no libraries)."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2:  # 64-bit only
                return False
            endian = "<" if head[5] == 1 else ">"
            (phoff,) = struct.unpack_from(endian + "Q", head, 32)
            phentsize, phnum = struct.unpack_from(endian + "HH", head, 54)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except OSError:
        return False
    for i in range(phnum):
        (p_type,) = struct.unpack_from(endian + "I", table, i * phentsize)
        if p_type == PT_INTERP:
            return False
    return len(table) == phentsize * phnum


def busybox() -> Path:
    """The controller's static busybox ($DEPLOYBENCH_BUSYBOX, else Debian's busybox-static)."""
    wanted = os.environ.get("DEPLOYBENCH_BUSYBOX")
    for candidate in [wanted] if wanted else CANDIDATES:
        path = Path(candidate)
        if path.is_file() and is_static_elf(path):
            return path
    raise DeployBenchError(
        f"no static busybox at {wanted or ' or '.join(CANDIDATES)}: the verifier's trusted tools "
        "come from it (apt-get install busybox-static)"
    )
