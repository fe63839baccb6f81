"""The harness's own way into a machine, for the stages that must log in after the agent (every
cloud machine; a local machine only when DEPLOYBENCH_LOCAL_POST_AGENT=machine).

The agent is root on its machine, so nothing on it is beyond its reach; what this buys is that
the usual doors of a login are not the agent's by default: the harness logs in as a user of its
own whose only key lives in a root-owned file outside every home, whose sshd settings refuse
user rc files and forwarding (user-level environment files are refused by sshd's default),
whose shell is /bin/sh run without a login (dash reads no start-up file then), and whose machine
proves itself with a host key the harness made. What the agent can still change (sshd's or
PAM's configuration, sudo, the loader) is compared with digests taken before the agent
(doors.py) and, on AWS, read from a snapshot of the stopped machine (backends/volume_scan.py).
docs/verification.md says what this guarantees and what it does not."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

USER = "deploybench-harness"
HOME = "/var/lib/deploybench-harness"
KEYS_DIR = "/etc/deploybench/authorized_keys"
KEYS_FILE = f"{KEYS_DIR}/{USER}"
SSHD_DROPIN = "/etc/ssh/sshd_config.d/00-deploybench-harness.conf"
SUDOERS = "/etc/sudoers.d/00-deploybench-harness"
HOST_KEY = "host_ed25519"

# A terminal stays allowed: Ansible's raw steps ask for one, so that a command cut off with its
# connection is hung up. A Match block in a file of sshd_config.d ends with that file (checked
# with `sshd -T` on the image: tests/test_harness_login.py), so the other users keep theirs.
_SSHD = f"""# The harness's login (deploybench); the agent's users are not affected.
Match User {USER}
    AuthorizedKeysFile {KEYS_DIR}/%u
    PermitUserRC no
    AllowAgentForwarding no
    AllowTcpForwarding no
    X11Forwarding no
"""


def sshd_dropin() -> str:
    return _SSHD


def sudoers() -> str:
    return f"{USER} ALL=(ALL) NOPASSWD:ALL\n"


def files(login_key: str) -> list[tuple[str, str, str]]:
    """(path, content, octal mode) of every file the harness's login needs, all root's."""
    return [
        (KEYS_FILE, login_key.strip() + "\n", "0644"),
        (SSHD_DROPIN, sshd_dropin(), "0644"),
        (SUDOERS, sudoers(), "0440"),
    ]


def ensure_host_key(folder: Path) -> tuple[str, str]:
    """The deployment's own ed25519 host key (private text, public line), made once in its
    folder: its machines boot with it, so the harness knows it before the first connection."""
    key = folder / HOST_KEY
    if not key.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "deploybench-host", "-f", key],
            check=True,
            stdin=subprocess.DEVNULL,
        )
    key.chmod(0o600)
    public = " ".join(Path(f"{key}.pub").read_text().split()[:2])
    return key.read_text(), public


def write_known_hosts(path: Path, public: str) -> Path:
    """A known_hosts file that accepts exactly the deployment's host key, at any address (a
    stopped and restarted cloud machine may come back at a new one)."""
    path.write_text(f"* {public}\n")
    path.chmod(0o644)
    return path


def cloud_config(login_key: str, host_private: str, host_public: str) -> str:
    """cloud-init user data for a cloud machine: the harness's user and files, and the
    deployment's host key in place of keys made on the first boot."""
    config = {
        "ssh_deletekeys": True,
        "ssh_genkeytypes": [],
        "ssh_keys": {"ed25519_private": host_private, "ed25519_public": host_public},
        "users": [
            "default",
            {
                "name": USER,
                "homedir": HOME,
                "shell": "/bin/sh",
                "lock_passwd": True,
            },
        ],
        "write_files": [
            {"path": path, "content": content, "owner": "root:root", "permissions": mode}
            for path, content, mode in files(login_key)
        ],
    }
    return "#cloud-config\n" + yaml.safe_dump(config, sort_keys=False, width=4096)
