"""The embedded default backend: machines on this Linux host (see deploybench/local/)."""

from __future__ import annotations

import os
import shutil
import socket
import sys
from pathlib import Path
from typing import Any

from deploybench.backends.base import Backend, MachineRequest
from deploybench.errors import DeployBenchError
from deploybench.local import images, machine
from deploybench.paths import state_home
from deploybench.progress import status_line
from deploybench.terraform import terraform_binary


def free_ports(count: int) -> list[int]:
    """Ports the kernel hands out as free right now, distinct from each other."""
    socks, ports = [], []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            socks.append(sock)
            ports.append(sock.getsockname()[1])
    finally:
        for sock in socks:
            sock.close()
    return ports


def _memory_gb() -> float:
    with open("/proc/meminfo") as meminfo:
        kib = int(meminfo.readline().split()[1])
    return round(kib / 1024 / 1024, 1)


class LocalBackend(Backend):
    name = "local"
    default_image = "debian12"

    def sanity_check(self, request: MachineRequest | None = None) -> None:
        machine.require_root()
        terraform_binary()
        for tool in ("unshare", "ssh-keygen"):
            if shutil.which(tool) is None:
                raise DeployBenchError(f"{tool} not found: the local backend needs it")
        if request is not None:
            images.recipe_for(request.image or self.default_image)
            if not images.is_built(request.image or self.default_image):
                images.require_mmdebstrap()
            if request.gpu and not any(Path("/dev").glob("nvidia[0-9]*")):
                raise DeployBenchError("--gpu asked for, but this host has no /dev/nvidia* device")

    def before_apply(self, request: MachineRequest, folder: Path) -> None:
        image = request.image or self.default_image
        if images.is_built(image):
            return
        with status_line(f"building the {image} base image (once per host)") as update:
            images.ensure_image(image, on_line=update)

    def terraform_vars(self, request: MachineRequest, folder: Path) -> dict[str, Any]:
        return {
            "run_id": request.run_id,
            "name_prefix": request.name_prefix,
            "machine_count": request.count,
            "image": request.image or self.default_image,
            "gpu": request.gpu,
            # Local machines share the host's CPUs and memory: report those, not the request.
            "vcpus": os.cpu_count() or 1,
            "memory_gb": _memory_gb(),
            "disk_gb": request.disk_gb,
            "owner": request.owner,
            "tags": request.tags,
            "state_dir": str(state_home()),
            "python": sys.executable,
            "ssh_ports": free_ports(request.count),
        }

    def sweep(self, dry_run: bool = False) -> list[str]:
        mroot = machine.machines_dir(state_home())
        found = sorted(p.name for p in mroot.glob("*")) if mroot.is_dir() else []
        found += [f"pid {pid}" for pid in machine.stray_namespaces(state_home())]
        if not dry_run:
            machine.down_all(state_home())
        return found
