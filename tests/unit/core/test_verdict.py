from __future__ import annotations

import pytest

from pytest_burnperf.core.judging.verdict import (
    IMPROVED,
    INCONCLUSIVE,
    NO_BASELINE,
    REGRESSED,
    UNCHANGED,
    Policy,
    failure_message,
    format_ratio,
    judge,
)
from pytest_burnperf.core.text import format_time

BASE = [10.0 + 0.01 * i for i in range(20)]  # 10.00 .. 10.19, median 10.095

#: These tests check the within-process statistics: one run on each side, and no prior for the
#: between-process noise nobody measured (tests/unit/core/test_verdict_stats.py covers the prior).
NO_PRIOR = Policy(alpha=0.01, threshold=0.05, prior=None)


def scaled(factor: float) -> list[float]:
    return [v * factor for v in BASE]


def test_clear_slowdown_regresses() -> None:
    v = judge(BASE, scaled(1.15), NO_PRIOR)
    assert v.status == REGRESSED
    assert v.ratio == pytest.approx(1.15)
    assert v.p_slower is not None and v.p_slower < 1e-6
    assert (v.n_baseline, v.n_current) == (20, 20)


def test_significant_but_below_threshold_is_unchanged() -> None:
    # +3% is detected by the test (no overlap at all) but is smaller than the 5% minimum effect
    v = judge(BASE, scaled(1.03), NO_PRIOR)
    assert v.p_slower is not None and v.p_slower < 0.01
    assert v.status == UNCHANGED


def test_large_but_not_significant_is_inconclusive() -> None:
    base = [1.0, 5.0, 1.0, 5.0, 1.0, 5.0, 1.0, 5.0]
    cur = [1.2, 5.0, 1.2, 5.0, 1.0, 5.0, 1.0, 5.5]
    v = judge(base, cur, Policy(alpha=0.01, threshold=0.05))
    # the ratio's interval is far too wide to rule out a slowdown of more than 5%
    assert v.status == INCONCLUSIVE
    assert v.ratio_high is not None and v.ratio_high > 1.05
    assert v.reason.startswith(format_ratio(v) + ": the interval reaches above the 5% threshold")
    assert "the samples' rank test does not show a slowdown at the corrected alpha (p=" in v.reason


def test_a_small_p_beside_a_change_within_the_threshold_says_why_it_is_not_failed() -> None:
    """+3% in every round (the rank test sees it: p < alpha) while the rounds move 8% apart: the
    reason says the change is within the threshold and the rounds spread too much to rule out
    more; "slower (p=...) but the change is not above the threshold" beside an interval of
    [-58%, +90%] read as a contradiction (issue 76)."""
    runs_b = [[v * f for v in BASE] for f in (1.0, 1.08, 0.95)]
    runs_c = [[v * f * 1.03 for v in BASE] for f in (1.0, 1.08, 0.95)]
    v = judge(runs_b, runs_c, NO_PRIOR)
    assert v.status == INCONCLUSIVE and v.p_slower is not None and v.p_slower < 0.01
    assert v.reason.startswith(format_ratio(v) + ": the interval reaches above the 5% threshold")
    assert (
        f"the samples are slower (p={v.p_slower:.2g}) by +3.0%, within the threshold, while "
        in (v.reason)
    )
    assert "the rounds spread too much to rule out more" in v.reason


def test_speedup_is_improved_not_failed() -> None:
    v = judge(BASE, scaled(0.8), NO_PRIOR)
    assert v.status == IMPROVED
    assert v.change_pct == pytest.approx(-20.0)
    assert v.p_value == v.p_faster


def test_too_few_samples_is_inconclusive_not_unchanged() -> None:
    v = judge([1.0, 1.0, 1.0], [2.0, 2.0, 2.0], Policy(alpha=0.01))
    assert v.status == INCONCLUSIVE
    assert "p=0.05 at best" in v.reason


def test_no_baseline() -> None:
    v = judge(None, BASE, Policy())
    assert v.status == NO_BASELINE
    assert v.ratio is None and v.p_value is None


def test_failure_message_is_one_actionable_line() -> None:
    base = [0.01230] * 10 + [0.01232] * 10
    cur = [0.01411] * 10 + [0.01413] * 10
    policy = NO_PRIOR
    v = judge(base, cur, policy)
    msg = failure_message("test_matmul[numpy-cpu-f32]", v, policy)
    assert "\n" not in msg
    assert msg.startswith("test_matmul[numpy-cpu-f32]: 12.3 ms -> 14.1 ms (+14.7% [+14.")
    assert msg.endswith("n=20/20, runs=1/1) exceeds 5% threshold")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (2.5, "2.50 s"),
        (0.0123, "12.3 ms"),
        (4.2e-5, "42.0 us"),
        (5e-8, "50.0 ns"),
        (0.4, "400 ms"),
        (1e-3, "1.00 ms"),
        (float("nan"), "-"),
    ],
)
def test_format_time(seconds: float, text: str) -> None:
    assert format_time(seconds) == text


def _rounds(medians: list[float]) -> list[list[float]]:
    """Process rounds of 20 samples each around the given medians (spread +-0.5%)."""
    return [[m * (1 + 0.005 * ((i % 5) - 2) / 2) for i in range(20)] for m in medians]


def test_faster_but_blind_is_inconclusive_not_unchanged() -> None:
    """Rounds that scatter by tens of percent: the current side's median is lower, but the
    between-run interval of the change still reaches far above the threshold, so the rounds
    could hide a real slowdown (a harness run of 2026-11-24 under load had planted +20%
    slowdowns reported `unchanged` this way): not a pass."""
    policy = Policy(alpha=0.01, threshold=0.05)
    v = judge(_rounds([1.0, 1.5, 0.7, 1.2]), _rounds([0.9, 1.3, 0.6, 1.1]), policy)
    assert v.ratio < 1.0 and v.ratio_high is not None and v.ratio_high > 1.05
    assert v.status == INCONCLUSIVE
    assert "the interval reaches above the 5% threshold and" in (v.reason or "")


def test_faster_with_a_narrow_interval_is_unchanged() -> None:
    policy = Policy(alpha=0.01, threshold=0.05)
    base = _rounds([1.0, 1.004, 0.996, 1.002, 0.998])
    v = judge(base, _rounds([0.98, 0.984, 0.976, 0.982, 0.978]), policy)
    assert v.ratio < 1.0 and v.ratio_high is not None and v.ratio_high <= 1.05
    assert v.status == UNCHANGED
