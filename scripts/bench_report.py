"""Benchmark of `deploybench report`: synthetic runs of 1,000 attempts x 200 commands, the
report (tables + HTML page) timed several times; prints the median in seconds.

    .venv/bin/python scripts/bench_report.py [--attempts 1000] [--commands 200] [--repeat 5]

Each repetition runs in a fresh process, so no cache of an earlier run helps it."""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from deploybench.analysis.synthetic import generate

LIMIT_SECONDS = 10.0
_ONE = (
    "import sys; from pathlib import Path; from deploybench.analysis.report import write_report;"
    "write_report([Path(sys.argv[1])], Path(sys.argv[3]), Path(sys.argv[2]))"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=1000)
    parser.add_argument("--commands", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        tmp = Path(tmp)
        started = time.perf_counter()
        run_dir, catalog = generate(tmp, args.attempts, args.commands)
        print(
            f"generated {args.attempts} attempts x {args.commands} commands "
            f"in {time.perf_counter() - started:.1f} s"
        )
        times = []
        for i in range(args.repeat):
            out = tmp / f"report{i}"
            started = time.perf_counter()
            subprocess.run(
                [sys.executable, "-c", _ONE, str(run_dir), str(catalog), str(out)], check=True
            )
            times.append(time.perf_counter() - started)
            print(f"run {i + 1}: {times[-1]:.2f} s")
    median = statistics.median(times)
    verdict = "within" if median <= LIMIT_SECONDS else "OVER"
    print(f"median: {median:.2f} s ({verdict} the {LIMIT_SECONDS:.0f} s limit)")
    return 0 if median <= LIMIT_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
