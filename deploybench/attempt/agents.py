"""Agents: the built-in controls and command-line agents from a template.

Built-in, no LLM: `reference` (the task's reference setup: the oracle), `nop` (does nothing),
`overclaim` (a shallow check, then a RUNBOOK that claims SUCCESS). `command` runs any CLI
agent from a command template; its native log is converted into trajectory.jsonl (contract 5)
by the converter named in its spec."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from deploybench import runfolder, trajectories
from deploybench.attempt import prefix, scaffold_cache
from deploybench.attempt.ansible import Unsafe
from deploybench.catalog import yamlfile
from deploybench.errors import DeployBenchError
from deploybench.paths import REPO_ROOT

SCHEMA_FILE = REPO_ROOT / "agents" / "schema.json"


class Kind:
    """What an agent's kind decides, in one place: the role that runs it (roles/agent_<name>),
    what it needs, what its attempt leaves. Callers ask the kind (AgentSpec.behaviour) and never
    compare kinds (tests/test_seams.py)."""

    name = ""
    # Memory (GiB) and CPUs a machine gets beside the task's, for the agent's own scaffold.
    scaffold_memory_gb = 0
    scaffold_cpus = 0
    # Whether the task must have a reference setup for the agent to run.
    needs_reference_setup = False
    # Whether the agent calls a model provider named by its spec (base_url): those calls go
    # through the run's model gateway (deploybench/run/gateway.py).
    calls_a_model = False

    def problems(self, spec: AgentSpec) -> list[str]:
        """What makes the spec unrunnable, one line each."""
        return []

    def extravars(self, spec: AgentSpec) -> dict[str, Any]:
        """The playbook's variables for the agent (its `agent` picks the role)."""
        return {"agent": spec.name}

    def write_trajectory(
        self, spec: AgentSpec, attempt: Path, events: list[dict[str, Any]], task_id: str
    ) -> None:
        """Leave the attempt's trajectory.jsonl (contract 5) once the attempt was judged."""
        return None


class _Reference(Kind):
    name = "reference"
    needs_reference_setup = True

    def write_trajectory(self, spec, attempt, events, task_id):
        # The reference setup's steps are the Ansible tasks of its role.
        trajectories.write(
            trajectories.from_ansible_events(events, task_id), runfolder.trajectory_path(attempt)
        )
        runfolder.write_prefix(attempt, prefix.summarize(events, task_id))


class _Scripted(Kind):
    name = "scripted"


class _Command(Kind):
    name = "command"
    calls_a_model = True
    # The scaffold (its Python, its runtime server, its node) runs on the same machine as the
    # artifact, whose needs are the task's memory_gb. OpenHands' local runtime alone is killed
    # by a 1 GiB limit (the demo tasks' memory_gb).
    scaffold_memory_gb = 4
    scaffold_cpus = 1

    def problems(self, spec):
        if spec.converter in trajectories.CONVERTERS:
            return []
        return [
            f"agent {spec.name}: unknown converter {spec.converter!r} "
            f"(known: {', '.join(trajectories.CONVERTERS)})"
        ]

    def extravars(self, spec):
        scaffold = spec.scaffold or spec.name
        return {
            "agent": "command",
            "agent_command_line": Unsafe(spec.command_line),
            "agent_command_install": Unsafe(spec.install),
            "agent_command_install_seconds": spec.install_seconds,
            "agent_command_scaffold": scaffold,
            "agent_command_prefix": scaffold_cache.prefix(scaffold),
            "agent_command_system_packages": list(spec.system_packages),
            "agent_command_scaffold_digest": scaffold_cache.install_digest(
                scaffold, spec.install, spec.system_packages
            ),
            "agent_command_model": Unsafe(spec.model or ""),
            "agent_command_max_steps": spec.max_steps,
            "agent_command_base_url": Unsafe(spec.base_url),
            "agent_command_env_names": list(spec.env_from_controller),
        }

    def write_trajectory(self, spec, attempt, events, task_id):
        # The scaffold's own log, converted unless it writes contract 5 itself.
        if spec.converter == "contract5":
            return
        trajectory = runfolder.trajectory_path(attempt)
        native = attempt / runfolder.TRAJECTORY_NATIVE
        if trajectory.is_file():
            shutil.move(trajectory, native)
        trajectories.convert(native, spec.converter, trajectory)


KINDS: dict[str, Kind] = {k.name: k for k in (_Reference(), _Scripted(), _Command())}
# The built-in agents, by kind; every other agent is a command agent from a spec file.
BUILTIN_KINDS = {"reference": "reference", "nop": "scripted", "overclaim": "scripted"}


def role_kind(agent: str) -> str:
    """The kind (and role, agent_<kind>) of the playbook's `agent` variable: a built-in
    agent's name, or `command`."""
    kind = BUILTIN_KINDS.get(agent) or ("command" if agent == "command" else None)
    if kind is None:
        known = ", ".join([*BUILTIN_KINDS, "command"])
        raise DeployBenchError(f"unknown agent {agent!r}: give one of {known}")
    return kind


@dataclass
class AgentSpec:
    name: str
    kind: str  # reference | scripted | command
    model: str | None = None
    command_line: str = ""
    install: str = ""
    # The scaffold's name: its prefix (/opt/deploybench-agent/<scaffold>) and its cache entry;
    # agents that differ only in model or limits share it (default: the agent's name).
    scaffold: str = ""
    # Debian/Ubuntu packages the scaffold cannot do without (apt-get, before the install); the
    # only change outside the prefix, recorded in the attempt (scaffold.json).
    system_packages: list[str] = field(default_factory=list)
    # The install runs before the budget, so the budget cannot end a hung one (a package index
    # that stops answering): this limit does, as an infrastructure error, retried.
    install_seconds: int = 1800
    # The agent's own budget for every task (None: each task's agent_minutes).
    agent_seconds: int | None = None
    # The machine's Python the scaffold needs, as a version specifier (">=3.12,<3.14").
    python: str | None = None
    max_steps: int = 0
    converter: str = "contract5"
    # An OpenAI-compatible endpoint, for {llm_base_url} in the command.
    base_url: str = ""
    # The provider's API at base_url: "openai" (any OpenAI-compatible server) or "anthropic";
    # how the pre-flight call is made (deploybench/attempt/provider_check.py).
    api: str = "openai"
    # Names of environment variables (API keys) passed from the controller's environment to
    # the agent's process at launch; their values are never written to the run folder.
    env_from_controller: list[str] = field(default_factory=list)
    # Caps of one attempt, enforced by the run's model gateway (deploybench/run/gateway.py).
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def behaviour(self) -> Kind:
        return KINDS[self.kind]

    def extravars(self) -> dict[str, Any]:
        """The agent's extra vars; the spec's text is Unsafe, so Ansible never templates it."""
        return self.behaviour.extravars(self)


def platform_problems(
    specs: list[AgentSpec], image: str, offered: dict[str, str], fetches_python: bool = False
) -> list[str]:
    """What the chosen image cannot give the agents' scaffolds, one line each (checked before
    the cost prompt and before any machine). offered: the backend's images and their Pythons;
    fetches_python: its machines reach the internet, so a scaffold's install has uv fetch the
    Python it needs into its own prefix (agents/openhands.yaml) when the image's does not fit."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    lines = []
    for spec in specs:
        if not spec.python:
            continue
        try:
            wanted = SpecifierSet(spec.python)
        except InvalidSpecifier:
            lines.append(f"agent {spec.name}: python {spec.python!r} is not a version specifier")
            continue
        if offered[image] not in wanted and not fetches_python:
            fits = [name for name, version in sorted(offered.items()) if version in wanted]
            hint = f"--image {fits[0]} has it" if fits else "no image of this backend has it"
            lines.append(
                f"agent {spec.name} needs Python {spec.python}; the image {image} has "
                f"{offered[image]}: {hint}"
            )
    return lines


def missing_keys(specs: list[AgentSpec], environ: Mapping[str, str]) -> list[str]:
    """The keys the agents' specs take from the controller's environment that it lacks or holds
    empty, one line each: an agent given an empty key fails on its first model call, and that
    would be scored as the model's failure. Checked before the cost prompt and any machine."""
    return [
        f"agent {spec.name} needs {name} from the controller's environment, which has it "
        f"{'empty' if name in environ else 'unset'}: set it, or drop {name} from the spec's "
        "env_from_controller"
        for spec in specs
        for name in spec.env_from_controller
        if not environ.get(name)
    ]


def spec_problems(specs: Any, where: str) -> list[str]:
    """One line per problem of an agent specs file: schema, then converters deploybench knows."""
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text()))
    lines = []
    for error in sorted(validator.iter_errors(specs), key=lambda e: list(map(str, e.path))):
        field_path = "/".join(map(str, error.absolute_path)) or "(top level)"
        message = error.message
        if error.validator == "additionalProperties":
            message = message.replace("Additional properties are not allowed", "unknown field")
        lines.append(f"{where}: field {field_path}: {message}")
    if isinstance(specs, dict):
        for name, spec in specs.items():
            converter = spec.get("converter") if isinstance(spec, dict) else None
            if isinstance(converter, str) and converter not in trajectories.CONVERTERS:
                lines.append(
                    f"{where}: field {name}/converter: unknown converter {converter!r} "
                    f"(known: {', '.join(trajectories.CONVERTERS)})"
                )
    return lines


def load_agent(name: str, config: Path | None = None, llm_base_url: str | None = None) -> AgentSpec:
    """A built-in agent by name, or a command agent from a YAML file of agent specs
    (agents/schema.json): {name: {command: "...", install: "...", install_seconds: N, model: ...,
    max_steps: N, converter: ..., base_url: ..., env_from_controller: [OPENAI_API_KEY]}};
    `llm_base_url` overrides base_url. The whole file is checked before any machine is made."""
    if name in BUILTIN_KINDS:
        return AgentSpec(name=name, kind=BUILTIN_KINDS[name])
    if config is None:
        raise DeployBenchError(
            f"unknown agent {name!r}: built-in agents are {', '.join(BUILTIN_KINDS)}; "
            "command agents come from --agent-config FILE"
        )
    specs = yamlfile.load(Path(config))
    problems = spec_problems(specs, str(config))
    if problems:
        raise DeployBenchError(problems[0])
    spec = specs.get(name)
    if spec is None:
        raise DeployBenchError(f"{config}: no agent {name!r} (it has {', '.join(specs)})")
    return AgentSpec(
        name=name,
        kind="command",
        model=spec.get("model"),
        command_line=spec["command"],
        install=spec.get("install", ""),
        scaffold=spec.get("scaffold", ""),
        system_packages=list(spec.get("system_packages") or []),
        install_seconds=spec.get("install_seconds", AgentSpec.install_seconds),
        agent_seconds=spec.get("agent_seconds"),
        python=spec.get("python"),
        max_steps=spec.get("max_steps", 0),
        converter=spec.get("converter", "contract5"),
        base_url=llm_base_url or spec.get("base_url") or "",
        api=spec.get("api", "openai"),
        env_from_controller=list(spec.get("env_from_controller") or []),
        max_tokens=spec.get("max_tokens"),
        max_cost_usd=spec.get("max_cost_usd"),
    )
