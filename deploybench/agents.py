"""Agents: the built-in controls and command-line agents from a template.

Built-in, no LLM: `reference` (the task's reference setup: the oracle), `nop` (does nothing),
`overclaim` (a shallow check, then a RUNBOOK that claims SUCCESS). `command` runs any CLI
agent from a command template; its native log is converted into trajectory.jsonl (contract 5)
by the converter named in its spec."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from deploybench.errors import DeployBenchError

BUILTIN_KINDS = {"reference": "reference", "nop": "scripted", "overclaim": "scripted"}


@dataclass
class AgentSpec:
    name: str
    kind: str  # reference | scripted | command
    model: str | None = None
    command_line: str = ""
    install: str = ""
    max_steps: int = 0
    converter: str = "contract5"
    # An OpenAI-compatible endpoint, for {llm_base_url} in the command.
    base_url: str = ""
    # Names of environment variables (API keys) passed from the controller's environment to
    # the agent's process at launch; their values are never written to the run folder.
    env_from_controller: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def extravars(self) -> dict[str, Any]:
        if self.kind != "command":
            return {"agent": self.name}
        return {
            "agent": "command",
            "agent_command_line": self.command_line,
            "agent_command_install": self.install,
            "agent_command_model": self.model or "",
            "agent_command_max_steps": self.max_steps,
            "agent_command_base_url": self.base_url,
            "agent_command_env_names": list(self.env_from_controller),
        }


def load_agent(name: str, config: Path | None = None, llm_base_url: str | None = None) -> AgentSpec:
    """A built-in agent by name, or a command agent from a YAML file of agent specs:
    {name: {command: "...", install: "...", model: ..., max_steps: N, converter: ...,
    base_url: ..., env_from_controller: [OPENAI_API_KEY]}}; `llm_base_url` overrides base_url."""
    if name in BUILTIN_KINDS:
        return AgentSpec(name=name, kind=BUILTIN_KINDS[name])
    if config is None:
        raise DeployBenchError(
            f"unknown agent {name!r}: built-in agents are {', '.join(BUILTIN_KINDS)}; "
            "command agents come from --agent-config FILE"
        )
    specs = yaml.safe_load(Path(config).read_text()) or {}
    spec = specs.get(name)
    if not isinstance(spec, dict) or not spec.get("command"):
        raise DeployBenchError(f"{config}: no agent {name!r} with a `command`")
    return AgentSpec(
        name=name,
        kind="command",
        model=spec.get("model"),
        command_line=spec["command"],
        install=spec.get("install", ""),
        max_steps=int(spec.get("max_steps", 0)),
        converter=spec.get("converter", "contract5"),
        base_url=llm_base_url or spec.get("base_url") or "",
        env_from_controller=[str(n) for n in spec.get("env_from_controller") or []],
    )
