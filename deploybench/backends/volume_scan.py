"""An AWS machine's root volume, read from outside after the agent: the scan the harness cannot
make from a host it does not have (docs/verification.md, `trust: scanned`).

1. Just before the agent (the playbook's doors step, through the side door): a snapshot of the
   machine's root volume, the reference (`before`).
2. When the agent's run ends, before any stage after it enters the machine: the machine is
   stopped (every process of the agent's ends with it, so none can plant or remove anything
   after the picture is taken), its root volume snapshotted (`after`), and started again; the
   playbook goes on at its new address. A spot machine cannot be stopped: it is snapshotted
   running (`frozen: false` in the record; a process the agent left could then still change
   files after the picture).
3. After the verdict: a scanner machine of the harness's (the same image, fresh, with the
   harness's own login and the deployment's pinned host key) gets a volume made from each
   snapshot, mounts both read-only without replaying their journals, and runs the same scan the
   host makes of a local machine's layers (deploybench/local/scan.py, `scan_trees`), shipped to
   it as a zip of those two modules on SSH's stdin. Its lines are judged like the host's
   (deploybench/verify/integrity.py); a tampered volume fails the attempt whatever the stages
   through the machine found. Volumes, snapshots and the scanner are removed, also on failure; all
   carry the run's tags, so a sweep finds what a crash left.

The record of each step is the attempt's volume_scan.json. The AWS calls are exercised against
moto (tests/test_volume_scan.py); the scan itself against real ext4 copies of a local image."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import time
import zipfile
from pathlib import Path
from typing import Any

from deploybench import runfolder
from deploybench.errors import InfraError
from deploybench.verify import harness_login

SCANNER_TYPE_ENV = "DEPLOYBENCH_AWS_SCANNER_TYPE"
DEFAULT_SCANNER_TYPE = "t3.medium"
DEVICES = ("/dev/sdf", "/dev/sdg")
_WAIT = {"Delay": 5, "MaxAttempts": 120}
_ALIVE = ["pending", "running", "stopping", "stopped"]


def scanner_program() -> bytes:
    """A zip Python runs as a program: deploybench's layer reader and scan, and nothing else of
    the package (its own __init__ would import the rest)."""
    local = Path(__file__).resolve().parent.parent / "local"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("deploybench/__init__.py", "")
        zf.writestr("deploybench/local/__init__.py", "")
        for name in ("layers.py", "scan.py"):
            zf.write(local / name, f"deploybench/local/{name}")
        zf.writestr(
            "__main__.py", "import sys\nfrom deploybench.local import scan\nsys.exit(scan.main())\n"
        )
    return buf.getvalue()


def _tags(resource: dict) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in resource.get("Tags", [])}


def _tag_spec(kind: str, tags: dict[str, str]) -> list[dict]:
    return [{"ResourceType": kind, "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]


def _record(attempt: Path) -> dict[str, Any]:
    path = attempt / runfolder.VOLUME_SCAN
    return json.loads(path.read_text()) if path.is_file() else {}


def _save(attempt: Path, record: dict[str, Any]) -> None:
    (attempt / runfolder.VOLUME_SCAN).write_text(json.dumps(record, indent=2))


def _instance(ec2, name: str) -> dict:
    """The live instance named `name` (machine names carry the run id: unique)."""
    pages = ec2.get_paginator("describe_instances").paginate(
        Filters=[
            {"Name": "tag:Name", "Values": [name]},
            {"Name": "instance-state-name", "Values": _ALIVE},
        ]
    )
    found = [i for p in pages for r in p["Reservations"] for i in r["Instances"]]
    if len(found) != 1:
        raise InfraError(f"found {len(found)} live instances named {name}, expected one")
    return found[0]


def _root_volume(instance: dict) -> str:
    root = instance.get("RootDeviceName")
    for mapping in instance.get("BlockDeviceMappings", []):
        if mapping.get("DeviceName") == root:
            return mapping["Ebs"]["VolumeId"]
    raise InfraError(f"instance {instance['InstanceId']} has no root volume in its mappings")


def _own_tags(instance: dict, **extra: str) -> dict[str, str]:
    tags = {k: v for k, v in _tags(instance).items() if k.startswith("deploybench:")}
    return {**tags, **extra}


def _snapshot(ec2, instance: dict, kind: str) -> str:
    volume = _root_volume(instance)
    name = _tags(instance).get("Name", instance["InstanceId"])
    snap = ec2.create_snapshot(
        VolumeId=volume,
        Description=f"deploybench {name}: root volume {kind} the agent",
        TagSpecifications=_tag_spec(
            "snapshot", _own_tags(instance, Name=f"{name}-{kind}", **{"deploybench:scan": kind})
        ),
    )
    return snap["SnapshotId"]


def before_agent(ec2, name: str, attempt: Path) -> None:
    instance = _instance(ec2, name)
    _save(
        attempt,
        {
            "instance": instance["InstanceId"],
            "image": instance["ImageId"],
            "before": _snapshot(ec2, instance, "before"),
        },
    )


def at_agent_end(ec2, name: str, attempt: Path) -> str | None:
    """Stop (unless spot), snapshot, start; the machine's address after, when it changed."""
    record = _record(attempt)
    if not record.get("before"):
        return None  # no reference was taken: nothing to compare, and the verdict says so
    instance = _instance(ec2, name)
    iid = instance["InstanceId"]
    frozen = instance.get("InstanceLifecycle") != "spot"
    if frozen:
        ec2.stop_instances(InstanceIds=[iid])
        ec2.get_waiter("instance_stopped").wait(InstanceIds=[iid], WaiterConfig=_WAIT)
    record.update(after=_snapshot(ec2, instance, "after"), frozen=frozen)
    _save(attempt, record)
    if not frozen:
        return None
    ec2.start_instances(InstanceIds=[iid])
    ec2.get_waiter("instance_running").wait(InstanceIds=[iid], WaiterConfig=_WAIT)
    now = _instance(ec2, name)
    address = now.get("PublicIpAddress") or now.get("PrivateIpAddress")
    old = instance.get("PublicIpAddress") or instance.get("PrivateIpAddress")
    return address if address and address != old else None


def ssh_runner(machine: dict[str, Any]):
    """Run the scanner program on the scanner machine over SSH as the harness's own user,
    against its pinned host key; the program travels on stdin."""

    def run(address: str, volumes: list[str]) -> str:
        ssh = [
            "ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
            "-o", f"UserKnownHostsFile={machine['known_hosts_file']}",
            "-o", "ConnectTimeout=10", "-i", machine["private_key_file"],
            f"{harness_login.USER}@{address}",
        ]  # fmt: skip
        deadline = time.monotonic() + 600
        while subprocess.run([*ssh, "true"], capture_output=True).returncode != 0:
            if time.monotonic() > deadline:
                raise InfraError(f"the scanner at {address} did not answer SSH in 10 minutes")
            time.sleep(10)
        remote = "f=$(mktemp) && cat > $f && sudo -n python3 $f " + " ".join(volumes)
        proc = subprocess.run(
            [*ssh, remote], input=scanner_program(), capture_output=True, timeout=3600
        )
        if proc.returncode != 0:
            said = proc.stderr.decode(errors="replace")[-500:]
            raise InfraError(f"the volume scan failed: {said}")
        return proc.stdout.decode(errors="backslashreplace")

    return run


def scan(ec2, attempt: Path, cloud_config: str, run_scanner) -> str | None:
    """Scan the two snapshots on a scanner machine; the raw lines, or None when there is
    nothing to scan. Everything made here is removed, whatever happens."""
    record = _record(attempt)
    if not (record.get("before") and record.get("after")):
        # The agent's end was never reached (an infrastructure error): nothing to compare.
        _remove(ec2, {"volumes": []}, [s for s in (record.get("before"),) if s])
        if record:
            _save(attempt, {**record, "removed": True})
        return None
    started = time.monotonic()
    snaps = [record["before"], record["after"]]
    ec2.get_waiter("snapshot_completed").wait(SnapshotIds=snaps, WaiterConfig=_WAIT)
    machine = ec2.describe_instances(InstanceIds=[record["instance"]])["Reservations"][0][
        "Instances"
    ][0]
    tags = _own_tags(machine, **{"deploybench:scan": "scanner"})
    name = _tags(machine).get("Name", record["instance"])
    made: dict[str, Any] = {"volumes": []}
    try:
        scanner = ec2.run_instances(
            ImageId=record["image"],
            InstanceType=os.environ.get(SCANNER_TYPE_ENV) or DEFAULT_SCANNER_TYPE,
            MinCount=1,
            MaxCount=1,
            KeyName=machine.get("KeyName"),
            SubnetId=machine.get("SubnetId"),
            SecurityGroupIds=[g["GroupId"] for g in machine.get("SecurityGroups", [])],
            UserData=cloud_config,
            MetadataOptions={"HttpTokens": "required", "HttpEndpoint": "enabled"},
            TagSpecifications=_tag_spec("instance", {**tags, "Name": f"{name}-scanner"}),
        )["Instances"][0]
        made["scanner"] = scanner["InstanceId"]
        ec2.get_waiter("instance_running").wait(InstanceIds=[made["scanner"]], WaiterConfig=_WAIT)
        scanner = ec2.describe_instances(InstanceIds=[made["scanner"]])["Reservations"][0][
            "Instances"
        ][0]
        zone = scanner["Placement"]["AvailabilityZone"]
        for snap, device in zip(snaps, DEVICES, strict=True):
            volume = ec2.create_volume(
                SnapshotId=snap,
                AvailabilityZone=zone,
                VolumeType="gp3",
                TagSpecifications=_tag_spec("volume", tags),
            )["VolumeId"]
            made["volumes"].append(volume)
            ec2.get_waiter("volume_available").wait(VolumeIds=[volume], WaiterConfig=_WAIT)
            ec2.attach_volume(VolumeId=volume, InstanceId=made["scanner"], Device=device)
        ec2.get_waiter("volume_in_use").wait(VolumeIds=made["volumes"], WaiterConfig=_WAIT)
        address = scanner.get("PublicIpAddress") or scanner.get("PrivateIpAddress")
        raw = run_scanner(address, made["volumes"])
        record.update(
            scanner=made["scanner"], seconds=round(time.monotonic() - started, 1), lines=len(raw)
        )
        return raw
    finally:
        _remove(ec2, made, snaps)
        _save(attempt, {**record, "removed": True})


def _remove(ec2, made: dict[str, Any], snaps: list[str]) -> None:
    if made.get("scanner"):
        ec2.terminate_instances(InstanceIds=[made["scanner"]])
    for volume in made["volumes"]:
        # Never attached, or gone with the scanner: deleted below all the same.
        with contextlib.suppress(Exception):
            ec2.detach_volume(VolumeId=volume, Force=True)
    if made["volumes"]:
        ec2.get_waiter("volume_available").wait(VolumeIds=made["volumes"], WaiterConfig=_WAIT)
        for volume in made["volumes"]:
            ec2.delete_volume(VolumeId=volume)
    for snap in snaps:
        ec2.delete_snapshot(SnapshotId=snap)
