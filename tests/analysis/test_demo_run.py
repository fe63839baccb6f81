"""The report over a real `make demo` run folder (tests/analysis/fixtures/demo_run) with the
checkout's task catalog: every table and the page, and the numbers one can count by hand from
its results.jsonl and trajectories."""

from pathlib import Path

import pandas as pd
from click.testing import CliRunner

from deploybench.commands.report import report

DEMO = Path(__file__).parent / "fixtures" / "demo_run"


def test_report_over_the_demo_run(tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(report, [str(DEMO), "--out", str(out)])
    assert result.exit_code == 0, result.output
    tables = sorted(p.name for p in (out / "tables").glob("[0-9]_*.csv"))
    keys = [
        "1_success",
        "2_cost_time",
        "3_failures",
        "4_trajectory_length",
        "5_phase_taxonomy",
        "5_phases",
        "6_tool_use",
        "6_waits_and_limits",
        "7_recovery",
        "7_recovery_per_agent",
        "7_recovery_rules",
        "8_completion",
        "8_stop_types",
        "9_failure_patterns",
    ]
    assert set(tables) >= {f"{k}.csv" for k in keys}
    md = (out / "report.md").read_text()
    # results.jsonl: the reference passes all three tasks; nop and overclaim pass nothing
    assert "| Overall | 0.0% (0/3) | 0.0% (0/3) | 100.0% (3/3) |" in md
    # legacycalc and kvservice are systems tasks, tinytrain is AI/ML
    assert "| Domain: Systems | 0.0% (0/2) | 0.0% (0/2) | 100.0% (2/2) |" in md
    assert "| Domain: AI/ML | 0.0% (0/1) | 0.0% (0/1) | 100.0% (1/1) |" in md
    # the 6 failures (nop, overclaim) are all caught by Layer 1 as dependency errors
    assert "| Layer 1: dependency error | 3 | 100.0 | 3 | 100.0 | 0 | – | 6 | 100.0 | 17.5 |" in md
    # overclaim: 3 failed self-stops, each RUNBOOK says SUCCESS after a shallow check; nop
    # sends no command at all
    assert "| of those, RUNBOOK claimed SUCCESS | 0 | 3 | 0 | 3 | 55 |" in md
    assert "| of those, shallow check only | 0 | 3 | 0 | 3 | – |" in md
    assert "| of those, no command at all | 3 | 0 | 0 | 3 | – |" in md
    # the reference's trajectories: 11, 8 and 11 commands (ansible steps and shell commands)
    steps = pd.read_csv(out / "tables" / "4_trajectory_length.csv", index_col=0)
    assert steps.loc["reference", "avg shell commands"] == (11 + 8 + 11) / 3
    page = (out / "report.html").read_text()
    assert page.count('<svg class="plot"') == 5
