"""The backend interface: name, sanity checks, provision, machines, destroy.

Every backend provisions through its Terraform root (terraform/envs/<name>) into a deployment
folder that holds the state, the variables and the rendered inventory, so a deployment can be
listed and destroyed later by any process, also after a crash."""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from deploybench import contracts, inventory
from deploybench.paths import TERRAFORM_DIR
from deploybench.terraform import Deployment


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


class Backend(ABC):
    name: str
    default_image: str
    # How many times a failed `terraform apply` is run: see Deployment.apply.
    apply_attempts: int = 1

    @property
    def env_dir(self) -> Path:
        return TERRAFORM_DIR / "envs" / self.name

    @abstractmethod
    def sanity_check(self, request: MachineRequest | None = None) -> None:
        """Raise DeployBenchError naming what is missing before anything is made."""

    @abstractmethod
    def terraform_vars(self, request: MachineRequest, folder: Path) -> dict[str, Any]:
        """The Terraform variables of the backend's root for this request."""

    def before_apply(self, request: MachineRequest, folder: Path) -> None:
        """Work that must precede Terraform (e.g. building an image with visible progress).
        Nothing by default."""
        return None

    def provision(self, request: MachineRequest, folder: Path) -> dict[str, dict]:
        self.sanity_check(request)
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
