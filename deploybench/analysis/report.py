"""`deploybench report`: run folders in, every table (CSV + Markdown) and one HTML page out."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from deploybench.analysis import (
    attempt_pages,
    frames,
    html_page,
    plots,
    render,
    tables,
    token_prices,
)
from deploybench.analysis.load import load_runs
from deploybench.catalog import load_tasks
from deploybench.paths import TASKS_DIR


@dataclass
class ReportResult:
    out: Path
    tables: list[tables.Table]
    markdown: Path
    html: Path
    csvs: list[Path]
    notes: list[str]


@contextmanager
def _no_cycle_collection():
    """The report builds millions of small objects (events, rows, actions) that live until it
    ends and hold no reference cycles; the cyclic collector would walk all of them again at
    every generation-2 pass, a quarter of the report's time at 200,000 events. Reference
    counting still frees everything; the collector comes back on when the report is done."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def compute(
    run_dirs: list[Path],
    catalog_dir: Path | None = None,
    prices: Path | None = None,
    allow_mixed: bool = False,
):
    """(frames, tables) for the runs; the catalog gives domain, difficulty, age, entry points;
    `prices` (a token price table) gives the estimated money cost per attempt."""
    catalog_dir = Path(catalog_dir) if catalog_dir else TASKS_DIR
    catalog = load_tasks(catalog_dir) if catalog_dir.is_dir() else {}
    price_table = token_prices.load(prices) if prices else {}
    runs = load_runs([Path(r) for r in run_dirs], allow_mixed)
    f = frames.build(runs, catalog)
    f.attempts["cost_estimate_usd"] = token_prices.estimate(f.attempts, price_table)
    return f, tables.all_tables(f)


def write_report(
    run_dirs: list[Path],
    out: Path,
    catalog_dir: Path | None = None,
    with_html: bool = True,
    prices: Path | None = None,
    allow_mixed: bool = False,
) -> ReportResult:
    with _no_cycle_collection():
        return _write_report(run_dirs, out, catalog_dir, with_html, prices, allow_mixed)


def _write_report(run_dirs, out, catalog_dir, with_html, prices, allow_mixed) -> ReportResult:
    f, all_tables = compute(run_dirs, catalog_dir, prices, allow_mixed)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    names = [str(r) for r in run_dirs]
    csvs = render.write_csvs(all_tables, out)
    md = out / "report.md"
    md.write_text(render.markdown_report(all_tables, f.notes, names))
    page = out / "report.html"
    if with_html:
        if f.every is not None:
            f.every["href"] = attempt_pages.write(
                out, f.every.astype(object).where(f.every.notna(), None).to_dict("records")
            )
        by_key = {t.key: t for t in all_tables}
        page.write_text(
            html_page.render_page(
                all_tables,
                plots.all_plots(f, by_key),
                f.notes,
                names,
                f.labels,
                len(f.attempts),
                f.every,
            )
        )
    return ReportResult(out, all_tables, md, page, csvs, f.notes)
