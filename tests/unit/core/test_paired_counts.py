"""Counts paired call by call (core/counting/paired_counts.py): each counted call's place among
its process's calls, and the verdict from each call against the baseline's call at that place,
on injected counts."""

from __future__ import annotations

import random
from typing import Any

import pytest

from pytest_burnperf.core.counting import counted_calls, counts, paired_counts
from pytest_burnperf.core.counting.counts import Counted
from pytest_burnperf.core.judging.verdict import (
    IMPROVED,
    INCONCLUSIVE,
    REGRESSED,
    UNCHANGED,
)

from .test_counts import FakeCounter

#: What a benchmark drawing its work afresh each call counts at each of its process's calls:
#: 6.7 M instructions, spread 8% between calls (kornia's random perspective), the same draws
#: at the same place in every process.
DRAWN = [round(6_700_000 * (1 + 0.04 * random.Random(place).uniform(-1, 1))) for place in range(40)]
#: The places a counted process counts them at (a warm-up call between its two passes).
PLACES = (12, 13, 15, 16, 17, 18, 19)


def counted(
    places: tuple[int, ...] = PLACES,
    scale: float = 1.0,
    jitter: float = 0.0002,
    seed: int = 0,
    keep_places: bool = True,
) -> Counted:
    """One counted process: the drawn call at each place, times ``scale``, moved by up to
    ``jitter`` (what moves the same call between processes)."""
    noise = random.Random(seed)
    values = tuple(round(DRAWN[p] * scale * (1 + jitter * noise.uniform(-1, 1))) for p in places)
    return Counted(values, (), positions=places if keep_places else ())


def judge(base: Counted, cur: Counted, **kw: Any) -> Any:
    kw.setdefault("alpha_each", 0.001)
    kw.setdefault("process_spread", counts.between_processes(base, cur))
    return paired_counts.judge_counted(base, cur, **kw)


def test_calls_drawn_afresh_are_judged_call_by_call_at_the_floor() -> None:
    """As a whole their 8% spread leaves counts blind (left to the clock); paired, each call
    is within hundredths of a percent of its own: unchanged at the floor."""
    base = counts.pooled([counted(seed=1), counted(seed=2), counted(seed=3)])
    cur = counted(seed=4)
    spread = counts.between_processes(base, cur)
    whole = counts.judge_counts(
        list(map(float, base.instructions)), cur.instructions, alpha_each=0.001,
        process_spread=spread,
    )  # fmt: skip
    assert counts.undecidable(whole)
    v = judge(base, cur)
    assert v.status == UNCHANGED and v.spread_source == counts.PAIRED_SOURCE
    assert v.effect == counts.COUNTS_FLOOR and v.n_current == len(PLACES)
    assert "each of 7 calls against the baseline's call at the same place" in v.reason


@pytest.mark.parametrize(("scale", "status"), [(1.02, REGRESSED), (0.97, IMPROVED)])
def test_a_small_change_to_every_call_is_called(scale: float, status: str) -> None:
    base = counts.pooled([counted(seed=1), counted(seed=2), counted(seed=3)])
    v = judge(base, counted(scale=scale, seed=4))
    assert v.status == status and v.ratio == pytest.approx(scale, abs=0.001)
    assert v.p_slower is None and "7 pairs" in v.reason
    if status == REGRESSED:
        line = counts.counts_failure("t", v)
        assert (
            "the median call against the baseline's call at the same place, every call apart"
            in line
        )
        assert "+2.0" in line and "n=7/7" in line


def test_a_process_one_call_later_pairs_by_place() -> None:
    """A process that made one call more before counting (a guard's second uninstrumented
    call) counts other places: its calls pair with the baseline's at those places."""
    later = tuple(p + 1 for p in PLACES)
    base = counts.pooled([counted(later, seed=1), counted(seed=2), counted(seed=3)])
    assert paired_counts.judge_counted(base, counted(seed=4), alpha_each=0.001).status == UNCHANGED
    v = judge(counted(seed=2), counted(later, scale=1.02, seed=4))
    assert v.status == REGRESSED and v.n_current == 5  # the places both counted


def test_places_that_do_not_draw_alike_fall_back_to_the_calls_as_a_whole() -> None:
    """A process whose calls drew otherwise at the same places (another number of draws before
    them) pairs calls of other work: their ratios spread as the calls do, and pairing does not
    judge."""
    base = counted(seed=1)
    shuffled = Counted(tuple(reversed(counted(seed=2).instructions)), (), positions=PLACES)
    v = judge(base, shuffled)
    assert v.spread_source != counts.PAIRED_SOURCE
    assert paired_counts.judge_paired(base, shuffled) is None  # beyond counts' largest effect


def test_too_few_pairs_or_no_places_judge_the_calls_as_a_whole() -> None:
    base = counted(seed=1)
    few = PLACES[: paired_counts.MIN_PAIRS - 1]
    assert paired_counts.judge_paired(base, counted(few, seed=2)) is None
    assert paired_counts.judge_paired(counted(seed=1, keep_places=False), counted(seed=2)) is None
    assert judge(base, counted(few, seed=2)).spread_source != counts.PAIRED_SOURCE


def test_calls_that_agree_are_judged_as_before() -> None:
    """Pairing judges only where it narrows the minimum effect: calls that agree anyway get
    the verdict of the calls as a whole."""
    base = Counted(
        (1_000_000, 1_000_100, 1_000_050, 1_000_020, 1_000_010), (), positions=PLACES[:5]
    )
    cur = Counted((1_000_040, 1_000_000, 1_000_090, 1_000_030, 1_000_060), (), positions=PLACES[:5])
    whole = counts.judge_counts(list(map(float, base.instructions)), cur.instructions,
                                alpha_each=0.001)  # fmt: skip
    assert judge(base, cur) == whole


def test_processes_apart_at_the_same_place_widen_the_minimum_effect() -> None:
    """Where the baseline's processes counted the same place 1% apart (interpreted code whose
    lookups follow the memory layout), the minimum effect is at least twice that: a +1.5% move
    is not called a change."""
    base = counts.pooled([counted(seed=1), counted(scale=1.01, seed=2)])
    v = judge(base, counted(scale=1.02, seed=3))
    assert v.spread_source == counts.PAIRED_SOURCE
    assert v.effect is not None and v.effect >= 0.02
    assert v.status == UNCHANGED


def test_a_threshold_set_gates_paired_counts_too() -> None:
    base = counts.pooled([counted(seed=1), counted(seed=2), counted(seed=3)])
    v = judge(base, counted(scale=1.03, seed=4), threshold=0.05)
    assert v.status == UNCHANGED and "within the 5% threshold set" in v.reason
    assert v.min_detectable == 0.05


def test_pairs_not_all_beyond_the_effect_leave_the_verdict_to_the_calls_as_a_whole() -> None:
    base = counted(seed=1, jitter=0.0)
    # six calls 1.25% up, one 0.75%: their median beyond the ~1% minimum effect, one call not
    bumped = [round(v * (1.0075 if i == 0 else 1.0125)) for i, v in enumerate(base.instructions)]
    cur = Counted(tuple(bumped), (), positions=PLACES)
    v = paired_counts.judge_paired(base, cur)
    assert v is not None and v.spread_source == counts.PAIRED_SOURCE
    assert v.status == INCONCLUSIVE and "not every call" in v.reason
    # the pairs moved apart: the calls as a whole decide, as without the places
    assert judge(base, cur).spread_source != counts.PAIRED_SOURCE


def test_each_counted_calls_place_is_kept_and_survives_pooling_and_json() -> None:
    """The places count every call the process made (1: the uninstrumented first call), so a
    process that made one more before counting shows it."""

    def run(ticks: list[float], compiles: int = 0) -> Counted:
        counter = FakeCounter()
        frames, made = [0], [0]
        costs = iter([7_000, 7_000] + [5_000, 6_000] * 20)  # warm-ups, then calls apart

        def make_call() -> tuple[Any, Any]:
            def call() -> None:
                made[0] += 1
                if made[0] <= compiles:
                    frames[0] += 3  # this call compiled three frames
                if counter.collecting and counter.instrumented:
                    counter.cost += next(costs)

            return call, None

        clock = iter(ticks)
        got, _ = counted_calls.count_calls(
            make_call, counter, lambda d: d, calls=9, label="t", settle=lambda i: 0,
            guard_s=1.0, clock=lambda: next(clock), compiled=lambda: frames[0],
        )  # fmt: skip
        return got

    # the first call, the size probe, one warm-up, two counted; one warm-up, seven counted
    got = run([0.0, 0.1])
    assert got.positions == (4, 5, 7, 8, 9, 10, 11, 12, 13)
    # a slow first call gets a second one uninstrumented: every place one later
    assert run([0.0, 1.5, 0.0, 0.1]).positions == tuple(p + 1 for p in got.positions)
    # a first call that compiled gets a second one whatever it took (a warm compiler cache or
    # a cold one), and more while each compiles again: every process makes the same calls
    later = tuple(p + 1 for p in got.positions)
    assert run([0.0, 0.1, 0.0, 0.1], compiles=1).positions == later
    assert run([0.0, 1.5, 0.0, 0.1], compiles=1).positions == later
    thrice = run([0.0, 0.1] * 4, compiles=3)  # calls 2 and 3 recompiled, call 4 did not
    assert thrice.positions == tuple(p + 3 for p in got.positions)
    # a recompilation over the guard (a cold compiler cache) is the compiler's time: the guard
    # judges the first call that compiled nothing
    slow = run([0.0, 1.5, 0.0, 1.5, 0.0, 1.5, 0.0, 0.1], compiles=3)
    assert slow.positions == thrice.positions
    # a compiler that never settles: at most COMPILE_SETTLE_CALLS more
    endless = run([0.0, 0.1] * 20, compiles=100).positions
    assert endless == tuple(p + counted_calls.COMPILE_SETTLE_CALLS for p in got.positions)
    assert Counted.from_json(got.as_json()) == got
    pooled = counts.pooled([got, got])
    assert pooled.positions == got.positions * 2
    older = Counted(got.instructions, ())  # recorded before places were kept
    assert counts.pooled([got, older]).positions == ()
