"""Summary statistics and the one-sided Mann-Whitney U test.

scipy is imported inside the functions that need it, so importing this module (and the plugin) stays
cheap. Summary statistics use the standard library only.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    mean: float
    stdev: float
    min: float
    max: float
    q1: float
    q3: float

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @property
    def iqr_pct(self) -> float:
        """Interquartile range as a percentage of the median: the spread column of the report."""
        return 100.0 * self.iqr / self.median if self.median > 0 else math.nan

    def as_dict(self) -> dict[str, float | int]:
        return {
            "n": self.n,
            "median": self.median,
            "mean": self.mean,
            "stdev": self.stdev,
            "min": self.min,
            "max": self.max,
            "q1": self.q1,
            "q3": self.q3,
            "iqr": self.iqr,
        }


def summarize(values: Sequence[float]) -> Summary:
    if not values:
        raise ValueError("cannot summarise an empty sample")
    xs = sorted(values)
    n = len(xs)
    if n >= 2:
        q1, _, q3 = statistics.quantiles(xs, n=4, method="inclusive")
        sd = statistics.stdev(xs)
    else:
        q1 = q3 = xs[0]
        sd = 0.0
    return Summary(
        n=n,
        median=statistics.median(xs),
        mean=statistics.fmean(xs),
        stdev=sd,
        min=xs[0],
        max=xs[-1],
        q1=q1,
        q3=q3,
    )


def min_attainable_p(n: int, m: int) -> float:
    """Smallest one-sided p-value Mann-Whitney can give for sample sizes ``n`` and ``m``.

    It is reached when the two samples do not overlap at all: one arrangement of ``C(n+m, n)``.
    If it is above alpha, no data of that size can ever show a change (asv makes the same check).
    """
    if n < 1 or m < 1:
        return 1.0
    # in logs: C(n+m, n) passes a float's range near n = m = 520 (pooled rounds of adaptive
    # sampling reach that), where the p-value is 0.0 for every purpose
    log_arrangements = math.lgamma(n + m + 1) - math.lgamma(n + 1) - math.lgamma(m + 1)
    return math.exp(-log_arrangements)


def mann_whitney_greater(x: Sequence[float], y: Sequence[float], exact: bool = False) -> float:
    """One-sided p-value that values in ``x`` tend to be larger than values in ``y``.

    Exact distribution for small samples without ties, normal approximation with tie and continuity
    correction otherwise (scipy's ``method="auto"``). ``exact``: the exact distribution whatever
    the ties (counts: a few calls a side, often equal within a side, where the approximation
    overstates the p-value of a complete separation fourfold: 0.0011 instead of 1/3432 for 7
    and 7).
    """
    from scipy.stats import mannwhitneyu

    if len(x) < 1 or len(y) < 1:
        return 1.0
    res = mannwhitneyu(list(x), list(y), alternative="greater", method="exact" if exact else "auto")
    return float(res.pvalue)


@dataclass(frozen=True)
class RatioEstimate:
    """Hodges-Lehmann estimate of current/baseline on log-times, with a confidence interval."""

    ratio: float
    low: float
    high: float
    level: float


def _normal_quantile(p: float) -> float:
    return statistics.NormalDist().inv_cdf(p)


def hodges_lehmann_ratio(
    current: Sequence[float], baseline: Sequence[float], level: float = 0.95
) -> RatioEstimate:
    """Ratio estimate from the median of all pairwise differences of log-times (the shift that
    Mann-Whitney tests for), with the distribution-free interval that inverts the two-sided test
    (Moses; normal approximation of the U distribution for the order-statistic index).
    """
    x = sorted(math.log(v) for v in current)
    y = sorted(math.log(v) for v in baseline)
    n, m = len(x), len(y)
    if n < 1 or m < 1:
        raise ValueError("hodges_lehmann_ratio needs two non-empty samples")
    nm = n * m
    if nm <= PAIRWISE_SORT_MAX:
        diffs = sorted(a - b for a in x for b in y)

        def kth(i: int) -> float:
            return diffs[i]

    else:  # pedantic(rounds=2000) over 8 rounds: 16,000 a side would be 256M pairs in memory

        def kth(i: int) -> float:
            return _kth_difference(x, y, i)

    center = kth(nm // 2) if nm % 2 else (kth(nm // 2 - 1) + kth(nm // 2)) / 2.0
    z = _normal_quantile(0.5 + level / 2.0)
    k = math.floor(nm / 2.0 - z * math.sqrt(nm * (n + m + 1) / 12.0))
    k = max(0, min(k, (nm - 1) // 2))
    return RatioEstimate(math.exp(center), math.exp(kth(k)), math.exp(kth(nm - 1 - k)), level)


#: Up to this many pairs the pairwise differences are sorted; beyond, each order statistic is
#: found by bisection over counts (``_kth_difference``: memory and time linear in the samples
#: per step, about 60 steps).
PAIRWISE_SORT_MAX = 250_000


def _kth_difference(x: Sequence[float], y: Sequence[float], k: int) -> float:
    """The ``k``-th smallest (from 0) of all ``a - b`` for sorted ``x`` and ``y``, without
    forming the pairs: bisection on the value, each step counting the pairs ``<= t`` with one
    sorted search (``b >= a - t``), until the interval holding it is one ulp wide (far below any
    ratio this reports)."""
    import numpy as np

    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    m = len(ys)
    lo, hi = float(xs[0] - ys[-1]), float(xs[-1] - ys[0])
    for _ in range(2100):  # a double has fewer distinct values between any two than 2**2100
        mid = (lo + hi) / 2.0
        if mid <= lo or mid >= hi:
            break
        at_most = int(m * len(xs) - np.searchsorted(ys, xs - mid, side="left").sum())
        if at_most >= k + 1:
            hi = mid
        else:
            lo = mid
    return hi


def bonferroni(alpha: float, comparisons: int) -> float:
    """Per-comparison level that keeps the family-wise false-alarm rate at ``alpha``."""
    return alpha / max(1, comparisons)


def median_order_index(n: int, level: float = 0.95) -> int | None:
    """0-based index ``j`` such that ``[x[j], x[n-1-j]]`` of ``n`` sorted values covers the median
    with probability >= ``level`` (exact binomial, distribution-free); None when ``n`` is too small.

    For n=20 at 95% this is j=5: the 6th and 15th values, coverage 95.9% (the textbook table).
    """
    if n < 1:
        return None
    tail = (1.0 - level) / 2.0
    cdf = 0.0
    j = -1
    for i in range(n // 2 + 1):
        cdf += math.exp(
            math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) - n * math.log(2)
        )
        if cdf > tail:
            break
        j = i
    return None if j < 0 else j


def median_halfwidth(values: Sequence[float], level: float = 0.95) -> float:
    """Half the width of the distribution-free ``level`` interval of the median, on log-times
    (0.0125 = the median is known to about +-1.25%); infinite when there are too few values."""
    n = len(values)
    j = median_order_index(n, level)
    if j is None:
        return math.inf
    xs = sorted(values)
    return (math.log(xs[n - 1 - j]) - math.log(xs[j])) / 2.0


#: Adaptive sampling goal as a share of the threshold: with each side's median known to +-1/4 of
#: the threshold, the ratio's interval is about +-0.35 threshold wide, narrow enough to tell
#: "unchanged" from "slower by more than the threshold" except right at the boundary.
PRECISION_SHARE = 0.25


def precision_goal(threshold: float, rounds: int = 1) -> float:
    """Target half-width (log units) of one process's median for a given threshold; when the
    session pools ``rounds`` process rounds, ``sqrt(rounds)`` times that: the mean of the rounds'
    medians then has the precision one process would have at the plain goal."""
    return PRECISION_SHARE * math.log1p(threshold) * math.sqrt(max(1, rounds))


#: A process round of a session that pools several takes at least this many samples (fewer make
#: the median of a round swing with single samples, and the per-sample tests weak).
MIN_ROUND_SAMPLES = 10


def round_samples(samples: int, rounds: int) -> int:
    """The samples each process round takes before adaptive sampling when the session pools
    ``rounds`` rounds: ``samples / rounds``, so that the rounds together hold about what one
    process would, but at least :data:`MIN_ROUND_SAMPLES` and never more than ``samples``.

    Between-process spread, not the samples inside a process, limits what pooled rounds can
    tell (docs/validation.md), and a round's fixed costs (start, warm-up) are paid anyway: the
    time is better spent on rounds than on samples inside each.
    """
    if rounds <= 1:
        return samples
    return min(samples, max(MIN_ROUND_SAMPLES, math.ceil(samples / rounds)))


def round_sampling(samples: int, max_samples: int, rounds: int) -> tuple[int, int]:
    """``(samples, max_samples)`` for one of ``rounds`` pooled rounds: :func:`round_samples`,
    and adaptive sampling stays off where it was off (``max_samples <= samples``)."""
    first = round_samples(samples, rounds)
    return first, (first if max_samples <= samples else max_samples)
