"""Statistics against reference values computed independently of scipy and of the code under test."""

from __future__ import annotations

import itertools
import math

import pytest

from pytest_burnperf.core.judging import stats


def _exact_greater_p(x: list[float], y: list[float]) -> float:
    """P(U >= u_obs) under H0 by enumerating every assignment of ranks (no ties allowed)."""
    pooled = sorted(x + y)
    rank = {v: i + 1 for i, v in enumerate(pooled)}
    n = len(x)
    r_obs = sum(rank[v] for v in x)
    ranks = range(1, len(pooled) + 1)
    total = hits = 0
    for combo in itertools.combinations(ranks, n):
        total += 1
        hits += sum(combo) >= r_obs
    return hits / total


@pytest.mark.parametrize(
    ("x", "y"),
    [
        ([1.1, 2.2, 3.3], [0.5, 0.6, 0.7, 0.8]),
        ([5.0, 6.0, 7.0, 8.5, 1.0], [2.0, 3.0, 4.0, 4.5]),
        ([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]),
        ([3.1, 0.2, 4.4, 2.9, 5.5, 6.1], [1.5, 2.5, 3.5, 0.9, 4.1]),
    ],
)
def test_mann_whitney_exact_matches_enumeration(x: list[float], y: list[float]) -> None:
    assert stats.mann_whitney_greater(x, y) == pytest.approx(_exact_greater_p(x, y), rel=1e-9)


def test_mann_whitney_textbook_example() -> None:
    # Complete separation, n = m = 4: only 1 of C(8, 4) = 70 arrangements is as extreme.
    x = [10.0, 11.0, 12.0, 13.0]
    y = [1.0, 2.0, 3.0, 4.0]
    assert stats.mann_whitney_greater(x, y) == pytest.approx(1 / 70)
    assert stats.mann_whitney_greater(y, x) == pytest.approx(1.0)


def _normal_greater_p_with_ties(x: list[float], y: list[float]) -> float:
    """Normal approximation with tie and continuity correction, written from the textbook formula."""
    n, m = len(x), len(y)
    pooled = sorted(x + y)
    # average ranks
    ranks: dict[float, float] = {}
    i = 0
    ties = []
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1] == pooled[i]:
            j += 1
        ranks[pooled[i]] = (i + j + 2) / 2
        ties.append(j - i + 1)
        i = j + 1
    u = sum(ranks[v] for v in x) - n * (n + 1) / 2
    mu = n * m / 2
    N = n + m
    sigma = math.sqrt(n * m / 12 * ((N + 1) - sum(t**3 - t for t in ties) / (N * (N - 1))))
    z = (u - mu - 0.5) / sigma
    return 0.5 * math.erfc(z / math.sqrt(2))


def test_mann_whitney_ties_use_corrected_normal_approximation() -> None:
    x = [3.0, 3.0, 4.0, 5.0, 5.0, 6.0, 7.0, 7.0, 8.0, 9.0]
    y = [1.0, 2.0, 3.0, 3.0, 4.0, 4.0, 5.0, 6.0, 6.0, 7.0]
    assert stats.mann_whitney_greater(x, y) == pytest.approx(
        _normal_greater_p_with_ties(x, y), rel=1e-9
    )


@pytest.mark.parametrize(
    ("n", "m", "expected"), [(3, 3, 1 / 20), (5, 5, 1 / 252), (2, 20, 1 / 231)]
)
def test_min_attainable_p(n: int, m: int, expected: float) -> None:
    assert stats.min_attainable_p(n, m) == pytest.approx(expected)
    assert stats.min_attainable_p(0, 5) == 1.0


def test_summary_by_hand() -> None:
    s = stats.summarize([4.0, 1.0, 3.0, 2.0, 5.0])
    assert (s.n, s.median, s.mean, s.min, s.max) == (5, 3.0, 3.0, 1.0, 5.0)
    assert (s.q1, s.q3, s.iqr) == (2.0, 4.0, 2.0)
    assert s.stdev == pytest.approx(math.sqrt(2.5))
    assert s.iqr_pct == pytest.approx(100 * 2 / 3)
    one = stats.summarize([2.0])
    assert (one.median, one.iqr, one.stdev) == (2.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="empty"):
        stats.summarize([])


@pytest.mark.parametrize(("n", "m"), [(650, 670), (1600, 1600), (100_000, 3)])
def test_min_attainable_p_of_pooled_rounds_does_not_overflow(n: int, m: int) -> None:
    """Eight rounds of adaptive sampling pool hundreds of samples a side: C(n+m, n) is then far
    beyond a float (it raised OverflowError in the gate on a noisy host)."""
    p = stats.min_attainable_p(n, m)
    assert 0.0 <= p < 1e-12
    assert stats.min_attainable_p(3, 3) == pytest.approx(1 / 20, rel=1e-12)
