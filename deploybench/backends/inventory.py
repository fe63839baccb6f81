"""The Ansible inventory, rendered from the `machines` output (contract 1), never hand-written:
as an INI file for `ansible-playbook -i`, and as data for ansible-runner."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from jinja2 import Environment, StrictUndefined

from deploybench.verify import harness_login

_INI = Environment(undefined=StrictUndefined, keep_trailing_newline=True).from_string(
    """# Rendered by deploybench from the Terraform `machines` output; do not edit.
[machines]
{% for name, m in machines.items() -%}
{{ name }} ansible_host={{ m.host }} ansible_port={{ m.port }} ansible_user={{ m.user }} \
ansible_ssh_private_key_file={{ m.private_key_file }} deploybench_backend={{ m.backend }} \
deploybench_image={{ m.image }} deploybench_gpu_count={{ m.gpu_count }} \
deploybench_harness_user={{ harness_user }} \
ansible_ssh_common_args="{{ opts(m) }}"
{% endfor %}
"""
)


def ssh_options(machine: dict[str, Any], reverse_ports: list[int] | tuple[int, ...] = ()) -> str:
    """Host key checking: against the machine's pinned key where its backend knows it (every
    backend's own machines), else none (a machine made outside deploybench). reverse_ports:
    ports of the controller's loopback (the run's model gateway) that the machine reaches at
    the same port of its own loopback, forwarded back over the harness's SSH connection
    (`-R`), so no port of the controller is ever open to the machine's network."""
    known = machine.get("known_hosts_file")
    if known:
        options = f"-o StrictHostKeyChecking=yes -o UserKnownHostsFile={known}"
    else:
        options = "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
    for port in reverse_ports:
        options += f" -R 127.0.0.1:{int(port)}:127.0.0.1:{int(port)}"
    return options


def host_vars(machine: dict[str, Any], reverse_ports: list[int] | tuple[int, ...] = ()) -> dict:
    return {
        "ansible_host": machine["host"],
        "ansible_port": machine["port"],
        "ansible_user": machine["user"],
        "ansible_ssh_private_key_file": machine["private_key_file"],
        "ansible_ssh_common_args": ssh_options(machine, reverse_ports),
        "deploybench_backend": machine["backend"],
        "deploybench_image": machine["image"],
        "deploybench_gpu_count": machine["gpu_count"],
        # Who the stages after the agent log in as, where they log in (harness_login.py).
        "deploybench_harness_user": harness_login.USER,
    }


def as_data(
    machines: dict[str, dict[str, Any]], reverse_ports: list[int] | tuple[int, ...] = ()
) -> dict[str, Any]:
    """The inventory as ansible-runner takes it (reverse_ports: see ssh_options)."""
    return {
        "all": {
            "children": {
                "machines": {
                    "hosts": {name: host_vars(m, reverse_ports) for name, m in machines.items()}
                }
            }
        }
    }


def write(machines: dict[str, dict[str, Any]], path: Path) -> Path:
    path.write_text(
        _INI.render(machines=machines, opts=ssh_options, harness_user=harness_login.USER)
    )
    return path


def ssh_command(machine: dict[str, Any]) -> str:
    return (
        f"ssh {ssh_options(machine)} -i {machine['private_key_file']} -p {machine['port']} "
        f"{machine['user']}@{machine['host']}"
    )


def answers_ssh(machine: dict[str, Any], timeout: float = 10.0) -> bool:
    """Whether the machine's sshd still answers: a TCP connection to its address and port that
    sends an SSH banner. Says the machine is alive, whatever becomes of a login to it."""
    try:
        with socket.create_connection((machine["host"], int(machine["port"])), timeout) as sock:
            sock.settimeout(timeout)
            return sock.recv(64).startswith(b"SSH-")
    except OSError:
        return False
