"""The task catalog: tasks/<id>/task.yaml (contract 2), checked against tasks/schema.json.

`load_tasks` is what the rest of the project uses ({id: task dict}, every task valid);
`validate_all` is what `deploybench tasks validate` prints: every problem, one line each."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from deploybench.catalog import yamlfile
from deploybench.errors import DeployBenchError
from deploybench.paths import (
    REFERENCE_SETUPS,
    REFERENCE_SETUPS_DIR,
    REPO_ROOT,
    ROLES_DIR,
    TASKS,
    TASKS_DIR,
    VERIFIERS,
)

SCHEMA_FILE = "schema.json"


@cache
def _schema(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def schema() -> dict[str, Any]:
    """The JSON Schema of task.yaml: the checkout's tasks/schema.json, the one copy of contract 2.
    A catalog folder elsewhere (`report --catalog DIR`) is checked against it too."""
    path = TASKS_DIR / SCHEMA_FILE
    if not path.is_file():
        raise DeployBenchError(f"task schema not found: {path}")
    return _schema(path.resolve())


def _display(path: Path, root: Path | None = None) -> str:
    """tasks/x/task.yaml rather than an absolute path, where that reads well."""
    if root is not None:
        try:
            return str(Path(path).resolve().relative_to(Path(root).resolve()))
        except ValueError:
            return str(path)
    parts = Path(path).parts
    return str(Path(*parts[-3:])) if len(parts) > 3 else str(path)


def _field(error: jsonschema.ValidationError) -> str:
    """The field an error is about; for a missing required field, that field's path."""
    path = [str(p) for p in error.absolute_path]
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else ""
        path.append(missing)
    return "/".join(path) or "(top level)"


def _message(error: jsonschema.ValidationError) -> str:
    if error.validator == "required":
        return "required field is missing"
    if error.validator == "additionalProperties":
        return error.message.replace("Additional properties are not allowed", "unknown field")
    return error.message


# (schema, its validator) by the schema's id: building a validator costs more than checking
# one task with it, and a catalog load checks every task against the same schema. The schema
# is kept beside its validator so that its id is never reused by another dict.
_VALIDATORS: dict[int, tuple[dict[str, Any], jsonschema.Draft202012Validator]] = {}


def _validator(task_schema: dict[str, Any]) -> jsonschema.Draft202012Validator:
    hit = _VALIDATORS.get(id(task_schema))
    if hit is None or hit[0] is not task_schema:
        validator = jsonschema.Draft202012Validator(
            task_schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
        )
        hit = _VALIDATORS[id(task_schema)] = (task_schema, validator)
    return hit[1]


def schema_problems(data: Any, where: str, task_schema: dict[str, Any]) -> list[str]:
    """One line per schema violation: '<where>: field <path>: <reason>'."""
    validator = _validator(task_schema)
    if validator.is_valid(data):
        return []
    lines = []
    for error in sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.path))):
        # An if/then or oneOf failure: report the specific inner reasons, not the wrapper.
        leaves = _leaves(error)
        for leaf in leaves:
            line = f"{where}: field {_field(leaf)}: {_message(leaf)}"
            if line not in lines:
                lines.append(line)
    return lines


def _leaves(error: jsonschema.ValidationError) -> list[jsonschema.ValidationError]:
    if error.validator == "oneOf" and error.context:
        # validated: null or an object. For an object, the object branch's own reasons are the
        # useful ones; for anything else, "not valid under any of the given schemas" is.
        deep = [e for e in error.context if not (e.validator == "type" and not e.path)]
        return deep or [error]
    return [error]


def read_task(path: Path) -> tuple[Any, list[str]]:
    """Parse one task.yaml; (data, problems) where problems covers YAML errors only."""
    where = _display(path)
    try:
        data = yamlfile.load(path, where)
    except DeployBenchError as exc:
        return None, [str(exc)]
    if not isinstance(data, dict):
        return None, [f"{where}: field (top level): must be a mapping, got {type(data).__name__}"]
    return data, []


def task_problems(path: Path, tasks_dir: Path | None = None, full: bool = True) -> list[str]:
    """Every problem of one task.yaml: YAML, schema, folder name = id and, with `full`, that a
    verifier folder that exists is whole (and, for a demo task, its artifact, paper and the
    commit the artifact stages to). That a catalog task's reference setup and verifier exist,
    and hold no template line left to fill, is validate_all's check."""
    path = Path(path)
    tasks_dir = Path(tasks_dir) if tasks_dir is not None else path.parent.parent
    return _problems_of(path, tasks_dir, *read_task(path), full)


def _problems_of(
    path: Path, tasks_dir: Path, data: Any, problems: list[str], full: bool
) -> list[str]:
    """task_problems of a task.yaml already read (read_task's data and problems)."""
    where = _display(path)
    if data is None:
        return problems
    problems = problems + schema_problems(data, where, schema())
    task_id = data.get("id")
    if isinstance(task_id, str) and path.parent.name != task_id:
        problems.append(
            f"{where}: field id: {task_id!r} does not equal its folder name {path.parent.name!r}"
        )
    if not full or not isinstance(task_id, str):
        return problems
    root = tasks_dir.parent
    verifier = verifier_dir(task_id, root)
    for name in (EXPERIMENT_SCRIPT, CHECKS_SPEC):
        part = verifier / name
        if verifier.is_dir() and not part.is_file():
            problems.append(f"{where}: verifier incomplete: {_display(part, root)} does not exist")
    if (verifier / "checks.yaml").is_file():
        # Refused before any machine is made, not when the agent has already run.
        from deploybench.catalog import checks

        try:
            checks.load(verifier / "checks.yaml")
        except DeployBenchError as exc:
            problems.append(str(exc).replace(str(root) + "/", ""))
    if data.get("demo") is True:
        problems += _demo_problems(data, where, root)
    return problems


def _demo_problems(data: dict[str, Any], where: str, root: Path) -> list[str]:
    from deploybench.catalog import demo

    repo = data.get("repo") or {}
    url = repo.get("url", "") if isinstance(repo, dict) else ""
    if not isinstance(url, str) or not url.startswith(demo.DEMO_URL_PREFIX):
        return [f"{where}: field repo/url: a demo task's repository must be demo:tasks/<id>/..."]
    artifact = demo.demo_artifact_dir(url, root)
    if not artifact.is_dir():
        return [f"{where}: field repo/url: artifact folder {artifact} does not exist"]
    problems = []
    paper = data.get("paper") or {}
    paper_url = paper.get("url", "") if isinstance(paper, dict) else ""
    if (
        isinstance(paper_url, str)
        and paper_url.startswith(demo.DEMO_URL_PREFIX)
        and not demo.demo_artifact_dir(paper_url, root).is_file()
    ):
        problems.append(f"{where}: field paper/url: {paper_url} does not exist")
    commit = demo.demo_repo_commit(artifact)
    if repo.get("commit") != commit:
        problems.append(
            f"{where}: field repo/commit: {repo.get('commit')!r} is not the commit the artifact "
            f"stages to ({commit}); update task.yaml"
        )
    return problems


# ---- A task's pieces: no other module joins a task id into a path (tests/test_seams.py). ----
EXPERIMENT_SCRIPT = "experiment.sh"
CHECKS_SPEC = "checks.yaml"
TASK_FILE = "task.yaml"
# Where Ansible finds roles: the harness's, then the reference setups (roles named after their
# task). ansible.cfg says the same for a playbook run by hand (tests/test_seams.py checks it).
ROLES_PATH = (ROLES_DIR, REFERENCE_SETUPS_DIR)


@dataclass(frozen=True)
class Task:
    """Where one task's pieces live: its folder in the catalog (task.yaml, its papers), its
    reference setup (an Ansible role named after the task) and its hidden verifier."""

    id: str
    root: Path = REPO_ROOT
    tasks_dir: Path | None = None

    @property
    def folder(self) -> Path:
        return Path(self.tasks_dir or Path(self.root) / TASKS) / self.id

    @property
    def file(self) -> Path:
        return self.folder / TASK_FILE

    @property
    def papers(self) -> list[Path]:
        """The task's own paper texts (tasks/<id>/paper.*), for a paper without a PDF."""
        return sorted(p for p in self.folder.glob("paper.*") if p.is_file())

    @property
    def role(self) -> Path:
        return Path(self.root) / REFERENCE_SETUPS / self.id

    @property
    def verifier(self) -> Path:
        return Path(self.root) / VERIFIERS / self.id

    @property
    def experiment(self) -> Path:
        return self.verifier / EXPERIMENT_SCRIPT

    @property
    def checks(self) -> Path:
        return self.verifier / CHECKS_SPEC

    def homes(self) -> dict[str, bool]:
        """Which of its homes besides tasks/<id>/ exist: {reference_setup, verifier}."""
        return {"reference_setup": self.role.is_dir(), "verifier": self.checks.is_file()}


def reference_setup_dir(task_id: str, root: Path = REPO_ROOT) -> Path:
    return Task(task_id, root).role


def verifier_dir(task_id: str, root: Path = REPO_ROOT) -> Path:
    return Task(task_id, root).verifier


def homes(task_id: str, root: Path = REPO_ROOT) -> dict[str, bool]:
    return Task(task_id, root).homes()


# The paper's catalog (its Table 8 and abstract). Demo tasks are never counted.
PAPER_COUNTS: dict[str, int] = {
    "tasks": 51,
    "ai_ml": 25,
    "systems": 19,
    "scientific": 7,
    "gpu": 22,
    "qemu": 5,
    "legacy": 10,
    "easy": 12,
    "medium": 20,
    "hard": 19,
    "languages": 11,
}


def catalog_tasks(tasks: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {k: t for k, t in tasks.items() if not t.get("demo")}


def counts(tasks: dict[str, dict[str, Any]]) -> dict[str, int]:
    """The catalog's counts in PAPER_COUNTS' keys; languages counts distinct main languages."""
    rows = list(catalog_tasks(tasks).values())
    out = {"tasks": len(rows)}
    for domain in ("ai_ml", "systems", "scientific"):
        out[domain] = sum(t["domain"] == domain for t in rows)
    for flag in ("gpu", "qemu", "legacy"):
        out[flag] = sum(bool(t[flag]) for t in rows)
    for level in ("easy", "medium", "hard"):
        out[level] = sum(t["difficulty"] == level for t in rows)
    out["languages"] = len({t["languages"][0] for t in rows})
    return out


def count_problems(tasks: dict[str, dict[str, Any]]) -> list[str]:
    """One line per count of the catalog that differs from the paper's."""
    have = counts(tasks)
    return [
        f"catalog: {key} is {have[key]}, the paper has {want}"
        for key, want in PAPER_COUNTS.items()
        if have[key] != want
    ]


def task_files(tasks_dir: Path = TASKS_DIR) -> list[Path]:
    return sorted(Path(tasks_dir).glob("*/task.yaml"))


# What `deploybench tasks new` (catalog/new_task.py) marks every line still to fill with.
TEMPLATE_MARKER = "TODO(tasks new)"


def unfilled(task_id: str, root: Path) -> list[str]:
    """Every line of the task's three pieces that still holds the template's marker, as
    `<file>:<line>: ...` relative to ROOT."""
    task = Task(task_id, root)
    found = []
    for home in (task.folder, task.role, task.verifier):
        if not home.is_dir():
            continue
        for path in sorted(p for p in home.rglob("*") if p.is_file()):
            try:
                lines = path.read_text(errors="replace").splitlines()
            except OSError:
                continue
            for n, line in enumerate(lines, 1):
                if TEMPLATE_MARKER in line:
                    where = path.relative_to(root)
                    found.append(f"{where}:{n}: still the template's {TEMPLATE_MARKER}")
    return found


def validate_all(
    tasks_dir: Path = TASKS_DIR, paths: Iterable[Path | str] | None = None
) -> list[str]:
    """One line per problem over every task (or only `paths`: task.yaml files or task folders).
    An empty list means the catalog is valid."""
    tasks_dir = Path(tasks_dir)
    files: list[Path] = []
    problems: list[str] = []
    for p in paths if paths is not None else task_files(tasks_dir):
        p = Path(p)
        if p.is_dir():
            p = p / "task.yaml"
        if not p.is_file():
            problems.append(f"{p}: no such task.yaml")
            continue
        files.append(p)
    ids: dict[str, Path] = {}
    for path in files:
        problems += task_problems(path, path.resolve().parent.parent)
        data, _ = read_task(path)
        task_id = data.get("id") if isinstance(data, dict) else None
        if isinstance(task_id, str) and isinstance(data, dict) and not data.get("demo"):
            # A catalog task is runnable only with its reference setup and its verifier.
            root = path.resolve().parent.parent.parent
            for part, there in homes(task_id, root).items():
                if not there:
                    where = {"reference_setup": REFERENCE_SETUPS, "verifier": VERIFIERS}[part]
                    problems.append(
                        f"{_display(path)}: no {part.replace('_', ' ')} ({where}/{task_id}/)"
                    )
            # `tasks new` writes all three from templates; each line left to fill is named.
            problems += unfilled(task_id, root)
        if isinstance(task_id, str):
            if task_id in ids and ids[task_id].resolve() != path.resolve():
                problems.append(f"{_display(path)}: field id: {task_id!r} also in {ids[task_id]}")
            ids.setdefault(task_id, path)
    return problems


def load_tasks(tasks_dir: Path = TASKS_DIR) -> dict[str, dict[str, Any]]:
    """Every task.yaml under tasks_dir, by id, each checked against the schema (and its folder
    name); the first problem raises a one-line DeployBenchError."""
    tasks: dict[str, dict[str, Any]] = {}
    for path in task_files(tasks_dir):
        # One read and parse per file (task_problems would parse it again).
        data, problems = read_task(path)
        problems = _problems_of(path, Path(tasks_dir), data, problems, full=False)
        if problems:
            more = f" (and {len(problems) - 1} more; see: deploybench tasks validate)"
            raise DeployBenchError(problems[0] + (more if len(problems) > 1 else ""))
        tasks[data["id"]] = data
    return tasks


def task_id_pattern() -> str:
    """The one pattern of a task id: the schema's (tasks/schema.json, field id)."""
    return schema()["properties"]["id"]["pattern"]


def load_task(task_id: str, tasks_dir: Path = TASKS_DIR) -> dict[str, Any]:
    """One task.yaml, checked against the schema: what an attempt loads, once. The id is
    checked against the schema's pattern before it is used in a path."""
    if not isinstance(task_id, str) or not re.fullmatch(task_id_pattern(), task_id):
        raise DeployBenchError(f"bad task id {task_id!r}: not of the form {task_id_pattern()}")
    path = task_file(task_id, tasks_dir)
    data, problems = read_task(path)
    problems = _problems_of(path, Path(tasks_dir), data, problems, full=False)
    if problems:
        raise DeployBenchError(problems[0])
    return data


def task_file(task_id: str, tasks_dir: Path = TASKS_DIR) -> Path:
    path = Task(task_id, tasks_dir=Path(tasks_dir)).file
    if not path.is_file():
        raise DeployBenchError(f"unknown task {task_id!r}: {_display(path)} does not exist")
    return path
