"""Give every sub-command one phase (docs/measurements.md section 5) from the rules in
phase_rules.yaml: the phases in their documented order, first match wins, "Other" when none
matches. Rules see the sub-command as the bare tool would be typed (invocation.canonical)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

import yaml

from deploybench.analysis.invocation import canonical

RULES_FILE = Path(__file__).with_name("phase_rules.yaml")
OTHER = "Other"
ACTION_PHASES = ("Install", "Build", "FileEdit", "Config", "Run/Test", "Service")


@dataclass(frozen=True)
class Phase:
    name: str
    doc: str
    match: tuple[re.Pattern[str], ...]
    unless: tuple[re.Pattern[str], ...]

    def hits(self, text: str) -> bool:
        return any(p.search(text) for p in self.match) and not any(
            p.search(text) for p in self.unless
        )


@cache
def load_rules(path: Path = RULES_FILE) -> tuple[Phase, ...]:
    data = yaml.safe_load(Path(path).read_text())
    return tuple(
        Phase(
            name=entry["name"],
            doc=entry["doc"],
            match=tuple(re.compile(p) for p in entry["match"]),
            unless=tuple(re.compile(p) for p in entry.get("unless", [])),
        )
        for entry in data["phases"]
    )


def phase_names() -> list[str]:
    return [p.name for p in load_rules()] + [OTHER]


@lru_cache(maxsize=200_000)
def classify(subcommand: str) -> str:
    """The phase of one sub-command."""
    text = canonical(subcommand)
    for phase in load_rules():
        if phase.hits(text):
            return phase.name
    return OTHER
