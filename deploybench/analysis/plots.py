"""The report's plots, drawn with matplotlib (Agg) and embedded as inline SVG, so the HTML page
needs nothing from the network. Our bars are coloured by agent; the paper's are grey."""

from __future__ import annotations

import io
import re

import matplotlib

# The headless backend must be chosen before pyplot is imported, hence the imports below it.
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from deploybench.analysis import recovery  # noqa: E402
from deploybench.analysis.frames import Frames  # noqa: E402
from deploybench.analysis.tables import ALL, Table, paper_figures, pct  # noqa: E402

PAPER_GREY = "#9a9a9a"
plt.rcParams.update(
    {
        "svg.fonttype": "none",  # text stays text: smaller, selectable
        "svg.hashsalt": "deploybench",  # stable ids, so the same data gives the same page
        "font.size": 9,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.axisbelow": True,
    }
)


def _colors(n: int) -> list:
    cmap = plt.get_cmap("tab10")
    return [cmap(i % 10) for i in range(n)]


def _svg(fig, name: str) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    return re.sub(r"<svg ", f'<svg class="plot" data-plot="{name}" role="img" ', text, count=1)


def _legend_below(ax, ncol: int = 4, below: float = 0.32) -> None:
    # Below the tick labels, so the legend never hides a bar.
    ax.legend(
        fontsize=7, frameon=False, ncol=ncol, loc="upper center", bbox_to_anchor=(0.5, -below)
    )


def _bars(ax, frame: pd.DataFrame, colors, hatch_last: int = 0, rotation: int = 30):
    """Grouped bars: rows on the x axis, one bar per column."""
    n = max(len(frame.columns), 1)
    width = 0.8 / n
    x = np.arange(len(frame.index))
    for i, col in enumerate(frame.columns):
        is_paper = i >= n - hatch_last
        ax.bar(
            x + (i - (n - 1) / 2) * width,
            frame[col].fillna(0).to_numpy(dtype=float),
            width,
            label=str(col),
            color=PAPER_GREY if is_paper else colors[i],
            hatch="//" if is_paper else None,
            edgecolor="white",
        )
    ax.set_xticks(
        x, [str(i) for i in frame.index], rotation=rotation, ha="right" if rotation else "center"
    )


def pass_rates(f: Frames, success: Table) -> str:
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [3, 1.3]}
    )
    rates = success.frame.drop(index="pass@k (any attempt)")
    _bars(left, rates, _colors(len(rates.columns)))
    left.set_ylabel("pass rate (%)")
    left.set_ylim(0, 105)
    left.set_title("Pass rate by domain, difficulty and age (first attempt)")
    _legend_below(left)
    paper = paper_figures()["pass_rate"]["models"]
    names = [*rates.columns, *[f"{m} (paper)" for m in paper]]
    values = [*rates.loc["Overall"].fillna(0), *paper.values()]
    colors = [*_colors(len(rates.columns)), *[PAPER_GREY] * len(paper)]
    y = np.arange(len(names))
    right.barh(y, values, color=colors)
    right.set_yticks(y, names)
    right.invert_yaxis()
    right.set_xlim(0, 100)
    right.set_xlabel("overall pass rate (%)")
    right.set_title("Ours beside the paper")
    fig.subplots_adjust(wspace=0.6)
    return _svg(fig, "pass_rate")


def phase_shares(phases: Table) -> str:
    cols = [f"{ALL}, success %", f"{ALL}, failed %"]
    frame = phases.frame.drop(index="sub-commands (n)")[cols].astype(float).fillna(0)
    fig, ax = plt.subplots(figsize=(11, 2.6))
    left = np.zeros(len(cols))
    cmap = plt.get_cmap("tab20")
    for i, phase in enumerate(frame.index):
        values = frame.loc[phase].to_numpy(dtype=float)
        ax.barh(
            ["successful attempts", "failed attempts"],
            values,
            left=left,
            color=cmap(i),
            label=phase,
        )
        for j, v in enumerate(values):
            if v >= 4:
                ax.text(left[j] + v / 2, j, f"{v:.0f}", ha="center", va="center", fontsize=7)
        left += values
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of sub-commands (%)")
    ax.set_title("Phase shares")
    ax.legend(ncol=6, fontsize=7, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.3))
    return _svg(fig, "phases")


def recovery_labels(rec: Table) -> str:
    frame = pd.concat([rec.frame[["success %", "failed %"]], rec.paper], axis=1).reindex(
        list(recovery.LABELS)
    )
    frame.columns = ["ours, success", "ours, failed", "paper, success", "paper, failed"]
    fig, ax = plt.subplots(figsize=(11, 3.2))
    colors = ["#2a9d8f", "#e76f51", "#bfbfbf", "#7f7f7f"]
    n, width = 4, 0.2
    x = np.arange(len(frame.index))
    for i, col in enumerate(frame.columns):
        ax.bar(
            x + (i - 1.5) * width,
            frame[col].fillna(0),
            width,
            label=col,
            color=colors[i],
            hatch="//" if i >= 2 else None,
            edgecolor="white",
        )
    ax.set_xticks(x, frame.index)
    if not (rec.frame["success n"].sum() + rec.frame["failed n"].sum()):
        ax.text(
            0.5,
            0.9,
            "no failed command in these runs: the paper's shares alone",
            transform=ax.transAxes,
            ha="center",
        )
    ax.set_ylabel("share of failed commands (%)")
    ax.set_title("What follows a failed command")
    ax.legend(fontsize=7, frameon=False, ncol=n, loc="upper center", bbox_to_anchor=(0.5, -0.1))
    return _svg(fig, "recovery")


def stops_and_completion(f: Frames, comp: Table) -> str:
    att = f.attempts
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6))
    split = pd.crosstab(att["label"], [att["stop_type"].fillna("unknown"), att["outcome"]])
    split = split.reindex(f.labels).fillna(0)
    bottom = np.zeros(len(split.index))
    cmap = plt.get_cmap("Paired")
    for i, col in enumerate(split.columns):
        values = split[col].to_numpy(dtype=float)
        left.bar(split.index, values, bottom=bottom, color=cmap(i), label=f"{col[0]}, {col[1]}")
        bottom += values
    left.set_ylabel("attempts")
    left.set_title("Stop type and verdict")
    _legend_below(left, 2, below=0.5)
    left.tick_params(axis="x", rotation=30)
    # Shares, not counts, so a run of any size lays beside the paper's 154 failures.
    frame = comp.frame.drop(columns=[ALL]).T.astype(float)
    fig_ = paper_figures()["completion"]
    stops = frame["self-stops among failures"]
    shares = pd.DataFrame(
        {
            "self-stops\n% of failures": pct(stops, frame["failed attempts"]),
            "claimed SUCCESS\n% of self-stops": pct(
                frame["of those, RUNBOOK claimed SUCCESS"], stops
            ),
            "meaningful check\n% of self-stops": pct(
                frame["of those, meaningful check before finishing"], stops
            ),
            "shallow only\n% of self-stops": pct(frame["of those, shallow check only"], stops),
        },
        index=frame.index,
    )
    shares.loc["paper"] = [
        100 * fig_["self_stops"] / fig_["failures"],
        100 * fig_["claimed_success"] / fig_["self_stops"],
        np.nan,
        np.nan,
    ]
    _bars(right, shares.T, _colors(len(shares.index)), hatch_last=1, rotation=0)
    right.set_ylim(0, 105)
    right.set_ylabel("%")
    right.set_title("Completion judgment among failed self-stops")
    right.tick_params(axis="x", labelsize=7)
    _legend_below(right, 2, below=0.2)
    return _svg(fig, "completion")


def tokens_and_time(cost: Table) -> str:
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.4))
    tokens = cost.frame[["avg tokens total, solved", "avg tokens total, failed"]]
    tokens.columns = ["solved", "failed"]
    _bars(left, tokens, ["#2a9d8f", "#e76f51"])
    left.set_ylabel("average tokens per attempt")
    left.set_title("Tokens")
    if tokens.isna().all().all():
        left.set_ylim(0, 1)
        left.text(0.5, 0.5, "no token counts recorded", transform=left.transAxes, ha="center")
    left.legend(fontsize=7, frameon=False)
    minutes = cost.frame[["avg runtime min, solved", "avg runtime min, failed"]]
    minutes.columns = ["solved", "failed"]
    _bars(right, minutes, ["#2a9d8f", "#e76f51"])
    right.set_ylabel("average agent minutes")
    right.set_title("Time")
    right.legend(fontsize=7, frameon=False)
    return _svg(fig, "tokens_time")


def all_plots(f: Frames, tables: dict[str, Table]) -> list[tuple[str, str]]:
    """(caption, inline svg) for every plot of the page."""
    return [
        (
            "Pass rate by domain, difficulty and age; overall beside the paper's models",
            pass_rates(f, tables["1_success"]),
        ),
        (
            "Phase shares of sub-commands, successful vs failed attempts",
            phase_shares(tables["5_phases"]),
        ),
        (
            "Recovery labels after a failed command, ours beside the paper",
            recovery_labels(tables["7_recovery"]),
        ),
        (
            "Stop types with the verdict; completion judgment beside the paper",
            stops_and_completion(f, tables["8_completion"]),
        ),
        ("Tokens and time per attempt, solved vs failed", tokens_and_time(tables["2_cost_time"])),
    ]
