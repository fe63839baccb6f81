"""The seams stay owned: read from the source with ast, no module but deploybench/runfolder.py
spells a file name of the run folder, and no caller asks which backend it holds (a backend's
name compared, matched or used as a key outside deploybench/backends/).

Each scanner is also run on a snippet that breaks its rule, so neither test can pass by
finding nothing."""

from __future__ import annotations

import ast
import configparser
import re
from pathlib import Path

from deploybench import catalog, runfolder
from deploybench.backends import BACKENDS

PACKAGE = Path(__file__).resolve().parent.parent / "deploybench"
OWNER = PACKAGE / "runfolder.py"
NAMES = frozenset(runfolder.RUN_FILES + runfolder.ATTEMPT_FILES)
BACKEND_NAMES = frozenset(BACKENDS)


def _modules(exclude: Path | None = None) -> list[Path]:
    found = sorted(PACKAGE.rglob("*.py"))
    return [p for p in found if exclude is None or not p.is_relative_to(exclude)]


def spelled_names(source: str) -> list[tuple[int, str]]:
    """(line, name) of every string constant that is a run-folder file name, or a path ending
    in one. Prose that mentions a name (a docstring, a message) is not a spelling of it."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            tail = node.value.rsplit("/", 1)[-1]
            if tail in NAMES:
                out.append((node.lineno, node.value))
    return out


def _is_backend_name(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in BACKEND_NAMES
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_is_backend_name(e) for e in node.elts)
    return False


def _is_name_of_a_backend(node: ast.AST) -> bool:
    """`<something backend>.name`, e.g. self.o.backend.name, chosen_backend.name."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "name"
        and "backend" in ast.unparse(node.value).lower()
    )


def backend_switches(source: str) -> list[tuple[int, str]]:
    """(line, code) of every comparison, match case or dict key on a backend's name."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_is_backend_name(o) or _is_name_of_a_backend(o) for o in operands):
                out.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.MatchValue) and _is_backend_name(node.value):
            out.append((node.lineno, f"case {ast.unparse(node.value)}"))
        elif isinstance(node, ast.Dict) and any(
            k is not None and _is_backend_name(k) for k in node.keys
        ):
            out.append((node.lineno, ast.unparse(node)[:80]))
    return out


def _is_agent_kind(node: ast.AST) -> bool:
    """`<an agent>.kind`: agent.kind, self.agents[a].kind, spec.kind (an event's kind is not)."""
    if isinstance(node, ast.Attribute) and node.attr == "kind":
        text = ast.unparse(node.value).lower()
        return "agent" in text or "spec" in text
    return False


def agent_kind_switches(source: str) -> list[tuple[int, str]]:
    """(line, code) of every comparison of an agent's kind."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and any(
            _is_agent_kind(o) for o in [node.left, *node.comparators]
        ):
            out.append((node.lineno, ast.unparse(node)))
    return out


_HOMES = re.compile(
    r"\b(TASKS|VERIFIERS|REFERENCE_SETUPS)(_DIR)?\b|tasks_dir|verifiers_dir|catalog_dir"
    r"|reference_root|['\"](tasks|verifiers|reference_setups)['\"]"
)
_TASK = re.compile(r"task|\btid\b", re.IGNORECASE)


def task_path_joins(source: str) -> list[tuple[int, str]]:
    """(line, code) of every path joined from a task home (tasks/, reference_setups/,
    verifiers/) and something naming a task."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            left, right = ast.unparse(node.left), ast.unparse(node.right)
            # a / b / c is two joins on one line: counted once
            if _HOMES.search(left) and _TASK.search(right) and node.lineno not in dict(out):
                out.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.JoinedStr):
            # f"{TASKS_DIR}/{task_id}" or f"verifiers/{task_id}"
            home = False
            for part in node.values:
                if isinstance(part, ast.Constant):
                    home = home or bool(
                        re.search(r"(tasks|verifiers|reference_setups)/$", part.value)
                    )
                elif _TASK.search(ast.unparse(part.value)) and home:
                    out.append((node.lineno, ast.unparse(node)))
                    break
                else:
                    home = home or bool(_HOMES.search(ast.unparse(part.value)))
    return out


def test_the_scanners_find_what_breaks_the_rules():
    code = 'p = folder / "stop.json"\nq = f"{d}/verdict.json"\nr = "runs/r/results.jsonl"\n'
    assert sorted(spelled_names(code)) == [
        (1, "stop.json"),
        (2, "/verdict.json"),
        (3, "runs/r/results.jsonl"),
    ]
    assert spelled_names('"""Writes stop.json and verdict.json."""\nmsg = "no run.json here"') == []
    code = """
if backend == "local": pass
if self.o.backend.name != "x": pass
if name in ("aws", "gcp"): pass
match kind:
    case "gcp": pass
prices = {"aws": 1}
if path.name == "x": pass
"""
    assert sorted(line for line, _ in backend_switches(code)) == [2, 3, 4, 6, 7]
    code = """
if agent.kind == "reference": pass
if self.agents[a].kind != x: pass
if any(spec.kind in ("command",) for spec in specs): pass
if event.kind == "command": pass
if row["kind"] == "turn": pass
"""
    assert sorted(line for line, _ in agent_kind_switches(code)) == [2, 3, 4]
    code = """
a = TASKS_DIR / task_id / "task.yaml"
b = Path(verifiers_dir) / task_id
c = REPO_ROOT / "reference_setups" / row["task_id"]
d = f"{TASKS_DIR}/{task_id}/task.yaml"
e = runs_dir() / run_id / task_id
f = TASKS_DIR / "schema.json"
g = f"verifiers/{task_id}/checks.yaml"
h = f"over {fig['tasks']} tasks"
"""
    assert sorted(line for line, _ in task_path_joins(code)) == [2, 3, 4, 5, 8]


def test_no_module_but_the_owner_spells_a_run_folder_file_name():
    assert OWNER.is_file() and {"stop.json", "verify.json", "verdict.json"} <= NAMES
    offenders = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {name!r}"
        for path in _modules()
        if path != OWNER
        for line, name in spelled_names(path.read_text())
    ]
    assert not offenders, "use the names of deploybench/runfolder.py:\n" + "\n".join(offenders)


def test_no_caller_asks_which_backend_it_holds():
    callers = _modules(exclude=PACKAGE / "backends")
    assert len(callers) > 20  # the scan reads the package, not an empty folder
    offenders = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {code}"
        for path in callers
        for line, code in backend_switches(path.read_text())
    ]
    assert not offenders, "make it a method of the backend interface:\n" + "\n".join(offenders)


def test_no_caller_compares_an_agents_kind():
    owner = PACKAGE / "agents.py"
    offenders = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {code}"
        for path in _modules()
        if path != owner
        for line, code in agent_kind_switches(path.read_text())
    ]
    assert not offenders, "make it a method of the agent's Kind (agents.py):\n" + "\n".join(
        offenders
    )


def test_only_the_task_owner_finds_a_tasks_pieces():
    owners = {PACKAGE / "catalog.py", PACKAGE / "paths.py"}
    offenders = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {code}"
        for path in _modules()
        if path not in owners
        for line, code in task_path_joins(path.read_text())
    ]
    assert not offenders, "ask catalog.Task for it:\n" + "\n".join(offenders)
    # Both roles paths (the runner's and ansible.cfg's, for a playbook run by hand) are the one.
    config = configparser.ConfigParser()
    config.read(PACKAGE.parent / "ansible.cfg")
    by_hand = [(PACKAGE.parent / p).resolve() for p in config["defaults"]["roles_path"].split(":")]
    assert by_hand == [p.resolve() for p in catalog.ROLES_PATH]
