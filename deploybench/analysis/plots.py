"""The report's plots as inline SVG written here, so the page needs nothing from the network
and every label has a place of its own: horizontal bars, one row per bar, the group's name on
a row above its bars, the bar's count or share written after its end, and the legend outside
the plot (in the page, above it). Our bars are coloured by agent; the paper's are grey and hatched.

A bar over no attempts is drawn as a dashed empty frame reading "no attempts", never as a bar
of length 0: a 0% bar (a dark stub at the axis with its count, "0% (0/3)") means something else.
The layout is computed from estimated text widths; the browser test measures the real boxes."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

import numpy as np

from deploybench.analysis import recovery
from deploybench.analysis.frames import Frames
from deploybench.analysis.tables import ALL, Table, paper_figures, stop_kinds

AGENT_COLOURS = [
    "#1f77b4",
    "#ff7f0e",
    "#9467bd",
    "#17becf",
    "#8c564b",
    "#e377c2",
    "#bcbd22",
    "#2ca02c",
    "#d62728",
    "#393b79",
]
PAPER_GREY = "#9a9a9a"
SOLVED, FAILED = "#2a9d8f", "#e76f51"
STUB = "#333333"

FONT = 11  # px
CHAR = 7.0  # px per character, a little wider than the widest of the usual sans fonts
ROW = 18  # px per bar
GAP = 7  # px between groups
WIDTH = 420  # px, the plot's natural width (a phone shows it at about 0.8)
MIN_TRACK = 200  # px, the bars' room at the least
NAME_CHARS = 60  # a longer name or title wraps
NO_ATTEMPTS = "no attempts"


@dataclass
class Bar:
    series: str  # key into the plot's legend
    value: float | None  # None: nothing to measure (see `mark`)
    text: str  # written after the bar's end: the count or share with its count
    parts: list[tuple[float, str]] = field(default_factory=list)  # stacked (value, series)
    mark: str = NO_ATTEMPTS  # what an empty frame says when value is None


@dataclass
class Group:
    name: str
    bars: list[Bar]


@dataclass
class Panel:
    title: str
    groups: list[Group]
    top: float  # the axis' end; a bar of this value fills the track
    unit: str = "%"
    note: str = ""  # a line of its own under the title, never over the bars


@dataclass
class Plot:
    key: str  # data-plot name
    table: str  # the table key the plot sits beside
    caption: str
    svg: str
    legend: list[tuple[str, str, bool]]  # (name, colour, hatched)


def _esc(text: str) -> str:
    return html.escape(str(text), quote=True)


def _width(text: str) -> float:
    return len(text) * CHAR


def _wrap(name: str, chars: int = NAME_CHARS) -> list[str]:
    lines, line = [], ""
    for word in name.split():
        if line and len(line) + 1 + len(word) > chars:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    # a single word longer than a line is cut, its full text kept in the <title>
    return [ln if len(ln) <= chars else ln[: chars - 1] + "…" for ln in lines]


def nice_top(value: float) -> float:
    """The axis end: the smallest 1, 2, 4, 6 or 8 x 10^k at or above value (1 for nothing)."""
    if not value or value <= 0 or math.isnan(value):
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    # ends whose quarters are short numbers (the axis has five ticks)
    for step in (1, 2, 4, 6, 8, 10):
        if step * power >= value:
            return float(step * power)
    return float(10 * power)


def _tick(value: float, unit: str) -> str:
    text = f"{value:g}" if value < 1000 else f"{value / 1000:g}k"
    return text + unit


def render_svg(key: str, panels: list[Panel], legend: list[tuple[str, str, bool]]) -> str:
    """One SVG of panels stacked top to bottom. In a panel, each group's name has a row of its
    own with the group's bars under it, so the plot stays narrow enough for a phone."""
    colours = {name: (colour, hatched) for name, colour, hatched in legend}
    texts = [b.text for p in panels for g in p.groups for b in g.bars]
    texts += [b.mark for p in panels for g in p.groups for b in g.bars if b.value is None]
    value_w = max(map(_width, texts), default=0) + 12
    width = max(WIDTH, value_w + MIN_TRACK)
    track = width - value_w
    chars = int(width / CHAR)
    hatch = f"hatch-{key}"
    out = [
        f'<defs><pattern id="{hatch}" width="6" height="6" patternUnits="userSpaceOnUse" '
        f'patternTransform="rotate(45)"><rect width="6" height="6" fill="{PAPER_GREY}"/>'
        '<line x1="0" y1="0" x2="0" y2="6" stroke="#ffffff" stroke-width="2"/></pattern></defs>'
    ]

    def fill(series: str) -> str:
        colour, hatched = colours.get(series, (PAPER_GREY, False))
        return f"url(#{hatch})" if hatched else colour

    y = 0.0
    for panel in panels:
        for line in _wrap(panel.title, chars):
            out.append(
                f'<text class="panel-title" x="0" y="{y + 14:.0f}" font-weight="bold">'
                f"{_esc(line)}</text>"
            )
            y += ROW
        y += 4
        for line in _wrap(panel.note, chars) if panel.note else []:
            out.append(
                f'<text class="note" x="0" y="{y + 12:.0f}" font-style="italic" fill="#555">'
                f"{_esc(line)}</text>"
            )
            y += ROW
        for group in panel.groups:
            out.append(f'<g class="group"><title>{_esc(group.name)}</title>')
            for line in _wrap(group.name, chars):
                out.append(f'<text class="name" x="0" y="{y + 13:.0f}">{_esc(line)}</text>')
                y += ROW
            # light grid lines behind the group's bars (quarters of the axis)
            for k in range(5):
                x = track * k / 4
                out.append(
                    f'<line x1="{x + 0.5:.1f}" y1="{y:.0f}" x2="{x + 0.5:.1f}" '
                    f'y2="{y + len(group.bars) * ROW:.0f}" '
                    f'stroke="{"#999" if k == 0 else "#e3e3e3"}" stroke-width="1"/>'
                )
            for bar in group.bars:
                out.append(_bar(bar, 0.5, y, track, panel.top, fill))
                y += ROW
            out.append("</g>")
            y += GAP
        for k in range(5):  # the axis' tick labels, under the last group
            anchor = "start" if k == 0 else "end" if k == 4 else "middle"
            out.append(
                f'<text class="tick" x="{track * k / 4 + 0.5:.1f}" y="{y + 8:.0f}" '
                f'text-anchor="{anchor}" fill="#666">{_tick(panel.top * k / 4, panel.unit)}</text>'
            )
        y += 30
    return (
        f'<svg class="plot" data-plot="{key}" role="img" xmlns="http://www.w3.org/2000/svg" '
        f'width="{width:.0f}" height="{y:.0f}" viewBox="0 0 {width:.0f} {y:.0f}" '
        f'style="max-width: {width:.0f}px" '
        f'font-size="{FONT}" font-family="Helvetica, Arial, sans-serif">' + "".join(out) + "</svg>"
    )


def _bar(bar: Bar, x0: float, y: float, track: float, top: float, fill) -> str:
    mid = y + 13
    if bar.value is None:
        return (
            f'<g class="bar none"><rect x="{x0 + 1:.1f}" y="{y + 2:.0f}" width="{track - 2:.1f}" '
            f'height="{ROW - 4}" fill="none" stroke="{fill(bar.series)}" stroke-opacity="0.6" '
            'stroke-dasharray="4 3"/>'
            f'<text class="mark" x="{x0 + 6:.1f}" y="{mid:.0f}" font-style="italic" fill="#777">'
            f"{_esc(bar.mark)}</text></g>"
        )
    parts = bar.parts or [(bar.value, bar.series)]
    rects, x = [], x0
    for value, series in parts:
        w = track * min(max(value, 0.0), top) / top if top else 0.0
        if w > 0:
            rects.append(
                f'<rect x="{x:.1f}" y="{y + 2:.0f}" width="{w:.1f}" height="{ROW - 4}" '
                f'fill="{fill(series)}"/>'
            )
        x += w
    if x == x0:
        # zero: a stub on the axis, so the row reads as measured (unlike "no attempts")
        rects.append(
            f'<rect class="zero" x="{x0:.1f}" y="{y + 2:.0f}" width="3" height="{ROW - 4}" '
            f'fill="{STUB if bar.parts else fill(bar.series)}" stroke="{STUB}" '
            'stroke-width="0.5"/>'
        )
        x += 3
    return (
        f'<g class="bar" data-value="{bar.value:g}">{"".join(rects)}'
        f'<text class="value" x="{x + 4:.1f}" y="{mid:.0f}">{_esc(bar.text)}</text></g>'
    )


def _share(rate: float | None, count: int | None, total: int, empty: str = NO_ATTEMPTS) -> Bar:
    """(filled in by the caller's series) a share in % with its count over its total; over
    a total of 0, an empty frame saying `empty`."""
    if not total:
        return Bar("", None, "", mark=empty)
    rate = 0.0 if rate is None or (isinstance(rate, float) and math.isnan(rate)) else rate
    shown = f"{rate:.1f}".rstrip("0").rstrip(".")
    suffix = f" ({count}/{total})" if count is not None else f" ({total})"
    return Bar("", float(rate), f"{shown}%{suffix}")


def _with(bar: Bar, series: str) -> Bar:
    bar.series = series
    return bar


def _agent_legend(labels: list[str]) -> list[tuple[str, str, bool]]:
    return [(label, AGENT_COLOURS[i % len(AGENT_COLOURS)], False) for i, label in enumerate(labels)]


def pass_rates(f: Frames, success: Table) -> Plot:
    rates = success.frame
    counts = success.extra["counts"]
    groups = []
    for row in rates.index:
        bars = []
        for label in f.labels:
            passed, tasks = (int(x) for x in counts.loc[row, label].split("/"))
            bars.append(_with(_share(rates.loc[row, label], passed, tasks), label))
        groups.append(Group(row, bars))
    paper = paper_figures()["pass_rate"]
    beside = [Group(label, [_with(groups[0].bars[i], label)]) for i, label in enumerate(f.labels)]
    beside += [
        Group(f"{model} (paper)", [Bar("paper", float(v), f"{v:g}%")])
        for model, v in paper["models"].items()
    ]
    legend = [*_agent_legend(f.labels), (f"paper ({paper['tasks']} tasks)", PAPER_GREY, True)]
    panels = [
        Panel("Pass rate by domain, difficulty and age (first attempt; pass@k last)", groups, 100),
        Panel("Overall pass rate, ours beside the paper's models", beside, 100),
    ]
    return Plot(
        "pass_rate",
        "1_success",
        "Pass rate in % with passed/tasks after each bar; overall beside the paper's models.",
        render_svg("pass_rate", panels, legend),
        legend,
    )


def phase_shares(f: Frames, phases: Table) -> Plot:
    outcome = f.attempts["outcome"]
    sub_outcome = outcome.reindex(f.subs["a"]).to_numpy()
    order = [p for p in phases.frame.index if p != "sub-commands (n)"]
    groups = []
    totals = {o: int((sub_outcome == o).sum()) for o in ("success", "failed")}
    counts = {
        o: f.subs["phase"][sub_outcome == o].value_counts().reindex(order, fill_value=0)
        for o in ("success", "failed")
    }
    for phase in order:
        bars = []
        for o, series in (("success", "successful attempts"), ("failed", "failed attempts")):
            rate = phases.frame.loc[phase, f"{ALL}, {o} %"]
            bar = _share(rate, None, totals[o], "no sub-commands")
            if bar.value is not None:
                bar.text = f"{bar.text.split(' ')[0]} ({int(counts[o][phase])})"
            bars.append(_with(bar, series))
        groups.append(Group(phase, bars))
    legend = [
        (f"successful attempts ({totals['success']} sub-commands)", SOLVED, False),
        (f"failed attempts ({totals['failed']} sub-commands)", FAILED, False),
    ]
    # the series keys are the legend's names
    for g in groups:
        g.bars[0].series, g.bars[1].series = legend[0][0], legend[1][0]
    return Plot(
        "phases",
        "5_phases",
        "Share of sub-commands in each phase, all agents, with the count after each bar.",
        render_svg(
            "phases",
            [
                Panel(
                    "Phase shares of sub-commands",
                    groups,
                    nice_top(max([b.value or 0 for g in groups for b in g.bars], default=0)),
                )
            ],
            legend,
        ),
        legend,
    )


def recovery_labels(rec: Table) -> Plot:
    frame = rec.frame
    paper = rec.paper
    totals = {o: int(frame[f"{o} n"].sum()) for o in ("success", "failed")}
    names = {
        "success": "ours, successful attempts",
        "failed": "ours, failed attempts",
        "paper success": "paper, successful attempts",
        "paper failed": "paper, failed attempts",
    }
    groups = []
    for label in recovery.LABELS:
        bars = [
            _with(
                _share(
                    frame.loc[label, f"{o} %"],
                    int(frame.loc[label, f"{o} n"]),
                    totals[o],
                    "no failed command",
                ),
                names[o],
            )
            for o in ("success", "failed")
        ]
        for o in ("success", "failed"):
            v = float(paper.loc[label, f"paper {o} %"])
            bars.append(Bar(names[f"paper {o}"], v, f"{v:g}%"))
        groups.append(Group(label, bars))
    note = "" if sum(totals.values()) else "No failed command in these runs: the paper's alone."
    legend = [
        (names["success"], SOLVED, False),
        (names["failed"], FAILED, False),
        (names["paper success"], "#c8c8c8", False),
        (names["paper failed"], PAPER_GREY, True),
    ]
    return Plot(
        "recovery",
        "7_recovery",
        "What follows a failed command: label shares in %, ours (with the count over all failed "
        "commands of that outcome) beside the paper's.",
        render_svg(
            "recovery", [Panel("What follows a failed command", groups, 100, note=note)], legend
        ),
        legend,
    )


def stops_and_completion(f: Frames, comp: Table) -> Plot:
    att = f.attempts
    stop, kinds = stop_kinds(att["stop_type"])
    kinds += ["unknown"] if (stop == "unknown").any() else []
    shown = {
        "self_stop": "self-stop", "timeout": "timeout", "max_steps": "max-step",
        "budget_tokens": "token budget", "budget_cost": "cost budget",
    }  # fmt: skip
    groups, top = [], 0
    for label in f.labels:
        mine = att["label"] == label
        bars = []
        for kind in kinds:
            sel = mine & (stop == kind)
            passed = int((sel & att["passed"]).sum())
            failed = int((sel & ~att["passed"]).sum())
            top = max(top, passed + failed)
            bars.append(
                Bar(
                    "passed",
                    float(passed + failed),
                    f"{shown.get(kind, kind)}: {passed} passed, {failed} failed",
                    [(passed, "passed"), (failed, "failed")],
                )
            )
        groups.append(Group(label, bars))
    stops_panel = Panel("Attempts by stop type, passed and failed", groups, nice_top(top), "")
    # Shares, not counts, so a run of any size lays beside the paper's 154 failures.
    frame = comp.frame
    fig = paper_figures()["completion"]
    stops = "self-stops among failures"
    measures = [
        ("self-stops, % of failed attempts", stops, "failed attempts", "no failed attempt"),
        ("claimed SUCCESS, % of self-stops", "of those, RUNBOOK claimed SUCCESS", stops, ""),
        (
            "meaningful check, % of self-stops",
            "of those, meaningful check before finishing",
            stops,
            "",
        ),
        ("shallow check only, % of self-stops", "of those, shallow check only", stops, ""),
    ]
    paper_values = {
        "self-stops among failures": (fig["self_stops"], fig["failures"]),
        "of those, RUNBOOK claimed SUCCESS": (fig["claimed_success"], fig["self_stops"]),
    }
    judged = []
    for name, row, base, empty in measures:
        bars = []
        for label in f.labels:
            k, n = int(frame.loc[row, label]), int(frame.loc[base, label])
            share = _share(100.0 * k / n if n else None, k, n, empty or "no failed self-stop")
            bars.append(_with(share, label))
        if row in paper_values:
            k, n = paper_values[row]
            bars.append(_with(_share(100.0 * k / n, k, n), "paper"))
        judged.append(Group(name, bars))
    legend = [
        ("passed", SOLVED, False),
        ("failed", FAILED, False),
        *_agent_legend(f.labels),
        ("paper", PAPER_GREY, True),
    ]
    panels = [stops_panel, Panel("Completion judgment among failed self-stops", judged, 100)]
    return Plot(
        "completion",
        "8_completion",
        "Stop types with the verdict (counts); completion judgment in % with its count, "
        "beside the paper's where it published one.",
        render_svg("completion", panels, legend),
        legend,
    )


def _mean_bar(values, series: str, unit: str) -> Bar:
    n = len(values)
    if not n:
        return Bar(series, None, "")
    mean = float(np.nanmean(values)) if np.isfinite(values).any() else math.nan
    if math.isnan(mean):
        return Bar(series, None, "", mark=f"not recorded (n={n})")
    shown = f"{mean / 1000:.1f}k" if unit == "tokens" and mean >= 1000 else f"{mean:.1f}"
    return Bar(series, mean, f"{shown}{' min' if unit == 'min' else ''} (n={n})")


def tokens_and_time(f: Frames, cost: Table) -> Plot:
    att = f.attempts
    panels = []
    for title, col, unit, scale in (
        ("Tokens per attempt (mean)", "tokens_total", "tokens", 1.0),
        ("Agent time per attempt (mean minutes)", "agent_seconds", "min", 1 / 60),
    ):
        groups = []
        for label in cost.frame.index:
            mine = att[att["label"] == label]
            bars = [
                _mean_bar(mine[mine["passed"]][col].to_numpy(float) * scale, "solved", unit),
                _mean_bar(mine[~mine["passed"]][col].to_numpy(float) * scale, "failed", unit),
            ]
            groups.append(Group(label, bars))
        top = nice_top(max([b.value or 0 for g in groups for b in g.bars], default=0))
        panels.append(Panel(title, groups, top, "" if unit == "tokens" else " min"))
    legend = [("solved", SOLVED, False), ("failed", FAILED, False)]
    return Plot(
        "tokens_time",
        "2_cost_time",
        "Tokens and agent time per attempt, solved vs failed, with the number of attempts.",
        render_svg("tokens_time", panels, legend),
        legend,
    )


def all_plots(f: Frames, tables: dict[str, Table]) -> list[Plot]:
    """Every plot of the page, each naming the table it sits beside."""
    return [
        pass_rates(f, tables["1_success"]),
        tokens_and_time(f, tables["2_cost_time"]),
        phase_shares(f, tables["5_phases"]),
        recovery_labels(tables["7_recovery"]),
        stops_and_completion(f, tables["8_completion"]),
    ]
