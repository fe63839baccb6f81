"""The report's speed over 1,000 attempts x 200 commands (median of scripts/bench_report.py).

The goal is 2 s ([F2] item 5). On the machine of 2026-12-02 the median was 1.20 s wall and
1.30 s CPU (load 0.8), on an earlier 2-core machine 3.2 to 3.7 s CPU (load 9 to 21): the
machines these tests run on differ by that much, so this test guards against regressions (it
fails above REGRESSION_LIMIT), and scripts/bench_report.py judges the 2 s goal (it prints OVER
and exits 1 there) where it is measured (docs/report.md).

The test judges the CPU time of the report's process: the machines the tests run on are shared
(CI runners, several sessions on two cores), and there the wall-clock time measures the
neighbours as much as the report. On an idle machine the two are the same (one core, no
waiting); scripts/bench_report.py judges wall-clock time by default."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from deploybench.analysis.report import compute
from deploybench.analysis.synthetic import generate, write_run

ROOT = Path(__file__).resolve().parents[2]


def test_synthetic_runs_are_in_the_contract_layout(tmp_path):
    run_dir, catalog = generate(tmp_path, n_attempts=12, n_commands=7, n_tasks=3)
    f, _ = compute([run_dir], catalog)
    assert len(f.attempts) == 12
    # 7 commands each, plus the runbook write of a self-stop
    commands = f.events[f.events["kind"] == "command"].groupby("a").size()
    assert set(commands) <= {7, 8} and len(commands) == 12
    # every attempt has its own folder (agent names are distinct)
    assert len(set(f.attempts.index)) == 12
    assert len(list(run_dir.glob("*/*/*/trajectory.jsonl"))) == 12


def test_synthetic_agents_may_not_share_a_name(tmp_path):
    with pytest.raises(ValueError, match="share folders"):
        write_run(tmp_path / "run", ["t1"], 4, 2, agents=[("a", "m1"), ("a", "m2")])


# The median measured on the development machine was 3.2 to 3.7 s CPU at load 9 to 21 (1,000
# distinct attempts; 4.8 s at load 11 before the fourth round, 6.25 s before the third): a
# report that got markedly slower is over this even on a busy machine.
REGRESSION_LIMIT = 5.0


@pytest.mark.slow
def test_benchmark_median_has_not_regressed():
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "bench_report.py"),
            "--repeat",
            "3",
            "--clock",
            "cpu",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    print(run.stdout)
    wall, cpu = (
        float(x) for x in re.search(r"median: ([\d.]+) s wall, ([\d.]+) s CPU", run.stdout).groups()
    )
    assert cpu <= REGRESSION_LIMIT, f"CPU median {cpu:.2f} s (wall {wall:.2f} s)"
    # The script's own verdict is on the 2 s goal: it says OVER (exit 1) or within (exit 0).
    goal_met = cpu <= 2.0
    assert run.returncode == (0 if goal_met else 1), run.stdout + run.stderr
    assert ("within the 2 s limit" in run.stdout) == goal_met, run.stdout
