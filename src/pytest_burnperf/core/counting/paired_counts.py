"""Counts judged call by call: a benchmark whose calls draw their work afresh (random
parameters, random crops) spreads its counts from call to call, several percent where the code
is unchanged, so a verdict on all its calls together cannot see a small change. With the global
generators seeded alike in every process (devices/random_state.py), the call a process makes at
one place among its calls draws what another process's call at that place draws: kornia's
random augmentations, counted in two processes, counted each call within 0.07% of the same call
in the other, where their calls spread 0.7-9.9% (docs/validation.md, "Counts paired call by
call"). Each counted call is then set against the baseline's call at its place
(:attr:`Counted.positions`), and the verdict is on those ratios.

Pairing judges only where it narrows the minimum effect (:func:`judge_counted`): a benchmark
whose calls agree anyway is judged as before, and calls whose places do not draw alike (a
fixture drawing another number of times in another process) give ratios as spread as the calls
themselves, so the verdict falls back to the calls as a whole. At least :data:`MIN_PAIRS`
pairs are needed: fewer could agree by chance.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import replace

from pytest_burnperf.core.counting import counts
from pytest_burnperf.core.counting.counts import Counted, relative_spread
from pytest_burnperf.core.judging.abstention import Cause
from pytest_burnperf.core.judging.verdict import (
    IMPROVED,
    INCONCLUSIVE,
    REGRESSED,
    UNCHANGED,
    Status,
    Verdict,
)

#: Pairs needed before pairing judges: with a per-call spread of 1-10%, two or three ratios of
#: calls that did not draw alike could still agree within a minimum effect by chance.
MIN_PAIRS = 5
PAIRED_SOURCE = counts.PAIRED_SOURCE  # a paired verdict's ``spread_source``


def pairs(baseline: Counted, current: Counted) -> list[tuple[float, float]]:
    """(baseline, current) instructions of each current counted call whose place among its
    process's calls the baseline counted too (the median of the baseline's processes at that
    place); empty where a side does not know its calls' places."""
    at = _by_position(baseline)
    if not at or len(current.positions) != len(current.instructions):
        return []
    return [
        (statistics.median(at[p]), float(v))
        for p, v in zip(current.positions, current.instructions, strict=True)
        if p in at
    ]


def _by_position(counted: Counted) -> dict[int, list[float]]:
    if not counted.positions or len(counted.positions) != len(counted.instructions):
        return {}
    at: dict[int, list[float]] = {}
    for p, v in zip(counted.positions, counted.instructions, strict=True):
        at.setdefault(p, []).append(float(v))
    return at


def same_place_spread(*sides: Counted) -> float | None:
    """How far the processes of either side counted the call at one place apart, the largest
    over the places two or more counted ((max - min) / median); None where no place was counted
    twice (one process a side, or processes whose places did not meet)."""
    spreads = [
        relative_spread(values)
        for side in sides
        for values in _by_position(side).values()
        if len(values) >= 2
    ]
    return max(spreads) if spreads else None


def judge_paired(
    baseline: Counted,
    current: Counted,
    *,
    floor: float = counts.COUNTS_FLOOR,
    process_spread: float = counts.PROCESS_SPREAD,
    interpreter: float = 0.0,
    threshold: float | None = None,
) -> Verdict | None:
    """The verdict from each current call against the baseline's call at the same place, or
    None where fewer than :data:`MIN_PAIRS` pair. The minimum effect is that of
    core/counting/counts.judge_counts with the ratios' spread for the calls' spread and, for
    the between-process spread, how far processes counted the same place apart
    (:func:`same_place_spread`; ``process_spread``, the processes' medians, where no place was
    counted twice). A change is called where every pair moved beyond it, the same way (counts
    are near-deterministic: the pairs' separation decides, as for calls that agree). None too
    where that minimum effect is over counts.MAX_EFFECT."""
    paired = pairs(baseline, current)
    if len(paired) < MIN_PAIRS or any(b <= 0 or c <= 0 for b, c in paired):
        return None
    ratios = [c / b for b, c in paired]
    ratio = statistics.median(ratios)
    base_median = statistics.median(b for b, _ in paired)
    between = same_place_spread(baseline, current)
    spread = max(relative_spread(ratios), process_spread if between is None else between)
    spread = max(spread, counts.PROCESS_SPREAD)
    effect = counts.minimum_effect(floor, spread, interpreter, base_median)
    if effect > counts.MAX_EFFECT:
        return None  # paired, the calls still cannot tell a change apart
    low, high = min(ratios), max(ratios)
    verdict = Verdict(
        UNCHANGED,
        current_median=statistics.median(c for _, c in paired),
        baseline_median=base_median,
        ratio=ratio,
        ratio_low=min(low, ratio),
        ratio_high=max(high, ratio),
        n_baseline=len(paired),
        n_current=len(paired),
        runs_baseline=1,
        runs_current=1,
        spread=spread,
        spread_source=PAIRED_SOURCE,
        effect=effect,
        min_detectable=effect if threshold is None else max(effect, threshold),
        threshold=threshold,
    )
    n = len(paired)
    each = f"each of {n} calls against the baseline's call at the same place"
    change = math.log(ratio)
    sides: tuple[tuple[int, Status, bool], ...] = (
        (1, REGRESSED, math.log(low) > math.log1p(effect)),
        (-1, IMPROVED, -math.log(high) > math.log1p(effect)),
    )
    for sign, status, apart in sides:
        if sign * change <= math.log1p(effect):
            continue
        shown = f"counts {100 * (ratio - 1):+.2f}%"
        if threshold is not None and sign * change <= math.log1p(threshold):
            return replace(
                verdict,
                reason=f"{shown} ({each}, beyond their {100 * effect:.2g}% minimum effect) is "
                f"within the {100 * threshold:g}% threshold set: not failed",
            )
        if apart:
            side = "above" if sign > 0 else "below"
            return replace(
                verdict,
                status=status,
                reason=f"every call {side} the baseline's call at the same place by more than "
                f"the {100 * effect:.2g}% minimum effect ({n} pairs)",
            )
        return replace(
            verdict,
            status=INCONCLUSIVE,
            cause=Cause.COUNTS_SPREAD,
            reason=f"{shown} beyond the {100 * effect:.2g}% minimum effect, but not every call "
            f"against the baseline's call at the same place ({n} pairs)",
        )
    return replace(
        verdict,
        reason=f"counts {100 * (ratio - 1):+.2f}% within the {100 * effect:.2g}% minimum "
        f"effect, {each}",
    )


def judge_counted(
    baseline: Counted | None,
    current: Counted,
    *,
    alpha_each: float,
    process_spread: float = counts.PROCESS_SPREAD,
    interpreter: float = 0.0,
    threshold: float | None = None,
) -> Verdict:
    """The counts verdict on ``current`` against ``baseline``: core/counting/counts.judge_counts
    on the calls as a whole, or, where the calls pair by place (:func:`judge_paired`) with a
    smaller minimum effect and the pairs decide, call by call. ``process_spread``: how far the sides' processes'
    medians moved apart (counts.between_processes)."""
    values = [float(v) for v in current.values()]
    whole = counts.judge_counts(
        None if baseline is None else [float(v) for v in baseline.values()],
        values,
        alpha_each=alpha_each,
        process_spread=process_spread,
        interpreter=interpreter,
        threshold=threshold,
    )
    if baseline is None or whole.effect is None:
        return whole
    by_call = judge_paired(
        baseline,
        current,
        process_spread=process_spread,
        interpreter=interpreter,
        threshold=threshold,
    )
    if by_call is None or by_call.effect is None or by_call.effect >= whole.effect:
        return whole
    if by_call.status == INCONCLUSIVE:
        return whole  # the pairs moved apart: the calls as a whole decide (or leave it to time)
    return replace(by_call, alpha_each=alpha_each)
