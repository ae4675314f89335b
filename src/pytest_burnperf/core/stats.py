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


def log_run_spread(runs: Sequence[Sequence[float]]) -> tuple[float, int] | None:
    """Between-run standard deviation of the log of each run's median, and its degrees of freedom.

    ``None`` with fewer than two runs: one process says nothing about how much the next one moves.
    """
    meds = [math.log(statistics.median(r)) for r in runs if len(r) > 0]
    if len(meds) < 2:
        return None
    return statistics.stdev(meds), len(meds) - 1


#: A process round is set aside as disturbed when its median is slower than its side's median
#: round by more than the larger of this and ``DISTURBED_SPREADS`` robust between-round spreads.
DISTURBED_SLOWDOWN = 0.15
DISTURBED_SPREADS = 5.0
#: Fewest rounds a side needs before any of them can be set aside.
DISTURBED_MIN_RUNS = 3
#: Fewest rounds of a side whose own spread can widen its bound.
DISTURBED_OWN_SPREAD_RUNS = 5


def disturbed_runs(*sides: Sequence[Sequence[float]]) -> list[list[int]]:
    """Indices, per side, of the process rounds set aside as disturbed.

    On shared machines a few percent of processes run a whole round 1.2-1.8x slower while the
    host monitor sees nothing (no steal, no other process on our CPUs): the round before and
    after are normal. One such round among eight makes the sd of the round medians several
    times what the other seven show, and a test on that sd is blind. So a round is set aside
    when it is slower than its side's median round by more than ``max(DISTURBED_SLOWDOWN,
    DISTURBED_SPREADS x s)``, with ``s`` the robust spread (1.4826 x the median absolute
    deviation) of all rounds of all sides around their own side's median round, or that of the
    side's own rounds where it is larger and the side has ``DISTURBED_OWN_SPREAD_RUNS`` rounds
    (a side whose rounds all scatter widely is noisy, not disturbed in one round): far beyond
    what a benchmark's ordinary between-process spread produces, so the ordinary spread is left
    whole for the model. Only slow rounds (a disturbance slows a process; nothing makes one
    faster than its code), only on sides of at least ``DISTURBED_MIN_RUNS`` rounds, and never
    half of a side: a change that slows most rounds moves the median round, not the outliers.
    Both sides get the same rule, so it removes no difference between them.
    """
    logs = [[math.log(statistics.median(r)) for r in side if len(r)] for side in sides]
    centers = [statistics.median(side) if side else 0.0 for side in logs]
    # the median of an odd side deviates by zero from itself: it says nothing of the spread
    deviations = [
        [abs(x - c) for x in _without_middle(side)] for side, c in zip(logs, centers, strict=True)
    ]
    pooled = [d for side in deviations for d in side]
    if not pooled:
        return [[] for _ in sides]
    spread = _robust_sd(pooled)
    out: list[list[int]] = []
    for side, center, dev in zip(logs, centers, deviations, strict=True):
        if len(side) < DISTURBED_MIN_RUNS:
            out.append([])
            continue
        # a side noisier than the pair as a whole is judged by its own spread, where it has
        # rounds enough that one slow round cannot set that spread itself
        own = _robust_sd(dev) if len(side) >= DISTURBED_OWN_SPREAD_RUNS else 0.0
        bound = max(math.log1p(DISTURBED_SLOWDOWN), DISTURBED_SPREADS * max(spread, own))
        slow = sorted((i for i, x in enumerate(side) if x - center > bound), key=lambda i: -side[i])
        out.append(sorted(slow[: (len(side) - 1) // 2]))
    return out


def _robust_sd(deviations: Sequence[float]) -> float:
    """1.4826 x the median absolute deviation, from the absolute deviations themselves."""
    return 1.4826 * statistics.median(deviations) if deviations else 0.0


def _without_middle(values: Sequence[float]) -> list[float]:
    if len(values) % 2 == 0:
        return list(values)
    order = sorted(values)
    del order[len(order) // 2]
    return order


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


#: The default prior: a scaled inverse chi-square distribution of a benchmark's between-process
#: variance with scale 2.2% and 2 degrees of freedom, the maximum-likelihood fit (the scale at 2
#: degrees of freedom; the free fit gives 2.1% and 1.2) to the spreads of the 27 workloads of the
#: validation harness, 16 fresh processes each, on the 2-core CI machine (docs/validation.md,
#: "Between-process noise"; ``python -m validation.noise --fit docs/data/noise.json``). Heavy-tailed
#: on purpose: some benchmarks move by 10% between processes, and one or two runs cannot tell.
DEFAULT_PRIOR = NoisePrior(0.022, 2, "fitted to the spreads of typical workloads")


def spread_or_prior(
    observed: tuple[float, int] | None, prior: NoisePrior | None
) -> tuple[float, int] | None:
    """The ``(spread, dof)`` the between-run model uses: the measured spread pooled with the
    prior, ``s^2 = (dof0 s0^2 + dof s^2) / (dof0 + dof)`` with ``dof0 + dof`` degrees of freedom
    (the conjugate update of a scaled inverse chi-square prior), so a few runs that happen to
    agree do not make a benchmark look steadier than such benchmarks are, and many runs outweigh
    the prior; the prior alone where the runs show none; the runs alone without a prior."""
    if prior is None:
        return observed
    if observed is None:
        return prior.spread, prior.dof
    s, dof = observed
    total = prior.dof + dof
    return math.sqrt((prior.dof * prior.spread**2 + dof * s * s) / total), total


#: Confidence of the upper bound on the between-run spread that reports show.
SPREAD_CONFIDENCE = 0.8


def spread_upper(spread: float, dof: int, level: float = SPREAD_CONFIDENCE) -> float:
    """Upper ``level`` confidence bound of a standard deviation estimated with ``dof`` degrees of
    freedom (chi-square): ``spread * sqrt(dof / chi2.ppf(1 - level, dof))``. Informational: the
    gate itself uses Student's t with those degrees of freedom (:class:`RunModel`)."""
    from scipy.stats import chi2

    if dof < 1:
        raise ValueError(f"dof must be >= 1, got {dof!r}")
    return spread * math.sqrt(dof / float(chi2.ppf(1.0 - level, dof)))


def t_quantile(p: float, dof: float) -> float:
    """Quantile of Student's t with ``dof`` degrees of freedom (the normal's for infinite dof)."""
    from scipy.stats import t

    if math.isinf(dof):
        return _normal_quantile(p)
    return float(t.ppf(p, dof))


@dataclass(frozen=True)
class RunModel:
    """The between-run model of one comparison.

    Each process run contributes one observation, the log of its median; the runs of a side
    scatter around that side's level with a spread ``spread`` (pooled over both sides and with the
    prior, ``dof`` degrees of freedom). ``diff`` is the mean current log run median minus the
    mean baseline one and ``se`` its standard error, ``spread * sqrt(1/k + 1/m)``. The test of
    a slowdown is pooled-variance Student's t on ``diff / se``: the interval, the noise floor and the
    minimum detectable slowdown all come from the same t distribution, so that their confidence
    is what they say with 2 runs a side or with 20.
    """

    diff: float
    spread: float
    dof: int
    se: float
    k: int
    m: int

    @property
    def ratio(self) -> float:
        return math.exp(self.diff)

    def p_greater(self) -> float:
        """One-sided p-value of a slowdown (current slower than baseline)."""
        from scipy.stats import t

        if self.se <= 0.0:
            return 0.0 if self.diff > 0 else 1.0
        return float(t.sf(self.diff / self.se, self.dof))

    def p_less(self) -> float:
        from scipy.stats import t

        if self.se <= 0.0:
            return 0.0 if self.diff < 0 else 1.0
        return float(t.cdf(self.diff / self.se, self.dof))

    def floor(self, alpha: float) -> float:
        """Smallest change whose estimate is a significant slowdown at one-sided ``alpha``."""
        return math.exp(t_quantile(1.0 - alpha, self.dof) * self.se) - 1.0

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        q = t_quantile(0.5 + level / 2.0, self.dof) * self.se
        return math.exp(self.diff - q), math.exp(self.diff + q)

    def upper(self, level: float) -> float:
        """One-sided upper ``level`` confidence bound of the ratio."""
        return math.exp(self.diff + t_quantile(level, self.dof) * self.se)

    def min_detectable(self, effect: float, power: float = 0.9) -> float:
        """Smallest slowdown whose estimate clears ``effect`` with probability ``power``."""
        return (1.0 + effect) * math.exp(t_quantile(power, self.dof) * self.se) - 1.0


def run_model(
    baseline: Sequence[Sequence[float]],
    current: Sequence[Sequence[float]],
    prior: NoisePrior | None,
) -> RunModel | None:
    """The :class:`RunModel` of ``baseline`` and ``current`` runs; None when neither the runs
    (one per side) nor a prior say anything about the between-run spread.

    The prior describes how far processes move; a run's median also carries the noise of its
    own samples (its standard error, large for a bimodal or short run), so the prior's part of the
    pooled variance is ``s0^2 + w^2`` with ``w`` that standard error averaged over the runs. The
    spread the runs show already holds both.
    """
    base = [math.log(statistics.median(r)) for r in baseline if len(r)]
    cur = [math.log(statistics.median(r)) for r in current if len(r)]
    if not base or not cur:
        return None
    observed = pooled_run_spread_dof(baseline, current)
    combined = spread_or_prior(observed, _with_median_error(prior, baseline, current))
    if combined is None:
        return None
    spread, dof = combined
    k, m = len(base), len(cur)
    return RunModel(
        diff=statistics.fmean(cur) - statistics.fmean(base),
        spread=spread,
        dof=dof,
        se=spread * math.sqrt(1.0 / k + 1.0 / m),
        k=k,
        m=m,
    )


def _with_median_error(
    prior: NoisePrior | None, *sides: Sequence[Sequence[float]]
) -> NoisePrior | None:
    """The prior widened by the runs' own median standard error (see :func:`run_model`)."""
    if prior is None:
        return None
    w = median_standard_error([r for side in sides for r in side if len(r)])
    return NoisePrior(math.hypot(prior.spread, w), prior.dof, prior.source)


def paired_run_model(
    reference: Sequence[Sequence[float]],
    current: Sequence[Sequence[float]],
    prior: NoisePrior | None,
) -> RunModel | None:
    """The :class:`RunModel` of same-session rounds: run ``i`` of ``current`` and run ``i`` of
    ``reference`` were measured side by side (the same round, the order drawn at random), so
    each round gives one log ratio and whatever moved the whole round (another job starting,
    the machine warming) cancels in it.

    ``spread`` keeps its meaning, the between-process spread of one side: the sd of the paired
    log ratios over ``sqrt(2)``, pooled with the prior (``n - 1 + dof0`` degrees of freedom),
    and ``se = spread * sqrt(2 / n)``. None unless both sides have the same number of runs.
    """
    pairs = [
        (math.log(statistics.median(r)), math.log(statistics.median(c)))
        for r, c in zip(reference, current, strict=False)
        if len(r) and len(c)
    ]
    if not pairs or len(reference) != len(current):
        return None
    diffs = [c - r for r, c in pairs]
    n = len(diffs)
    observed = (statistics.stdev(diffs) / math.sqrt(2.0), n - 1) if n >= 2 else None
    combined = spread_or_prior(observed, _with_median_error(prior, reference, current))
    if combined is None:
        return None
    spread, dof = combined
    return RunModel(
        diff=statistics.fmean(diffs),
        spread=spread,
        dof=dof,
        se=spread * math.sqrt(2.0 / n),
        k=n,
        m=n,
    )


def median_standard_error(runs: Sequence[Sequence[float]]) -> float:
    """Root mean square over ``runs`` of the asymptotic standard error of a run's log median,
    ``1.2533 s / sqrt(n)`` with ``s`` the robust sd of the log samples (1.4826 x their median
    absolute deviation: a few descheduled samples barely move a median, and must not make it
    look uncertain); 0 for runs of one sample."""
    parts = []
    for r in runs:
        if len(r) >= 2:
            logs = [math.log(v) for v in r]
            mid = statistics.median(logs)
            sd = 1.4826 * statistics.median(abs(x - mid) for x in logs)
            parts.append((1.2533 * sd) ** 2 / len(r))
    return math.sqrt(statistics.fmean(parts)) if parts else 0.0


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
