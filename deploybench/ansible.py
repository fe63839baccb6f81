"""The one module that runs Ansible: every playbook goes through ansible-runner here."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ansible_runner

from deploybench.paths import REPO_ROOT

# Cloud credentials the controller holds for Terraform and boto3. Ansible only needs SSH, and
# ansible-runner copies the whole environment into artifacts/<id>/command inside the attempt
# folder: blank them so no credential value lands there (nor reaches a play).
_CLOUD_CREDENTIALS = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "GOOGLE_OAUTH_ACCESS_TOKEN",
    "CLOUDSDK_AUTH_ACCESS_TOKEN",
)


@dataclass
class PlaybookResult:
    status: str  # successful | failed | timeout | canceled
    rc: int
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def unreachable(self) -> bool:
        return bool(self.stats.get("dark"))

    @property
    def ok(self) -> bool:
        return self.status == "successful" and self.rc == 0


def run_playbook(
    playbook: Path,
    inventory: dict[str, Any] | str,
    extravars: dict[str, Any],
    private_dir: Path,
    on_event: Callable[[dict], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    timeout: int | None = None,
) -> PlaybookResult:
    """Run `playbook` with ansible-runner; its artifacts (events, stdout) land in private_dir."""
    private_dir.mkdir(parents=True, exist_ok=True)
    bindir = str(Path(sys.executable).parent)
    env = {
        "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"),
        "ANSIBLE_ROLES_PATH": f"{REPO_ROOT / 'roles'}:{REPO_ROOT / 'reference_setups'}",
        "PATH": f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "ANSIBLE_NOCOLOR": "1",
        **{name: "" for name in _CLOUD_CREDENTIALS if name in os.environ},
    }
    result = ansible_runner.run(
        private_data_dir=str(private_dir),
        playbook=str(playbook),
        inventory=inventory,
        extravars=extravars,
        envvars=env,
        quiet=True,
        event_handler=(lambda e: (on_event(e), True)[1]) if on_event else None,
        cancel_callback=cancel,
        timeout=timeout,
        project_dir=str(REPO_ROOT),
        suppress_env_files=True,
    )
    # ansible-runner keeps a copy of the extra vars and inventory under env/: not evidence.
    shutil.rmtree(private_dir / "env", ignore_errors=True)
    shutil.rmtree(private_dir / "inventory", ignore_errors=True)
    # ansible-runner also writes the controller's whole environment (API keys among it) into
    # artifacts/<id>/command: keep the command line, drop the environment.
    for command_file in private_dir.glob("artifacts/*/command"):
        try:
            recorded = json.loads(command_file.read_text())
            recorded.pop("env", None)
            command_file.write_text(json.dumps(recorded))
        except (OSError, ValueError, AttributeError):
            command_file.unlink(missing_ok=True)
    return PlaybookResult(
        result.status, result.rc if result.rc is not None else -1, result.stats or {}
    )
