"""pandas frames the tables are computed from: one row per attempt, per event, per
sub-command and per failed command. Rules run once per distinct command string."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import partial
from itertools import chain
from typing import Any

import numpy as np
import pandas as pd

from deploybench import contracts, runfolder
from deploybench.analysis import completion, recovery, recovery_columns
from deploybench.analysis.diagnose import diagnose_by_rules
from deploybench.analysis.load import Runs, _read_if_file
from deploybench.analysis.phases import classify, phase_names
from deploybench.analysis.shell_split import split_subcommands
from deploybench.errors import DeployBenchError

DOMAINS = {"ai_ml": "AI/ML", "scientific": "Scientific", "systems": "Systems"}


@dataclass
class Frames:
    attempts: pd.DataFrame  # completed attempts only, index = row in Runs.results
    events: pd.DataFrame  # events of those attempts, column "a" = attempt index
    subs: pd.DataFrame  # one row per sub-command: a, sub, phase
    failures: pd.DataFrame  # one row per failed command: a, rule, recovery (label)
    labels: list[str]
    notes: list[str]
    # every row of results.jsonl, infra_error included (the page's task x agent matrix):
    # task_id, label, attempt, status, passed, failure_layer, failure_category, domain, difficulty
    every: pd.DataFrame | None = None


def label_of(agent: str, model: str | None) -> str:
    # pandas turns a null model into NaN; only a real name is shown.
    # An agent run with another model (run --model) is named <agent>+<model>: shown once.
    agent = runfolder.agent_of(agent, model)
    return f"{agent} / {model}" if isinstance(model, str) and model else agent


TRUST_WORDS = {
    "host": "from the host (local machines: nothing entered the machine after the agent)",
    "scanned": "through the machine, its disk also scanned from a trusted side",
    "machine": "through the machine's own login, with the controller's tools (the cloud path)",
    None: "by a harness that did not record how (older verdicts)",
}


def trust_note(verdicts) -> str:
    """How the verdicts were obtained (docs/verification.md: the trust model per backend)."""
    counts: dict[str | None, int] = {}
    for verdict in verdicts:
        trust = verdict.get("trust") if isinstance(verdict, dict) else None
        key = trust if trust in TRUST_WORDS else None
        counts[key] = counts.get(key, 0) + 1
    parts = [f"{n} {TRUST_WORDS[k]}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1])]
    return "How the verdicts were obtained: " + ("; ".join(parts) or "no verdicts") + "."


BANK_WORDS = {
    "present": "compared with a variant bank's real runs",
    "none": "with no bank (no result compared with a real run's)",
    "stale": "with a stale bank, unused (inputs drawn, results compared with nothing)",
    "elsewhere": (
        "with a bank made on another machine kind only, unused (inputs drawn, results compared "
        "with nothing)"
    ),
}


def bank_note(verdicts) -> str | None:
    """Whether the verifiers' results were compared with a bank (docs/verification.md: variant
    banks); None when no verdict's verifier drew a variant."""
    counts: dict[str, int] = {}
    for verdict in verdicts:
        bank = verdict.get("bank") if isinstance(verdict, dict) else None
        if bank in BANK_WORDS:
            counts[bank] = counts.get(bank, 0) + 1
    if not counts:
        return None
    parts = [f"{n} {BANK_WORDS[k]}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1])]
    return "Verifier variants: " + "; ".join(parts) + "."


def build(runs: Runs, catalog: dict[str, dict[str, Any]]) -> Frames:
    notes = list(runs.notes)
    if not any(r["status"] == "completed" for r in runs.results):
        raise DeployBenchError("no completed attempts in the runs given")
    att = pd.DataFrame(runs.results)
    att["label"] = [label_of(a, m) for a, m in zip(att["agent"], att["model"], strict=True)]
    # The matrix's columns, and what an attempt's page (attempt_pages.py) says of it.
    shown = ["stop_type", "steps", "tokens_in", "tokens_out", "agent_seconds"]
    every = att[
        ["task_id", "label", "attempt", "status", "passed", "failure_layer", "failure_category"]
        + [c for c in shown if c in att]
    ].copy()
    every["folder"] = [str(d) for d in runs.attempt_dirs]
    att = att[att["status"] == "completed"].copy()
    att["passed"] = att["passed"].fillna(False).astype(bool)
    att["outcome"] = np.where(att["passed"], "success", "failed")
    notes.append(trust_note(runs.verdicts.values()))
    banks = bank_note(runs.verdicts.values())
    if banks:
        notes.append(banks)
    unknown = sorted(set(att["task_id"]) - set(catalog))
    if unknown:
        notes.append(
            f"{len(unknown)} task(s) not in the catalog (domain, difficulty and age unknown): "
            + ", ".join(unknown[:5])
            + (" ..." if len(unknown) > 5 else "")
        )

    def meta(key: str, mapping=None, rows=att):
        def get(task_id: str):
            task = catalog.get(task_id)
            if task is None:
                return "unknown"
            value = task.get(key)
            return mapping.get(value, value) if mapping else value

        return rows["task_id"].map(get)

    att["domain"] = meta("domain", DOMAINS)
    att["difficulty"] = meta("difficulty")
    every["domain"] = meta("domain", DOMAINS, every)
    every["difficulty"] = meta("difficulty", rows=every)
    att["age"] = meta("legacy").map({True: "legacy", False: "recent"}).fillna("unknown")
    for col in ("steps", "tokens_in", "tokens_out", "agent_seconds", "cost_usd"):
        att[col] = pd.to_numeric(att[col], errors="coerce")
    att["tokens_total"] = att["tokens_in"] + att["tokens_out"]

    events = _events(runs.events)
    if not np.isin(events["a"].to_numpy(), att.index.to_numpy()).all():
        events = events[events["a"].isin(att.index)].reset_index(drop=True)
    commands = events[events["kind"] == "command"]
    subs = _subcommands(commands)
    failures = _recovery(events)
    att["completion"] = _completion(att, commands, runs, catalog)
    att["patterns"], att["diagnosis_source"] = _patterns(att, runs)
    labels = sorted(att["label"].unique())
    # Categories: the tables compare these columns with one value at a time, hundreds of
    # thousands of rows once joined onto sub-commands; a category compares as integers.
    att["label"] = att["label"].astype(pd.CategoricalDtype(labels))
    att["outcome"] = att["outcome"].astype(pd.CategoricalDtype(["success", "failed"]))
    return Frames(att, events, subs, failures, labels, notes, every)


def _events(cols: dict[str, list]) -> pd.DataFrame:
    """The events frame from load's column lists, each given its type up front: explicit
    types keep an empty run well-typed, and spare pandas guessing a type for 200,000 cells
    per column (most of the cost of building this frame)."""
    return pd.DataFrame(
        {
            "a": np.array(cols["a"], dtype=np.int64),
            "t": np.array(cols["t"], dtype=np.float64),
            "kind": _category(cols["kind"], contracts.EVENT_KINDS),
            "command": _objects(cols["command"]),
            "exit_code": np.array(cols["exit_code"], dtype=np.float64),  # None -> NaN
            "soft_timeout": np.array(cols["soft_timeout"], dtype=bool),
            "path": _objects(cols["path"]),
        },
        copy=False,
    )


def _category(values: list, categories) -> pd.Categorical:
    """A categorical column from its codes, looked up in a dict: pandas' own factorizing of
    200,000 strings costs several times more (every value here is one of `categories`)."""
    code = {c: i for i, c in enumerate(categories)}
    codes = np.fromiter(map(code.__getitem__, values), dtype=np.int8, count=len(values))
    return pd.Categorical.from_codes(codes, categories=list(categories))


def _objects(values: list) -> pd.Series:
    # object, not pandas' string type: None stays None, and nothing checks 200,000 cells
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return pd.Series(out, dtype=object, copy=False)


def _subcommands(commands: pd.DataFrame) -> pd.DataFrame:
    # Each distinct command is split and its sub-commands classified once (agents repeat
    # themselves); the rows are then its pieces repeated per occurrence, gathered in C
    # (chain over the distinct commands' tuples). Phase is a category: one code per row.
    names = phase_names()
    code = {name: i for i, name in enumerate(names)}
    # Distinct commands numbered in C (factorize); a missing command (-1) splits into nothing.
    which, distinct = pd.factorize(commands["command"].to_numpy(dtype=object))
    which[which < 0] = len(distinct)
    parts = [split_subcommands(t) for t in distinct.tolist()] + [()]
    codes = [tuple(code[classify(p)] for p in pieces) for pieces in parts]
    sizes = np.array([len(p) for p in parts], dtype=np.int64)[which]
    rows = int(sizes.sum())
    which = which.tolist()  # list indexing by Python ints, the fastest gather in chain below
    return pd.DataFrame(
        {
            "a": np.repeat(commands["a"].to_numpy(dtype=np.int64), sizes),
            "sub": _objects(list(chain.from_iterable(map(parts.__getitem__, which)))),
            "phase": pd.Categorical.from_codes(
                np.fromiter(
                    chain.from_iterable(map(codes.__getitem__, which)), dtype=np.int8, count=rows
                ),
                categories=names,
            ),
        }
    )


def _recovery(events: pd.DataFrame) -> pd.DataFrame:
    acts = events[events["kind"].isin(recovery.ACTION_KINDS)]
    exit_code = acts["exit_code"]
    failed = (acts["kind"] == "command") & (
        acts["soft_timeout"] | (exit_code.notna() & (exit_code.fillna(0) != 0))
    )
    # Only attempts with at least one failed command need the (sequential) rules.
    with_failures = set(acts.loc[failed, "a"])
    rows: list[tuple[int, int, str]] = []
    keep = acts["a"].isin(with_failures)
    sub = acts[keep]
    if sub.empty:
        return pd.DataFrame({"a": [], "rule": [], "recovery": []})
    a_col = sub["a"].to_numpy()
    if recovery_columns.supported():
        return _recovery_columns(sub, failed[keep].to_numpy(), a_col)
    # Plain Python values column by column, then one Action per event: far cheaper than
    # testing every cell of every row for NaN (hundreds of thousands of actions).
    codes = _ints_or_none(sub["exit_code"].to_numpy())
    cmds = _none_for_missing(sub["command"].to_numpy(dtype=object))
    paths = _none_for_missing(sub["path"].to_numpy(dtype=object))
    softs = sub["soft_timeout"].tolist()  # a bool column: Python bools
    kinds = sub["kind"].tolist()
    # tuple.__new__ is what Action._make calls, without its Python-level wrapper
    make = partial(tuple.__new__, recovery.Action)
    actions = list(map(make, zip(kinds, cmds, codes, softs, paths, strict=True)))
    bounds = np.flatnonzero(np.diff(a_col)) + 1
    starts = np.concatenate([[0], bounds]).tolist()
    ends = np.concatenate([bounds, [len(a_col)]]).tolist()
    # where the failed commands are, per attempt, from the mask above (not action by action)
    failed_at = np.flatnonzero(failed[keep].to_numpy())
    firsts = np.searchsorted(failed_at, starts).tolist()
    lasts = [*firsts[1:], len(failed_at)]
    for start, end, first, last in zip(starts, ends, firsts, lasts, strict=True):
        a = int(a_col[start])
        where = (failed_at[first:last] - start).tolist()
        labelled = recovery.label_attempt(actions[start:end], where)
        rows += [(a, rule, label) for _, rule, label in labelled]
    return pd.DataFrame(rows, columns=["a", "rule", "recovery"])


def _recovery_columns(sub: pd.DataFrame, failed: np.ndarray, a_col: np.ndarray) -> pd.DataFrame:
    # the same labels as recovery.label_attempt per attempt, computed over whole columns
    kind_code = np.array(
        [recovery_columns.KINDS.get(k, -1) for k in sub["kind"].cat.categories], dtype=np.int64
    )
    kinds = kind_code[sub["kind"].cat.codes.to_numpy()]
    command, distinct = pd.factorize(sub["command"].to_numpy(dtype=object))
    path, paths = pd.factorize(sub["path"].to_numpy(dtype=object))
    names_runbook = np.array([bool(p) and "RUNBOOK" in p.upper() for p in paths] + [False])
    runbook_path = (kinds == recovery_columns.FILE_EDIT) & names_runbook[path]
    at, rule, label = recovery_columns.label_columns(
        kinds,
        command,
        distinct.tolist(),
        sub["soft_timeout"].to_numpy(dtype=bool),
        failed,
        runbook_path,
        a_col,
    )
    labels = np.array(recovery.LABELS, dtype=object)
    return pd.DataFrame({"a": a_col[at], "rule": rule, "recovery": labels[label]})


def _ints_or_none(values: np.ndarray) -> list:
    # float exit codes (NaN where none) as Python ints and None, converted in C
    out = np.empty(len(values), dtype=object)
    known = ~np.isnan(values)
    out[known] = values[known].astype(np.int64)
    return out.tolist()


def _none_for_missing(values: np.ndarray) -> list:
    missing = pd.isna(values)
    if missing.any():
        values = values.copy()
        values[missing] = None
    return values.tolist()


def _completion(att, commands, runs: Runs, catalog) -> pd.Series:
    """'meaningful' / 'shallow' / 'none' for every attempt (the table reads self-stops)."""
    # An attempt's events are contiguous and in order (load reads them so): its commands are
    # one slice of the list.
    texts = commands[commands["command"].notna()]
    attempt = texts["a"].to_numpy()
    texts = texts["command"].tolist()
    cuts = (np.flatnonzero(np.diff(attempt)) + 1).tolist()
    by_attempt = {
        int(attempt[start]): texts[start:end]
        for start, end in zip([0, *cuts], [*cuts, len(texts)], strict=True)
        if start < end
    }
    base: dict[str, list[str]] = {}
    out = {}
    for a, task_id in att["task_id"].items():
        if task_id not in base:
            base[task_id] = completion.entry_points({**catalog.get(task_id, {}), "id": task_id})
        # The verifier's targets differ per attempt (they come from that attempt's verdict).
        targets = completion.verifier_targets(task_id, runs.verdicts.get(a))
        points = base[task_id] + [t for t in targets if t not in base[task_id]]
        out[a] = completion.judge(by_attempt.get(a, []), points)
    return pd.Series(out, dtype=object).reindex(att.index)


def _patterns(att, runs: Runs) -> tuple[pd.Series, pd.Series]:
    """Failure patterns per failed attempt, and which diagnosis gave them: a diagnosis.json
    written by `deploybench diagnose` when there is one (its source: agentic, model:<name> or
    rules), else the same rules `diagnose` runs without a model (the verdict, the verifier's
    stdout and the agent log)."""
    out, source = {}, {}
    for a in att.index[~att["passed"]]:
        folder = runs.attempt_dirs[a]
        saved = _read_if_file(folder / runfolder.DIAGNOSIS)
        if saved is not None:
            record = json.loads(saved)
            out[a] = list(record.get("patterns") or [])
            source[a] = str(record.get("source") or "rules")
        else:
            found = diagnose_by_rules(runs.results[a], runs.verdicts.get(a), folder)
            out[a] = found["patterns"]
            source[a] = "rules"
    return (
        pd.Series(out, dtype=object).reindex(att.index),
        pd.Series(source, dtype=object).reindex(att.index),
    )
