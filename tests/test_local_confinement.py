"""An agent with root in a local machine tries to leave it: every attempt finds nothing and
changes nothing. The probe runs inside the machine as root (via sudo) with the tricks that
work on a chroot with full capabilities (chroot breakout, mknod of the host's disk and mount
it, /proc of the host, remounting /sys), then the host checks that nothing changed."""

import json
import os
import re
import shlex
import subprocess
import textwrap
from pathlib import Path

import pytest

from deploybench.local import images
from tests.conftest import REPO, machine_processes, run_cli
from tests.test_local_backend import listening_ports, ssh

pytestmark = [pytest.mark.slow, pytest.mark.privileged]

SECRET = "db-controller-secret-6c1f0e"

# Runs as root inside the machine: `python3 - CONFIG_JSON`. Prints one JSON object whose lists
# name what it reached; each must stay empty.
PROBE = textwrap.dedent(
    r"""
    import glob, json, os, stat, subprocess, sys
    cfg = json.loads(sys.argv[1])
    out = {"read": [], "wrote": [], "leaked": [], "keys": [], "logins": [], "devices": []}

    def look(prefix, how):
        for path in cfg["read"]:
            full = prefix + path
            try:
                if os.path.isdir(full):
                    names = os.listdir(full)
                    out["read"].append(f"{how}: {full} ({len(names)} entries)")
                else:
                    with open(full, errors="replace") as fh:
                        text = fh.read()
                    out["read"].append(f"{how}: {full}")
                    if "PRIVATE KEY" in text:
                        out["keys"].append(text)
            except OSError:
                pass
        for path in cfg["write"]:
            try:
                with open(prefix + path, "w") as fh:
                    fh.write("agent was here\n")
                out["wrote"].append(f"{how}: {prefix + path}")
            except OSError:
                pass
        for environ in glob.glob(prefix + "/proc/[0-9]*/environ"):
            try:
                with open(environ, "rb") as fh:
                    if cfg["secret"][::-1].encode() in fh.read():
                        out["leaked"].append(f"{how}: {environ}")
            except OSError:
                pass

    # 1. Straight paths, and every process's environment this machine can see.
    look("", "direct")

    # 2. Leave a chroot: chroot into a subfolder, then walk up past the old root.
    pid = os.fork()
    if pid == 0:
        try:
            os.makedirs("/tmp/.brk", exist_ok=True)
            os.chroot("/tmp/.brk")
            for _ in range(64):
                os.chdir("..")
            os.chroot(".")
            look("", "chroot-breakout")
        except OSError:
            pass
        print(json.dumps(out), flush=True)
        os._exit(0)
    os.waitpid(pid, 0)

    # 3. Make a device node of the host's disk and mount it.
    major, minor = cfg["disk"]
    try:
        os.mknod("/tmp/.disk", stat.S_IFBLK | 0o600, os.makedev(major, minor))
        out["devices"].append(f"mknod {major}:{minor}")
    except OSError:
        pass
    os.makedirs("/mnt/.host", exist_ok=True)
    for source in ("/tmp/.disk", "/dev/vda", "/dev/sda", "/dev/nvme0n1"):
        if subprocess.run(["mount", source, "/mnt/.host"], capture_output=True).returncode == 0:
            out["devices"].append(f"mounted {source}")
            look("/mnt/.host", f"mount {source}")
            subprocess.run(["umount", "/mnt/.host"], capture_output=True)

    # 4. Kernel settings: /proc/sys and /sys, also after trying to remount them writable.
    for remount in ([], ["mount", "-o", "remount,rw", "/proc/sys"],
                    ["mount", "-o", "remount,rw", "/sys"]):
        if remount:
            subprocess.run(remount, capture_output=True)
        for path, value in cfg["kernel_writes"]:
            try:
                with open(path, "w") as fh:
                    fh.write(value)
                out["wrote"].append(path)
            except OSError:
                pass

    # 5. Log in as root (or vm) to the other machine with any private key found.
    for i, key in enumerate(out["keys"]):
        keyfile = f"/tmp/.key{i}"
        with open(keyfile, "w") as fh:
            fh.write(key if key.endswith("\n") else key + "\n")
        os.chmod(keyfile, 0o600)
        for user in ("root", "vm"):
            login = subprocess.run(
                ["ssh", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                 "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "-i", keyfile,
                 "-p", str(cfg["other_port"]), f"{user}@127.0.0.1", "sudo -n id -u"],
                capture_output=True, text=True)
            if login.returncode == 0:
                out["logins"].append(f"{user}@other: {login.stdout.strip()}")
    out["keys"] = [k.splitlines()[0] for k in out["keys"]]
    print(json.dumps(out))
    """
)


def probe(machine: dict, config: dict) -> list[dict]:
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
            f"sudo -n python3 - {shlex.quote(json.dumps(config))}",
        ],
        input=PROBE,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def test_root_in_a_machine_reaches_nothing_of_the_host_nor_the_other_machine(
    root_host, state_home, monkeypatch
):
    # The controller holds a secret in its environment that no machine was given.
    monkeypatch.setenv("DEPLOYBENCH_TEST_SECRET", SECRET)
    machines = json.loads(run_cli("provision", "--machines", "2", "--json").stdout)
    agent, other = machines.values()
    agent_dir = Path(agent["private_key_file"]).parent
    other_dir = Path(other["private_key_file"]).parent
    lower = images.image_path("debian12")
    marker = "agent-escape-marker"
    host_writes = [
        f"/tmp/{marker}",
        f"{REPO}/{marker}",
        f"{REPO}/verifiers/{marker}",
        f"{state_home}/{marker}",
        f"{lower}/{marker}",
        f"{lower}/usr/bin/{marker}",
        f"{other_dir}/layer/upper/{marker}",
        f"{other_dir}/layer/upper/home/vm/.ssh/authorized_keys",
    ]
    kernel = {
        "/proc/sys/kernel/core_pattern": "|/tmp/agent-core-handler",
        "/proc/sys/kernel/modprobe": "/tmp/agent-modprobe",
        "/sys/kernel/uevent_helper": "/tmp/agent-uevent",
    }
    before = {path: Path(path).read_text() for path in kernel if Path(path).exists()}
    other_keys = (other_dir / "layer/upper/home/vm/.ssh/authorized_keys").read_text()
    disk = os.stat("/").st_dev
    config = {
        "read": [
            f"{REPO}/pyproject.toml",
            f"{REPO}/verifiers",
            f"{REPO}/reference_setups",
            str(state_home),
            str(state_home / "deployments"),
            str(images.images_dir()),
            str(lower),
            str(other_dir / "id_ed25519"),
            str(other_dir / "layer/upper"),
            str(agent_dir / "id_ed25519"),
            "/var/lib/deploybench",
        ],
        "write": host_writes,
        # Reversed: sudo puts its command line (this config) into its own environment.
        "secret": SECRET[::-1],
        "disk": [os.major(disk), os.minor(disk)],
        "kernel_writes": [[path, value] for path, value in kernel.items()],
        "other_port": other["port"],
    }
    try:
        reports = probe(agent, config)
        assert reports, "the probe printed nothing"
        for report in reports:
            # Its own /tmp is the machine's; the host's /tmp is checked from the host below.
            report["wrote"] = [w for w in report["wrote"] if not w.endswith(f": /tmp/{marker}")]
            assert report == {
                "read": [],
                "wrote": [],
                "leaked": [],
                "keys": [],
                "logins": [],
                "devices": [],
            }
        # Without a key: no login as root to the other machine (nor as vm).
        for user in ("root", "vm"):
            login = ssh(
                agent,
                f"ssh -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes"
                f" -p {other['port']} {user}@127.0.0.1 true",
                check=False,
            )
            assert login.returncode != 0
        # Processes: only the machine's own (the probe found no environment with the secret).
        inside = ssh(agent, "sudo ps -eo pid=,args=").stdout
        assert "pytest" not in inside and "terraform" not in inside and "nspawn" not in inside
    finally:
        # Whatever got out is undone, so a failing run (the chroot machine) leaves no trace.
        escaped = [p for p in host_writes[:-1] if Path(p).exists()]
        for path in escaped:
            Path(path).unlink()
        changed = {p: Path(p).read_text() for p in before if Path(p).read_text() != before[p]}
        for path, text in before.items():
            if path in changed:
                Path(path).write_text(text.strip() or "\n")
    # Checked from the host: nothing of the host, the image or the other machine changed.
    assert escaped == [] and changed == {}
    assert (other_dir / "layer/upper/home/vm/.ssh/authorized_keys").read_text() == other_keys
    assert ssh(other, "ls /home/vm").stdout.strip() == ""


def test_root_inside_is_an_unprivileged_user_on_the_host(root_host, state_home):
    machines = json.loads(run_cli("provision", "--machines", "2", "--json").stdout)
    first, second = machines.values()
    # A uid range of its own: root inside maps to a host uid far from any host account.
    uid_map = ssh(first, "cat /proc/self/uid_map").stdout.split()
    assert uid_map[:2] == ["0", str(images.UID_BASE)], uid_map
    ssh(first, "sudo nohup sleep 4321 >/dev/null 2>&1 &")
    owners = subprocess.run(
        ["ps", "-eo", "uid=,args="], capture_output=True, text=True
    ).stdout.splitlines()
    sleeper = {line.split()[0] for line in owners if "sleep 4321" in line}
    assert sleeper == {str(images.UID_BASE)}, sleeper
    # Capabilities inside are the user namespace's: no device nodes, no host mounts, no modules.
    for attempt in (
        "sudo mknod /root/null2 c 1 3",
        "sudo mount -t ext4 /dev/vda /mnt",
        "sudo mount -o remount,rw /sys",
        "sudo sh -c 'echo 1 > /proc/sys/vm/drop_caches'",
    ):
        assert ssh(first, attempt, check=False).returncode != 0, attempt
    # The machine's root is pivoted (not a chroot): / is the overlay, the mount tree's root.
    mountinfo = ssh(first, "cat /proc/self/mountinfo").stdout.splitlines()
    root_line = next(line for line in mountinfo if line.split()[4] == "/")
    assert " - overlay " in root_line and "nodev" in root_line.split()[5]
    # /dev holds only what a machine needs; every other writable mount is nodev.
    devices = set(ssh(first, "ls /dev").stdout.split())
    assert devices <= {
        *("null", "zero", "full", "random", "urandom", "tty", "console", "ptmx"),
        *("pts", "shm", "mqueue", "fd", "stdin", "stdout", "stderr", "char", "net"),
    }, devices
    assert ssh(first, "ls /dev/net").stdout.split() == ["tun"]
    # Mounts that nspawn covered with later ones cannot be reached: look at what each mount
    # point shows now (findmnt -T gives the topmost mount of a path).
    visible = ssh(
        first,
        "for p in $(awk '{print $5}' /proc/self/mountinfo | sort -u); do "
        'echo "$p $(findmnt -no VFS-OPTIONS -T "$p" | head -1)"; done',
    ).stdout.splitlines()
    assert len(visible) > 10, visible
    for line in visible:
        point, options = line.split()[0], line.split()[1].split(",")
        if "rw" in options and not (point == "/dev" or point.startswith("/dev/pts")):
            assert "nodev" in options, line
        if point in ("/proc/sys", "/sys"):
            assert "ro" in options, line
    # The two machines share a uid range but nothing else: no file, no process, no cgroup.
    assert "sleep 4321" not in ssh(second, "sudo ps -eo args").stdout
    assert ssh(second, "sudo ls /sys/fs/cgroup/systemd").stdout.split().count("payload") == 0
    ports = {m["port"] for m in machines.values()}
    run_cli("destroy")
    assert not machine_processes(state_home)
    after = subprocess.run(["ps", "-eo", "args="], capture_output=True, text=True).stdout
    assert "sleep 4321" not in after
    assert not ports & listening_ports()
    assert not re.search(re.escape(str(state_home)), Path("/proc/mounts").read_text())
