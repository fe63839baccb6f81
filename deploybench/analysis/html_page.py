"""The one self-contained HTML page: a table of contents, each table with its plot above it,
the paper beside ours, and the task by agent outcome matrix."""

from __future__ import annotations

from pathlib import Path

import jinja2
import pandas as pd

from deploybench.analysis.plots import Plot
from deploybench.analysis.render import display_frame, html_table, paper_joins
from deploybench.analysis.tables import Table

TEMPLATES = Path(__file__).parent  # the .j2 files sit beside the code (package data)
MATRIX_AFTER = "1_success"  # the matrix section follows this table
DIFFICULTY_RANK = {"easy": 0, "medium": 1, "hard": 2}
_SHORT = {
    "runtime_crash": "crash",
    "dependency": "dependency",
    "compilation": "compilation",
    "oom": "out of memory",
    "verifier_timeout": "verifier timeout",
    "task_check": "task check",
    "tampered": "tampered",
    "machine_broken": "machine broken",
}


def _chip(row) -> tuple[str, str, str, str | None]:
    """(text, css class, tooltip, link to its page) of one attempt in the matrix."""
    return (*_looks(row), getattr(row, "href", None) or None)


def _looks(row) -> tuple[str, str, str]:
    n = f"attempt {int(row.attempt)}"
    if row.status == "infra_error":
        return "infra", "infra", f"{n}: infrastructure error (left out of the tables)"
    if pd.notna(row.passed) and bool(row.passed):
        return "pass", "pass", f"{n}: passed"
    layer = None if pd.isna(row.failure_layer) else int(row.failure_layer)
    category = row.failure_category if isinstance(row.failure_category, str) else None
    if layer is None:
        return "fail", "fail", f"{n}: failed (no layer recorded)"
    text = f"L{layer}" + (f" {_SHORT.get(category, category)}" if category else "")
    return (
        text,
        f"fail l{layer}",
        f"{n}: failed at Layer {layer}" + (f", {category}" if category else ""),
    )


def outcome_matrix(every: pd.DataFrame | None, labels: list[str]) -> dict | None:
    """Rows of tasks, a cell per agent + model holding each attempt's outcome in order."""
    if every is None or every.empty:
        return None
    every = every.sort_values(["task_id", "attempt"])
    cells: dict[tuple[str, str], list[tuple[str, str, str, str | None]]] = {}
    for row in every.itertuples(index=False):
        cells.setdefault((row.task_id, row.label), []).append(_chip(row))
    columns = [*labels, *sorted(set(every["label"]) - set(labels))]
    tasks = every.drop_duplicates("task_id")[["task_id", "domain", "difficulty"]]
    rows = []
    for t in tasks.itertuples(index=False):
        rows.append(
            {
                "task": t.task_id,
                "domain": str(t.domain),
                "difficulty": str(t.difficulty),
                "rank": DIFFICULTY_RANK.get(t.difficulty, 3),
                "cells": [cells.get((t.task_id, label), []) for label in columns],
            }
        )
    first = every[every["status"] == "completed"].drop_duplicates(["task_id", "label"])
    totals = [
        f"{int(first[first['label'] == c]['passed'].fillna(False).astype(bool).sum())}"
        f"/{int((first['label'] == c).sum())}"
        for c in columns
    ]
    return {"columns": columns, "rows": rows, "totals": totals}


def render_page(
    tables: list[Table],
    plots: list[Plot],
    notes: list[str],
    runs: list[str],
    labels: list[str],
    attempts: int,
    every: pd.DataFrame | None = None,
) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=jinja2.select_autoescape(["j2"])
    )
    by_table: dict[str, list[Plot]] = {}
    for plot in plots:
        by_table.setdefault(plot.table, []).append(plot)
    items, number = [], 0
    for t in tables:
        joined = paper_joins(t)
        paper_cols = len(t.paper.columns) if joined else 0
        figures = []
        for plot in by_table.get(t.key, []):
            number += 1
            figures.append({"number": number, "plot": plot})
        items.append(
            {
                "key": t.key,
                "title": t.title,
                "note": t.note,
                "figures": figures,
                "html": html_table(display_frame(t), paper_cols),
                "paper_note": t.paper_note,
                "paper_html": html_table(t.paper.map(str), len(t.paper.columns))
                if t.paper is not None and not joined
                else "",
            }
        )
    return env.get_template("report.html.j2").render(
        tables=items,
        notes=notes,
        runs=runs,
        labels=labels,
        attempts=attempts,
        matrix=outcome_matrix(every, labels),
        matrix_after=MATRIX_AFTER,
        plot_count=len(plots),
    )
