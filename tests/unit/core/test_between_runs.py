"""Disturbed process rounds (between_runs.disturbed_runs): a round the host slowed as a whole is set
aside on either side before the between-run model sees it; injected run medians, nothing is
timed."""

from __future__ import annotations

import math
import random

import pytest

from pytest_burnperf.core.judging import between_runs
from pytest_burnperf.core.judging.more_rounds import needs_more_rounds
from pytest_burnperf.core.judging.verdict import (
    INCONCLUSIVE,
    REGRESSED,
    UNCHANGED,
    Policy,
    judge,
    set_aside_disturbed,
)

POLICY = Policy(alpha=0.01, threshold=0.05, comparisons=31)


def runs(levels: list[float], n: int = 10) -> list[list[float]]:
    """One run per level, its samples 0.1% apart around it."""
    return [[lv * (1 + 0.001 * (i - n / 2)) for i in range(n)] for lv in levels]


# what the harness saw for a pure-Python loop: 2 of 8 baseline rounds 1.5x slow
PYTHON_BASE = [0.995, 1.535, 1.59, 1.007, 0.991, 0.961, 0.976, 1.005]


def test_a_round_far_slower_than_the_others_is_set_aside() -> None:
    assert between_runs.disturbed_runs(runs(PYTHON_BASE), runs([1.0, 0.98, 1.02])) == [[1, 2], []]
    # one slow round in three beside a quiet other side: the other two are the majority
    assert between_runs.disturbed_runs(runs([1.0, 1.01, 0.99, 1.0]), runs([1.0, 1.5, 0.99])) == [
        [],
        [1],
    ]
    # a lone side of three cannot tell its outlier from its spread; of five it can
    assert between_runs.disturbed_runs(runs([1.0, 1.5, 0.99])) == [[]]
    assert between_runs.disturbed_runs(runs([1.0, 1.5, 0.99, 1.01, 1.0])) == [[1]]


def test_ordinary_spread_and_fast_rounds_are_kept() -> None:
    # 14% slower than the median round: inside the 15% floor
    assert between_runs.disturbed_runs(runs([1.0, 1.14, 0.99, 1.01])) == [[]]
    # a fast round is never set aside: nothing makes a process faster than its code
    assert between_runs.disturbed_runs(runs([1.0, 0.6, 1.01, 0.99])) == [[]]
    # two rounds a side: which of them is the odd one cannot be told
    assert between_runs.disturbed_runs(runs([1.0, 2.0]), runs([1.0, 1.0, 1.01])) == [[], []]


def test_never_half_of_a_side() -> None:
    quiet = runs([1.0, 1.01, 0.99, 1.0, 1.005, 0.995])
    # at most (k - 1) // 2 go, the slowest first
    assert between_runs.disturbed_runs(quiet, runs([1.0, 1.6, 1.7, 1.0])) == [[], [2]]
    assert between_runs.disturbed_runs(quiet, runs([1.0, 1.6, 1.7])) == [
        [],
        [],
    ]  # the median is slow
    # with five rounds or more a side's own spread counts: 2 slow of 5 are a mode, not outliers
    assert between_runs.disturbed_runs(quiet, runs([1.0, 1.6, 1.7, 1.0, 1.01])) == [[], []]
    assert between_runs.disturbed_runs(quiet, runs([1.0, 1.6, 1.0, 1.0, 1.01])) == [[], [1]]


def test_the_bound_follows_the_spread_of_a_noisy_benchmark() -> None:
    """A benchmark whose rounds move by ~8% (robust sd) is set aside only beyond 5 such sds."""
    rng = random.Random(3)
    wide = [math.exp(rng.gauss(0.0, 0.08)) for _ in range(8)]
    got = between_runs.disturbed_runs(runs(wide), runs([1.25, 1.0, 1.05]))
    assert got == [[], []]
    # a side noisier than the pair as a whole is judged by its own spread: a quiet baseline
    # does not make every slow round of a scattered current side an outlier
    quiet = [1.0, 1.002, 0.998, 1.001, 0.999, 1.003, 0.997, 1.0]
    scattered = [1.0, 1.30, 1.10, 1.115, 1.12, 0.97, 1.04, 1.007]
    assert between_runs.disturbed_runs(runs(quiet), runs(scattered)) == [[], []]


def test_judge_leaves_disturbed_rounds_out_and_says_so() -> None:
    base = runs(PYTHON_BASE)
    cur = runs([1.1 * v for v in [1.0, 0.99, 1.01, 1.005, 0.995, 1.55, 0.98, 1.0]])
    v = judge(base, cur, POLICY)
    assert v.status == REGRESSED
    assert (v.set_aside_baseline, v.set_aside_current) == (2, 1)
    assert (v.runs_baseline, v.runs_current) == (6, 7)
    assert v.ratio == pytest.approx(1.1, rel=0.02)
    assert v.notes[0].startswith("set aside as disturbed: 2 baseline rounds and 1 current round")
    # with them the same data is blind: the outliers make the rounds' sd several times larger
    kept = between_runs.DISTURBED_SLOWDOWN
    try:
        between_runs.DISTURBED_SLOWDOWN = 100.0
        blind = judge(base, cur, POLICY)
    finally:
        between_runs.DISTURBED_SLOWDOWN = kept
    assert blind.status == INCONCLUSIVE and (blind.set_aside_baseline, blind.set_aside_current) == (
        0,
        0,
    )
    assert blind.min_detectable is not None and v.min_detectable is not None
    assert blind.min_detectable > 3 * v.min_detectable


def test_unchanged_code_with_a_disturbed_round_stays_unchanged() -> None:
    base = runs([1.0, 1.01, 0.99, 1.005, 0.995, 1.0, 1.002, 0.998])
    cur = runs([1.0, 1.6, 1.003])
    v = judge(base, cur, POLICY)
    assert v.status == UNCHANGED and v.set_aside_current == 1
    assert v.runs_current == 2 and v.n_current == 20


def test_same_session_pairs_are_not_trimmed() -> None:
    """Paired rounds keep every pair: the host-busy rounds are dropped there as pairs
    (versions.clean_pairs), and a lone side's round cannot go without its partner."""
    ref = runs([1.0, 1.6, 1.0, 1.01])
    cur = runs([1.0, 1.6, 1.0, 1.01])
    v = judge(ref, cur, Policy(paired=True))
    assert (v.set_aside_baseline, v.set_aside_current) == (0, 0) and v.runs_current == 4


def test_adaptive_rounds_decide_without_the_disturbed_round() -> None:
    base = runs([1.0, 1.003, 0.998, 1.001, 0.999, 1.002])
    # the slow second round alone would keep the benchmark running to the last round
    assert not needs_more_rounds(base, runs([1.0, 1.7, 1.002]), POLICY)
    # recording: a baseline whose noise is one disturbed round is decided, too
    quiet = [1.0, 1.002, 0.998, 1.001, 0.999, 1.003, 0.997]
    assert not needs_more_rounds(None, runs([*quiet, 1.7]), POLICY, recording=True)
    kept = between_runs.DISTURBED_SLOWDOWN
    try:
        between_runs.DISTURBED_SLOWDOWN = 100.0
        assert needs_more_rounds(None, runs([*quiet, 1.7]), POLICY, recording=True)
    finally:
        between_runs.DISTURBED_SLOWDOWN = kept


def test_set_aside_disturbed_counts_and_keeps_order() -> None:
    (b, c), aside = set_aside_disturbed(runs([1.0, 1.6, 1.01]), runs([1.0, 1.01, 1.02, 2.0, 0.99]))
    assert aside == (1, 1)
    assert [round(r[5], 3) for r in b] == [1.0, 1.01]
    assert [round(r[5], 3) for r in c] == [1.0, 1.01, 1.02, 0.99]


def contaminated(rng: random.Random, k: int, level: float, share: float) -> list[list[float]]:
    """``k`` rounds whose medians scatter by 3% (lognormal), a ``share`` of them slowed
    1.2-1.8x as a whole, as the harness saw on a shared host."""
    out = []
    for _ in range(k):
        m = level * math.exp(rng.gauss(0.0, 0.03))
        if rng.random() < share:
            m *= rng.uniform(1.2, 1.8)
        out.append([m * (1 + 0.001 * (i - 5)) for i in range(10)])
    return out


def test_simulated_false_alarms_stay_at_alpha_and_detection_returns() -> None:
    """Seeded simulation at alpha 5% and no minimum effect, so that the statistics alone
    decide: with 5% of rounds disturbed on both sides, unchanged code fails at about alpha
    (not more than without the rule), and +10% with 8 rounds a side is caught where the
    untrimmed model misses a quarter."""
    policy = Policy(alpha=0.05, threshold=0.0)

    def rates(seed: int) -> tuple[float, float]:
        rng = random.Random(seed)
        fa = sum(
            judge(contaminated(rng, 8, 1.0, 0.05), contaminated(rng, 8, 1.0, 0.05), policy).status
            == REGRESSED
            for _ in range(600)
        )
        hit = sum(
            judge(contaminated(rng, 8, 1.0, 0.05), contaminated(rng, 8, 1.1, 0.05), policy).status
            == REGRESSED
            for _ in range(200)
        )
        return fa / 600, hit / 200

    fa, hit = rates(11)
    # 600 comparisons at 5%: the binomial's sd is 0.9%; 7.5% is over 2.5 of them above alpha
    assert fa <= 0.075
    assert hit >= 0.95
    kept = between_runs.DISTURBED_SLOWDOWN
    try:
        between_runs.DISTURBED_SLOWDOWN = 100.0
        fa_off, hit_off = rates(11)
    finally:
        between_runs.DISTURBED_SLOWDOWN = kept
    assert hit_off < 0.85 < hit
    assert fa_off <= 0.075
