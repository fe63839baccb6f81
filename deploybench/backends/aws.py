"""AWS: Canonical's Ubuntu 22.04 on m6i.4xlarge (CPU) or g6.4xlarge (one NVIDIA L4).

Terraform (terraform/envs/aws) makes the machines; boto3 is used only to check that the
standard credential chain resolves and to sweep what crashed runs left. Both follow the
standard AWS_ENDPOINT_URL* variables, which is how the tests point them at a moto server."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tenacity import retry, retry_if_exception, stop_after_delay, wait_fixed

from deploybench.backends import volume_scan
from deploybench.backends.base import MachineRequest
from deploybench.backends.cloud import CloudBackend, interface_vars, live_runs, operator_cidr
from deploybench.backends.cloud import owner as owner_of
from deploybench.errors import DeployBenchError
from deploybench.verify import evidence, harness_login

# Instance types, overridable per controller; the defaults match the paper's machines.
CPU_TYPE_ENV = "DEPLOYBENCH_AWS_CPU_TYPE"
GPU_TYPE_ENV = "DEPLOYBENCH_AWS_GPU_TYPE"
AMI_ENV = "DEPLOYBENCH_AWS_AMI"
SPOT_ENV = "DEPLOYBENCH_AWS_SPOT"
DEFAULT_CPU_TYPE = "m6i.4xlarge"
DEFAULT_GPU_TYPE = "g6.4xlarge"
_ALIVE_STATES = ["pending", "running", "stopping", "stopped"]


def instance_type(gpu: bool) -> str:
    if gpu:
        return os.environ.get(GPU_TYPE_ENV) or DEFAULT_GPU_TYPE
    return os.environ.get(CPU_TYPE_ENV) or DEFAULT_CPU_TYPE


def _session():
    import boto3  # imported here so `deploybench --help` never pays for it

    return boto3.Session()


def region() -> str:
    return _session().region_name or "us-east-1"


def _endpoint_overridden() -> bool:
    return any(k.startswith("AWS_ENDPOINT_URL") for k in os.environ)


class AwsBackend(CloudBackend):
    name = "aws"
    default_image = "ubuntu2204"
    image_pythons = {"ubuntu2204": "3.10"}
    fetches_python = True

    def sanity_check(self, request: MachineRequest | None = None) -> None:
        super().sanity_check(request)
        if _session().get_credentials() is None:
            raise DeployBenchError(
                "no AWS credentials found in the standard chain (environment, "
                "~/.aws/credentials, SSO, instance role): configure one, e.g. `aws configure`"
            )
        if request is not None and (request.image or self.default_image) != "ubuntu2204":
            raise DeployBenchError("the aws backend offers one image: ubuntu2204")
        operator_cidr(_endpoint_overridden())  # before any machine, not in every attempt

    def machine_type(self, gpu: bool) -> str:
        return instance_type(gpu)

    def image_identity(self, image: str | None) -> dict[str, Any]:
        """The AMI, when the operator pinned one; otherwise Canonical's newest Ubuntu 22.04 is
        looked up at each machine's launch, and each attempt's machine/terraform.tfstate holds
        the AMI it got (output ami_id)."""
        pinned = os.environ.get(AMI_ENV) or None
        return {
            "image": image or self.default_image,
            "ami_id": pinned
            or "newest Canonical Ubuntu 22.04 at launch (per attempt: "
            "machine/terraform.tfstate, output ami_id)",
        }

    def terraform_vars(self, request: MachineRequest, folder: Path) -> dict[str, Any]:
        return {
            "region": region(),
            **interface_vars(request, folder, self.default_image),
            "operator_cidr": operator_cidr(_endpoint_overridden()),
            "ami_id": os.environ.get(AMI_ENV) or None,
            "instance_type_cpu": instance_type(False),
            "instance_type_gpu": instance_type(True),
            "spot": os.environ.get(SPOT_ENV, "") in ("1", "true", "yes"),
        }

    def playbook_env(self) -> list[str]:
        # The standard chain's variables (keys, profile, region, endpoints), for the snapshot
        # calls the side door makes during the playbook.
        return sorted(k for k in os.environ if k.startswith("AWS_"))

    # The root volume read from outside (backends/volume_scan.py): a snapshot before the agent,
    # one of the stopped machine after it, both scanned by a scanner machine after the verdict.
    def before_agent(self, host: str, attempt: Path) -> None:
        volume_scan.before_agent(_session().client("ec2"), host, attempt)

    def at_agent_end(self, host: str, attempt: Path) -> str | None:
        return volume_scan.at_agent_end(_session().client("ec2"), host, attempt)

    def scan_from_outside(self, machines: dict[str, dict], attempt: Path) -> None:
        if not machines:
            return
        machine = next(iter(machines.values()))
        folder = Path(machine["private_key_file"]).parent
        host_private, host_public = harness_login.ensure_host_key(folder)
        login_key = Path(f"{machine['private_key_file']}.pub").read_text()
        raw = volume_scan.scan(
            _session().client("ec2"),
            attempt,
            harness_login.cloud_config(login_key, host_private, host_public),
            self.scanner_runner(machine),
        )
        if raw is not None:
            evidence.judge_volume_scan(attempt, raw)

    def scanner_runner(self, machine: dict):
        """How the scanner program reaches the scanner machine (SSH; a test of the AWS calls
        against moto, which boots nothing, runs it on local copies instead)."""
        return volume_scan.ssh_runner(machine)

    def sweep(self, dry_run: bool = False) -> list[str]:
        return sweep_aws(owner_of(), live_runs(self.name), dry_run)

    def sweep_run(self, owner: str, run_id: str) -> list[str]:
        return sweep_aws(owner, set(), dry_run=False, run_id=run_id)


def _tags(resource: dict) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in resource.get("Tags", [])}


def _is_dependency_violation(exc: BaseException) -> bool:
    code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
    return code in ("DependencyViolation", "InvalidGroup.InUse")


def sweep_aws(owner: str, live: set[str], dry_run: bool, run_id: str | None = None) -> list[str]:
    """Terminate every instance tagged deploybench:owner=<owner> (and deploybench:run=<run_id>
    when given) whose run is not live, then delete the security groups and key pairs of those
    runs. Returns what was found."""
    ec2 = _session().client("ec2")
    owner_filter = {"Name": "tag:deploybench:owner", "Values": [owner]}
    run_filters = [{"Name": "tag:deploybench:run", "Values": [run_id]}] if run_id else []
    found: list[str] = []

    leaked_ids = []
    pages = ec2.get_paginator("describe_instances").paginate(
        Filters=[
            owner_filter,
            *run_filters,
            {"Name": "instance-state-name", "Values": _ALIVE_STATES},
        ]
    )
    for page in pages:
        for res in page["Reservations"]:
            for inst in res["Instances"]:
                tags = {t["Key"]: t["Value"] for t in inst.get("Tags", [])}
                if tags.get("deploybench:run") in live:
                    continue
                leaked_ids.append(inst["InstanceId"])
                found.append(
                    f"instance {inst['InstanceId']} {tags.get('Name', '?')} "
                    f"(run {tags.get('deploybench:run', '?')}, {inst['State']['Name']})"
                )
    if leaked_ids and not dry_run:
        ec2.terminate_instances(InstanceIds=leaked_ids)
        ec2.get_waiter("instance_terminated").wait(
            InstanceIds=leaked_ids, WaiterConfig={"Delay": 5, "MaxAttempts": 120}
        )

    # A group still attached to a terminating instance cannot go yet: retry for a while.
    delete_group = retry(
        retry=retry_if_exception(_is_dependency_violation),
        stop=stop_after_delay(300),
        wait=wait_fixed(5),
        reraise=True,
    )(ec2.delete_security_group)
    groups = ec2.describe_security_groups(Filters=[owner_filter, *run_filters])["SecurityGroups"]
    for group in groups:
        tags = {t["Key"]: t["Value"] for t in group.get("Tags", [])}
        if tags.get("deploybench:run") in live:
            continue
        found.append(f"security group {group['GroupId']} {group['GroupName']}")
        if not dry_run:
            delete_group(GroupId=group["GroupId"])
    # The volume scan's volumes and snapshots (backends/volume_scan.py) that a crash left.
    for volume in ec2.describe_volumes(
        Filters=[owner_filter, *run_filters, {"Name": "status", "Values": ["available"]}]
    )["Volumes"]:
        if _tags(volume).get("deploybench:run") in live:
            continue
        found.append(f"volume {volume['VolumeId']}")
        if not dry_run:
            ec2.delete_volume(VolumeId=volume["VolumeId"])
    for snap in ec2.describe_snapshots(OwnerIds=["self"], Filters=[owner_filter, *run_filters])[
        "Snapshots"
    ]:
        if _tags(snap).get("deploybench:run") in live:
            continue
        found.append(f"snapshot {snap['SnapshotId']}")
        if not dry_run:
            ec2.delete_snapshot(SnapshotId=snap["SnapshotId"])
    for pair in ec2.describe_key_pairs(Filters=[owner_filter, *run_filters])["KeyPairs"]:
        tags = {t["Key"]: t["Value"] for t in pair.get("Tags", [])}
        if tags.get("deploybench:run") in live:
            continue
        found.append(f"key pair {pair['KeyName']}")
        if not dry_run:
            ec2.delete_key_pair(KeyName=pair["KeyName"])
    return found
