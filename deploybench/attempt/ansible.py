"""The one module that runs Ansible: every playbook goes through ansible-runner here."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ansible_runner
import ansible_runner.interface
import yaml

from deploybench import catalog
from deploybench.paths import REPO_ROOT

# The only variables of the controller's environment a playbook run sees: what Ansible, SSH and
# the evidence helpers need, never the rest (API keys, cloud credentials). ansible-runner
# writes the environment it is given into artifacts/<id>/command, inside the attempt folder.
_PASSED_ENV = ("HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TERM")
_PASSED_PREFIXES = ("DEPLOYBENCH_",)


class Unsafe(str):
    """A string Ansible must never template (agent spec text): written as `!unsafe`."""


def _unsafe_representer(dumper: yaml.SafeDumper, value: Unsafe) -> yaml.Node:
    # Ansible reads an empty `!unsafe ''` as null; an empty string has nothing to template.
    if not value:
        return dumper.represent_str("")
    return dumper.represent_scalar("!unsafe", str(value))


class _VarsDumper(yaml.SafeDumper):
    pass


_VarsDumper.add_representer(Unsafe, _unsafe_representer)


def controller_env(names: Iterable[str] = ()) -> dict[str, str]:
    """The environment of a playbook run: the few variables Ansible needs and `names`."""
    keep = set(_PASSED_ENV) | set(names)
    return {k: v for k, v in os.environ.items() if k in keep or k.startswith(_PASSED_PREFIXES)}


def _strip_env(private_dir: Path) -> None:
    """ansible-runner records the command's environment in artifacts/<id>/command: keep the
    command line, drop the environment."""
    for command_file in private_dir.glob("artifacts/*/command"):
        try:
            recorded = json.loads(command_file.read_text())
            recorded.pop("env", None)
            command_file.write_text(json.dumps(recorded))
        except (OSError, ValueError, AttributeError):
            command_file.unlink(missing_ok=True)


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
    pass_env: Iterable[str] = (),
    env_values: dict[str, str] | None = None,
) -> PlaybookResult:
    """Run `playbook` with ansible-runner; its artifacts (events, stdout) land in private_dir.

    Extra vars go in a file of private_dir (0600, removed after the run), so an `Unsafe` value
    reaches Ansible tagged `!unsafe` and is never templated. The run's environment holds only
    what controller_env keeps plus `pass_env`, the variables the playbook reads (API keys an
    agent is given). `env_values` sets variables to values of the harness's (the attempt's
    gateway key under the name the agent's spec reads its key from)."""
    private_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    bindir = str(Path(sys.executable).parent)
    env = {
        **controller_env(pass_env),
        **(env_values or {}),
        "ANSIBLE_CONFIG": str(REPO_ROOT / "ansible.cfg"),
        "ANSIBLE_ROLES_PATH": ":".join(str(p) for p in catalog.ROLES_PATH),
        "PATH": f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "ANSIBLE_NOCOLOR": "1",
        # The playbook's controller-side helpers (python -m deploybench.attempt.sidedoor ...) are
        # this very package, wherever it was imported from.
        "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
    }
    vars_file = private_dir / "extravars.yml"
    fd = os.open(vars_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        yaml.dump(extravars, out, Dumper=_VarsDumper)
    started = threading.Event()

    def handle(event: dict) -> bool:
        # The first event comes from the running playbook: the environment it was started
        # with is in its memory now and need not stay in the command file.
        if not started.is_set():
            started.set()
            _strip_env(private_dir)
        if on_event:
            on_event(event)
        return True

    runner = ansible_runner.interface.init_runner(
        private_data_dir=str(private_dir),
        playbook=str(playbook),
        inventory=inventory,
        cmdline=f"-e @{shlex.quote(str(vars_file))}",
        envvars=env,
        quiet=True,
        event_handler=handle,
        cancel_callback=cancel,
        timeout=timeout,
        project_dir=str(REPO_ROOT),
        suppress_env_files=True,
    )
    # ansible-runner seeds the run's environment with the controller's whole one: keep only
    # what it added itself (its callback plugin) and the variables built above.
    runner.config.env = {
        k: v for k, v in runner.config.env.items() if k in env or os.environ.get(k) != v
    }
    try:
        runner.run()
    finally:
        vars_file.unlink(missing_ok=True)
        # ansible-runner keeps a copy of the inventory under inventory/: not evidence.
        shutil.rmtree(private_dir / "env", ignore_errors=True)
        shutil.rmtree(private_dir / "inventory", ignore_errors=True)
        _strip_env(private_dir)
    return PlaybookResult(
        runner.status, runner.rc if runner.rc is not None else -1, runner.stats or {}
    )
