"""The task catalog: tasks/<id>/task.yaml (contract 2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from deploybench.paths import TASKS_DIR


def load_tasks(tasks_dir: Path = TASKS_DIR) -> dict[str, dict[str, Any]]:
    """Every task.yaml under tasks_dir, by id."""
    tasks: dict[str, dict[str, Any]] = {}
    for path in sorted(Path(tasks_dir).glob("*/task.yaml")):
        data = yaml.safe_load(path.read_text())
        tasks[data["id"]] = data
    return tasks
