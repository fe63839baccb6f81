"""Label what an agent did after each failed command (docs/measurements.md section 7).

The nine rules and their order live in recovery_rules.yaml; this module holds the structural
checks they name. Everything about one command string is computed once and cached, since
agents repeat commands."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from deploybench.analysis.invocation import canonical
from deploybench.analysis.phases import ACTION_PHASES, classify
from deploybench.analysis.shell_split import split_subcommands

RULES_FILE = Path(__file__).with_name("recovery_rules.yaml")
LABELS = ("Inspect", "Adapt", "Loop", "Abort", "Other")
ACTION_KINDS = ("command", "file_read", "file_edit", "finish")


class Action(NamedTuple):
    """One action of an attempt: a shell command, a structured file read/edit, or finish.
    (A NamedTuple: the report builds hundreds of thousands of them.)"""

    kind: str
    command: str | None = None
    exit_code: int | None = None
    soft_timeout: bool = False
    path: str | None = None

    @property
    def failed(self) -> bool:
        return self.kind == "command" and (
            bool(self.soft_timeout) or (self.exit_code is not None and self.exit_code != 0)
        )

    @property
    def norm(self) -> str:
        return normalise(self.command or "")


@dataclass(frozen=True)
class Rule:
    id: int
    label: str
    test: str
    doc: str
    patterns: dict[str, tuple[re.Pattern[str], ...]]
    max_distinct: int = 2


@cache
def load_rules(path: Path = RULES_FILE) -> tuple[int, tuple[Rule, ...]]:
    data = yaml.safe_load(Path(path).read_text())
    rules = tuple(
        Rule(
            id=r["id"],
            label=r["label"],
            test=r["test"],
            doc=r["doc"],
            patterns={k: tuple(re.compile(p) for p in v) for k, v in r.get("patterns", {}).items()},
            max_distinct=r.get("max_distinct", 2),
        )
        for r in data["rules"]
    )
    for rule in rules:
        if rule.test not in TESTS:
            raise ValueError(f"{path}: rule {rule.id}: unknown test {rule.test!r}")
    return data["window"], rules


def actions_of(events: list[dict]) -> list[Action]:
    """The actions of one attempt from its trajectory events (contract 5), in order."""
    return [
        Action(
            e["kind"],
            e.get("command"),
            e.get("exit_code"),
            e.get("soft_timeout") is True,
            e.get("path"),
        )
        for e in events
        if e["kind"] in ACTION_KINDS
    ]


@lru_cache(maxsize=200_000)
def normalise(command: str) -> str:
    return " ".join(command.split())


# (patterns, command) -> whether a pattern hits a sub-command. Keyed by the patterns' identity
# (one tuple per rule, loaded once), the tuple kept beside its answers so that its id is never
# reused: hashing the compiled patterns on every lookup cost more than the answer itself, at
# hundreds of thousands of lookups per report.
_SUB_HITS: dict[int, tuple[tuple[re.Pattern[str], ...], dict[str, bool]]] = {}


def _answers(patterns: tuple[re.Pattern[str], ...]) -> dict[str, bool]:
    entry = _SUB_HITS.get(id(patterns))
    if entry is None:
        entry = _SUB_HITS[id(patterns)] = (patterns, {})
    return entry[1]


def _any_sub(command: str, patterns: tuple[re.Pattern[str], ...]) -> bool:
    hits = _answers(patterns)
    hit = hits.get(command)
    if hit is None:
        hit = hits[command] = any(
            p.search(canonical(s)) for s in split_subcommands(command) for p in patterns
        )
    return hit


@lru_cache(maxsize=200_000)
def _phases(command: str) -> frozenset[str]:
    return frozenset(classify(s) for s in split_subcommands(command))


def _writes_runbook(action: Action, rule: Rule) -> bool:
    if action.kind == "file_edit":
        return bool(action.path) and "RUNBOOK" in action.path.upper()
    if action.kind != "command" or not action.command:
        return False
    return "Finish" in _phases(action.command) and _any_sub(
        action.command, rule.patterns["runbook_write"]
    )


# Each test: (rule, failed action, window of next actions, whether any later shell action) -> bool
def abort_or_finish(rule: Rule, failed: Action, window: Sequence[Action], later_shell: bool):
    if not later_shell or not window:
        return True
    first = window[0]
    return first.kind == "finish" or _writes_runbook(first, rule)


def stuck_after_soft_timeout(rule, failed, window, later_shell):
    if not failed.soft_timeout or not window or window[0].kind != "command":
        return False
    nxt = window[0]
    text = nxt.command or ""
    return bool(nxt.soft_timeout) or any(p.search(text) for p in rule.patterns["empty_input"])


def same_command_again(rule, failed, window, later_shell):
    return bool(window) and window[0].kind == "command" and window[0].norm == failed.norm


def window_has(rule, failed, window, later_shell):
    patterns = rule.patterns["subcommand"]
    answers = _answers(patterns)  # looked up here, not per action: the report's hottest test
    for action in window:
        kind, command = action.kind, action.command
        if kind == "command":
            if command:
                hit = answers.get(command)
                if hit or (hit is None and _any_sub(command, patterns)):
                    return True
        elif kind == "file_read" and rule.id == 4:
            return True
    return False


def window_install_with_marker(rule, failed, window, later_shell):
    markers = rule.patterns["marker"]
    for action in window:
        if action.kind != "command" or not action.command:
            continue
        if _install_with_marker(action.command, markers):
            return True
    return False


# (markers, command) -> whether a sub-command is an Install holding a marker; cached per
# command string like _SUB_HITS (the same command recurs in thousands of windows).
_MARKER_HITS: dict[int, tuple[tuple[re.Pattern[str], ...], dict[str, bool]]] = {}


def _install_with_marker(command: str, markers: tuple[re.Pattern[str], ...]) -> bool:
    hits = _MARKER_HITS.get(id(markers))
    if hits is None:
        hits = _MARKER_HITS[id(markers)] = (markers, {})
    hits = hits[1]
    hit = hits.get(command)
    if hit is None:
        hit = hits[command] = any(
            classify(sub) == "Install" and any(p.search(sub) for p in markers)
            for sub in split_subcommands(command)
        )
    return hit


def next_differs_in_action_phase(rule, failed, window, later_shell):
    if not window:
        return False
    nxt = window[0]
    if nxt.kind == "file_edit":
        return True
    if nxt.kind != "command" or nxt.norm == failed.norm:
        return False
    return bool(_phases(nxt.command or "") & set(ACTION_PHASES))


def window_fails_few_distinct(rule, failed, window, later_shell):
    commands = [a for a in window if a.kind == "command"]
    if not any(a.failed for a in commands):
        return False
    return len({a.norm for a in commands}) <= rule.max_distinct


def always(rule, failed, window, later_shell):
    return True


TESTS: dict[str, Callable[..., Any]] = {
    f.__name__: f
    for f in (
        abort_or_finish,
        stuck_after_soft_timeout,
        same_command_again,
        window_has,
        window_install_with_marker,
        next_differs_in_action_phase,
        window_fails_few_distinct,
        always,
    )
}


def label_failure(actions: Sequence[Action], index: int) -> tuple[int, str]:
    """(rule id, label) for the failed action at `index` of one attempt's actions."""
    size, rules = load_rules()
    failed = actions[index]
    window = actions[index + 1 : index + 1 + size]
    later_shell = any(a.kind == "command" for a in actions[index + 1 :])
    for rule in rules:
        if TESTS[rule.test](rule, failed, window, later_shell):
            return rule.id, rule.label
    raise AssertionError("the last rule always holds")


def label_attempt(
    actions: Sequence[Action], failed_at: Sequence[int] | None = None
) -> list[tuple[int, int, str]]:
    """(index, rule id, label) for every failed command of one attempt. `failed_at`, the
    indices of the failed actions when the caller already knows them, spares a pass."""
    out = []
    # Index of the last shell command, so "any later shell action" is one comparison.
    last_shell = next(
        (i for i in range(len(actions) - 1, -1, -1) if actions[i].kind == "command"), -1
    )
    size, rules = load_rules()
    checks = [(TESTS[rule.test], rule) for rule in rules]  # each rule's test looked up once
    if failed_at is None:
        failed_at = [i for i, a in enumerate(actions) if a.failed]
    for i in failed_at:
        action = actions[i]
        window = actions[i + 1 : i + 1 + size]
        later_shell = last_shell > i
        for test, rule in checks:
            if test(rule, action, window, later_shell):
                out.append((i, rule.id, rule.label))
                break
    return out
