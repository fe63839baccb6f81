"""Every measurement of docs/measurements.md sections 1 to 9 as a pandas table, one column (or row)
per agent + model. Each table keeps its numbers (for CSV) and the paper's figures where the
paper published them (shown beside ours)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from deploybench.analysis import diagnose, recovery
from deploybench.analysis.frames import Frames
from deploybench.analysis.phases import load_rules, phase_names

PAPER_FILE = Path(__file__).with_name("paper_figures.yaml")
ALL = "all agents"


@dataclass
class Table:
    key: str
    title: str
    frame: pd.DataFrame
    note: str = ""
    paper: pd.DataFrame | None = None
    paper_note: str = ""
    extra: dict[str, object] = field(default_factory=dict)


@cache
def paper_figures(path: Path = PAPER_FILE) -> dict:
    return yaml.safe_load(Path(path).read_text())


def pct(num, den):
    num = np.asarray(num, dtype=float)
    den = np.asarray(den, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, np.round(100.0 * num / den, 1), np.nan)


def _first_attempts(att: pd.DataFrame) -> pd.DataFrame:
    return att.sort_values(["attempt"]).groupby(["label", "task_id"], sort=False).head(1)


def success(f: Frames) -> list[Table]:
    first = _first_attempts(f.attempts)
    groups = [("Overall", None)]
    groups += [(f"Domain: {d}", ("domain", d)) for d in ("AI/ML", "Scientific", "Systems")]
    groups += [(f"Difficulty: {d}", ("difficulty", d)) for d in ("easy", "medium", "hard")]
    groups += [(f"Age: {d}", ("age", d)) for d in ("legacy", "recent")]
    # plain arrays: forty small selections on a pandas frame cost more in overhead than work
    passed = first["passed"].to_numpy(dtype=bool)
    labels = first["label"].to_numpy(dtype=object)
    columns = {key: first[key].to_numpy(dtype=object) for key in ("domain", "difficulty", "age")}
    # pass@k: a task counts when any of its attempts passed.
    any_passed = f.attempts.groupby(["label", "task_id"], observed=True)["passed"].any()
    rate, count = {}, {}
    for label in f.labels:
        mine = labels == label
        r, c = [], []
        for _, sel in groups:
            part = mine if sel is None else mine & (columns[sel[0]] == sel[1])
            n, ok = int(part.sum()), int(passed[part].sum())
            r.append(pct(ok, n).item())
            c.append(f"{ok}/{n}")
        per_task = any_passed[any_passed.index.get_level_values(0) == label]
        r.append(pct(per_task.sum(), len(per_task)).item())
        c.append(f"{int(per_task.sum())}/{len(per_task)}")
        rate[label], count[label] = r, c
    index = [g for g, _ in groups] + ["pass@k (any attempt)"]
    rates = pd.DataFrame(rate, index=index)
    counts = pd.DataFrame(count, index=index)
    fig = paper_figures()["pass_rate"]
    paper = pd.DataFrame(
        {"pass rate %": list(fig["models"].values())}, index=list(fig["models"].keys())
    )
    return [
        Table(
            "1_success",
            "1. Success: pass rate in % (paper Table 2)",
            rates,
            "First attempt per task; pass@k counts a task when any attempt passed "
            "(k = attempts per task).",
            paper,
            f"Paper, overall pass rate over {fig['tasks']} tasks",
            {"counts": counts},
        )
    ]


def uncertainty(f: Frames) -> list[Table]:
    """Each agent's rates with 95% intervals, and the paired differences between agents."""
    from deploybench.analysis import stats

    att = f.attempts
    first = _first_attempts(att)
    per_task = att.groupby(["label", "task_id"], observed=True)["passed"].agg(["size", "sum"])
    k = int(per_task["size"].min()) if len(per_task) else 1
    rows = {}
    for label in f.labels:
        mine = first[first["label"] == label]
        n, ok = len(mine), int(mine["passed"].sum())
        lo, hi = stats.wilson(ok, n)
        tasks = per_task.loc[label] if label in per_task.index.get_level_values(0) else None
        p1 = pk = math.nan
        if tasks is not None and len(tasks):
            p1 = float(np.mean([stats.pass_at_k(int(s), int(c), 1) for s, c in tasks.to_numpy()]))
            pk = float(np.mean([stats.pass_at_k(int(s), int(c), k) for s, c in tasks.to_numpy()]))
        rows[label] = {
            "first attempt %": pct(ok, n).item(),
            "95% interval (Wilson)": f"{100 * lo:.1f} to {100 * hi:.1f}" if n else "-",
            "pass@1 % (mean over attempts)": round(100 * p1, 1),
            f"pass@{k} % (unbiased)": round(100 * pk, 1),
        }
    pairs = {}
    score = first.pivot_table(index="task_id", columns="label", values="passed", aggfunc="first")
    labels = list(f.labels)
    for i, a in enumerate(labels):
        for b in labels[i + 1 :]:
            both = score[[a, b]].dropna()
            mean, lo, hi = stats.paired_bootstrap(
                both[a].astype(float).to_numpy(), both[b].astype(float).to_numpy()
            )
            pairs[f"{a} minus {b}"] = {
                "tasks both ran": len(both),
                "difference in points": round(100 * mean, 1),
                "95% interval (paired bootstrap over tasks)": f"{100 * lo:.1f} to {100 * hi:.1f}"
                if len(both) else "-",
            }  # fmt: skip
    tables = [
        Table(
            "1c_intervals",
            "1c. Pass rates with 95% intervals",
            pd.DataFrame(rows),
            "First attempt per task with its Wilson score interval; pass@1 is the mean over "
            f"each task's attempts; pass@{k} is the unbiased estimator 1 - C(n-c,k)/C(n,k) "
            "(n attempts, c passed) averaged over tasks.",
        )
    ]
    if pairs:
        tables.append(
            Table(
                "1d_differences",
                "1d. Differences between agents (first attempts)",
                pd.DataFrame(pairs),
                "Mean per-task difference in first-attempt success, with a 95% interval from "
                "10,000 resamples of the tasks both agents ran (pairs kept together).",
            )
        )
    return tables


def cost_time(f: Frames) -> list[Table]:
    att = f.attempts
    rows = {}
    for label in f.labels:
        m = att[att["label"] == label]
        row: dict[str, float] = {"attempts": len(m), "avg steps": m["steps"].mean()}
        for part, sel in (("", m), (", solved", m[m["passed"]]), (", failed", m[~m["passed"]])):
            row[f"avg tokens total{part}"] = sel["tokens_total"].mean()
            row[f"avg tokens in{part}"] = sel["tokens_in"].mean()
            row[f"avg tokens out{part}"] = sel["tokens_out"].mean()
        row["avg runtime min (total)"] = m["agent_seconds"].mean() / 60
        row["avg runtime min, solved"] = m[m["passed"]]["agent_seconds"].mean() / 60
        row["avg runtime min, failed"] = m[~m["passed"]]["agent_seconds"].mean() / 60
        row["avg cost USD, reported by the agent"] = m["cost_usd"].mean()
        row["avg cost USD, estimate from --prices"] = m["cost_estimate_usd"].mean()
        rows[label] = row
    frame = pd.DataFrame.from_dict(rows, orient="index").round(2)
    return [
        Table(
            "2_cost_time",
            "2. Cost and time (paper Table 3)",
            frame,
            "Means per attempt; an empty cell is a mean over no attempts. The estimated cost is "
            "tokens x the per-model prices given with --prices (empty without them): an "
            "estimate, since providers bill extras such as cached input differently.",
        )
    ]


FAILURE_ROWS = [
    ("Layer 1: runtime crash", 1, "runtime_crash"),
    ("Layer 1: dependency error", 1, "dependency"),
    ("Layer 1: compilation error", 1, "compilation"),
    ("Layer 1: out of memory", 1, "oom"),
    ("Layer 1 total", 1, None),
    # The verdict puts a verifier that overran its budget at Layer 2 (verification.failure_of).
    ("Layer 2: verifier timeout", 2, "verifier_timeout"),
    ("Layer 2 total", 2, None),
    # Layer 0: the machine could not be judged (docs/verification.md).
    ("Machine tampered by the agent", 0, "tampered"),
    ("Machine broken by the agent", 0, "machine_broken"),
]
_PAPER_FAILURE_ROWS = {
    "Layer 1: runtime crash": "runtime crash",
    "Layer 1: dependency error": "dependency error",
    "Layer 1: compilation error": "compilation error",
    "Layer 1 total": "Layer 1 total",
    "Layer 2 total": "Layer 2 total",
}


def failures(f: Frames) -> list[Table]:
    failed = f.attempts[~f.attempts["passed"]]
    cols = {}
    for label in [*f.labels, ALL]:
        m = failed if label == ALL else failed[failed["label"] == label]
        counts = []
        for _, layer, category in FAILURE_ROWS:
            sel = m["failure_layer"] == layer
            if category:
                sel &= m["failure_category"] == category
            counts.append(int(sel.sum()))
        # the last row is the denominator itself: n failed attempts, 100% when there are any
        cols[f"{label} n"] = [*counts, len(m)]
        cols[f"{label} %"] = pct([*counts, len(m)], len(m))
    index = [r[0] for r in FAILURE_ROWS]
    frame = pd.DataFrame(cols, index=[*index, "failed attempts"])
    fig = paper_figures()["failures"]
    paper_pct = [fig["rows"].get(_PAPER_FAILURE_ROWS.get(r, ""), np.nan) for r in index]
    paper = pd.DataFrame({"paper %": [*paper_pct, 100.0]}, index=[*index, "failed attempts"])
    return [
        Table(
            "3_failures",
            "3. Where failures are caught (paper Table 4)",
            frame,
            "Among failed attempts; % of that column's failed attempts.",
            paper,
            f"{fig['total']} failures",
        )
    ]


def trajectory_length(f: Frames) -> list[Table]:
    att = f.attempts
    commands = f.events[f.events["kind"] == "command"].groupby("a").size()
    subs = f.subs.groupby("a").size()
    steps_from_events = f.events.groupby("a").size()
    rows = {}
    for label in f.labels:
        idx = att.index[att["label"] == label]
        steps = att.loc[idx, "steps"].fillna(steps_from_events.reindex(idx).fillna(0))
        rows[label] = {
            "attempts": len(idx),
            "avg steps": float(steps.mean()),
            "avg shell commands": commands.reindex(idx).fillna(0).mean(),
            "avg sub-commands": subs.reindex(idx).fillna(0).mean(),
        }
    frame = pd.DataFrame.from_dict(rows, orient="index").round(2)
    return [
        Table(
            "4_trajectory_length",
            "4. Trajectory length (paper Table 5)",
            frame,
            "A sub-command is a segment of a shell command split on the top-level &&, || "
            "and ; (pipelines stay whole).",
        )
    ]


def phases(f: Frames) -> list[Table]:
    order = phase_names()
    # Sub-commands counted per (agent, outcome, phase) by one bincount over their codes, each
    # sub-command's agent and outcome looked up by its attempt (a join and ten masks over
    # 280,000 rows cost several times more).
    att = f.attempts
    outcomes = ("success", "failed")
    subs_a = f.subs["a"].to_numpy(dtype=np.int64)
    size = int(max(att.index.max(), subs_a.max(initial=-1)) + 1) if len(att) else 0
    cell = np.full(size, -1, dtype=np.int64)  # attempt -> agent * 2 + outcome
    cell[att.index.to_numpy()] = (
        att["label"].cat.codes.to_numpy().astype(np.int64) * len(outcomes)
        + att["outcome"].cat.codes.to_numpy()
    )
    mine = cell[subs_a] if size else np.array([], dtype=np.int64)
    known = mine >= 0
    phase = f.subs["phase"].cat.codes.to_numpy().astype(np.int64)
    grid = np.bincount(
        mine[known] * len(order) + phase[known],
        minlength=len(f.labels) * len(outcomes) * len(order),
    ).reshape(len(f.labels), len(outcomes), len(order))
    cols = {}
    for o, outcome in enumerate(outcomes):
        cols[f"{ALL}, {outcome} %"] = grid[:, o, :].sum(axis=0)
    for n, label in enumerate(f.labels):
        for o, outcome in enumerate(outcomes):
            cols[f"{label}, {outcome} %"] = grid[n, o, :]
    counts = pd.DataFrame(cols, index=order).fillna(0).astype(int)
    shares = counts.apply(lambda c: pd.Series(pct(c, c.sum()), index=c.index)).astype(object)
    # the count row stays integer beside the float shares
    shares.loc["sub-commands (n)"] = [int(v) for v in counts.sum()]
    taxonomy = pd.DataFrame(
        {"what it covers": [p.doc for p in load_rules()] + ["no phase rule matched"]},
        index=order,
    )
    return [
        Table(
            "5_phase_taxonomy",
            "5. The phases of a sub-command (paper Table 10)",
            taxonomy,
            "Rules: deploybench/analysis/phase_rules.yaml (first match wins).",
        ),
        Table(
            "5_phases",
            "5b. Phases: share of sub-commands in %, by outcome (paper Table 11)",
            shares,
            "Rules: deploybench/analysis/phase_rules.yaml (first match wins).",
        ),
    ]


def tool_use(f: Frames) -> list[Table]:
    ev = f.events
    att = f.attempts
    # Counts per attempt and event kind by one bincount over (attempt, kind code): a crosstab
    # of 200,000 events costs ten times more. Rows are results rows, so att.index picks ours.
    kinds = list(ev["kind"].cat.categories)
    a = ev["a"].to_numpy()
    size = int(max(a.max(initial=-1), att.index.max()) + 1) if len(att) else 0
    cells = np.bincount(
        a * len(kinds) + ev["kind"].cat.codes.to_numpy(), minlength=size * len(kinds)
    )
    by_kind = dict(zip(kinds, cells.reshape(size, len(kinds)).T, strict=True))
    command = ev["kind"].cat.codes.to_numpy() == kinds.index("command")  # codes, not strings
    commands = ev[command]
    # a heredoc (`<<`, not a here-string `<<<`), judged once per distinct command (numbered
    # by factorize; a missing command, -1, picks the False appended last)
    which, texts = pd.factorize(commands["command"].to_numpy(dtype=object))
    heredoc = np.array(
        [isinstance(t, str) and "<<" in t and "<<<" not in t for t in texts] + [False]
    )
    heredoc_attempts = set(commands["a"].to_numpy()[heredoc[which]].tolist())
    soft = np.bincount(a[command], weights=commands["soft_timeout"].to_numpy(), minlength=size)
    events_n = np.bincount(a, minlength=size)
    signals, endings = {}, {}
    for label in f.labels:
        idx = att.index[att["label"] == label]
        k = {kind: counts[idx] for kind, counts in by_kind.items()}
        signals[label] = {
            "attempts": len(idx),
            "used the task tracker": int((k["task_tracker"] > 0).sum()),
            "structured file actions": int(((k["file_read"] + k["file_edit"]) > 0).sum()),
            "contain a heredoc": len(heredoc_attempts & set(idx)),
        }
        endings[label] = {
            "attempts": len(idx),
            "soft timeouts / commands %": pct(soft[idx].sum(), k["command"].sum()).item(),
            "ended by the step limit": int((att.loc[idx, "stop_type"] == "max_steps").sum()),
            "message share of events %": pct(k["message"].sum(), events_n[idx].sum()).item(),
        }
    return [
        Table(
            "6_tool_use",
            "6. Tool-use signals: attempts with each (paper Table 12)",
            pd.DataFrame.from_dict(signals, orient="index"),
        ),
        Table(
            "6_waits_and_limits",
            "6b. Soft timeouts, step limits and messages (paper Table 13)",
            pd.DataFrame.from_dict(endings, orient="index"),
        ),
    ]


def recovery_tables(f: Frames) -> list[Table]:
    fl = f.failures.join(f.attempts[["label", "outcome"]], on="a")
    labels = list(recovery.LABELS)
    cols = {}
    for outcome in ("success", "failed"):
        part = fl[fl["outcome"] == outcome]["recovery"].value_counts().reindex(labels, fill_value=0)
        cols[f"{outcome} %"] = pct(part, part.sum())
        cols[f"{outcome} n"] = part.to_numpy()
    shares = pd.DataFrame(cols, index=labels)
    fig = paper_figures()["recovery"]
    paper = pd.DataFrame(
        {
            "paper success %": [fig["success"][k] for k in labels],
            "paper failed %": [fig["failed"][k] for k in labels],
        },
        index=labels,
    )
    per_agent = pd.DataFrame(
        {
            f"{label}, {outcome}": fl[(fl["label"] == label) & (fl["outcome"] == outcome)][
                "recovery"
            ]
            .value_counts()
            .reindex(labels, fill_value=0)
            for label in f.labels
            for outcome in ("success", "failed")
        },
        index=labels,
    ).astype(int)
    by_rule = fl.groupby("rule").size().reindex(range(1, 10), fill_value=0)
    by_rule = by_rule.rename("failed commands")
    rules = {r.id: f"{r.id}. {r.label}: {r.doc}" for r in recovery.load_rules()[1]}
    by_rule.index = [rules[i] for i in by_rule.index]
    return [
        Table(
            "7_recovery",
            "7. Recovery after a failed command: label shares by outcome (paper Tables 6, 14-16)",
            shares,
            "A failed command has a non-zero exit code or a soft timeout; rules: "
            "deploybench/analysis/recovery_rules.yaml.",
            paper,
            "published figures",
        ),
        Table(
            "7_recovery_per_agent",
            "7b. Recovery labels per agent and outcome, counts (paper Tables 14-16)",
            per_agent,
        ),
        Table(
            "7_recovery_rules", "7c. Which rule labelled each failed command", by_rule.to_frame()
        ),
    ]


STOP_TYPES = ("self_stop", "timeout", "max_steps")
# A budget stop (the gateway refused calls past the spec's token or cost cap) is the agent's;
# shown only in runs that have one.
BUDGET_STOPS = ("budget_tokens", "budget_cost")


def stop_kinds(stop_type: pd.Series) -> tuple[pd.Series, list[str]]:
    """Each attempt's stop type as shown (unknown ones named so) and the kinds to show."""
    known = (*STOP_TYPES, *BUDGET_STOPS)
    stop = stop_type.where(stop_type.isin(known), "unknown")
    kinds = [s for s in known if s in STOP_TYPES or (stop == s).any()]
    return stop, kinds


def completion_tables(f: Frames) -> list[Table]:
    att = f.attempts
    rows = {}
    for label in [*f.labels, ALL]:
        m = att if label == ALL else att[att["label"] == label]
        failed = m[~m["passed"]]
        stops = failed[failed["stop_type"] == "self_stop"]
        rows[label] = {
            "failed attempts": len(failed),
            "self-stops among failures": len(stops),
            "of those, RUNBOOK claimed SUCCESS": int((stops["runbook_status"] == "SUCCESS").sum()),
            "of those, RUNBOOK said PARTIAL": int((stops["runbook_status"] == "PARTIAL").sum()),
            "of those, meaningful check before finishing": int(
                (stops["completion"] == "meaningful").sum()
            ),
            "of those, shallow check only": int((stops["completion"] == "shallow").sum()),
            "of those, no command at all": int((stops["completion"] == "none").sum()),
        }
    frame = pd.DataFrame(rows)
    fig = paper_figures()["completion"]
    paper = pd.DataFrame(
        {
            "paper": [
                fig["failures"],
                fig["self_stops"],
                fig["claimed_success"],
                *[None] * (len(frame) - 3),
            ]
        },
        index=frame.index,
        dtype=object,
    )
    stop, kinds = stop_kinds(att["stop_type"])
    split = pd.DataFrame(
        {
            label: [
                int(((att["label"] == label) & (stop == s) & (att["outcome"] == o)).sum())
                for s in (*kinds, "unknown")
                for o in ("success", "failed")
            ]
            for label in f.labels
        },
        index=[f"{s}, {o}" for s in (*kinds, "unknown") for o in ("success", "failed")],
    )
    return [
        Table(
            "8_completion",
            "8. Completion judgment among failed self-stops (paper Table 7)",
            frame,
            "Meaningful: the last command before finishing (runbook writes aside) runs one of "
            "the task's entry points (task.yaml entry_points, else its designated experiment, "
            "plus the verifier's targets); shallow otherwise.",
            paper,
            "published figures",
        ),
        Table("8_stop_types", "8b. Verdict by stop type (paper Table 17)", split),
    ]


def failure_patterns(f: Frames) -> list[Table]:
    att = f.attempts
    rows = [
        {"task_id": t, "passed": p, "patterns": pats if isinstance(pats, list) else []}
        for t, p, pats in zip(att["task_id"], att["passed"], att["patterns"], strict=True)
    ]
    frame = pd.DataFrame(diagnose.table9(rows)).set_index("group")
    frame.index.name = None
    return [
        Table(
            "9_failure_patterns",
            "9. Failure patterns by task group (paper Table 9)",
            frame,
            "Tasks hitting each pattern; diagnosis.json from `deploybench diagnose` where "
            "present, else the rules over the verdict. Diagnoses of the failed attempts: "
            + _diagnosis_sources(att)
            + ".",
        )
    ]


def _diagnosis_sources(att: pd.DataFrame) -> str:
    """How the failed attempts were diagnosed, by kind: agentic (a diagnostic agent on the kept
    machine), one model call, or the rules alone."""
    sources = att.loc[~att["passed"], "diagnosis_source"].dropna().astype(str)
    kinds = sources.map(lambda s: "one model call" if s.startswith("model:") else s)
    counts = kinds.value_counts()
    return ", ".join(f"{kind} {n}" for kind, n in counts.items()) or "none"


def all_tables(f: Frames) -> list[Table]:
    out: list[Table] = []
    for build in (
        success,
        uncertainty,
        cost_time,
        failures,
        trajectory_length,
        phases,
        tool_use,
        recovery_tables,
        completion_tables,
        failure_patterns,
    ):
        out += build(f)
    return out
