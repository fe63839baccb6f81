"""Benchmark: the harness's own overhead per attempt on the local backend, that is the
attempt's wall time minus the agent's and the verifier's time (provisioning, staging, state
collection, fetching, verdict, destroy). Runs the real pipeline; prints the median.

Usage (as root): python scripts/bench_harness_overhead.py [--attempts 5] [--task ID]"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--attempts", type=int, default=5)
    parser.add_argument("--task", default="legacycalc_demo24")
    parser.add_argument("--agent", default="nop")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "DEPLOYBENCH_RUNS": tmp}
        subprocess.run(
            [
                sys.executable,
                "-m",
                "deploybench.cli",
                "run",
                "--agent",
                opts.agent,
                "--tasks",
                opts.task,
                "--attempts",
                str(opts.attempts),
                "--run-id",
                "bench",
            ],
            check=True,
            env=env,
            stdout=subprocess.DEVNULL,
        )
        overheads = []
        for line in (Path(tmp) / "bench/results.jsonl").read_text().splitlines():
            row = json.loads(line)
            folder = Path(tmp) / "bench" / row["task_id"] / row["agent"] / str(row["attempt"])
            wall = json.loads((folder / "timing.json").read_text())["wall_seconds"]
            overhead = wall - row["agent_seconds"] - row["verify_seconds"]
            overheads.append(overhead)
            print(
                f"attempt {row['attempt']}: wall {wall:.1f}s, agent {row['agent_seconds']:.1f}s, "
                f"verify {row['verify_seconds']:.1f}s, overhead {overhead:.1f}s"
            )
    print(
        f"median harness overhead over {len(overheads)} attempts: "
        f"{statistics.median(overheads):.1f}s"
    )


if __name__ == "__main__":
    main()
