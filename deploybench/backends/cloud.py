"""What the cloud backends (aws, gcp) share: the run's SSH key, the operator's address, the
owner tag, and a record of live deployments so a sweep can tell a leak from a machine in use.

Credentials are never handled here: each provider's own standard chain finds them (boto3 and
the Terraform provider read the same environment and files), so no credential value is ever
written to a deployment folder, a variables file, a log or a machine."""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import urllib.request
from pathlib import Path

from deploybench.backends.base import Backend, MachineRequest
from deploybench.backends.terraform import Deployment, terraform_binary
from deploybench.errors import DeployBenchError, InfraError
from deploybench.paths import state_home
from deploybench.verify import harness_login

OPERATOR_CIDR_ENV = "DEPLOYBENCH_OPERATOR_CIDR"
OWNER_ENV = "DEPLOYBENCH_OWNER"
# Used only when DEPLOYBENCH_OPERATOR_CIDR is unset and no endpoint override is in force:
# AWS's own echo service answers with the caller's public address.
_ADDRESS_ECHO = "https://checkip.amazonaws.com"


def owner(request: MachineRequest | None = None) -> str:
    """The owner tag: DEPLOYBENCH_OWNER when set (one value per controller keeps two
    controllers' sweeps apart), else the request's."""
    return os.environ.get(OWNER_ENV) or (request.owner if request else "deploybench")


def normalise_cidr(value: str) -> str:
    """A bare address becomes a /32 (or /128); anything open to the world is refused."""
    try:
        net = ipaddress.ip_network(value.strip(), strict=False)
    except ValueError as exc:
        raise DeployBenchError(f"{OPERATOR_CIDR_ENV}={value!r} is not an address or CIDR") from exc
    if net.prefixlen == 0:
        raise DeployBenchError(
            f"{OPERATOR_CIDR_ENV} must not open SSH to the whole internet ({net}); "
            "give the operator's own address"
        )
    return str(net)


def operator_cidr(endpoint_overridden: bool = False) -> str:
    """Where SSH may come from: DEPLOYBENCH_OPERATOR_CIDR, else this host's public address as
    an echo service sees it. No guess is ever widened to 0.0.0.0/0."""
    explicit = os.environ.get(OPERATOR_CIDR_ENV)
    if explicit:
        return normalise_cidr(explicit)
    if not endpoint_overridden:
        try:
            # A fixed https address of ours, not a user-given URL.
            with urllib.request.urlopen(_ADDRESS_ECHO, timeout=5) as resp:
                return normalise_cidr(resp.read().decode().strip())
        except (OSError, DeployBenchError):
            pass
    raise DeployBenchError(
        f"cannot tell the operator's public address: set {OPERATOR_CIDR_ENV} "
        "(e.g. 203.0.113.7/32); SSH to the machines is opened to that address only"
    )


def ensure_ssh_key(folder: Path, comment: str) -> tuple[str, Path]:
    """The deployment's own ed25519 key pair, made once in its folder."""
    key = folder / "id_ed25519"
    if not key.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(key)],
            check=True,
            stdin=subprocess.DEVNULL,
        )
    key.chmod(0o600)
    return Path(f"{key}.pub").read_text().strip(), key


# --- Live deployments: a machine whose deployment is still recorded here is in use. ---


def interface_vars(request: MachineRequest, folder: Path, default_image: str) -> dict:
    """The shared module interface (terraform/INTERFACE.md) for a cloud backend: the run's own
    SSH key, the owner tag and the task split out of the tags; each backend adds its own. Also
    the harness's own login (deploybench/verify/harness_login.py): cloud-init makes its user with
    the run's key outside every home and boots the machines with the deployment's host key, whose
    known_hosts file is written here, before any connection."""
    public_key, private_key = ensure_ssh_key(folder, f"deploybench-{request.run_id}")
    host_private, host_public = harness_login.ensure_host_key(folder)
    known = harness_login.write_known_hosts(folder / "known_hosts", host_public)
    tags = dict(request.tags)
    task = tags.pop("task", None) or "none"
    return {
        "run_id": request.run_id,
        "name_prefix": request.name_prefix,
        "machine_count": request.count,
        "image": request.image or default_image,
        "gpu": request.gpu,
        "vcpus": request.vcpus,
        "memory_gb": request.memory_gb,
        "disk_gb": request.disk_gb,
        "ssh_public_key": public_key,
        "ssh_private_key_file": str(private_key.resolve()),
        "owner": owner(request),
        "tags": tags,
        "task_id": task,
        "user_data": harness_login.cloud_config(public_key, host_private, host_public),
        "login_user": harness_login.USER,
        "known_hosts_file": str(known.resolve()),
    }


def _live_dir(backend: str) -> Path:
    return state_home() / "cloud-deployments" / backend


def register(backend: str, run_id: str, folder: Path) -> None:
    d = _live_dir(backend)
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{run_id}.json").write_text(json.dumps({"folder": str(folder.resolve())}))


def unregister(backend: str, run_id: str) -> None:
    (_live_dir(backend) / f"{run_id}.json").unlink(missing_ok=True)


def live_runs(backend: str) -> set[str]:
    """Run ids whose deployment folder still holds Terraform state (so `destroy` can end
    them). A record whose folder or state is gone is a crashed run: dropped here."""
    live = set()
    d = _live_dir(backend)
    for record in d.glob("*.json") if d.is_dir() else []:
        try:
            folder = Path(json.loads(record.read_text())["folder"])
        except (json.JSONDecodeError, KeyError, OSError):
            folder = Path("/nonexistent")
        if (folder / "terraform.tfstate").is_file():
            live.add(record.stem)
        else:
            record.unlink(missing_ok=True)
    return live


class CloudBackend(Backend):
    """Provision records the deployment as live; destroy forgets it."""

    # A cloud API's passing errors are retried by applying again; the provider replaces a
    # tainted cloud resource through its delete call. (Not for local machines: Terraform runs
    # no destroy-time provisioner for a tainted resource, so a half-booted machine would leak.)
    apply_attempts = 3
    billed = True

    def sanity_check(self, request: MachineRequest | None = None) -> None:
        terraform_binary()
        if subprocess.run(["which", "ssh-keygen"], capture_output=True).returncode != 0:
            raise DeployBenchError("ssh-keygen not found: the cloud backends make a key per run")

    def provision(self, request: MachineRequest, folder: Path) -> dict[str, dict]:
        # Recorded before apply, so a crash mid-apply still leaves a record pointing at state.
        register(self.name, request.run_id, folder)
        return super().provision(request, folder)

    def destroy(self, folder: Path) -> None:
        super().destroy(folder)
        tfvars = Deployment(self.env_dir, folder).var_file
        if tfvars.is_file():
            variables = json.loads(tfvars.read_text())
            # Terraform cannot destroy what it never heard of: an instance whose create call
            # was cut short by Ctrl-C exists but is not in the state. Its tags still name the
            # run, so end whatever is left of this run by tag.
            try:
                self.sweep_run(variables["owner"], variables["run_id"])
            except Exception as exc:
                raise InfraError(
                    f"could not check for leftovers of run {variables['run_id']}: {exc}; "
                    f"run `deploybench sweep --backend {self.name}` once the cloud answers"
                ) from exc
            unregister(self.name, variables["run_id"])

    def sweep_run(self, owner: str, run_id: str) -> list[str]:
        """Destroy what is left of one run, found by its tags. Nothing by default."""
        return []
