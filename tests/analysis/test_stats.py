"""The report's intervals against values computed by hand."""

import math

import numpy as np
import pytest

from deploybench.analysis import stats


def test_wilson_of_26_of_51():
    # p = 0.5098, z = 1.96: centre (p + z²/2n)/(1 + z²/n) = 0.5091, half-width 0.1320.
    lo, hi = stats.wilson(26, 51)
    assert (round(lo, 3), round(hi, 3)) == (0.377, 0.641)
    assert stats.wilson(0, 10)[0] == pytest.approx(0.0, abs=1e-12)
    assert stats.wilson(10, 10)[1] == pytest.approx(1.0)
    assert all(math.isnan(x) for x in stats.wilson(0, 0))


@pytest.mark.parametrize(
    ("n", "c", "k", "want"),
    [(3, 1, 1, 1 / 3), (3, 1, 3, 1.0), (3, 0, 3, 0.0), (5, 2, 2, 1 - 3 / 10), (4, 4, 1, 1.0)],
)
def test_pass_at_k_unbiased(n, c, k, want):
    assert stats.pass_at_k(n, c, k) == pytest.approx(want)


def test_pass_at_k_refuses_nonsense():
    with pytest.raises(ValueError):
        stats.pass_at_k(2, 3, 1)
    with pytest.raises(ValueError):
        stats.pass_at_k(2, 1, 3)


def test_paired_bootstrap_centres_on_the_mean_difference():
    a = np.array([1, 1, 1, 0, 1, 0, 1, 1, 0, 1] * 5)
    b = np.array([0, 1, 0, 0, 1, 0, 0, 1, 0, 0] * 5)
    mean, lo, hi = stats.paired_bootstrap(a, b)
    assert mean == pytest.approx(0.4)
    assert lo < 0.4 < hi and lo > 0.2 and hi < 0.6
    same = stats.paired_bootstrap(a, a)
    assert same == (0.0, 0.0, 0.0)
    assert all(math.isnan(x) for x in stats.paired_bootstrap(np.array([]), np.array([])))
