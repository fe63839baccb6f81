"""The house's plan, read from the source with ast (every import, those inside functions too):
no import circle between deploybench's modules, no import from a floor to a higher one, and no
more than 8 modules at the top of the package beside its sub-packages (docs/design.md, "The
package's floors").

Each scanner is also run on a small made-up package that breaks its rule, so no test can pass
by finding nothing."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "deploybench"

# Floor of each top-level unit (a module or a sub-package) of deploybench: a unit imports only
# units on lower floors or its own. docs/design.md says what lives on each.
FLOORS = {
    "errors": 0,
    "paths": 0,
    "jsonl": 0,
    "contracts": 1,
    "progress": 1,
    "runfolder": 2,
    "catalog": 3,
    "trajectories": 3,
    "verify": 4,
    "analysis": 4,
    "local": 5,
    "backends": 6,
    "attempt": 7,
    "run": 8,
    "commands": 9,
    "cli": 10,
}
MAX_TOP_MODULES = 8


def module_graph(package: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (dotted names)."""
    base = package.name
    modules = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = path
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    up = here.split(".")[: len(here.split(".")) - node.level + 1]
                    mod = ".".join(up + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                targets = [
                    f"{mod}.{a.name}" if f"{mod}.{a.name}" in modules else mod for a in node.names
                ]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target.startswith(base) and target != name and target in modules:
                    graph[name].add(target)
        graph.setdefault(name, set())
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def imports_up(graph: dict[str, set[str]], floors: dict[str, int]) -> list[str]:
    """Imports from a unit to a unit on a higher floor, and units without a floor."""
    found = []
    for a, targets in sorted(graph.items()):
        for b in sorted(targets):
            ua, ub = unit(a), unit(b)
            if ua == ub or ua == "__init__" or a.count(".") == 0:
                continue
            if ua not in floors or ub not in floors:
                found.append(f"{a} -> {b}: {ua if ua not in floors else ub} has no floor")
            elif floors[ub] > floors[ua]:
                found.append(f"{a} (floor {floors[ua]}) -> {b} (floor {floors[ub]})")
    return found


def top_modules(package: Path) -> list[str]:
    return sorted(p.name for p in package.glob("*.py"))


def test_the_scanners_find_what_breaks_the_rules(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "low").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "low" / "__init__.py").write_text("")
    (pkg / "low" / "a.py").write_text("def f():\n    from pkg.high import b\n")
    (pkg / "high.py").write_text("from pkg.low import a\n")
    graph = module_graph(pkg)
    assert circles(graph) == [["pkg.high", "pkg.low.a"]]
    assert imports_up(graph, {"low": 0, "high": 1}) == ["pkg.low.a (floor 0) -> pkg.high (floor 1)"]
    assert imports_up(graph, {"low": 0}) == [
        "pkg.high -> pkg.low.a: high has no floor",
        "pkg.low.a -> pkg.high: high has no floor",
    ]


def test_no_circle_between_modules():
    graph = module_graph(PACKAGE)
    assert len(graph) > 60  # the scan reads the package, not an empty folder
    assert circles(graph) == [], "untie these circles:\n" + "\n".join(
        " <-> ".join(c) for c in circles(graph)
    )


def test_no_import_runs_back_up():
    found = imports_up(module_graph(PACKAGE), FLOORS)
    assert found == [], "an import from a floor to a higher one:\n" + "\n".join(found)


def test_few_modules_at_the_top():
    modules = top_modules(PACKAGE)
    assert len(modules) <= MAX_TOP_MODULES, modules
