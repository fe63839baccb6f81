"""Import bashlex with its LALR tables read from a cache instead of rebuilt.

bashlex (0.18, pinned) builds its yacc parser when `bashlex.parser` is imported, and its copy
of PLY no longer reads or writes table files: the LALR construction ran on every import, a
sixth of a second of CPU, more than the report's parses cost. The tables are a function of the
grammar alone, so they are kept once per grammar in the user's cache folder (marshal: plain
dicts of ints and strings, nothing executable) and handed to bashlex's own parser class.

How: bashlex's package `__init__` imports the parser, so the package module is created without
running it, `bashlex.yacc.LRTable` is swapped for a subclass that looks in the cache first, and
then the package's `__init__` runs as usual. Anything unexpected (another bashlex, an
unwritable or broken cache) falls back to bashlex's own build: the parser is the same either
way, only the time differs (`tests/analysis/test_shell_split.py` compares the two tables)."""

from __future__ import annotations

import hashlib
import importlib.util
import marshal
import os
import sys
from pathlib import Path
from types import ModuleType

CACHE_ENV = "DEPLOYBENCH_CACHE"  # a folder for caches; else $XDG_CACHE_HOME or ~/.cache


def cache_dir() -> Path:
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "deploybench"


def grammar_key(grammar) -> str:
    """What the LALR tables depend on: every production (with its precedence) and the
    precedence of every terminal; the start symbol is production 0."""
    text = repr(
        (
            [(str(p), p.prec) for p in grammar.Productions],
            sorted(grammar.Precedence.items()),
        )
    )
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _table_file(grammar) -> Path:
    return cache_dir() / f"bashlex-lalr-{grammar_key(grammar)}.marshal"


def _read(path: Path):
    try:
        action, goto = marshal.loads(path.read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if not (isinstance(action, dict) and isinstance(goto, dict) and action):
        return None
    return action, goto


def _write(path: Path, action: dict, goto: dict) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_bytes(marshal.dumps((action, goto)))
        temporary.replace(path)  # atomic: a reader never sees half a file
    except OSError:
        pass  # no cache folder: the next import builds the tables again


def _cached_table_class(base: type) -> type:
    class CachedLRTable(base):
        def __init__(self, grammar, log=None):
            path = _table_file(grammar)
            cached = _read(path)
            if cached is None:
                super().__init__(grammar, log)
                _write(path, self.lr_action, self.lr_goto)
                return
            # What bashlex's LRParser and yacc() read from a table (the build's own caches
            # and logs are not needed to parse): the productions, both tables, no conflicts.
            self.grammar = grammar
            self.lr_productions = grammar.Productions
            self.lr_action, self.lr_goto = cached
            self.sr_conflicts, self.rr_conflicts = [], []

    return CachedLRTable


def import_bashlex() -> ModuleType:
    """bashlex, its parser tables from the cache when they are there."""
    if "bashlex" in sys.modules:
        return sys.modules["bashlex"]
    spec = importlib.util.find_spec("bashlex")
    if spec is None or spec.loader is None:
        raise ImportError("bashlex is not installed")
    package = importlib.util.module_from_spec(spec)
    sys.modules["bashlex"] = package
    try:
        import bashlex.yacc as yacc  # the package's __init__ has not run: nothing built yet

        original = getattr(yacc, "LRTable", None)
        if isinstance(original, type):
            yacc.LRTable = _cached_table_class(original)
        try:
            spec.loader.exec_module(package)
        finally:
            if original is not None:
                yacc.LRTable = original
    except Exception:
        # e.g. a cached table that is not this grammar's after all: bashlex's own build
        for name in [n for n in sys.modules if n == "bashlex" or n.startswith("bashlex.")]:
            del sys.modules[name]
        import bashlex

        return bashlex
    return package
