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
    return 1.0 / math.comb(n + m, min(n, m))


def mann_whitney_greater(x: Sequence[float], y: Sequence[float]) -> float:
    """One-sided p-value that values in ``x`` tend to be larger than values in ``y``.

    Exact distribution for small samples without ties, normal approximation with tie and continuity
    correction otherwise (scipy's ``method="auto"``).
    """
    from scipy.stats import mannwhitneyu

    if len(x) < 1 or len(y) < 1:
        return 1.0
    res = mannwhitneyu(list(x), list(y), alternative="greater", method="auto")
    return float(res.pvalue)
