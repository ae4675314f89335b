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
    x = [math.log(v) for v in current]
    y = [math.log(v) for v in baseline]
    n, m = len(x), len(y)
    if n < 1 or m < 1:
        raise ValueError("hodges_lehmann_ratio needs two non-empty samples")
    diffs = sorted(a - b for a in x for b in y)
    nm = len(diffs)
    center = statistics.median(diffs)
    z = _normal_quantile(0.5 + level / 2.0)
    k = math.floor(nm / 2.0 - z * math.sqrt(nm * (n + m + 1) / 12.0))
    k = max(0, min(k, (nm - 1) // 2))
    return RatioEstimate(math.exp(center), math.exp(diffs[k]), math.exp(diffs[nm - 1 - k]), level)


def log_run_spread(runs: Sequence[Sequence[float]]) -> tuple[float, int] | None:
    """Between-run standard deviation of the log of each run's median, and its degrees of freedom.

    ``None`` with fewer than two runs: one process says nothing about how much the next one moves.
    """
    meds = [math.log(statistics.median(r)) for r in runs if len(r) > 0]
    if len(meds) < 2:
        return None
    return statistics.stdev(meds), len(meds) - 1


def pooled_run_spread_dof(*sides: Sequence[Sequence[float]]) -> tuple[float, int] | None:
    """Between-run spread pooled over both sides (each side around its own mean) and its degrees
    of freedom, or None."""
    num = 0.0
    dof = 0
    for runs in sides:
        s = log_run_spread(runs)
        if s is not None:
            num += s[0] ** 2 * s[1]
            dof += s[1]
    return (math.sqrt(num / dof), dof) if dof else None


def pooled_run_spread(*sides: Sequence[Sequence[float]]) -> float | None:
    """Between-run spread pooled over both sides, or None (see pooled_run_spread_dof)."""
    got = pooled_run_spread_dof(*sides)
    return None if got is None else got[0]


@dataclass(frozen=True)
class NoisePrior:
    """What is assumed about a benchmark's between-process spread when neither side has more
    than one process run, so nothing about it was measured: a spread (sd of log run medians)
    worth ``dof`` degrees of freedom. Its upper confidence bound then sets the noise floor, as a
    measured spread's does, instead of treating the unknown noise as zero.
    """

    spread: float
    dof: int
    source: str = "default"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.spread) and self.spread >= 0.0) or self.dof < 1:
            raise ValueError(f"a NoisePrior needs spread >= 0 and dof >= 1, got {self!r}")


#: The default prior: 3% between-process spread, worth 2 degrees of freedom (its 80% upper bound
#: is 6.4%). 3% is the median between-process spread over the 27 workloads of the validation
#: harness in 16 fresh processes on the 2-core CI machine (docs/validation.md, "Between-process
#: noise"; ``python validation/noise.py``).
DEFAULT_PRIOR = NoisePrior(0.03, 2, "default, the median measured over typical workloads")


def spread_or_prior(
    observed: tuple[float, int] | None, prior: NoisePrior | None, *, pool: bool = False
) -> tuple[float, int] | None:
    """The ``(spread, dof)`` the noise floor builds on: the prior's where the runs show none;
    with ``pool`` (one side has a single run), the measured spread pooled with the prior
    (``s^2 = (dof0 s0^2 + dof s^2) / (dof0 + dof)``), so a few runs that happen to agree do not
    make a benchmark look steadier than such benchmarks are; else the measured spread."""
    if prior is None:
        return observed
    if observed is None:
        return prior.spread, prior.dof
    if not pool:
        return observed
    s, dof = observed
    total = prior.dof + dof
    return math.sqrt((prior.dof * prior.spread**2 + dof * s * s) / total), total


#: Confidence of the upper bound on the between-run spread that the noise floor uses.
SPREAD_CONFIDENCE = 0.8


def spread_upper(spread: float, dof: int, level: float = SPREAD_CONFIDENCE) -> float:
    """Upper ``level`` confidence bound of a standard deviation estimated with ``dof`` degrees of
    freedom (chi-square): ``spread * sqrt(dof / chi2.ppf(1 - level, dof))``.

    Three baseline and three current runs give 4 degrees of freedom, and such an estimate is often
    half the true spread; a noise floor from the point estimate then lets between-process noise
    through as false alarms. With 4 degrees of freedom the 80% bound is 1.56x the estimate.
    """
    from scipy.stats import chi2

    if dof < 1:
        raise ValueError(f"dof must be >= 1, got {dof!r}")
    return spread * math.sqrt(dof / float(chi2.ppf(1.0 - level, dof)))


def noise_floor(spread: float, k: int, m: int, alpha: float) -> float:
    """Slowdown that between-run noise alone exceeds with probability ``alpha`` (one-sided),
    comparing the pooled medians of ``k`` baseline runs with ``m`` current runs."""
    return math.exp(_normal_quantile(1.0 - alpha) * spread * math.sqrt(1.0 / k + 1.0 / m)) - 1.0


def min_detectable(effect: float, spread: float, k: int, m: int, power: float = 0.9) -> float:
    """Smallest slowdown whose estimate clears ``effect`` with probability ``power``."""
    return (1.0 + effect) * math.exp(
        _normal_quantile(power) * spread * math.sqrt(1.0 / k + 1.0 / m)
    ) - 1.0


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


def precision_goal(threshold: float) -> float:
    """Target half-width (log units) of one process's median for a given threshold."""
    return PRECISION_SHARE * math.log1p(threshold)
