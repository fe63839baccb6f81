"""GCP, the paper's own platform: n2-standard-16 (CPU) or g2-standard-16 (one NVIDIA L4),
image family ubuntu-2204-lts; GPU machines terminate on host maintenance.

NOT EXERCISED HERE: the Google provider cannot be installed on this workplace and there is no
GCP emulator, so neither Terraform nor the sweep below has run against Google. The module is
checked with `terraform fmt` and against the shared interface (tests/test_terraform_interface.py);
this backend's variables are unit-tested. See docs/cloud.md."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from deploybench.backends.base import MachineRequest
from deploybench.backends.cloud import CloudBackend, interface_vars, live_runs, operator_cidr
from deploybench.backends.cloud import owner as owner_of
from deploybench.errors import DeployBenchError

CPU_TYPE_ENV = "DEPLOYBENCH_GCP_CPU_TYPE"
GPU_TYPE_ENV = "DEPLOYBENCH_GCP_GPU_TYPE"
ZONE_ENV = "DEPLOYBENCH_GCP_ZONE"
SPOT_ENV = "DEPLOYBENCH_GCP_SPOT"
DEFAULT_CPU_TYPE = "n2-standard-16"
DEFAULT_GPU_TYPE = "g2-standard-16"
DEFAULT_ZONE = "us-central1-a"
_PROJECT_ENVS = ("GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT", "GCLOUD_PROJECT")


def machine_type(gpu: bool) -> str:
    if gpu:
        return os.environ.get(GPU_TYPE_ENV) or DEFAULT_GPU_TYPE
    return os.environ.get(CPU_TYPE_ENV) or DEFAULT_CPU_TYPE


def zone() -> str:
    return os.environ.get(ZONE_ENV) or DEFAULT_ZONE


def label_value(value: str) -> str:
    """GCP label values: lower-case letters, digits, '_' and '-', at most 63 characters
    (the module applies the same rule, so a sweep filters on what Terraform wrote)."""
    return "".join(c if c.isalnum() or c in "_-" else "_" for c in value.lower())[:63]


def _google_default():
    """(credentials, project) from Google's standard chain; requires google-auth (installed
    with `pip install deploybench[gcp]`)."""
    try:
        import google.auth
        from google.auth.exceptions import DefaultCredentialsError
    except ImportError as exc:
        raise DeployBenchError(
            "the gcp backend needs the Google client libraries: pip install 'deploybench[gcp]'"
        ) from exc
    try:
        return google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
    except DefaultCredentialsError as exc:
        raise DeployBenchError(
            "no Google credentials in the standard chain: run "
            "`gcloud auth application-default login` or set GOOGLE_APPLICATION_CREDENTIALS"
        ) from exc


def project() -> str:
    for env in _PROJECT_ENVS:
        if os.environ.get(env):
            return os.environ[env]
    _, found = _google_default()
    if not found:
        raise DeployBenchError("no Google Cloud project: set GOOGLE_CLOUD_PROJECT")
    return found


class GcpBackend(CloudBackend):
    name = "gcp"
    default_image = "ubuntu2204"
    image_pythons = {"ubuntu2204": "3.10"}
    fetches_python = True

    def sanity_check(self, request: MachineRequest | None = None) -> None:
        super().sanity_check(request)
        _google_default()
        if request is not None and (request.image or self.default_image) != "ubuntu2204":
            raise DeployBenchError("the gcp backend offers one image: ubuntu2204")
        operator_cidr()  # before any machine, not in every attempt

    def machine_type(self, gpu: bool) -> str:
        return machine_type(gpu)

    def terraform_vars(self, request: MachineRequest, folder: Path) -> dict[str, Any]:
        return {
            "project": project(),
            "zone": zone(),
            **interface_vars(request, folder, self.default_image),
            "operator_cidr": operator_cidr(),
            "machine_type_cpu": machine_type(False),
            "machine_type_gpu": machine_type(True),
            "spot": os.environ.get(SPOT_ENV, "") in ("1", "true", "yes"),
        }

    def sweep(self, dry_run: bool = False) -> list[str]:
        return sweep_gcp(project(), owner_of(), live_runs(self.name), dry_run)

    def sweep_run(self, owner: str, run_id: str) -> list[str]:
        return sweep_gcp(project(), owner, set(), dry_run=False, run_id=run_id)


def sweep_gcp(
    project_id: str, owner: str, live: set[str], dry_run: bool, run_id: str | None = None
) -> list[str]:
    """Delete every instance labelled deploybench-owner=<owner> (and deploybench-run=<run_id>
    when given) whose run is not live, in any zone, then the firewall rules of those runs.
    Not exercised here (no GCP emulator)."""
    try:
        from google.cloud import compute_v1
    except ImportError as exc:
        raise DeployBenchError(
            "sweeping gcp needs google-cloud-compute: pip install 'deploybench[gcp]'"
        ) from exc
    owner_label = label_value(owner)
    found: list[str] = []
    instances = compute_v1.InstancesClient()
    flt = f'labels.deploybench-owner = "{owner_label}"'
    if run_id:
        flt += f' AND labels.deploybench-run = "{run_id}"'
    request = compute_v1.AggregatedListInstancesRequest(project=project_id, filter=flt)
    leaked_runs = set()
    operations = []
    for zone_path, scoped in instances.aggregated_list(request=request):
        for inst in scoped.instances:
            run = inst.labels.get("deploybench-run", "?")
            if run in live:  # stopped (TERMINATED) ones still hold disks: delete those too
                continue
            leaked_runs.add(run)
            zone_name = zone_path.rsplit("/", 1)[-1]
            found.append(f"instance {inst.name} ({zone_name}, run {run}, {inst.status})")
            if not dry_run:
                operations.append(
                    instances.delete(project=project_id, zone=zone_name, instance=inst.name)
                )
    for op in operations:
        op.result(timeout=600)
    if run_id:
        leaked_runs.add(run_id)  # its firewall rule may outlive an instance never made
    firewalls = compute_v1.FirewallsClient()
    for rule in firewalls.list(project=project_id):
        # Firewall rules carry no labels: they are named <prefix>-<run>-ssh.
        run = next((r for r in leaked_runs if rule.name.endswith(f"-{r}-ssh")), None)
        if run is None:
            continue
        found.append(f"firewall rule {rule.name}")
        if not dry_run:
            firewalls.delete(project=project_id, firewall=rule.name).result(timeout=300)
    return found
