"""Tables to CSV, Markdown and HTML; the paper's figures go beside ours where the rows match."""

from __future__ import annotations

import html
import math
from pathlib import Path

import pandas as pd

from deploybench.analysis.tables import Table


def fmt(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        text = f"{value:.2f}".rstrip("0")
        return text + "0" if text.endswith(".") else text
    return str(value)


def display_frame(table: Table) -> pd.DataFrame:
    """What a reader sees: ours, with the paper's column(s) joined where the rows match."""
    frame = table.frame.copy()
    counts = table.extra.get("counts")
    if isinstance(counts, pd.DataFrame):
        frame = pd.DataFrame(
            {
                c: [_rate(r, n) for r, n in zip(frame[c], counts[c], strict=True)]
                for c in frame.columns
            },
            index=frame.index,
        )
    else:
        frame = frame.map(fmt)
    if paper_joins(table):
        paper = table.paper.reindex(frame.index).map(fmt)
        frame = pd.concat([frame, paper], axis=1)
    return frame


def _rate(rate, count) -> str:
    text = fmt(rate)
    return f"{text} ({count})" if text == "–" else f"{text}% ({count})"


def paper_joins(table: Table) -> bool:
    return table.paper is not None and set(table.paper.index) <= set(table.frame.index)


def markdown(frame: pd.DataFrame) -> str:
    header = ["", *map(str, frame.columns)]
    lines = [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join(["---"] + ["---:"] * len(frame.columns)) + " |",
    ]
    for name, row in frame.iterrows():
        cells = [str(name), *(str(v).replace("|", "\\|") for v in row)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _header(name: str) -> str:
    # A name such as "dependency/package/version" has no space to wrap at: on a phone it made
    # its column as wide as the screen. <wbr> lets it break after each slash.
    return html.escape(name).replace("/", "/<wbr>")


def html_table(frame: pd.DataFrame, paper_columns: int = 0) -> str:
    cols = list(frame.columns)
    first_paper = len(cols) - paper_columns
    head = "".join(
        f"<th{' class=paper' if i >= first_paper else ''}>{_header(str(c))}</th>"
        for i, c in enumerate(cols)
    )
    body = []
    for name, row in frame.iterrows():
        cells = "".join(
            f"<td{_cell_class(i >= first_paper, str(v))}>{html.escape(str(v))}</td>"
            for i, v in enumerate(row)
        )
        body.append(f"<tr><th>{html.escape(str(name))}</th>{cells}</tr>")
    return f"<table><thead><tr><th></th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _cell_class(paper: bool, text: str) -> str:
    # prose (the phase taxonomy's definitions) reads left-aligned and may wrap; figures do not
    classes = ["paper"] * paper + ["text"] * (len(text) > 30 and " " in text)
    return f' class="{" ".join(classes)}"' if classes else ""


def write_csvs(tables: list[Table], out: Path) -> list[Path]:
    folder = out / "tables"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for table in tables:
        path = folder / f"{table.key}.csv"
        table.frame.to_csv(path, index_label="")
        paths.append(path)
        # the same table as Markdown, paper beside ours, for pasting one table alone
        text = f"## {table.title}\n\n{markdown(display_frame(table))}\n"
        (folder / f"{table.key}.md").write_text(text)
        counts = table.extra.get("counts")
        if isinstance(counts, pd.DataFrame):
            counts.to_csv(folder / f"{table.key}_counts.csv", index_label="")
        if table.paper is not None:
            table.paper.to_csv(folder / f"{table.key}_paper.csv", index_label="")
    return paths


def markdown_report(tables: list[Table], notes: list[str], runs: list[str]) -> str:
    parts = ["# DeployBench report", "", "Runs: " + ", ".join(f"`{r}`" for r in runs), ""]
    if notes:
        parts += ["Notes:", *[f"- {n}" for n in notes], ""]
    for table in tables:
        parts += [f"## {table.title}", "", markdown(display_frame(table)), ""]
        if table.note:
            parts += [table.note, ""]
        if table.paper is not None and not paper_joins(table):
            parts += [f"{table.paper_note}:", "", markdown(table.paper.map(fmt)), ""]
        elif table.paper is not None and table.paper_note:
            parts += [f"Grey columns are the paper's ({table.paper_note}).", ""]
    return "\n".join(parts)
