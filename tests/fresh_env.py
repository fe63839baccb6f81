"""What the agent's first command sees against what a login shell of `vm` sees on a fresh
machine (the issue's rule: the agent's commands run in the machine's own environment, not the
scaffold's). ENV_COMMAND is the agent's first command in the scaffold tests; fresh_login() runs
it on a machine made for the purpose, through `vm`'s login shell."""

import json
import shlex
import subprocess

from tests.conftest import run_cli

# The variables that decide which interpreters, libraries and packages a command finds.
DECIDING = ("PATH", "PYTHONPATH", "VIRTUAL_ENV", "NODE_PATH", "LD_LIBRARY_PATH", "PYTHONHOME")
# Only the deciding variables of `env | sort`: OpenHands' shell hands back nothing for a whole
# listing of its environment (its reading of the terminal pane gives up on it), and the other
# variables (its prompt markers, the session's) are the scaffold's to set.
ENV_COMMAND = (
    "command -v python3 pip3 node; python3 -c 'import sys; print(sys.prefix)'; "
    f"env | sort | grep -E '^({'|'.join(DECIDING)})='"
)


def seen(output: str) -> dict:
    """The facts of ENV_COMMAND's output that must equal a fresh login's: where python3, pip3
    and node resolve, python3's sys.prefix, and the deciding variables (None when unset)."""
    lines = output.splitlines()
    found = {"commands": [ln for ln in lines if ln.startswith("/") and "=" not in ln]}
    env = dict(ln.split("=", 1) for ln in lines if "=" in ln and ln.split("=", 1)[0].isidentifier())
    found |= {name: env.get(name) for name in DECIDING}
    return found


def fresh_login(image: str) -> str:
    """ENV_COMMAND's output in a login shell of `vm` on a fresh local machine of IMAGE."""
    machines = json.loads(run_cli("provision", "--image", image, "--json").stdout)
    try:
        [machine] = machines.values()
        command = inventory_ssh(machine)
        done = subprocess.run(
            [*command, f"bash -lc {shlex.quote(ENV_COMMAND)}"],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        return done.stdout
    finally:
        run_cli("destroy")


def inventory_ssh(machine: dict) -> list[str]:
    from deploybench.backends import inventory

    ssh, *rest = shlex.split(inventory.ssh_command(machine))
    return [ssh, "-o", "BatchMode=yes", *rest]
