"""The recovery rules (recovery.py) over whole columns of actions at once, for the report.

recovery.label_attempt walks one attempt's actions in Python: a function call per rule per
failed command, a third of a second at 31,000 failed commands. Here each distinct command
string is judged once (its normalised form, its phases, each rule's pattern hits), those
answers are gathered onto every action by index, and each rule's test becomes array
arithmetic over the failed commands and their windows. The first rule that holds wins, as
there. Same rules, same data (recovery_rules.yaml), same answers: the tests compare this with
label_attempt on synthetic, hand-made and real runs; a rule whose test this module does not
know sends the whole run to label_attempt."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from deploybench.analysis import recovery
from deploybench.analysis.phases import ACTION_PHASES

KINDS = {kind: code for code, kind in enumerate(recovery.ACTION_KINDS)}
COMMAND, FILE_READ, FILE_EDIT, FINISH = (KINDS[k] for k in recovery.ACTION_KINDS)
KNOWN_TESTS = {
    "abort_or_finish",
    "stuck_after_soft_timeout",
    "same_command_again",
    "window_has",
    "window_install_with_marker",
    "next_differs_in_action_phase",
    "window_fails_few_distinct",
    "always",
}


def supported() -> bool:
    return all(rule.test in KNOWN_TESTS for rule in recovery.load_rules()[1])


class _Commands:
    """Per distinct command string (index = its number; the last one stands for no command,
    read as "" as recovery.py reads it): what each rule asks of it."""

    def __init__(self, texts: Sequence[str]):
        self.texts = list(texts) + [""]
        norms = [recovery.normalise(t) for t in self.texts]
        number: dict[str, int] = {}
        self.norm = np.array([number.setdefault(n, len(number)) for n in norms], dtype=np.int64)
        self.nonempty = np.array([bool(t) for t in self.texts[:-1]] + [False])
        action_phases = set(ACTION_PHASES)
        phases = [recovery._phases(t) if t else frozenset() for t in self.texts]
        self.action_phase = np.array([bool(p & action_phases) for p in phases])
        self.finish = np.array(["Finish" in p for p in phases])

    def each(self, test) -> np.ndarray:
        return np.array([bool(test(t)) for t in self.texts])


@dataclass(frozen=True)
class _Windows:
    """The failed commands (`at`) and the arrays every rule's test reads: their windows of
    next actions (w_*: kind, command number, is a shell command, a non-empty one, normalised
    text), the first action of each window, and the per-action columns they index."""

    info: _Commands
    at: np.ndarray
    soft: np.ndarray
    failed: np.ndarray
    later_shell: np.ndarray
    valid: np.ndarray
    window: np.ndarray
    w_kind: np.ndarray
    w_cid: np.ndarray
    w_cmd: np.ndarray
    w_nonempty: np.ndarray
    f_norm: np.ndarray
    w_norm: np.ndarray
    first_kind: np.ndarray
    first_cid: np.ndarray
    first_valid: np.ndarray
    runbook_path: np.ndarray
    size: int


def label_columns(
    kind: np.ndarray,
    command: np.ndarray,
    distinct: Sequence[str],
    soft: np.ndarray,
    failed: np.ndarray,
    runbook_path: np.ndarray,
    attempt: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(position, rule id, label index into recovery.LABELS) of every failed command.

    One row per action, attempts contiguous and in order: `kind` codes (KINDS), `command` the
    number of its text in `distinct` (-1: none), `soft` soft timeout, `failed` as Action.failed,
    `runbook_path` a file edit whose path names the runbook, `attempt` the attempt's id."""
    size, rules = recovery.load_rules()
    n = len(kind)
    at = np.flatnonzero(failed)
    if not len(at):
        empty = np.array([], dtype=np.int64)
        return empty, empty, empty
    info = _Commands(distinct)
    cid = np.where(command < 0, len(distinct), command)

    # the end of each action's attempt, and the last shell command of it
    starts = np.flatnonzero(np.r_[True, attempt[1:] != attempt[:-1]])
    ends = np.r_[starts[1:], n]
    end_of = np.repeat(ends, np.diff(np.r_[starts, n]))
    position = np.arange(n)
    last_shell_upto = np.maximum.accumulate(np.where(kind == COMMAND, position, -1))
    last_shell = np.repeat(last_shell_upto[ends - 1], np.diff(np.r_[starts, n]))
    later_shell = last_shell[at] > at

    # window positions of each failed command: k-th next action, or invalid past its attempt
    offsets = np.arange(1, size + 1)
    window = at[:, None] + offsets[None, :]
    valid = window < end_of[at][:, None]
    window = np.where(valid, window, 0)
    w_kind = np.where(valid, kind[window], -1)
    w_cid = cid[window]
    w_cmd = w_kind == COMMAND
    w_nonempty = w_cmd & info.nonempty[w_cid]
    f_norm = info.norm[cid[at]]
    w_norm = info.norm[w_cid]
    first_kind, first_cid, first_valid = w_kind[:, 0], w_cid[:, 0], valid[:, 0]

    out = np.zeros(len(at), dtype=np.int64)
    label_of = np.zeros(len(at), dtype=np.int64)
    windows = _Windows(
        info=info,
        at=at,
        soft=soft,
        failed=failed,
        later_shell=later_shell,
        valid=valid,
        window=window,
        w_kind=w_kind,
        w_cid=w_cid,
        w_cmd=w_cmd,
        w_nonempty=w_nonempty,
        f_norm=f_norm,
        w_norm=w_norm,
        first_kind=first_kind,
        first_cid=first_cid,
        first_valid=first_valid,
        runbook_path=runbook_path,
        size=size,
    )
    done = np.zeros(len(at), dtype=bool)
    for rule in rules:
        todo = ~done
        if not todo.any():
            break
        holds = _holds(rule, windows)
        hit = todo & holds
        done |= hit
        out[hit] = rule.id
        label_of[hit] = recovery.LABELS.index(rule.label)
    return at, out, label_of


def _holds(rule, windows: _Windows) -> np.ndarray:
    w = windows
    info, at, soft, failed, size = w.info, w.at, w.soft, w.failed, w.size
    later_shell, window, runbook_path = w.later_shell, w.window, w.runbook_path
    w_kind, w_cid, w_cmd, w_nonempty = w.w_kind, w.w_cid, w.w_cmd, w.w_nonempty
    f_norm, w_norm = w.f_norm, w.w_norm
    first_kind, first_cid, first_valid = w.first_kind, w.first_cid, w.first_valid
    test = rule.test
    if test == "always":
        return np.ones(len(at), dtype=bool)
    if test == "abort_or_finish":
        patterns = rule.patterns["runbook_write"]
        writes = info.finish & info.each(lambda t: recovery._any_sub(t, patterns) if t else False)
        first_writes = (first_kind == FILE_EDIT) & runbook_path[window[:, 0]]
        first_writes |= (first_kind == COMMAND) & info.nonempty[first_cid] & writes[first_cid]
        return ~later_shell | ~first_valid | (first_kind == FINISH) | (first_valid & first_writes)
    if test == "stuck_after_soft_timeout":
        patterns = rule.patterns["empty_input"]
        empty = info.each(lambda t: any(p.search(t) for p in patterns))
        first = window[:, 0]
        return soft[at] & first_valid & (first_kind == COMMAND) & (soft[first] | empty[first_cid])
    if test == "same_command_again":
        return first_valid & (first_kind == COMMAND) & (w_norm[:, 0] == f_norm)
    if test == "window_has":
        patterns = rule.patterns["subcommand"]
        hit = info.each(lambda t: recovery._any_sub(t, patterns) if t else False)
        found = w_nonempty & hit[w_cid]
        if rule.id == 4:  # a structured file read counts for this rule only, as in recovery.py
            found |= w_kind == FILE_READ
        return found.any(axis=1)
    if test == "window_install_with_marker":
        markers = rule.patterns["marker"]
        hit = info.each(lambda t: recovery._install_with_marker(t, markers) if t else False)
        return (w_nonempty & hit[w_cid]).any(axis=1)
    if test == "next_differs_in_action_phase":
        differs = (first_kind == COMMAND) & (w_norm[:, 0] != f_norm) & info.action_phase[first_cid]
        return first_valid & ((first_kind == FILE_EDIT) | differs)
    if test == "window_fails_few_distinct":
        w_failed = w_cmd & failed[window]
        distinct = np.zeros(len(at), dtype=np.int64)
        for k in range(size):
            seen_before = np.zeros(len(at), dtype=bool)
            for j in range(k):
                seen_before |= w_cmd[:, j] & (w_norm[:, j] == w_norm[:, k])
            distinct += w_cmd[:, k] & ~seen_before
        return w_failed.any(axis=1) & (distinct <= rule.max_distinct)
    raise ValueError(f"rule {rule.id}: test {test!r} has no column form")
