"""Adaptive sampling: the median's order-statistic interval and when measure() stops."""

from __future__ import annotations

import itertools
import math
import random

import pytest
from scipy.stats import binom

from pytest_burnperf.core.clocks import BATCH
from pytest_burnperf.core.judging.stats import (
    MIN_ROUND_SAMPLES,
    median_halfwidth,
    median_order_index,
    precision_goal,
    round_samples,
    round_sampling,
)
from pytest_burnperf.core.timing import measure


@pytest.mark.parametrize(
    ("n", "j"),
    # 1-based textbook pairs (x_(j+1), x_(n-j)): n=6 -> (1, 6), 9 -> (2, 8), 20 -> (6, 15),
    # 50 -> (18, 33), 100 -> (40, 61).
    [(5, None), (6, 0), (9, 1), (20, 5), (50, 17), (100, 39)],
)
def test_median_interval_order_statistics(n: int, j: int | None) -> None:
    assert median_order_index(n) == j
    if j is not None:  # reference: the binomial coverage, computed by scipy
        assert 1 - 2 * binom.cdf(j, n, 0.5) >= 0.95
        assert 1 - 2 * binom.cdf(j + 1, n, 0.5) < 0.95


def test_median_halfwidth_on_log_times() -> None:
    values = [float(v) for v in range(20, 0, -1)]  # order does not matter
    assert median_halfwidth(values) == pytest.approx((math.log(15) - math.log(6)) / 2)
    assert median_halfwidth([1.0] * 5) == math.inf
    assert precision_goal(0.05) == pytest.approx(math.log(1.05) / 4)


def test_pooled_rounds_sample_less_each() -> None:
    """With several process rounds pooled, each round takes its share of the samples (at least
    MIN_ROUND_SAMPLES, never more than asked) and aims its median at sqrt(rounds) times the
    goal, so that the rounds' mean is as precise as one process at the plain goal."""
    assert round_samples(20, 1) == 20
    assert round_samples(20, 3) == MIN_ROUND_SAMPLES == 10
    assert round_samples(60, 3) == 20
    assert round_samples(61, 3) == 21
    assert round_samples(5, 8) == 5  # never more than asked for
    assert round_samples(200, 8) == 25
    # adaptive sampling stays off where it was off, and keeps its cap where it was on
    assert round_sampling(15, 15, 2) == (10, 10)
    assert round_sampling(20, 200, 3) == (10, 200)
    assert round_sampling(20, 0, 1) == (20, 20)
    assert precision_goal(0.05, 4) == pytest.approx(2 * precision_goal(0.05))
    assert precision_goal(0.05, 0) == precision_goal(0.05)


class Costs:
    """A fake clock whose benchmarked call costs the next value of ``costs`` (ns)."""

    def __init__(self, costs: itertools.cycle[int]) -> None:
        self.now = 0
        self.costs = costs

    def __call__(self) -> int:
        return self.now

    def work(self) -> None:
        self.now += next(self.costs)


def _run(costs: list[int], **kw: object) -> tuple[int, str]:
    clock = Costs(itertools.cycle(costs))
    goal = precision_goal(0.05)
    _, sample = measure(
        clock.work,
        samples=20,
        warmup=0.0,
        min_time=0.0,
        clock=clock,
        precise=lambda v: median_halfwidth(v) <= goal,
        **kw,  # type: ignore[arg-type]
    )
    return len(sample.values), sample.stopped


def test_a_steady_function_stops_at_the_minimum_samples() -> None:
    assert _run([1_000_000], max_samples=200, max_time=10.0) == (20, "precise")


def test_a_noisy_function_extends_in_batches_up_to_the_cap() -> None:
    # Alternating 1 ms / 2 ms: the median's interval never narrows, so sampling runs to the cap.
    assert _run([1_000_000, 2_000_000], max_samples=75, max_time=10.0) == (75, "cap")


def test_moderate_noise_extends_until_precise() -> None:
    # Calls spread evenly over 1.00-1.10 ms (in shuffled order): 20 samples pin the median to
    # about +-2.2%, above the +-1.2% goal at a 5% threshold; a few batches more reach it.
    costs = [1_000_000 + 5_000 * i for i in range(21)]
    random.Random(1).shuffle(costs)
    n, stopped = _run(costs, max_samples=1000, max_time=10.0)
    assert stopped == "precise" and n % BATCH == 0 and 30 <= n <= 150


def test_the_time_budget_stops_sampling() -> None:
    # 1.5 ms a call, 0.1 s of budget: 20 samples (30 ms) then batches until 100 ms have passed.
    n, stopped = _run([1_000_000, 2_000_000], max_samples=10_000, max_time=0.1)
    assert stopped == "budget" and 20 + BATCH <= n <= 20 + 6 * BATCH


def test_without_a_precision_test_or_with_a_low_cap_the_count_is_fixed() -> None:
    clock = Costs(itertools.cycle([1_000_000, 2_000_000]))
    _, sample = measure(clock.work, samples=20, warmup=0.0, min_time=0.0, clock=clock)
    assert (len(sample.values), sample.stopped) == (20, "fixed")
    assert _run([1_000_000, 2_000_000], max_samples=20, max_time=10.0) == (20, "fixed")
