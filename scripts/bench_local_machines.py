"""Benchmark: wall time to provision and to destroy one local machine, base image cached.

Runs the real CLI (Terraform included) several times and prints the medians, and the host's
load average before and after, since on a busy host the figures measure the others too. Not a
test: timings depend on the host. Usage (as root): python scripts/bench_local_machines.py [--runs 7]

Each machine is a systemd-nspawn container in a user namespace (deploybench/local/): of a
provision, nspawn's own start takes about 0.15 s and sshd's inside it a few tens of ms."""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

DEPLOYBENCH = [sys.executable, "-m", "deploybench.cli"]


def timed(*args: str, env: dict) -> float:
    started = time.perf_counter()
    subprocess.run([*DEPLOYBENCH, *args], check=True, env=env, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--image", default="debian12")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "DEPLOYBENCH_HOME": home}
        subprocess.run([*DEPLOYBENCH, "image", "build", opts.image], check=True, env=env)
        up, down = [], []
        load_before = os.getloadavg()[0]
        for i in range(opts.runs):
            up.append(timed("provision", "--machines", "1", "--image", opts.image, env=env))
            down.append(timed("destroy", env=env))
            print(f"run {i + 1}: provision {up[-1]:.2f}s  destroy {down[-1]:.2f}s", flush=True)
        load_after = os.getloadavg()[0]
    print(
        f"median over {opts.runs} runs: provision {statistics.median(up):.2f}s, "
        f"destroy {statistics.median(down):.2f}s "
        f"(load average {load_before:.1f} before, {load_after:.1f} after, {os.cpu_count()} cores)"
    )


if __name__ == "__main__":
    main()
