"""The speed target: the report over 1,000 attempts x 200 commands within 10 s (median)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from deploybench.analysis.report import compute
from deploybench.analysis.synthetic import generate

ROOT = Path(__file__).resolve().parents[2]


def test_synthetic_runs_are_in_the_contract_layout(tmp_path):
    run_dir, catalog = generate(tmp_path, n_attempts=12, n_commands=7, n_tasks=3)
    f, _ = compute([run_dir], catalog)
    assert len(f.attempts) == 12
    # 7 commands each, plus the runbook write of a self-stop
    commands = f.events[f.events["kind"] == "command"].groupby("a").size()
    assert set(commands) <= {7, 8} and len(commands) == 12


@pytest.mark.slow
def test_benchmark_median_within_ten_seconds():
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench_report.py"), "--repeat", "3"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    print(run.stdout)
    assert run.returncode == 0, run.stdout + run.stderr
    median = float(re.search(r"median: ([\d.]+) s", run.stdout).group(1))
    assert median <= 10.0
