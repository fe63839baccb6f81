"""The uncertainty of the report's rates: 51 tasks leave wide intervals, and a difference
between two agents means little without one.

- wilson: the 95% Wilson score interval of one proportion (k of n);
- pass_at_k: the unbiased estimator of pass@k from n attempts of which c passed,
  1 - C(n-c, k) / C(n, k) (pass@1 is then the mean over attempts);
- paired_bootstrap: a 95% interval of the mean difference between two agents over the tasks
  both ran, resampling tasks (the pairs stay together)."""

from __future__ import annotations

import math

import numpy as np

Z95 = 1.959963984540054


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    if n <= 0:
        return (math.nan, math.nan)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def pass_at_k(n: int, c: int, k: int) -> float:
    if not 0 <= c <= n or k < 1 or k > n:
        raise ValueError(f"pass@{k} needs 1 <= k <= n and 0 <= c <= n (n={n}, c={c})")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def paired_bootstrap(
    a: np.ndarray, b: np.ndarray, draws: int = 10_000, seed: int = 0
) -> tuple[float, float, float]:
    """(mean of a - b, low, high): per-task scores of two agents on the same tasks."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.size == 0:
        return (math.nan, math.nan, math.nan)
    diff = a - b
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, diff.size, size=(draws, diff.size))].mean(axis=1)
    low, high = np.quantile(means, [0.025, 0.975])
    return (float(diff.mean()), float(low), float(high))
