"""Benchmark of the harness itself on the local backend, with the `nop` agent (it does nothing,
so what is measured is the pipeline: provisioning, staging, the stop stage, verification,
the verdict, destroy). One command prints the three figures of the harness's speed goals:

  overhead   median over N attempts run one after the other of the attempt's wall time minus
             the agent's and the verifier's time (timing.json, stop.json, verify.json)
  cpu        the controller's CPU seconds per attempt: user + system time of every process of
             the `deploybench run` that ran those N attempts (Python, ansible-playbook and its
             workers, Terraform, ssh), divided by N; the machines' own processes are not
             children of the controller and are not counted
  parallel   the wall time of 4 attempts run with --parallel 4 over that of 1 attempt alone

Goals: overhead <= 5 s, cpu <= 3 s, parallel <= 1.5 (on 2 cores). The load average before and
after is printed, because on a loaded host the wall-time figures mean little.

Usage (as root): python scripts/bench_harness.py [--attempts 5] [--task ID] [--keep DIR]"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOALS = {"overhead": 5.0, "cpu": 3.0, "parallel": 1.5}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(runs: Path, run_id: str, task: str, attempts: int, parallel: int) -> tuple[float, float]:
    """One `deploybench run` of nop attempts: (wall seconds, CPU seconds of its process tree)."""
    env = {**os.environ, "DEPLOYBENCH_RUNS": str(runs)}
    argv = [sys.executable, "-m", "deploybench.cli", "run", "--agent", "nop", "--tasks", task]
    argv += ["--attempts", str(attempts), "--parallel", str(parallel), "--run-id", run_id]
    cpu, wall = _cpu(), time.monotonic()
    subprocess.run(argv, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.monotonic() - wall, _cpu() - cpu


def overheads(run_dir: Path) -> list[float]:
    from deploybench import runfolder

    out = []
    for row in runfolder.ResultsStore(run_dir).load():
        folder = runfolder.attempt_of(run_dir, row)
        wall = runfolder.read_json(folder / runfolder.TIMING)["wall_seconds"]
        out.append(wall - row["agent_seconds"] - row["verify_seconds"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=5, help="sequential attempts (overhead)")
    parser.add_argument("--task", default="legacycalc_demo24")
    parser.add_argument("--keep", type=Path, default=None, help="keep the run folders here")
    opts = parser.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        runs = opts.keep or Path(tmp)
        runs.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%H%M%S")
        _, cpu = run(runs, f"seq-{stamp}", opts.task, opts.attempts, 1)
        spent = overheads(runs / f"seq-{stamp}")
        alone, _ = run(runs, f"one-{stamp}", opts.task, 1, 1)
        four, _ = run(runs, f"four-{stamp}", opts.task, 4, 4)
    figures = {
        "overhead": statistics.median(spent),
        "cpu": cpu / opts.attempts,
        "parallel": four / alone,
    }
    print(
        f"load average before {load_before:.1f}, after {os.getloadavg()[0]:.1f} "
        f"({os.cpu_count()} cores)"
    )
    print(
        f"overhead: median {figures['overhead']:.1f} s over {len(spent)} attempts "
        f"({', '.join(f'{s:.1f}' for s in spent)})"
    )
    print(
        f"cpu: {figures['cpu']:.1f} s of controller CPU per attempt "
        f"({cpu:.1f} s for {opts.attempts})"
    )
    print(
        f"parallel: 4 attempts at --parallel 4 took {four:.1f} s, 1 alone {alone:.1f} s: "
        f"ratio {figures['parallel']:.2f}"
    )
    for name, goal in GOALS.items():
        verdict = "within" if figures[name] <= goal else "OVER"
        print(f"{name}: {figures[name]:.2f} {verdict} the goal of {goal}")
    print(json.dumps({k: round(v, 3) for k, v in figures.items()}))


if __name__ == "__main__":
    main()
