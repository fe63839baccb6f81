"""The backend interface: everything a caller may ask of a backend (its sanity check, once per
run; provision, machines, destroy, sweep; the state it collects of a machine after the agent;
the machine type it asks for and what that costs). No caller asks which backend it holds
(tests/test_seams.py).

Every backend provisions through its Terraform root (terraform/envs/<name>) into a deployment
folder that holds the state, the variables and the rendered inventory, so a deployment can be
listed and destroyed later by any process, also after a crash."""

from __future__ import annotations

import json
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

    makes_banks = False
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
        """The verifier's experiment once more on a judged machine (a variant bank's real runs):
        its exit code and seconds. Only for a backend that makes_banks."""
        # Reached only by a caller that ignored makes_banks: a harness bug, never input.
        raise NotImplementedError(f"the {self.name} backend makes no variant banks")

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
