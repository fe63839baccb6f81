"""The seams stay owned: read from the source with ast, no module but deploybench/runfolder.py
spells a file name of the run folder, and no caller asks which backend it holds (a backend's
name compared, matched or used as a key outside deploybench/backends/).

Each scanner is also run on a snippet that breaks its rule, so neither test can pass by
finding nothing."""

from __future__ import annotations

import ast
from pathlib import Path

from deploybench import runfolder
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
