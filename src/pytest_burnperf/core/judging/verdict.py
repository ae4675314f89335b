"""The gate: (baseline samples, current samples, policy) -> Verdict. No pytest here.

A benchmark *regressed* when both hold:

* the one-sided Mann-Whitney U test says the current times are larger than the baseline times
  with ``p < alpha``, and
* the change got slower by more than the larger of ``threshold`` and the benchmark's *noise
  floor*. The change is the ratio of the geometric means of the process runs' medians; the noise
  floor is the change that the between-run model (``between_runs.RunModel``: each process run is one
  observation, its spread pooled with a prior and Student's t with the resulting degrees of
  freedom) calls significant at ``alpha``. Between-process noise, the main noise of a benchmark
  on a shared machine, is thus tested with the degrees of freedom the runs really have.

Before any of this, a round far slower than the other rounds of its side (a process the host
slowed as a whole) is set aside on either side (``between_runs.disturbed_runs``; not in same-session
comparisons, whose rounds are pairs), and the verdict says how many.

*Improved* is the mirror image (faster with ``p < alpha`` and by more than ``threshold``); it is
reported, never failed. When the sample sizes cannot reach ``alpha`` at all, the verdict is
*inconclusive*, not *unchanged*. A baseline measured on another device model, with another clock
or another cache regime is *incomparable*: reported with the reason, never failed.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final, Literal

from pytest_burnperf.core.judging import between_runs, stats
from pytest_burnperf.core.judging.abstention import BY_STATUS, Cause
from pytest_burnperf.core.text import format_time

#: A verdict's status: what a comparison concluded (or that the test failed after it was timed).
Status = Literal[
    "regressed", "improved", "unchanged", "inconclusive", "no-baseline", "incomparable", "failed"
]

REGRESSED: Final = "regressed"
IMPROVED: Final = "improved"
UNCHANGED: Final = "unchanged"
INCONCLUSIVE: Final = "inconclusive"
NO_BASELINE: Final = "no-baseline"
INCOMPARABLE: Final = "incomparable"
#: Not a comparison's outcome: the benchmark's test failed for another reason after it was timed.
FAILED: Final = "failed"

VERDICTS: tuple[Status, ...] = (
    REGRESSED,
    FAILED,
    IMPROVED,
    UNCHANGED,
    INCONCLUSIVE,
    INCOMPARABLE,
    NO_BASELINE,
)


#: The minimum effect of a device-bound GPU kernel's comparison where no threshold was chosen
#: (``Policy.threshold_given`` false): such a kernel's device time moves 0.1% between processes
#: (median; 0.7% at the 90th percentile, docs/validation.md, "The device clock's own prior"), so
#: the host's 5% would let a +3-4% kernel regression pass. The gate on a GPU is to see 2%
#: (issue 72): a verdict needs the change above the threshold *and* significant, so its minimum
#: detectable slowdown lies above the threshold (at 2%: 2.2-2.6% on an H200; at 1.5%: 1.7-2.1%,
#: docs/validation.md, "The gate at the GPU's own noise"), while unchanged kernels moved 0.41%
#: at most between sessions of two leases there. Every other clock keeps ``Policy.threshold``.
DEVICE_THRESHOLD = 0.015


@dataclass(frozen=True)
class Policy:
    alpha: float = 0.01
    threshold: float = 0.05
    #: False where ``threshold`` is the default rather than chosen (ini, marker, command line):
    #: then a device-bound GPU kernel is judged at :data:`DEVICE_THRESHOLD` (``for_noise``).
    threshold_given: bool = True
    #: Comparisons in the session: ``alpha`` is the family-wise rate over all of them (Bonferroni).
    comparisons: int = 1
    #: Between-process spread assumed before the runs are seen (None: none, the old behaviour of
    #: treating unmeasured between-process noise as zero).
    prior: between_runs.NoisePrior | None = between_runs.DEFAULT_PRIOR
    #: Run ``i`` of each side was measured in the same round of one session (same-session
    #: comparisons, ``versions.py``): the model works on the paired log ratios.
    paired: bool = False

    @property
    def alpha_each(self) -> float:
        return stats.bonferroni(self.alpha, self.comparisons)

    def for_noise(self, source: str | None) -> Policy:
        """This policy with the prior of the clock that timed the benchmark
        (``between_runs.noise_source``: ``device`` for a device-bound GPU kernel, ``host``
        otherwise). A prior set on purpose (a test's, or None) is kept: only the default one is
        swapped. A device-bound kernel whose threshold nobody chose is judged at
        :data:`DEVICE_THRESHOLD`."""
        policy = self
        if source == "device" and not self.threshold_given:
            policy = replace(policy, threshold=DEVICE_THRESHOLD)
        prior = between_runs.PRIORS.get(source or "")
        if prior is None or self.prior is not between_runs.DEFAULT_PRIOR:
            return policy
        return replace(policy, prior=prior)


@dataclass(frozen=True)
class Verdict:
    status: Status
    current_median: float
    baseline_median: float | None = None
    #: current/baseline: the ratio of the geometric means of the run medians with its 95% t
    #: interval (between-run model); Hodges-Lehmann on all samples where no model applies.
    ratio: float | None = None
    ratio_low: float | None = None
    ratio_high: float | None = None
    p_slower: float | None = None
    p_faster: float | None = None
    n_baseline: int = 0
    n_current: int = 0
    reason: str = ""
    #: Why this is not a verdict on the code (an abstention's status only): what the summary and
    #: the coverage group it by; ``reason`` is its prose.
    cause: Cause | None = None
    #: Differences that do not stop the comparison but a reader should know (library versions...).
    notes: tuple[str, ...] = ()
    runs_baseline: int = 0
    runs_current: int = 0
    #: Per-comparison significance level after the family-wise correction.
    alpha_each: float | None = None
    #: Between-run spread of log-medians the runs show (None with one run on each side).
    run_spread: float | None = None
    #: The spread the between-run model uses (the runs' pooled with the prior) and its degrees
    #: of freedom: the noise floor, the interval and ``min_detectable`` come from Student's t
    #: with them. ``run_spread_upper`` is its upper 80% confidence bound, for reports only.
    spread: float | None = None
    spread_dof: int | None = None
    run_spread_upper: float | None = None
    #: Where ``spread`` comes from: "runs+prior", "runs" (no prior), "prior" (one run a side:
    #: nothing measured) or "" (neither).
    spread_source: str = ""
    #: The between-process prior pooled in, where one was (``between_runs.PRIORS``: the host's,
    #: or the device's for a device-bound GPU kernel): its source, spread and degrees of freedom.
    prior: str = ""
    #: One-sided p-value of a slowdown from the between-run model (t test on log run medians).
    p_runs_slower: float | None = None
    #: The threshold this comparison was judged at (``Policy.threshold``: the run's, or
    #: :data:`DEVICE_THRESHOLD` for a device-bound GPU kernel where none was chosen).
    threshold: float | None = None
    #: The slowdown that counts: the larger of the threshold and the noise floor.
    effect: float | None = None
    #: Smallest slowdown this comparison detects with 90% probability.
    min_detectable: float | None = None
    #: Process rounds of each side set aside as disturbed (``between_runs.disturbed_runs``): not in
    #: ``runs_baseline``/``runs_current``, the medians, the model or the test.
    set_aside_baseline: int = 0
    set_aside_current: int = 0

    @property
    def change_pct(self) -> float | None:
        return None if self.ratio is None else 100.0 * (self.ratio - 1.0)

    @property
    def p_value(self) -> float | None:
        """The p-value of the direction the ratio moved in (what a reader wants to see)."""
        if self.ratio is None:
            return None
        return self.p_slower if self.ratio >= 1.0 else self.p_faster

    def __post_init__(self) -> None:
        if self.status in BY_STATUS and self.cause is None:
            raise ValueError(
                f"a {self.status} verdict needs its cause (core/judging/abstention.Cause)"
            )
        if self.status not in BY_STATUS and self.cause is not None:
            object.__setattr__(self, "cause", None)  # judged (or failed) after all


Runs = Sequence[Sequence[float]]


def as_runs(values: Sequence[float] | Runs | None) -> list[list[float]]:
    """Samples grouped by the process that took them; a flat list is one run."""
    if not values:
        return []
    out: list[list[float]] = []
    flat: list[float] = []
    for item in values:
        if isinstance(item, (int, float)):
            flat.append(float(item))
        elif len(item):
            out.append([float(v) for v in item])
    return [flat] if flat else out


def judge(
    baseline: Sequence[float] | Runs | None,
    current: Sequence[float] | Runs,
    policy: Policy,
) -> Verdict:
    """Judge ``current`` against ``baseline``; each is a flat sample or a list of runs."""
    cur_runs = as_runs(current)
    base_runs = as_runs(baseline)
    aside = (0, 0)
    if base_runs and not policy.paired:
        (base_runs, cur_runs), aside = set_aside_disturbed(base_runs, cur_runs)
    cur_all = [v for r in cur_runs for v in r]
    cur = stats.summarize(cur_all)
    if not base_runs:
        return Verdict(
            NO_BASELINE,
            cur.median,
            n_current=cur.n,
            runs_current=len(cur_runs),
            reason="no baseline recorded",
            cause=Cause.NO_REFERENCE,
        )
    base_all = [v for r in base_runs for v in r]
    base = stats.summarize(base_all)
    k, m = len(base_runs), len(cur_runs)
    alpha = policy.alpha_each
    verdict = Verdict(
        UNCHANGED,
        current_median=cur.median,
        baseline_median=base.median,
        n_baseline=base.n,
        n_current=cur.n,
        runs_baseline=k,
        runs_current=m,
        alpha_each=alpha,
        threshold=policy.threshold,
        set_aside_baseline=aside[0],
        set_aside_current=aside[1],
    )
    p_min = stats.min_attainable_p(cur.n, base.n)
    if p_min >= alpha:
        ratio = cur.median / base.median
        return replace(
            verdict,
            ratio=ratio,
            status=INCONCLUSIVE,
            cause=Cause.NOISE,
            reason=(
                f"n={base.n}/{cur.n} samples can reach p={p_min:.2g} at best, not below "
                f"alpha={alpha:.2g}; take more samples"
            ),
        )
    est = stats.hodges_lehmann_ratio(cur_all, base_all)
    observed = _observed(base_runs, cur_runs, policy)
    model = between_run_model(base_runs, cur_runs, policy)
    source = _spread_source(observed, policy.prior)
    ratio, low, high = est.ratio, est.low, est.high
    floor = 0.0
    if model is not None:
        # The runs are the unit of replication: the estimate, its interval and the floor come
        # from the log run medians and Student's t with the model's degrees of freedom.
        ratio = model.ratio
        low, high = model.interval(0.95)
        floor = model.floor(alpha)
    effect = max(policy.threshold, floor)
    if model is not None:
        min_det = model.min_detectable(effect)
    else:  # no prior, one run a side: only the two medians' own standard errors are known
        z = statistics.NormalDist().inv_cdf(0.9)
        se = math.sqrt(2.0) * between_runs.median_standard_error(base_runs + cur_runs)
        min_det = (1.0 + effect) * math.exp(z * se) - 1.0
    verdict = replace(
        verdict,
        ratio=ratio,
        ratio_low=low,
        ratio_high=high,
        run_spread=None if observed is None else observed[0],
        run_spread_upper=None
        if model is None
        else between_runs.spread_upper(model.spread, model.dof),
        spread=None if model is None else model.spread,
        spread_dof=None if model is None else model.dof,
        spread_source=source,
        prior=""
        if policy.prior is None or model is None or "prior" not in source
        else (
            f"{policy.prior.source} ({100 * policy.prior.spread:.2g}%, "
            f"{policy.prior.dof} degrees of freedom)"
        ),
        effect=effect,
        min_detectable=min_det,
        p_slower=stats.mann_whitney_greater(cur_all, base_all),
        p_faster=stats.mann_whitney_greater(base_all, cur_all),
        p_runs_slower=None if model is None else model.p_greater(),
    )
    notes: list[str] = []
    if any(aside):
        notes.append(
            f"set aside as disturbed: {_rounds(aside[0], 'baseline')}"
            f"{' and ' if all(aside) else ''}{_rounds(aside[1], 'current')} (far slower than "
            "the side's other rounds: a process the host slowed as a whole)"
        )
    if floor > policy.threshold:
        assert model is not None
        if observed is not None:
            notes.append(
                f"noisy: runs of this benchmark move by {100 * observed[0]:.1f}% (sd of run "
                f"medians; {_pooled(policy.prior)}{100 * model.spread:.1f}% with {model.dof} "
                f"degrees of freedom), so it gates only above +{100 * effect:.1f}% with {k}+{m} "
                "runs; more rounds (--perf-rounds, --perf-max-rounds) narrow it"
            )
        else:
            assert policy.prior is not None
            notes.append(
                f"{k} baseline run vs {m} current run: between-process noise is not measured, so "
                f"the prior is assumed ({100 * policy.prior.spread:.1f}%, "
                f"{policy.prior.source}; {model.dof} degrees of freedom) and it gates only above "
                f"+{100 * effect:.1f}%; record the baseline with --perf-rounds 3 to see further"
            )
    elif observed is None and policy.prior is None:
        notes.append(
            f"{k} baseline run(s) vs {m} current run(s): between-process noise is unknown, so this "
            "verdict is less reliable (record and run with --perf-rounds 3)"
        )
    verdict = replace(verdict, notes=tuple(notes))
    assert verdict.p_slower is not None and verdict.p_faster is not None
    if verdict.p_slower < alpha and ratio - 1.0 > effect:
        return replace(verdict, status=REGRESSED)
    if verdict.p_slower < alpha and ratio - 1.0 > policy.threshold:
        # Slower by more than the threshold, but inside this benchmark's noise floor.
        return replace(
            verdict,
            status=INCONCLUSIVE,
            cause=Cause.NOISE,
            reason=(
                f"{100 * (ratio - 1):+.1f}% is above the {100 * policy.threshold:g}% threshold "
                f"but inside this benchmark's noise floor (+{100 * effect:.1f}%): not failed; more "
                "rounds (--perf-rounds, --perf-max-rounds) narrow the floor"
            ),
        )
    if verdict.p_faster < alpha and 1.0 - ratio > effect / (1.0 + effect):
        # Mirror of the slowdown rule: faster by more than the threshold in the other direction
        # (a 5% threshold makes 1/1.05 = -4.76% the boundary for an improvement).
        return replace(verdict, status=IMPROVED)
    span = format_ratio(verdict)
    if high > 1.0 + policy.threshold:
        # the reason says which of the two tests held the verdict back: the samples' rank test
        # (at the family-wise alpha) or the size of the change; the interval is the between-run
        # model's, so it can lie above zero while the rank test is not significant
        if verdict.p_slower >= alpha:
            why = (
                f"the samples' rank test does not show a slowdown at the corrected alpha "
                f"(p={verdict.p_slower:.2g}, alpha={alpha:.2g})"
            )
        else:
            # a tiny p beside a change under the threshold reads as a contradiction without
            # the reason: the rank test sees a shift, the change is too small to fail, and the
            # rounds spread too much to rule out one that is not
            why = (
                f"the samples are slower (p={verdict.p_slower:.2g}) by {100 * (ratio - 1):+.1f}%, "
                f"within the threshold, while the rounds spread too much to rule out more"
            )
        return replace(
            verdict,
            status=INCONCLUSIVE,
            cause=Cause.NOISE,
            reason=(
                f"{span}: the interval reaches above the {100 * policy.threshold:g}% threshold "
                f"and {why}; more samples or rounds would decide"
            ),
        )
    if 1.0 - ratio > policy.threshold / (1.0 + policy.threshold):
        # a large speed-up that is not an improvement (the rank test at this alpha, or this
        # benchmark's noise floor): `unchanged` says only that no slowdown was found, which a
        # bare -25% next to it does not make plain
        held = (
            f"the samples' rank test does not confirm it at the corrected alpha "
            f"(p={verdict.p_faster:.2g}, alpha={alpha:.2g})"
            if verdict.p_faster >= alpha
            else f"it is inside this benchmark's noise floor ({100 * effect:.1f}%)"
        )
        return replace(
            verdict,
            reason=f"{span}: faster, but {held}; no slowdown, so unchanged",
        )
    return verdict


def set_aside_disturbed(
    base: Runs, cur: Runs
) -> tuple[tuple[list[list[float]], list[list[float]]], tuple[int, int]]:
    """Both sides without their disturbed rounds (``between_runs.disturbed_runs``), and how many each
    lost. Empty rounds are dropped as :func:`as_runs` drops them."""
    sides = [[list(r) for r in side if len(r)] for side in (base, cur)]
    drop = between_runs.disturbed_runs(*sides)
    kept = [
        [r for i, r in enumerate(side) if i not in d] for side, d in zip(sides, drop, strict=True)
    ]
    return (kept[0], kept[1]), (len(drop[0]), len(drop[1]))


def _rounds(n: int, side: str) -> str:
    if not n:
        return ""
    return f"{n} {side} round{'s' if n > 1 else ''}"


def between_run_model(base: Runs, cur: Runs, policy: Policy) -> between_runs.RunModel | None:
    if policy.paired and len(base) == len(cur):
        return between_runs.paired_run_model(base, cur, policy.prior)
    return between_runs.run_model(base, cur, policy.prior)


def _observed(base: Runs, cur: Runs, policy: Policy) -> tuple[float, int] | None:
    """The between-run spread the runs show (paired: of the log ratios, over sqrt 2)."""
    if policy.paired and len(base) == len(cur) and len(base) >= 2:
        diffs = [
            math.log(statistics.median(c)) - math.log(statistics.median(b))
            for b, c in zip(base, cur, strict=True)
        ]
        return statistics.stdev(diffs) / math.sqrt(2.0), len(diffs) - 1
    return between_runs.pooled_run_spread_dof(base, cur)


def _spread_source(
    observed: tuple[float, int] | None, prior: between_runs.NoisePrior | None
) -> str:
    if observed is not None:
        return "runs+prior" if prior is not None else "runs"
    return "prior" if prior is not None else ""


def _pooled(prior: between_runs.NoisePrior | None) -> str:
    if prior is None:
        return ""
    whose = " device" if prior is between_runs.DEVICE_PRIOR else ""
    return f"pooled with the {100 * prior.spread:.1f}%{whose} prior: "


def not_comparable(
    current: Sequence[float],
    baseline: Sequence[float],
    reason: str,
    cause: Cause = Cause.OTHER_MACHINE,
) -> Verdict:
    """The verdict when a baseline exists but was measured on something else: never a failure."""
    cur = stats.summarize(current)
    base = stats.summarize(baseline) if baseline else None
    return Verdict(
        INCOMPARABLE,
        cur.median,
        baseline_median=None if base is None else base.median,
        n_baseline=0 if base is None else base.n,
        n_current=cur.n,
        reason=reason,
        cause=cause,
    )


def format_ratio(v: Verdict) -> str:
    """``+14.7% [+14.5%, +14.9%]``: the change with its 95% interval."""
    if v.ratio is None:
        return "-"
    text = f"{100 * (v.ratio - 1):+.1f}%"
    if v.ratio_low is not None and v.ratio_high is not None:
        text += f" [{100 * (v.ratio_low - 1):+.1f}%, {100 * (v.ratio_high - 1):+.1f}%]"
    return text


def failure_message(
    test_id: str, verdict: Verdict, policy: Policy, labels: tuple[str, str] | None = None
) -> str:
    """The one line a person reads when a benchmark regressed; ``labels`` name the two sides
    of a same-session comparison (reference, current)."""
    assert verdict.baseline_median is not None and verdict.ratio is not None
    p = verdict.p_slower if verdict.p_slower is not None else math.nan
    threshold = verdict.threshold if verdict.threshold is not None else policy.threshold
    effect = verdict.effect if verdict.effect is not None else threshold
    what = "threshold" if effect <= threshold else "noise floor"
    runs = f", runs={verdict.runs_baseline}/{verdict.runs_current}"
    before, after = (f"{labels[0]} ", f"{labels[1]} ") if labels else ("", "")
    return (
        f"{test_id}: {before}{format_time(verdict.baseline_median)} -> "
        f"{after}{format_time(verdict.current_median)} ({format_ratio(verdict)}, p={p:.2g}, "
        f"n={verdict.n_baseline}/{verdict.n_current}{runs}) exceeds {effect * 100:.3g}% {what}"
        + (f"; {verdict.reason}" if verdict.reason else "")
    )
