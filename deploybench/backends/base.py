"""The backend interface: everything a caller may ask of a backend (its sanity check, once per
run; provision, machines, destroy, sweep; the state it collects of a machine after the agent;
the machine type it asks for and what that costs). No caller asks which backend it holds
(tests/test_seams.py).

Every backend provisions through its Terraform root (terraform/envs/<name>) into a deployment
folder that holds the state, the variables and the rendered inventory, so a deployment can be
listed and destroyed later by any process, also after a crash."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shlex
import subprocess
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from deploybench import contracts
from deploybench.backends import inventory
from deploybench.backends.terraform import Deployment
from deploybench.errors import DeployBenchError
from deploybench.paths import TERRAFORM_DIR

# The most a watcher reads of a running machine's file at once.
LIVE_READ_CAP = 1 << 20
# Bytes a machine's login may print before copy_out's header (a start-up file's banner).
COPY_PREAMBLE_CAP = 64 * 1024
COPY_CHUNK = 64 * 1024

# What copy_out runs on the machine, as root (sudo), with no start-up file or site module of
# Python read (-I -S): every folder on the way opened without following a link, the file itself
# too (O_NOFOLLOW, O_NONBLOCK: a fifo never blocks), only a regular file of at most CAP bytes
# streamed, at most CAP + 1 bytes of it. Its first line is the controller's nonce and a word.
# This is courtesy, not the bound: the machine is the agent's, so its python3 and sudo may be
# anything; the controller counts the bytes itself and stops at CAP + 1 (copy_out).
_COPY_SCRIPT = r"""
import errno, os, stat, sys
nonce, path, cap = sys.argv[1], sys.argv[2], int(sys.argv[3])
out = sys.stdout.buffer
def say(word):
    out.write(("%s %s\n" % (nonce, word)).encode())
    out.flush()
parts = [p for p in path.split("/") if p]
try:
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
    for part in parts[:-1]:
        nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        os.close(fd)
        fd = nxt
    f = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY, dir_fd=fd)
except FileNotFoundError:
    say("absent")
    sys.exit(0)
except OSError as exc:
    say("link" if exc.errno in (errno.ELOOP, errno.ENOTDIR) else "unreadable")
    sys.exit(0)
st = os.fstat(f)
if not stat.S_ISREG(st.st_mode):
    say("special")
elif st.st_size > cap:
    say("large")
else:
    say("file")
    left = cap + 1
    while left > 0:
        chunk = os.read(f, min(65536, left))
        if not chunk:
            break
        out.write(chunk)
        left -= len(chunk)
    out.flush()
"""
_COPY_REFUSED = {
    "absent": None,
    "link": "a symbolic link (or a link on its way), not copied",
    "unreadable": "could not be opened, not copied",
    "special": "not a regular file, not copied",
    "large": "over {cap} bytes, not copied",
}


@dataclass
class MachineRequest:
    """What a caller asks for; each backend turns it into its Terraform variables."""

    run_id: str
    count: int = 1
    image: str | None = None  # None: the backend's default image
    gpu: bool = False
    vcpus: int = 16
    memory_gb: float = 64
    disk_gb: int = 100
    owner: str = "deploybench"
    name_prefix: str = "db"
    tags: dict[str, str] = field(default_factory=dict)
    # The task's own limits, for a backend whose machines share a host (local): the machine's
    # memory and writable disk (GiB), processes and CPUs. A cloud machine's size is its limit.
    limit_memory_gb: float | None = None
    limit_disk_gb: int | None = None
    limit_processes: int | None = None
    limit_cpus: float | None = None
    # Ports of the controller's loopback the machine must reach (the agent's model endpoint
    # when it is a server there), for a backend whose machines do not share the host's network.
    loopback_ports: list[int] = field(default_factory=list)
    # Read-only folders of the controller's host laid under the machine's disk (an agent
    # scaffold's cached prefix), for a backend whose machines are overlays here (layers_prefix).
    lower_layers: list[str] = field(default_factory=list)


class Backend(ABC):
    name: str
    default_image: str
    # The images it offers and the Python each has (what a scaffold's needs are checked against
    # before any machine is made).
    image_pythons: dict[str, str] = {}
    # Whether its machines reach the internet beyond package registries, so a scaffold's
    # install can fetch a Python its image lacks into the scaffold's own prefix (uv's builds
    # come from GitHub). Cloud machines do; local ones are not assumed to.
    fetches_python: bool = False
    # How many times a failed `terraform apply` is run: see Deployment.apply.
    apply_attempts: int = 1
    # Whether its machines are paid for by the hour: a run then prints an estimate and asks.
    billed: bool = False
    # For a backend whose machines are overlays on the controller's own host (local): the host
    # uid that is root inside its machines. A scaffold's cached prefix is then unpacked once on
    # the host and laid under each machine's disk as a read-only layer (MachineRequest's
    # lower_layers), its files owned from this uid on, instead of copied into every machine;
    # the machines' architecture is the host's. None: the archive is copied in.
    layers_uid_base: int | None = None

    def __init__(self) -> None:
        self._checked: set[tuple[str | None, bool] | None] = set()
        self._check_lock = threading.Lock()

    @property
    def env_dir(self) -> Path:
        return TERRAFORM_DIR / "envs" / self.name

    def image_python(self, image: str | None) -> str:
        """The Python version of one of its images; an image it does not offer is one line."""
        chosen = image or self.default_image
        if chosen not in self.image_pythons:
            offered = ", ".join(sorted(self.image_pythons))
            raise DeployBenchError(
                f"the {self.name} backend offers no image {chosen!r} ({offered})"
            )
        return self.image_pythons[chosen]

    def image_identity(self, image: str | None) -> dict[str, Any]:
        """What names the image a run's machines start from, for run.json's provenance: by
        default only its name (a backend that can say more, says more)."""
        return {"image": image or self.default_image}

    @abstractmethod
    def sanity_check(self, request: MachineRequest | None = None) -> None:
        """Raise DeployBenchError naming what is missing before anything is made."""

    def check(self, request: MachineRequest | None = None) -> None:
        """The sanity check, made once per backend object for each kind of machine (image,
        GPU) asked for. A run holds one backend object, so it checks before its first machine
        and never again in its attempts."""
        key = None if request is None else (request.image, request.gpu)
        with self._check_lock:
            if key in self._checked:
                return
            self.sanity_check(request)
            self._checked.add(key)

    def machine_type(self, gpu: bool) -> str | None:
        """The machine type this backend asks its provider for; None when it has none."""
        return None

    def collect_state(self, machines: dict[str, dict], dest: Path) -> None:
        """Keep in dest (the attempt's state folder) what only the backend can see of a
        machine after the agent stopped, before the machine is destroyed. Nothing by default;
        what the playbook collects over SSH is the same for every backend."""
        return None

    def playbook_env(self) -> list[str]:
        """Variables of the controller's environment the playbook's side door needs for this
        backend's calls (before_agent, at_agent_end run in Ansible's worker); none by default.
        They stay in the controller's processes: Ansible sends no environment to a machine."""
        return []

    @property
    def judges_from_outside(self) -> bool:
        """Whether the stages after the agent run from outside the machine (after_agent): the
        playbook then ends with the agent, and nothing after it enters the machine's login."""
        return False

    def before_agent(self, host: str, attempt: Path) -> None:
        """Note what the stages after the agent compare against, just before the agent starts
        (called from the playbook through the side door). Nothing by default."""
        return None

    def at_agent_end(self, host: str, attempt: Path) -> str | None:
        """Called when the agent's run ended, before any stage after it enters the machine:
        keep what only the backend can keep of the machine as the agent left it. The machine's
        new address when it changed, else None. Nothing by default."""
        return None

    def scan_from_outside(self, machines: dict[str, dict], attempt: Path) -> None:
        """After the verdict of stages run through the machine: read the machine as the agent
        left it from a side the agent never reached, and judge the attempt again with what
        that finds (AWS: backends/volume_scan.py). Nothing by default."""
        return None

    def after_agent(
        self, machines: dict[str, dict], attempt: Path, task_id: str, hand: dict[str, Any]
    ) -> dict[str, Any]:
        """Every stage after the agent, from outside the machine: the verdict, written into
        the attempt. Only for a backend that judges_from_outside."""
        # Reached only by a caller that ignored judges_from_outside: a harness bug, never input.
        raise NotImplementedError(f"the {self.name} backend judges through the machine")

    def read_live(self, machines: dict[str, dict], path: str, offset: int) -> bytes | None:
        """What a file of a running machine holds from `offset` on (at most LIVE_READ_CAP
        bytes), for a watcher (`deploybench logs -f` on the agent's log while it runs); None
        when it cannot be read. By default over the harness's SSH login of the machine: it is
        the agent's login, so what comes back is the agent's to shape and is shown, never
        judged; it is never used once the agent has stopped (the run folder has the log then)."""
        machine = next(iter(machines.values()))
        args = [
            "ssh",
            *shlex.split(inventory.ssh_options(machine)),
            "-o",
            "BatchMode=yes",
            "-o",
            "ConnectTimeout=10",
            "-i",
            machine["private_key_file"],
            "-p",
            str(machine["port"]),
            f"{machine['user']}@{machine['host']}",
            f"tail -c +{int(offset) + 1} -- {shlex.quote(path)} | head -c {LIVE_READ_CAP}",
        ]
        try:
            done = subprocess.run(args, capture_output=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout if done.returncode == 0 else None

    def copy_out(
        self,
        machines: dict[str, dict],
        path: str,
        folder: Path,
        name: str,
        cap: int,
        timeout: float = 300,
    ) -> str | None:
        """Copy the regular file PATH of a running machine into FOLDER/NAME (mode 600), for the
        agentic diagnosis's report and logs; None when copied or not there, else a one-line note
        of why not. Over the harness's SSH login as root (sudo), like Ansible's become; the
        machine is the agent's, so the bound is the controller's own: it counts the bytes as they
        come and stops reading at CAP + 1 (the file is then refused), and writes nothing but a
        file of its own naming in FOLDER (created O_EXCL, never through a link, renamed into
        place when whole). A link or a file that is not regular, as seen when it is opened, is
        refused on the machine; a machine that lies about it still gets at most CAP bytes in."""
        machine = next(iter(machines.values()))
        nonce = secrets.token_hex(16)
        remote = shlex.join(
            ["sudo", "-n", "/usr/bin/python3", "-I", "-S", "-c", _COPY_SCRIPT, nonce, path,
             str(int(cap))]
        )  # fmt: skip
        args = [
            "ssh",
            *shlex.split(inventory.ssh_options(machine)),
            "-o", "BatchMode=yes",
            "-o", "ConnectTimeout=20",
            "-o", "LogLevel=ERROR",
            "-i", machine["private_key_file"],
            "-p", str(machine["port"]),
            f"{machine['user']}@{machine['host']}",
            remote,
        ]  # fmt: skip
        shown = f"{path}: "
        folder_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        part = f".{name}.{nonce}.part"
        try:
            proc = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            os.close(folder_fd)
            return shown + f"ssh could not start ({exc.strerror})"
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        written = False
        try:
            word, data = _copy_header(proc.stdout, nonce)
            if word is None:
                return shown + "the machine gave no answer, not copied"
            if word != "file":
                note = _COPY_REFUSED.get(word, "an answer the harness does not know, not copied")
                return None if note is None else shown + note.format(cap=cap)
            fd = os.open(
                part,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o600,
                dir_fd=folder_fd,
            )
            written = True
            total = 0
            with os.fdopen(fd, "wb") as dest:
                while True:
                    total += len(data)
                    if total > cap:
                        return shown + f"over {cap} bytes as it was copied, not copied"
                    dest.write(data)
                    data = proc.stdout.read1(COPY_CHUNK)
                    if not data:
                        break
            if proc.wait() != 0 or not timer.is_alive():
                return shown + f"the copy did not finish (ssh exited {proc.returncode})"
            os.replace(part, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
            written = False
            return None
        finally:
            timer.cancel()
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            proc.stdout.close()
            if written:
                with contextlib.suppress(OSError):
                    os.unlink(part, dir_fd=folder_fd)
            os.close(folder_fd)

    def revive(self, folder: Path, loopback_ports: list[int]) -> dict[str, dict]:
        """A kept machine (backends/kept.py) running again, for the agentic diagnosis: its
        machines. A cloud machine was never stopped (its stop stage ended only the agent's
        processes): it is as it was."""
        return self.machines(folder)

    def sshd_port_inside(self, machines: dict[str, dict]) -> int:
        """The port the machine's sshd listens on, as seen from the machine itself (the
        agentic diagnosis logs in from there): 22 on a cloud machine."""
        return 22

    # `sweep` cannot tell a leak from a machine in use: it ends every machine (kept ones too).
    sweep_ends_every_machine = False

    # How a machine reaches a port of the controller's loopback (the run's model gateway): by a
    # reverse forward over the harness's SSH connection, unless the backend bridges it itself.
    loopback_by_ssh = True

    def experiment_again(
        self,
        machines: dict[str, dict],
        attempt: Path,
        hand: dict[str, Any],
        script: str,
        logs: Path,
    ) -> tuple[int, float]:
        """The verifier's experiment once more on a judged machine, from outside it (a variant
        bank's real runs), its logs into LOGS: its exit code and seconds. Only for a backend
        that judges_from_outside; the others run it through the machine's login
        (deploybench/attempt/bank_runs.py)."""
        # Reached only by a caller that ignored judges_from_outside: a harness bug, never input.
        raise NotImplementedError(f"the {self.name} backend judges through the machine")

    @abstractmethod
    def terraform_vars(self, request: MachineRequest, folder: Path) -> dict[str, Any]:
        """The Terraform variables of the backend's root for this request."""

    def before_apply(self, request: MachineRequest, folder: Path) -> None:
        """Work that must precede Terraform (e.g. building an image with visible progress).
        Nothing by default."""
        return None

    def provision(self, request: MachineRequest, folder: Path) -> dict[str, dict]:
        self.check(request)
        folder.mkdir(parents=True, exist_ok=True)
        record = {
            "backend": self.name,
            "request": asdict(request),
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (folder / "deployment.json").write_text(json.dumps(record, indent=2))
        self.before_apply(request, folder)
        variables = self.terraform_vars(request, folder)
        outputs = Deployment(self.env_dir, folder).apply(variables, attempts=self.apply_attempts)
        machines = outputs.get("machines") or {}
        contracts.check(contracts.MACHINES, machines, f"{self.name} machines output")
        (folder / "machines.json").write_text(json.dumps(machines, indent=2))
        inventory.write(machines, folder / "inventory.ini")
        return machines

    def machines(self, folder: Path) -> dict[str, dict]:
        path = folder / "machines.json"
        return json.loads(path.read_text()) if path.is_file() else {}

    def destroy(self, folder: Path) -> None:
        Deployment(self.env_dir, folder).destroy()
        for name in ("machines.json", "inventory.ini"):
            (folder / name).unlink(missing_ok=True)

    def sweep(self, dry_run: bool = False) -> list[str]:
        """Find (and unless dry_run, destroy) what crashed runs left; return what was found."""
        return []


def _copy_header(stream, nonce: str) -> tuple[str | None, bytes]:
    """copy_out's header line (NONCE WORD) and the bytes after it, read from STREAM; what a
    login printed before it (at most COPY_PREAMBLE_CAP bytes) is dropped. (None, b"") when no
    header came."""
    mark = f"{nonce} ".encode()
    seen = b""
    while len(seen) <= COPY_PREAMBLE_CAP + len(mark) + 64:
        chunk = stream.read1(COPY_CHUNK)
        if not chunk:
            return None, b""
        seen += chunk
        at = seen.find(mark)
        if at < 0 or seen.find(b"\n", at) < 0:
            continue
        if at > COPY_PREAMBLE_CAP:
            break
        end = seen.index(b"\n", at)
        return seen[at + len(mark) : end].decode("ascii", "replace"), seen[end + 1 :]
    return None, b""
