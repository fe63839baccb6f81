"""The local backend for real: machines made, reached, isolated and destroyed on this host."""

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from deploybench.local.machine import (
    CGROUP_HIERARCHIES,
    NSPAWN_PROPAGATE,
    _descendants,
    cgroup_group,
)
from tests.conftest import REPO, machine_processes, run_cli

pytestmark = [pytest.mark.slow, pytest.mark.privileged]


def ssh(machine: dict, command: str, check=True) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [
            "ssh",
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "BatchMode=yes",
            "-o",
            "LogLevel=ERROR",
            "-i",
            machine["private_key_file"],
            "-p",
            str(machine["port"]),
            f"{machine['user']}@{machine['host']}",
            command,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if check:
        assert proc.returncode == 0, f"{command!r}: {proc.stderr}"
    return proc


def listening_ports() -> set[int]:
    out = subprocess.run(["ss", "-Hltn"], capture_output=True, text=True).stdout
    return {int(m) for m in re.findall(r"127\.0\.0\.1:(\d+)", out)}


def test_two_machines_are_reachable_isolated_and_destroyed(root_host, state_home):
    out = run_cli("provision", "--backend", "local", "--machines", "2", "--json").stdout
    machines = json.loads(out)
    assert len(machines) == 2
    (deployment,) = (state_home / "deployments").iterdir()
    inventory = deployment / "inventory.ini"

    ping = subprocess.run(
        [
            str(Path(os.sys.executable).parent / "ansible"),
            "all",
            "-i",
            str(inventory),
            "-m",
            "ansible.builtin.ping",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert ping.returncode == 0, ping.stdout + ping.stderr
    assert ping.stdout.count("pong") == 2

    first, second = machines.values()
    for m in (first, second):
        assert ssh(m, "sudo -n true").returncode == 0
        os_release = ssh(m, "cat /etc/os-release").stdout
        assert 'VERSION_ID="12"' in os_release and "Debian" in os_release
        assert ssh(m, "python3 -c 'print(6 * 7)'").stdout.strip() == "42"
    # apt works as root inside the confined machine: it reaches the archive over the host network.
    update = ssh(first, "sudo apt-get update", check=False)
    assert update.returncode == 0 and re.search(r"^(Get|Hit):", update.stdout, re.M), (
        update.stdout + update.stderr
    )

    # Files: written on one machine, seen neither on the other nor on the host.
    marker = "/tmp/deploybench-isolation-marker"
    home_marker = "/home/vm/isolation-marker"
    ssh(first, f"echo one > {marker} && echo one > {home_marker} && sudo touch /etc/first-only")
    assert ssh(first, f"cat {marker}").stdout.strip() == "one"
    assert (
        ssh(
            second,
            f"test -e {marker} || test -e {home_marker} || test -e /etc/first-only",
            check=False,
        ).returncode
        != 0
    )
    assert not Path(marker).exists() and not Path("/etc/first-only").exists()

    # Processes: a sleeper in one machine is invisible to the other; the host's are invisible.
    ssh(first, "nohup sleep 1234 >/dev/null 2>&1 &")
    assert "sleep 1234" in ssh(first, "ps -eo args").stdout
    assert "sleep 1234" not in ssh(second, "ps -eo args").stdout
    host_pids = ssh(second, "ps -eo pid= | wc -l").stdout.strip()
    assert int(host_pids) < 20, "a machine sees more processes than its own"
    assert "pytest" not in ssh(second, "ps -eo args").stdout
    assert ssh(first, "hostname").stdout.strip() != ssh(second, "hostname").stdout.strip()
    # sshd is the machine's PID 1: root killing everything it can leaves the machine reachable.
    ssh(first, "sudo kill -9 -1; sudo pkill -9 sshd", check=False)
    assert ssh(first, "echo still here").stdout.strip() == "still here"
    # The controller's checkout is not reachable from inside.
    assert ssh(first, f"test -e {REPO}/pyproject.toml", check=False).returncode != 0

    ports = {m["port"] for m in machines.values()}
    assert ports <= listening_ports()
    assert machine_processes(state_home)

    run_cli("destroy")
    assert not machine_processes(state_home)
    assert not ports & listening_ports()
    mounts = Path("/proc/mounts").read_text()
    assert str(state_home) not in mounts
    # Nor a cgroup or nspawn's propagation folder.
    assert not [h for h in CGROUP_HIERARCHIES if (h / cgroup_group(state_home)).exists()]
    assert not [n for n in machines if (NSPAWN_PROPAGATE / n).exists()]
    assert "nothing to destroy" in run_cli("destroy").stdout  # twice is fine

    # A machine made afterwards holds nothing the earlier ones installed or wrote.
    again = json.loads(run_cli("provision", "--machines", "1", "--json").stdout)
    (m,) = again.values()
    assert ssh(m, f"test -e {home_marker} || test -e /etc/first-only", check=False).returncode != 0
    run_cli("destroy")


def test_destroy_all_cleans_what_a_crashed_run_left(root_host, state_home):
    machines = json.loads(run_cli("provision", "--machines", "1", "--json").stdout)
    (m,) = machines.values()
    # A crash: the deployment record is lost, the machine keeps running.
    for folder in (state_home / "deployments").iterdir():
        subprocess.run(["rm", "-rf", str(folder)], check=True)
    assert machine_processes(state_home)
    assert "no machines" in run_cli("machines").stdout
    out = run_cli("destroy", "--all").stdout
    assert "ended leftover local machine" in out
    assert not machine_processes(state_home)
    assert m["port"] not in listening_ports()


def test_debian13_image_offers_python_312_or_newer(root_host, state_home):
    machines = json.loads(run_cli("provision", "--image", "debian13", "--json").stdout)
    (m,) = machines.values()
    version = ssh(m, "python3 -c 'import sys; print(sys.version_info[:2])'").stdout
    major, minor = map(int, re.findall(r"\d+", version)[:2])
    assert (major, minor) >= (3, 12)
    assert 'VERSION_ID="13"' in ssh(m, "cat /etc/os-release").stdout
    run_cli("destroy")


def test_a_failed_provision_keeps_its_terraform_log_where_the_error_points(
    root_host, state_home, monkeypatch
):
    """A machine that cannot come up (its port is taken by the time it starts) fails the
    provision, which destroys what was made and drops the deployment's folder: the Terraform
    log the error names must outlive that folder."""
    import socket

    from deploybench.backends import MachineRequest, deployments
    from deploybench.backends import local as local_backend
    from deploybench.errors import DeployBenchError

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    monkeypatch.setattr(local_backend, "free_ports", lambda count: [port] * count)
    try:
        with pytest.raises(DeployBenchError) as failed:
            deployments.provision("local", MachineRequest(run_id="pfail01"))
    finally:
        taken.close()
    message = str(failed.value)
    kept = state_home / "failed-deployments" / "pfail01"
    assert f"evidence kept in {kept}" in message
    assert str(kept / "terraform.log") in message
    assert str(state_home / "deployments") not in message
    log = (kept / "terraform.log").read_text()
    assert f"port {port} is already in use" in log
    assert "$ terraform destroy" in log
    assert not (state_home / "deployments" / "pfail01").exists()
    assert "no machines" in run_cli("machines").stdout
    assert not machine_processes(state_home)


def test_the_walk_for_the_containers_pid_1_survives_processes_that_exit_under_it():
    """Starting a machine walks nspawn's process tree while the start-up chain's short-lived
    processes come and go (a provision once failed on a task folder gone between two reads).
    A shell that starts and ends a child without pause is the same race, thousands of times."""
    churn = subprocess.Popen(["sh", "-c", "while :; do /bin/true; done"])
    try:
        walks, deadline = 0, time.monotonic() + 3
        while time.monotonic() < deadline:
            _descendants(churn.pid)
            walks += 1
        assert walks > 1000
    finally:
        churn.kill()
        churn.wait()
