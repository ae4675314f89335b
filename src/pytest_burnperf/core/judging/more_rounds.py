"""Adaptive rounds: whether another process round would help decide a benchmark, or, while
recording, narrow the noise floor its baseline would set. The rule of core/judging/verdict.py applied
before the verdict: stopping early never raises the false-alarm rate. No pytest here."""

from __future__ import annotations

import math

from pytest_burnperf.core.judging import between_runs
from pytest_burnperf.core.judging.verdict import (
    Policy,
    Runs,
    as_runs,
    between_run_model,
    set_aside_disturbed,
)

#: Confidence of the futility bound of adaptive rounds: a benchmark whose change is below the
#: threshold with this one-sided confidence needs no more rounds.
FUTILITY_CONFIDENCE = 0.99


def needs_more_rounds(
    baseline: Runs | None, current: Runs, policy: Policy, *, recording: bool = False
) -> bool:
    """Would another process round help decide this benchmark?

    Comparing: yes unless the change is below the threshold with 99% one-sided confidence (an
    improvement or an unchanged benchmark). Stopping only for that ("futility") never raises the
    false-alarm rate: a benchmark that looks slower runs all rounds and is judged once, at the
    end, at ``alpha``. Recording: yes while this benchmark's runs are so noisy that a comparison
    with as many rounds a side would gate above the threshold (its noise floor).
    """
    cur = as_runs(current)
    if recording:
        if not cur:
            return True
        floor = recording_floor(cur, policy)
        return floor is not None and floor > policy.threshold
    base = as_runs(baseline)
    if not base:
        return False
    if not cur:
        return True
    if not policy.paired:
        (base, cur), _ = set_aside_disturbed(base, cur)
    model = between_run_model(base, cur, policy)
    if model is None:
        return False
    return model.upper(FUTILITY_CONFIDENCE) >= 1.0 + policy.threshold


def recording_floor(runs: Runs, policy: Policy) -> float | None:
    """The noise floor a baseline of these process ``runs`` would set: the slowdown a later
    comparison with as many rounds a side could not tell from the between-run noise (its
    disturbed rounds set aside, as a comparison sets them aside). None with fewer than two
    rounds and no prior."""
    kept = as_runs(runs)
    if not kept:
        return None
    (kept, _), _ = set_aside_disturbed(kept, [])
    combined = between_runs.spread_or_prior(between_runs.log_run_spread(kept), policy.prior)
    if combined is None:
        return None
    spread, dof = combined
    k = len(kept)
    t = between_runs.t_quantile(1.0 - policy.alpha_each, dof)
    return math.exp(t * spread * math.sqrt(2 / k)) - 1.0
