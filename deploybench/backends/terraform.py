"""The one module that drives Terraform (through python-terraform).

Every deployment is a Terraform root configuration (terraform/envs/<backend>) applied with its
own state file, so deployments never share state and many can be applied at once. What `init`
makes (the data folder: module paths, provider links) depends only on the configuration, so it
is made once per configuration and Terraform version and shared read-only by every deployment
of it, instead of an init per attempt taken in turns under a lock."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from python_terraform import IsFlagged, Terraform
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_fixed

from deploybench.errors import DeployBenchError, InfraError
from deploybench.paths import state_home

# Machines of this workplace carry a filesystem mirror of the providers; with one present,
# `terraform init -plugin-dir` uses it and never reaches a registry.
_PLUGIN_DIR_CANDIDATES = ("/opt/tf-plugins", "/usr/share/terraform/plugins")
APPLY_RETRY_WAIT_S = 3


def terraform_binary() -> str:
    path = shutil.which(os.environ.get("DEPLOYBENCH_TERRAFORM", "terraform"))
    if path is None:
        raise DeployBenchError(
            "terraform not found on PATH: install Terraform >= 1.5 (or set DEPLOYBENCH_TERRAFORM)"
        )
    return path


def plugin_dir() -> str | None:
    explicit = os.environ.get("DEPLOYBENCH_TF_PLUGIN_DIR")
    if explicit:
        return explicit
    return next((d for d in _PLUGIN_DIR_CANDIDATES if Path(d).is_dir()), None)


def plugin_cache_dir() -> Path:
    """Where Terraform keeps the providers it links into each deployment's data dir. (A
    provider mirror cannot serve as the cache itself: with no lock file yet, init refuses to
    install a provider directory onto itself.)"""
    return Path(os.environ.get("TF_PLUGIN_CACHE_DIR") or state_home() / "terraform-plugin-cache")


_LOCAL_MODULE = re.compile(r'^\s*source\s*=\s*"(\.{1,2}/[^"]+)"', re.MULTILINE)


def _config_dirs(root: Path) -> list[Path]:
    """The root and every local module it uses, however deep."""
    seen: list[Path] = []
    todo = [root.resolve()]
    while todo:
        folder = todo.pop()
        if folder in seen or not folder.is_dir():
            continue
        seen.append(folder)
        for tf in folder.glob("*.tf"):
            todo += [(folder / src).resolve() for src in _LOCAL_MODULE.findall(tf.read_text())]
    return seen


def shared_data_dir(env_dir: Path) -> Path:
    """The data folder `init` makes for this configuration: named by a digest of every
    Terraform file of the root and its local modules, the Terraform binary and the provider
    mirror, so a change to any of them gets a fresh init and a stale one is never used."""
    digest = hashlib.sha256()
    for folder in sorted(_config_dirs(Path(env_dir))):
        for tf in sorted([*folder.glob("*.tf"), *folder.glob("*.tf.json")]):
            digest.update(str(tf).encode() + b"\0" + tf.read_bytes() + b"\0")
    binary = Path(terraform_binary())
    stat = binary.stat()
    digest.update(f"{binary}:{stat.st_size}:{stat.st_mtime_ns}:{plugin_dir()}".encode())
    return state_home() / "terraform-data" / f"{Path(env_dir).name}-{digest.hexdigest()[:16]}"


class Deployment:
    """One Terraform root applied into one folder: state, data dir and logs live there."""

    def __init__(self, env_dir: Path, folder: Path):
        self.env_dir = Path(env_dir)
        self.folder = Path(folder)
        self.state_file = self.folder / "terraform.tfstate"
        self.var_file = self.folder / "deployment.tfvars.json"

    def _run(self, cmd: str, *args: str, data_dir: Path | None = None, **kwargs: Any) -> str:
        self.folder.mkdir(parents=True, exist_ok=True)
        tf = Terraform(working_dir=str(self.env_dir), terraform_bin_path=terraform_binary())
        env = {
            **os.environ,
            "TF_DATA_DIR": str(data_dir or shared_data_dir(self.env_dir)),
            "TF_IN_AUTOMATION": "1",
        }
        if not Path(env.get("TF_CLI_CONFIG_FILE", "/")).is_file():
            env["TF_CLI_CONFIG_FILE"] = "/dev/null"
        # A provider (the AWS one is 700 MB) is installed once into a shared cache and linked
        # into each deployment's data dir, instead of copied for every attempt.
        Path(plugin_cache_dir()).mkdir(parents=True, exist_ok=True)
        env.setdefault("TF_PLUGIN_CACHE_DIR", str(plugin_cache_dir()))
        # python-terraform builds the command line; we spawn it ourselves because its cmd()
        # reads os.environ, and each run needs its own environment.
        argv = tf.generate_cmd_string(cmd, *args, **kwargs)
        proc = subprocess.Popen(
            argv,
            cwd=self.env_dir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            out_b, err_b = proc.communicate()
        except BaseException:
            # Ctrl-C reaches Terraform too: it finishes what it is creating and writes the
            # state. Wait for that, so the caller's destroy sees every machine (and holds no
            # state lock against a still-running apply), then let the interrupt go on.
            out_b, err_b = proc.communicate()
            with open(self.folder / "terraform.log", "a") as log:
                log.write(f"$ terraform {cmd} (interrupted)\n{out_b.decode(errors='replace')}")
                log.write(err_b.decode(errors="replace") + "\n")
            raise
        out, err = out_b.decode(errors="replace"), err_b.decode(errors="replace")
        with open(self.folder / "terraform.log", "a") as log:
            log.write(f"$ terraform {cmd}\n{out}{err}\n")
        if proc.returncode != 0:
            lines = [ln.strip("│╷╵ ").strip() for ln in (err or out).splitlines()]
            reason = next((ln for ln in lines if ln.startswith("Error:")), None) or next(
                (ln for ln in reversed(lines) if ln), "no output"
            )
            raise InfraError(
                f"terraform {cmd} failed for {self.env_dir.name}: {reason} "
                f"(full log: {self.folder / 'terraform.log'})"
            )
        return out

    def init(self) -> None:
        """Make the configuration's shared data folder unless it is there. It is made under a
        temporary name and renamed when init succeeded, so a deployment sees a whole one or
        none; its log goes to the deployment that happened to make it."""
        shared = shared_data_dir(self.env_dir)
        if shared.is_dir():
            return
        kwargs: dict[str, Any] = {"input": False, "no_color": IsFlagged}
        pdir = plugin_dir()
        if pdir:
            kwargs["plugin_dir"] = pdir
        # Terraform's plugin cache is not safe for concurrent installs: inits take turns.
        shared.parent.mkdir(parents=True, exist_ok=True)
        with open(state_home() / "terraform-init.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if shared.is_dir():
                return
            making = shared.with_name(f"{shared.name}.making")
            shutil.rmtree(making, ignore_errors=True)
            self._run("init", data_dir=making, **kwargs)
            making.rename(shared)

    def apply(self, variables: dict[str, Any], attempts: int = 1) -> dict[str, Any]:
        """Apply the root; with attempts > 1 a failed apply is run again from its state.

        A cloud API answers now and then with an error that is gone a moment later (eventual
        consistency just after a create, throttling, a dropped connection). The state records
        what the failed apply made, so a second apply finishes the job and replaces what was
        left half-made (tainted)."""
        self.init()
        self.folder.mkdir(parents=True, exist_ok=True)
        self.var_file.write_text(json.dumps(variables, indent=2))

        def note_retry(state) -> None:
            with open(self.folder / "terraform.log", "a") as log:
                log.write(
                    f"# apply {state.attempt_number} of {attempts} failed "
                    f"({state.outcome.exception()}); applying again\n"
                )

        for attempt in Retrying(
            retry=retry_if_exception_type(InfraError),
            stop=stop_after_attempt(attempts),
            wait=wait_fixed(APPLY_RETRY_WAIT_S),
            before_sleep=note_retry,
            reraise=True,
        ):
            with attempt:
                self._change("apply")
        return self.outputs()

    def _change(self, cmd: str, **extra: Any) -> None:
        """apply or destroy, unattended, on this deployment's own state."""
        self._run(
            cmd,
            input=False,
            no_color=IsFlagged,
            auto_approve=IsFlagged,
            state=str(self.state_file),
            var_file=str(self.var_file),
            parallelism=32,
            **extra,
        )

    def outputs(self) -> dict[str, Any]:
        if not self.state_file.exists():
            return {}
        out = self._run("output", json=IsFlagged, state=str(self.state_file), no_color=IsFlagged)
        return {k: v["value"] for k, v in json.loads(out or "{}").items()}

    def destroy(self) -> None:
        if not self.state_file.exists():
            return
        self.init()
        self._change("destroy", refresh=False)
