"""Which tasks a command is about: ids or `all`, narrowed by the catalog's own facts. One rule
for `run`, `validate-references` and `tasks list` (commands/selection.py gives them the same
options)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from deploybench.errors import DeployBenchError

DOMAINS = ("ai_ml", "systems", "scientific")
RUNS_HERE = ("yes", "with_changes", "no")


@dataclass(frozen=True)
class Selection:
    """`tasks`: comma-separated ids, or `all` (every catalog task, demos apart); the filters
    narrow it (None: no filter)."""

    tasks: str | None = None
    demo: bool = False
    domain: tuple[str, ...] = ()
    gpu: bool | None = None
    validated: bool | None = None
    runs_here: tuple[str, ...] = ()
    exclude: tuple[str, ...] = field(default_factory=tuple)

    @property
    def filtered(self) -> bool:
        return bool(
            self.domain or self.runs_here or self.exclude
            or self.gpu is not None or self.validated is not None
        )  # fmt: skip


def _ids(text: str | None) -> list[str]:
    return [t.strip() for t in (text or "").split(",") if t.strip()]


def select(catalog: dict[str, dict[str, Any]], sel: Selection) -> dict[str, dict[str, Any]]:
    """The selected tasks, in catalog order; an unknown id or an empty result is one error."""
    ids = _ids(sel.tasks)
    unknown = [t for t in [*ids, *sel.exclude] if t != "all" and t not in catalog]
    if unknown:
        raise DeployBenchError(
            f"unknown task(s): {', '.join(unknown)} (see deploybench tasks list)"
        )
    if sel.demo:
        chosen = {k: v for k, v in catalog.items() if v.get("demo")}
    elif ids == ["all"]:
        chosen = {k: v for k, v in catalog.items() if not v.get("demo")}
    elif "all" in ids:
        raise DeployBenchError("--tasks all stands alone (narrow it with the filters)")
    elif ids:
        chosen = {t: catalog[t] for t in ids}
    elif sel.filtered:
        chosen = {k: v for k, v in catalog.items() if not v.get("demo")}
    else:
        raise DeployBenchError("name the tasks: --tasks ID,ID..., --tasks all or --demo")
    for bad in [d for d in sel.domain if d not in DOMAINS]:
        raise DeployBenchError(f"--domain {bad}: one of {', '.join(DOMAINS)}")
    for bad in [r for r in sel.runs_here if r not in RUNS_HERE]:
        raise DeployBenchError(f"--runs-here {bad}: one of {', '.join(RUNS_HERE)}")
    kept = {}
    for task_id, task in chosen.items():
        if sel.domain and task.get("domain") not in sel.domain:
            continue
        if sel.gpu is not None and bool(task.get("gpu")) != sel.gpu:
            continue
        if sel.validated is not None and bool(task.get("validated")) != sel.validated:
            continue
        here = (task.get("runs_here") or {}).get("local")
        if sel.runs_here and here not in sel.runs_here:
            continue
        if task_id in sel.exclude:
            continue
        kept[task_id] = task
    if not kept:
        raise DeployBenchError("no task selected (the filters left none)")
    return kept
