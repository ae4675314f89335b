"""The gate: (baseline samples, current samples, policy) -> Verdict. No pytest here.

A benchmark *regressed* when both hold:

* the one-sided Mann-Whitney U test says the current times are larger than the baseline times
  with ``p < alpha``, and
* the median got slower by more than ``threshold`` (``current / baseline - 1 > threshold``).

*Improved* is the mirror image (faster with ``p < alpha`` and by more than ``threshold``); it is
reported, never failed. When the sample sizes cannot reach ``alpha`` at all, the verdict is
*inconclusive*, not *unchanged*. A baseline measured on another device model, with another clock
or another cache regime is *incomparable*: reported with the reason, never failed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from . import stats

REGRESSED = "regressed"
IMPROVED = "improved"
UNCHANGED = "unchanged"
INCONCLUSIVE = "inconclusive"
NO_BASELINE = "no-baseline"
INCOMPARABLE = "incomparable"

VERDICTS = (REGRESSED, IMPROVED, UNCHANGED, INCONCLUSIVE, INCOMPARABLE, NO_BASELINE)


@dataclass(frozen=True)
class Policy:
    alpha: float = 0.01
    threshold: float = 0.05


@dataclass(frozen=True)
class Verdict:
    status: str
    current_median: float
    baseline_median: float | None = None
    ratio: float | None = None
    p_slower: float | None = None
    p_faster: float | None = None
    n_baseline: int = 0
    n_current: int = 0
    reason: str = ""
    #: Differences that do not stop the comparison but a reader should know (library versions...).
    notes: tuple[str, ...] = ()

    @property
    def change_pct(self) -> float | None:
        return None if self.ratio is None else 100.0 * (self.ratio - 1.0)

    @property
    def p_value(self) -> float | None:
        """The p-value of the direction the medians moved in (what a reader wants to see)."""
        if self.ratio is None:
            return None
        return self.p_slower if self.ratio >= 1.0 else self.p_faster


def format_time(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.2f} {unit}"
    return f"{seconds / 1e-9:.1f} ns"


def judge(baseline: Sequence[float] | None, current: Sequence[float], policy: Policy) -> Verdict:
    cur = stats.summarize(current)
    if not baseline:
        return Verdict(NO_BASELINE, cur.median, n_current=cur.n, reason="no baseline recorded")
    base = stats.summarize(baseline)
    ratio = cur.median / base.median
    verdict = Verdict(
        UNCHANGED,
        current_median=cur.median,
        baseline_median=base.median,
        ratio=ratio,
        n_baseline=base.n,
        n_current=cur.n,
    )
    p_min = stats.min_attainable_p(cur.n, base.n)
    if p_min >= policy.alpha:
        return replace(
            verdict,
            status=INCONCLUSIVE,
            reason=(
                f"n={base.n}/{cur.n} samples can reach p={p_min:.2g} at best, not below "
                f"alpha={policy.alpha:g}; take more samples"
            ),
        )
    verdict = replace(
        verdict,
        p_slower=stats.mann_whitney_greater(current, baseline),
        p_faster=stats.mann_whitney_greater(baseline, current),
    )
    assert verdict.p_slower is not None and verdict.p_faster is not None
    if verdict.p_slower < policy.alpha and ratio - 1.0 > policy.threshold:
        return replace(verdict, status=REGRESSED)
    if verdict.p_faster < policy.alpha and 1.0 - ratio > policy.threshold / (
        1.0 + policy.threshold
    ):
        # Mirror of the slowdown rule: faster by more than the threshold in the other direction
        # (a 5% threshold makes 1/1.05 = -4.76% the boundary for an improvement).
        return replace(verdict, status=IMPROVED)
    return verdict


def not_comparable(current: Sequence[float], baseline: Sequence[float], reason: str) -> Verdict:
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
    )


def failure_message(test_id: str, verdict: Verdict, policy: Policy) -> str:
    """The one line a person reads when a benchmark regressed."""
    assert verdict.baseline_median is not None and verdict.change_pct is not None
    p = verdict.p_slower if verdict.p_slower is not None else math.nan
    return (
        f"{test_id}: {format_time(verdict.baseline_median)} -> "
        f"{format_time(verdict.current_median)} ({verdict.change_pct:+.1f}%, p={p:.2g}, "
        f"n={verdict.n_baseline}/{verdict.n_current}) exceeds {policy.threshold * 100:g}% threshold"
    )
