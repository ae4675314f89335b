"""The between-run model: how much a benchmark's median moves from one process round to the next
(the runs' log spread, a fitted prior where there are few runs, rounds disturbed by the host left
out), and the change with its uncertainty that the gate judges when it has several rounds per
side."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_burnperf.core.judging.stats import _normal_quantile


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

#: The prior of a device clock (device events, a replayed graph) on a device that does not
#: compute on the host CPU, where the device kept busy for the samples' span (``device_bound``):
#: what moves such a median between processes is the GPU, not the host. Measured on an H100
#: (docs/validation.md, "The device clock's own prior"; ``python -m validation.device_prior``):
#: the device time of 9 device-bound benchmarks (matmul, axpy, a reduction, a small model, a
#: replayed graph; torch and cupy) moved by 0.10% between processes (median of 36 spreads of 3-8
#: processes), 0.68% at the 90th percentile and 1.5% at most, and by 0.62% at most between
#: sessions against stored baselines. The maximum-likelihood scale at 2 degrees of freedom is
#: 0.07%; the prior takes 0.5%, above nine spreads in ten, heavy-tailed at 2 degrees of freedom
#: like the host's, so one or two rounds that happen to agree do not make a kernel look steadier
#: than kernels are. Replayed on those rounds at a 1% threshold, the median floor of the
#: same-session comparisons fell from 12.2% (the host's prior) to 2.7%, with the same verdicts.
DEVICE_PRIOR = NoisePrior(0.005, 2, "measured on device-bound GPU kernels")

#: A device-clock benchmark is device-bound when its device time is at least this share of the
#: host wall time of the same samples: the device was busy for nearly all of the span. Measured
#: on an H100: 1.00-1.03 for device-bound kernels and replayed graphs, 0.13-0.29 for a chain of
#: small launches, whose device time holds the gaps the host leaves between launches.
DEVICE_BOUND_SHARE = 0.8

#: The noise sources a prior is kept for: ``host`` (the host CPU sets the pace: host wall time,
#: a device on the host CPU, a launch-bound chain) and ``device`` (a device-bound GPU kernel).
PRIORS: dict[str, NoisePrior] = {"host": DEFAULT_PRIOR, "device": DEVICE_PRIOR}


def noise_source(
    timer: str,
    *,
    on_host: bool,
    values: Sequence[float],
    host_values: Sequence[float] | None,
) -> str:
    """What sets a benchmark's between-process noise (a key of :data:`PRIORS`): ``device`` for a
    device clock on a device off the host CPU whose median device time is at least
    :data:`DEVICE_BOUND_SHARE` of the median host wall time of the same samples; ``host``
    otherwise, and wherever the host's time of the samples is unknown."""
    if timer not in ("device", "graph") or on_host or not values or not host_values:
        return "host"
    host = statistics.median(host_values)
    if not (math.isfinite(host) and host > 0.0):
        return "host"
    share = statistics.median(values) / host
    return "device" if share >= DEVICE_BOUND_SHARE else "host"


def joint_source(*sources: object) -> str | None:
    """The noise source of a comparison whose sides name ``sources`` (None or "" where a side
    did not say): ``device`` only where every side that said is device-bound, ``host`` where one
    is not, None where none said."""
    said = [s for s in sources if s in PRIORS]
    if not said:
        return None
    return "device" if all(s == "device" for s in said) else "host"


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
