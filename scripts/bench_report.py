"""Benchmark of `deploybench report`: synthetic runs of 1,000 attempts x 200 commands, the
report (tables + HTML page) timed several times; prints the median in seconds, both wall-clock
and CPU (user + system) of the report's process.

    .venv/bin/python scripts/bench_report.py [--attempts 1000] [--commands 200] [--repeat 5]
                                             [--clock wall|cpu] [--limit 2]

Each repetition runs in a fresh process, so no cache of an earlier run helps it. The verdict
is on wall-clock time by default; `--clock cpu` judges the CPU time instead, which other work
on a shared machine barely moves (the report uses one core)."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from deploybench.analysis.synthetic import generate

LIMIT_SECONDS = 2.0
_ONE = (
    "import sys; from pathlib import Path; from deploybench.analysis.report import write_report;"
    "write_report([Path(sys.argv[1])], Path(sys.argv[3]), Path(sys.argv[2]))"
)


def _children_cpu() -> float:
    usage = os.times()
    return usage.children_user + usage.children_system


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=1000)
    parser.add_argument("--commands", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    parser.add_argument("--limit", type=float, default=LIMIT_SECONDS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        tmp = Path(tmp)
        started = time.perf_counter()
        run_dir, catalog = generate(tmp, args.attempts, args.commands)
        print(
            f"generated {args.attempts} attempts x {args.commands} commands "
            f"in {time.perf_counter() - started:.1f} s"
        )
        walls, cpus = [], []
        for i in range(args.repeat):
            out = tmp / f"report{i}"
            cpu0, started = _children_cpu(), time.perf_counter()
            subprocess.run(
                [sys.executable, "-c", _ONE, str(run_dir), str(catalog), str(out)], check=True
            )
            walls.append(time.perf_counter() - started)
            cpus.append(_children_cpu() - cpu0)
            print(f"run {i + 1}: {walls[-1]:.2f} s wall, {cpus[-1]:.2f} s CPU")
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    judged = wall if args.clock == "wall" else cpu
    verdict = "within" if judged <= args.limit else "OVER"
    print(f"median: {wall:.2f} s wall, {cpu:.2f} s CPU")
    print(f"{args.clock} median {judged:.2f} s: {verdict} the {args.limit:g} s limit")
    return 0 if judged <= args.limit else 1


if __name__ == "__main__":
    sys.exit(main())
