"""Hodges-Lehmann ratio and interval, between-run noise, noise floor, family-wise correction:
each against an independent computation."""

from __future__ import annotations

import math
import random
import statistics

import pytest
from scipy.stats import mannwhitneyu

from pytest_burnperf.core.judging import between_runs, stats
from pytest_burnperf.core.judging.abstention import Cause
from pytest_burnperf.core.judging.verdict import (
    INCONCLUSIVE,
    REGRESSED,
    UNCHANGED,
    Policy,
    format_ratio,
    judge,
)


def test_hodges_lehmann_point_estimate_is_the_median_pairwise_log_difference() -> None:
    x, y = [2.0, 4.0, 8.0], [1.0, 2.0]
    diffs = sorted(math.log(a) - math.log(b) for a in x for b in y)  # log 1,2,2,4,4,8 (base e)
    est = stats.hodges_lehmann_ratio(x, y)
    assert est.ratio == pytest.approx(math.exp(statistics.median(diffs)))
    assert est.ratio == pytest.approx(2.0 * math.sqrt(2.0))  # median of 2, 2, 4, 4 ... = sqrt(8)


def test_hodges_lehmann_interval_inverts_the_two_sided_mann_whitney_test() -> None:
    rng = random.Random(7)
    y = [rng.lognormvariate(0.0, 0.05) for _ in range(20)]
    x = [rng.lognormvariate(0.1, 0.05) for _ in range(20)]
    est = stats.hodges_lehmann_ratio(x, y, level=0.95)
    lx = [math.log(v) for v in x]
    ly = [math.log(v) for v in y]

    def accepted(shift: float) -> bool:  # the shift is inside the 95% interval
        res = mannwhitneyu(
            [a - shift for a in lx],
            ly,
            alternative="two-sided",
            method="asymptotic",
            use_continuity=False,
        )
        return float(res.pvalue) >= 0.05

    grid = [i / 20000 for i in range(0, 4000)]  # 0 .. 0.2 in log units
    inside = [s for s in grid if accepted(s)]
    assert math.log(est.low) == pytest.approx(min(inside), abs=2e-3)
    assert math.log(est.high) == pytest.approx(max(inside), abs=2e-3)
    assert est.low < est.ratio < est.high


def test_run_spread_and_pooling() -> None:
    runs = [[1.0, 1.0, 1.0], [1.1, 1.1, 1.1], [0.9, 0.9, 0.9]]
    spread, dof = between_runs.log_run_spread(runs)  # type: ignore[misc]
    assert dof == 2
    assert spread == pytest.approx(statistics.stdev([0.0, math.log(1.1), math.log(0.9)]))
    assert between_runs.log_run_spread([[1.0, 2.0]]) is None
    other = [[2.0], [2.0 * 1.05]]
    pooled, pooled_dof = between_runs.pooled_run_spread_dof(runs, other)  # type: ignore[misc]
    s2 = statistics.variance([math.log(2.0), math.log(2.1)])
    assert pooled_dof == 3
    assert pooled == pytest.approx(math.sqrt((spread**2 * 2 + s2 * 1) / 3))
    assert between_runs.pooled_run_spread_dof([[1.0]], [[2.0]]) is None


def test_run_model_floor_interval_and_power_reference_values() -> None:
    """Student's t on the log run medians, pooled with the prior, against scipy computed here."""
    from scipy.stats import t

    base = [[1.0] * 5, [1.02] * 5, [0.99] * 5]
    cur = [[1.10] * 5, [1.12] * 5, [1.09] * 5]
    prior = between_runs.NoisePrior(0.02, 2)
    model = between_runs.run_model(base, cur, prior)
    assert model is not None
    lb = [math.log(v) for v in (1.0, 1.02, 0.99)]
    lc = [math.log(v) for v in (1.10, 1.12, 1.09)]
    ss = sum((x - statistics.fmean(lb)) ** 2 for x in lb) + sum(
        (x - statistics.fmean(lc)) ** 2 for x in lc
    )
    s = math.sqrt((2 * 0.02**2 + ss) / (2 + 4))  # constant runs: no within-run error
    se = s * math.sqrt(1 / 3 + 1 / 3)
    assert model.dof == 6 and model.spread == pytest.approx(s)
    assert model.diff == pytest.approx(statistics.fmean(lc) - statistics.fmean(lb))
    assert model.floor(0.001) == pytest.approx(math.exp(t.ppf(0.999, 6) * se) - 1)
    low, high = model.interval(0.95)
    assert math.log(high) == pytest.approx(model.diff + t.ppf(0.975, 6) * se)
    assert math.log(low) == pytest.approx(model.diff - t.ppf(0.975, 6) * se)
    assert model.p_greater() == pytest.approx(t.sf(model.diff / se, 6))
    assert model.min_detectable(0.05) == pytest.approx(1.05 * math.exp(t.ppf(0.9, 6) * se) - 1)
    # without a prior, one run a side says nothing about the between-run spread
    assert between_runs.run_model([[1.0]], [[1.1]], None) is None
    assert stats.bonferroni(0.01, 24) == pytest.approx(0.01 / 24)
    assert Policy(alpha=0.01, comparisons=4).alpha_each == pytest.approx(0.0025)


def test_the_prior_part_carries_the_within_run_error_of_a_median() -> None:
    """A bimodal run's median is itself uncertain; the prior's part of the variance is widened by
    that standard error (1.2533 robust sd / sqrt(n) of the log samples), which a few spikes do
    not inflate."""
    run = [1.0, 5.0] * 4
    # every log sample is log(5)/2 from the median log(5)/2: the robust sd is 1.4826 log(5)/2
    w = 1.2533 * 1.4826 * math.log(5.0) / 2 / math.sqrt(len(run))
    assert between_runs.median_standard_error([run, run]) == pytest.approx(w)
    model = between_runs.run_model([run], [run], between_runs.NoisePrior(0.02, 2))
    assert model is not None and model.spread == pytest.approx(math.hypot(0.02, w))
    spiky = [1.0 + 0.001 * i for i in range(18)] + [20.0, 30.0]
    assert between_runs.median_standard_error([spiky]) < 0.005


def runs_of(level: float, wobble: list[float], n: int = 20) -> list[list[float]]:
    return [[level * w * (1 + 0.001 * i) for i in range(n)] for w in wobble]


def test_noisy_runs_raise_the_minimum_effect_and_say_so() -> None:
    base = runs_of(1.0, [1.0, 1.10, 0.92])  # runs differ by ~9%
    cur = runs_of(1.08, [1.0, 1.09, 0.93])  # +8%: above 5%, inside this benchmark's noise
    v = judge(base, cur, Policy(alpha=0.01, threshold=0.05))
    assert v.status != REGRESSED
    assert v.effect is not None and v.effect > 0.15
    assert v.notes[0].startswith("noisy: runs of this benchmark move by ")
    assert "gates only above +" in v.notes[0]


def test_quiet_runs_gate_at_the_threshold_and_catch_a_clear_slowdown() -> None:
    """Eight quiet runs a side (as adaptive rounds give an undecided benchmark) outweigh the
    prior: the floor falls below the 5% threshold, and +20% is caught in a session of 30."""
    wobble = [1.0, 1.004, 0.997, 1.002, 0.999, 1.003, 0.998, 1.001]
    base = runs_of(1.0, wobble)
    policy = Policy(alpha=0.01, threshold=0.05, comparisons=30)
    v = judge(base, runs_of(1.2, wobble[::-1]), policy)
    assert v.status == REGRESSED and v.effect == pytest.approx(0.05)
    assert v.min_detectable is not None and v.min_detectable < 0.09
    same = judge(base, runs_of(1.0, wobble[1:] + wobble[:1]), policy)
    assert same.status == UNCHANGED and same.notes == ()
    # three a side: the prior still weighs 2 of 6 degrees of freedom, the floor is above 5%
    three = judge(base[:3], runs_of(1.2, wobble[:3]), policy)
    assert three.spread_dof == 6 and three.effect is not None and three.effect > 0.05


def test_single_runs_without_a_prior_are_flagged_as_less_reliable() -> None:
    same = [1.0 + 0.001 * i for i in range(20)]
    v = judge(same, same, Policy(prior=None))
    assert v.runs_baseline == v.runs_current == 1
    assert any("between-process noise is unknown" in n for n in v.notes)
    assert v.spread_source == ""


def test_one_run_a_side_uses_the_prior_not_zero_noise() -> None:
    """Two single processes: a steady +15% (far beyond the within-process noise) is what
    between-process noise does now and then, so with the default prior it is not a regression,
    and the floor and the detectable slowdown say how far this comparison can see."""
    from scipy.stats import t

    base = [1.0 + 0.0001 * i for i in range(20)]
    policy = Policy(alpha=0.01, threshold=0.05)
    v = judge(base, [x * 1.15 for x in base], policy)
    prior = between_runs.DEFAULT_PRIOR
    assert v.spread_source == "prior" and v.run_spread is None and v.spread_dof == prior.dof
    w = between_runs.median_standard_error([base, [x * 1.15 for x in base]])
    se = math.hypot(prior.spread, w) * math.sqrt(2)
    assert v.effect == pytest.approx(math.exp(t.ppf(0.99, prior.dof) * se) - 1)
    assert v.status == INCONCLUSIVE and "inside this benchmark's noise floor" in v.reason
    assert v.cause is Cause.NOISE
    assert any("the prior is assumed (2.2%" in n for n in v.notes)
    assert v.min_detectable is not None and v.min_detectable > v.effect
    # far beyond what the prior allows: still a regression
    assert judge(base, [x * 2.0 for x in base], policy).status == REGRESSED
    # without a prior the same +15% would fail: the behaviour this replaces
    assert judge(base, [x * 1.15 for x in base], Policy(prior=None)).status == REGRESSED


def test_own_runs_are_pooled_with_the_prior() -> None:
    """Three baseline runs that happen to agree are 2 degrees of freedom of evidence; pooled
    with the prior's 2, a single current process is not judged as if processes never moved;
    many runs outweigh the prior."""
    base = [[1.0, 1.001, 0.999], [1.01, 1.011, 1.009], [0.995, 0.996, 0.994]]
    v = judge(base, [[1.0, 1.001, 1.002]], Policy())
    assert v.spread_source == "runs+prior" and v.run_spread is not None
    assert v.spread_dof == between_runs.DEFAULT_PRIOR.dof + 2
    assert v.spread is not None and v.run_spread < v.spread < between_runs.DEFAULT_PRIOR.spread
    assert v.run_spread_upper == pytest.approx(between_runs.spread_upper(v.spread, 4))
    many = judge(base * 4, base * 4, Policy())
    assert many.spread_dof == between_runs.DEFAULT_PRIOR.dof + 22
    assert many.spread is not None and many.spread < 0.01
    assert between_runs.spread_or_prior((0.01, 4), None) == (0.01, 4)


def test_noise_prior_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="NoisePrior"):
        between_runs.NoisePrior(-0.01, 2)
    with pytest.raises(ValueError, match="NoisePrior"):
        between_runs.NoisePrior(0.01, 0)


def test_family_wise_alpha_can_make_a_small_sample_inconclusive() -> None:
    # 5 vs 5 samples reach p = 1/252 = 0.004 at best: enough for one comparison, not for ten
    base, cur = [1.0, 1.01, 1.02, 1.03, 1.04], [2.0, 2.01, 2.02, 2.03, 2.04]
    assert judge(base, cur, Policy(alpha=0.01)).status == REGRESSED
    assert judge(base, cur, Policy(alpha=0.01, comparisons=10)).status == INCONCLUSIVE


def test_spread_upper_bound_reference_values() -> None:
    # chi-square 20% quantile with 4 dof is 1.64878: the 80% upper bound is 1.5576x the estimate
    assert between_runs.spread_upper(0.02, 4) == pytest.approx(
        0.02 * math.sqrt(4 / 1.64878), rel=1e-4
    )
    assert between_runs.spread_upper(0.02, 4, level=0.5) == pytest.approx(
        0.02 * math.sqrt(4 / 3.35669), rel=1e-4
    )
    assert between_runs.pooled_run_spread_dof([[1.0], [1.1], [0.9]], [[1.0]]) == pytest.approx(
        (statistics.stdev([0.0, math.log(1.1), math.log(0.9)]), 2)
    )
    with pytest.raises(ValueError, match="dof must be >= 1"):
        between_runs.spread_upper(0.02, 0)


def test_a_slowdown_inside_the_noise_floor_is_inconclusive_not_failed() -> None:
    base = runs_of(1.0, [1.0, 1.10, 0.92])
    cur = runs_of(1.12, [1.0, 1.09, 0.93])  # +12%: significant, above 5%, inside the floor
    v = judge(base, cur, Policy(alpha=0.01, threshold=0.05))
    assert v.status == INCONCLUSIVE
    assert "inside this benchmark's noise floor" in v.reason
    assert v.spread is not None and v.run_spread_upper is not None
    assert v.run_spread_upper == pytest.approx(between_runs.spread_upper(v.spread, 6))


def test_a_large_speed_up_that_is_not_significant_says_why_it_is_unchanged() -> None:
    # issue 41: an unchanged -25.3% [-42.0%, -3.9%] read oddly with nothing said
    base = runs_of(1.0, [1.0, 1.08, 0.93], n=3)  # noisy runs, few samples
    cur = runs_of(0.75, [1.0, 1.1, 0.9], n=3)
    v = judge(base, cur, Policy(alpha=0.01, threshold=0.05, comparisons=300))
    assert v.status == UNCHANGED, (v.status, v.reason, v.ratio)
    # the reason says which test held it back, beside the interval it is shown with
    assert v.reason.startswith(f"{format_ratio(v)}: faster, but ")
    assert "rank test does not confirm it" in v.reason or "noise floor" in v.reason
    assert v.reason.endswith("no slowdown, so unchanged")


def test_hodges_lehmann_of_large_samples_without_forming_every_pair() -> None:
    """A user's pytest-benchmark suite with pedantic(rounds=2000) over 8 process rounds gave
    16,000 samples a side: 256M pairwise differences, 10 GB and minutes. Beyond
    PAIRWISE_SORT_MAX pairs the order statistics come from counting; they match the sorted
    pairs exactly (to an ulp) where both can be computed."""
    rng = random.Random(7)
    x = [math.exp(rng.gauss(0.1, 0.2)) for _ in range(700)]
    y = [math.exp(rng.gauss(0.0, 0.2)) for _ in range(600)]
    lx, ly = sorted(math.log(v) for v in x), sorted(math.log(v) for v in y)
    diffs = sorted(a - b for a in lx for b in ly)
    for k in (0, 1, 12_345, len(diffs) // 2, len(diffs) - 1):
        assert stats._kth_difference(lx, ly, k) == pytest.approx(diffs[k], abs=1e-12)
    big = stats.hodges_lehmann_ratio(x, y)  # 420,000 pairs: the counting path
    assert len(x) * len(y) > stats.PAIRWISE_SORT_MAX
    nm = len(diffs)
    assert big.ratio == pytest.approx(
        math.exp((diffs[nm // 2 - 1] + diffs[nm // 2]) / 2), rel=1e-12
    )
    # 16,000 a side: done in memory linear in the samples
    huge = [math.exp(rng.gauss(0.0, 0.1)) for _ in range(16_000)]
    est = stats.hodges_lehmann_ratio([1.1 * v for v in huge], huge)
    assert est.low < est.ratio < est.high and est.ratio == pytest.approx(1.1, rel=0.01)
