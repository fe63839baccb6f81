"""The one self-contained HTML page: inline SVG plots, tables, the paper beside ours."""

from __future__ import annotations

from pathlib import Path

import jinja2

from deploybench.analysis.render import display_frame, html_table, paper_joins
from deploybench.analysis.tables import Table

TEMPLATES = Path(__file__).parent  # the .j2 files sit beside the code (package data)


def render_page(
    tables: list[Table],
    plots: list[tuple[str, str]],
    notes: list[str],
    runs: list[str],
    labels: list[str],
    attempts: int,
) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=jinja2.select_autoescape(["j2"])
    )
    items = []
    for t in tables:
        joined = paper_joins(t)
        paper_cols = len(t.paper.columns) if joined else 0
        items.append(
            {
                "key": t.key,
                "title": t.title,
                "note": t.note,
                "html": html_table(display_frame(t), paper_cols),
                "paper_note": t.paper_note,
                "paper_html": html_table(t.paper.map(str), len(t.paper.columns))
                if t.paper is not None and not joined
                else "",
            }
        )
    return env.get_template("report.html.j2").render(
        tables=items, plots=plots, notes=notes, runs=runs, labels=labels, attempts=attempts
    )
