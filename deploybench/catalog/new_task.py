"""`deploybench tasks new ID`: a new catalog task's three pieces (its task.yaml, its reference
setup role, its hidden verifier) written from commented templates (new_task_templates/), each
line still to be filled marked TODO(tasks new). `tasks validate` names every such line left
(catalog.unfilled), so a task is valid only once a person has filled all three."""

from __future__ import annotations

import re
from pathlib import Path

import jinja2

from deploybench.catalog import TASK_FILE, TEMPLATE_MARKER, Task, schema
from deploybench.errors import DeployBenchError
from deploybench.paths import REPO_ROOT

MARKER = TEMPLATE_MARKER
TEMPLATES = Path(__file__).with_name("new_task_templates")


def create(task_id: str, root: Path = REPO_ROOT) -> list[Path]:
    """Write the three pieces of TASK_ID under ROOT; refuse a bad id or any piece that exists."""
    pattern = schema()["properties"]["id"]["pattern"]
    if not re.fullmatch(pattern, task_id):
        raise DeployBenchError(
            f"bad task id {task_id!r}: <abbrev>_<venue><yy> in lower case (e.g. adalora_iclr23)"
        )
    task = Task(task_id, root)
    homes = {"task": task.folder, "role": task.role, "verifier": task.verifier}
    taken = [str(p.relative_to(root)) for p in homes.values() if p.exists()]
    if taken:
        raise DeployBenchError(f"task {task_id} exists already: {', '.join(taken)}")
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,  # YAML and shell, never HTML
    )
    written = []
    for template in sorted(TEMPLATES.rglob("*.j2")):
        rel = template.relative_to(TEMPLATES)
        if rel.parts[0] == "role":
            target = homes["role"].joinpath(*rel.parts[1:])
        elif rel.parts[0] == "verifier":
            target = homes["verifier"].joinpath(*rel.parts[1:])
        else:
            target = homes["task"] / TASK_FILE
        target = target.with_name(target.name.removesuffix(".j2"))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(env.get_template(rel.as_posix()).render(id=task_id))
        written.append(target)
    return written
