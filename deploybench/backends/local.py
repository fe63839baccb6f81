"""The embedded default backend: machines on this Linux host (see deploybench/local/)."""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import Any

from deploybench.backends.base import Backend, MachineRequest
from deploybench.backends.terraform import terraform_binary
from deploybench.errors import DeployBenchError
from deploybench.local import images, machine
from deploybench.paths import state_home
from deploybench.progress import status_line

# Parallel attempts of one run are threads: one of them shows the image build, the others wait
# here and find the image built, so the user sees one build line, not one per worker.
_image_build = threading.Lock()


# Ports handed out by this process, not handed out again: two attempts starting together.
_HANDED: set[int] = set()
_PORTS_LOCK = threading.Lock()
LOWEST_PORT = 20000


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_ports(count: int) -> list[int]:
    """Free loopback ports, distinct from each other and from those handed out before, taken
    below the kernel's ephemeral range: a port from that range (what binding port 0 gives) can
    be taken by any outgoing connection between now and the machine's start, and the machine's
    forward then fails to bind it."""
    high = _ephemeral_low() - 1
    if high - LOWEST_PORT < 1000:
        high = 65535
    socks, ports = [], []
    with _PORTS_LOCK:
        try:
            while len(ports) < count:
                port = random.randint(LOWEST_PORT, high)
                if port in _HANDED or port in ports:
                    continue
                sock = socket.socket()
                try:
                    sock.bind(("127.0.0.1", port))
                except OSError:
                    sock.close()
                    continue
                socks.append(sock)
                ports.append(port)
        finally:
            for sock in socks:
                sock.close()
        if len(_HANDED) > 4096:
            _HANDED.clear()
        _HANDED.update(ports)
    return ports


def _processes() -> list[tuple[int, bytes]]:
    """(pid, NUL-separated command line) of every process."""
    out = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            out.append((int(proc.name), b"\0" + (proc / "cmdline").read_bytes()))
        except OSError:
            continue
    return out


def _memory_gb() -> float:
    with open("/proc/meminfo") as meminfo:
        kib = int(meminfo.readline().split()[1])
    return round(kib / 1024 / 1024, 1)


KNOWN = "known_hosts"
# Memory left to the host and the harness whatever a task asks for.
HOST_RESERVE_GB = 2.0


def _memory_limit_mb(wanted_gb: float | None) -> int:
    if not wanted_gb:
        return 0
    return int(max(0.5, min(wanted_gb, _memory_gb() - HOST_RESERVE_GB)) * 1024)


class LocalBackend(Backend):
    name = "local"
    default_image = "debian12"
    layers_uid_base = images.UID_BASE
    image_pythons = {"debian12": "3.11", "debian13": "3.13"}

    def sanity_check(self, request: MachineRequest | None = None) -> None:
        machine.require_root()
        terraform_binary()
        for tool in ("unshare", "systemd-nspawn", "ssh-keygen"):
            if shutil.which(tool) is None:
                raise DeployBenchError(f"{tool} not found: the local backend needs it")
        if request is not None:
            images.recipe_for(request.image or self.default_image)
            if not images.is_built(request.image or self.default_image):
                images.require_mmdebstrap()
            if request.gpu and not any(Path("/dev").glob("nvidia[0-9]*")):
                raise DeployBenchError("--gpu asked for, but this host has no /dev/nvidia* device")

    def collect_state(self, machines: dict[str, dict], dest: Path) -> None:
        """The files the agent changed, read from the overlay's upper layer on the host."""
        from deploybench import runfolder

        dest.mkdir(parents=True, exist_ok=True)
        rows = machine.changed_files(state_home(), next(iter(machines)))
        # Paths are the agent's: one that is not UTF-8 is written escaped, never an error.
        (dest / runfolder.CHANGED_FILES).write_text(
            "".join(f"{row}\n" for row in rows), errors="backslashreplace"
        )

    @property
    def judges_from_outside(self) -> bool:
        # DEPLOYBENCH_LOCAL_POST_AGENT=machine runs the stages after the agent through the
        # machine's login, as on cloud machines: that path's tests run on local machines.
        return os.environ.get("DEPLOYBENCH_LOCAL_POST_AGENT", "host") != "machine"

    def before_agent(self, host: str, attempt: Path) -> None:
        machine.note_before_agent(state_home(), host)

    def after_agent(
        self, machines: dict[str, dict], attempt: Path, task_id: str, hand: dict[str, Any]
    ) -> dict[str, Any]:
        from deploybench.local import after_agent

        return after_agent.judge(state_home(), next(iter(machines)), attempt, task_id, hand)

    def read_live(self, machines: dict[str, dict], path: str, offset: int) -> bytes | None:
        """From the host, without the machine's login: the file as the machine's overlay
        layers hold it, every component opened without following a link (local/layers.py)."""
        from deploybench.backends.base import LIVE_READ_CAP
        from deploybench.local import layers

        mdir = machine.machines_dir(state_home()) / next(iter(machines))
        info = machine.read_info(mdir) or {}
        m = layers.Machine(machine.upper_dir(mdir), Path(info.get("image_dir", "")))
        return m.read_from(path.lstrip("/"), offset, LIVE_READ_CAP)

    # The experiment runs from the host on the judged machine's layers as often as asked.
    # Its machines reach the controller's loopback ports they are given through a bridge of
    # their own (local/bridge.py), not through SSH.
    loopback_by_ssh = False

    def experiment_again(
        self,
        machines: dict[str, dict],
        attempt: Path,
        hand: dict[str, Any],
        script: str,
        logs: Path,
    ) -> tuple[int, float]:
        from deploybench.local import after_agent

        name = next(iter(machines))
        return after_agent.experiment_again(state_home(), name, attempt, hand, script, logs)

    def before_apply(self, request: MachineRequest, folder: Path) -> None:
        self._built(request.image or self.default_image)

    def _built(self, image: str) -> None:
        with _image_build:
            if images.is_built(image):
                return
            with status_line(f"building the {image} base image (once per host)") as update:
                images.ensure_image(image, on_line=update)

    def image_identity(self, image: str | None) -> dict[str, Any]:
        """The image's recipe digest, when it was built, and a digest of the package set it
        holds (its dpkg status): two runs on images built apart from one recipe differ there
        when the archive moved between the builds. Built now if it was not (the run's first
        machine would build it)."""
        name = image or self.default_image
        self._built(name)
        return {"image": name, **images.identity(name)}

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
            # The task's limits, capped by the host's memory (a 64 GiB task on a smaller host
            # gets all of it but a reserve) and enforced by the machine's cgroup and its
            # writable layer's size (deploybench/local/machine.py).
            "limit_memory_mb": _memory_limit_mb(request.limit_memory_gb),
            "limit_processes": int(request.limit_processes or 0),
            # CPU time per 100 ms period, in ms (the cgroup's CFS quota); 0 for none.
            "limit_cpu_ms": int(round((request.limit_cpus or 0) * 100)),
            "limit_disk_gb": int(request.limit_disk_gb or 0),
            "loopback_ports": list(request.loopback_ports),
            "lower_layers": list(request.lower_layers),
        }

    # A deployment's machines are named from its request (see the module's locals), and the
    # request is recorded before Terraform starts any: so a deployment whose controller died
    # mid-apply still lists and ends every machine it may have started.
    @staticmethod
    def _recorded_names(folder: Path) -> list[str]:
        try:
            request = json.loads((folder / "deployment.json").read_text())["request"]
            return [
                f"{request['name_prefix']}-{request['run_id']}-{i}" for i in range(request["count"])
            ]
        except (OSError, ValueError, KeyError, TypeError):
            return []

    def machines(self, folder: Path) -> dict[str, dict]:
        try:
            found = super().machines(folder)
        except ValueError:  # machines.json cut short by a controller killed as it wrote it
            found = {}
        for name in self._recorded_names(folder):
            info = machine.read_info(machine.machines_dir(state_home()) / name)
            if name not in found and info is not None and machine.is_alive(info):
                found[name] = {
                    "host": "127.0.0.1",
                    "port": info["port"],
                    "user": "vm",
                    "private_key_file": str(
                        machine.machines_dir(state_home()) / name / "id_ed25519"
                    ),
                    "known_hosts_file": str(machine.machines_dir(state_home()) / name / KNOWN),
                    "backend": "local",
                    "image": info.get("image", ""),
                }
        return found

    def revive(self, folder: Path, loopback_ports: list[int]) -> dict[str, dict]:
        """The stages after the agent killed the machine's PID 1 (local/after_agent.py): it
        boots again over the writable layer the agent and the verifier left."""
        for name in self._recorded_names(folder):
            machine.boot_again(state_home(), name, loopback_ports)
        return self.machines(folder)

    def sshd_port_inside(self, machines: dict[str, dict]) -> int:
        # The machine's sshd listens on the very port the host forwards to it (local/boot.sh).
        return int(next(iter(machines.values()))["port"])

    sweep_ends_every_machine = True

    def destroy(self, folder: Path) -> None:
        names = self._recorded_names(folder)
        # A `machine up` still running for this deployment would start its machine after we
        # looked: end those first.
        for pid, argv in _processes():
            if b"deploybench.local.machine" in argv and any(
                f"\0--name\0{n}\0".encode() in argv + b"\0" for n in names
            ):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        try:
            super().destroy(folder)
        finally:
            for name in names:
                machine.down(state_home(), name)
                # A machine whose `up` was killed before it wrote machine.json is still in
                # its cgroup, named after it.
                machine.end_cgroup(f"{machine.cgroup_group(state_home())}/{name}")

    def sweep(self, dry_run: bool = False) -> list[str]:
        self.check()  # ending machines on this host needs root
        mroot = machine.machines_dir(state_home())
        found = sorted(p.name for p in mroot.glob("*")) if mroot.is_dir() else []
        found += [f"pid {pid}" for pid in machine.stray_namespaces(state_home())]
        if not dry_run:
            machine.down_all(state_home())
        return found
