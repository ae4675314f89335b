"""The search behind ``burnperf bisect``, with made-up commits: which commit moved each
benchmark, in how many probes, past commits that do not build."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence

import pytest

from pytest_burnperf.core.judging.abstention import Cause
from pytest_burnperf.core.judging.bisection import (
    Measured,
    ProbeFailed,
    Step,
    bisect,
    dependency_changes,
    paired_change,
)
from pytest_burnperf.core.judging.verdict import IMPROVED, INCONCLUSIVE, REGRESSED, UNCHANGED


def moved(_name: str, a: Sequence[float], b: Sequence[float]) -> bool:
    return abs(sum(b) / len(b) / (sum(a) / len(a)) - 1) > 0.02


def history(n: int, changes: dict[str, dict[int, float]], broken: Sequence[int] = ()):
    """A probe of ``n`` commits where each benchmark's measure is multiplied at the commits
    ``changes`` names; ``broken`` commits fail to build."""

    def probe(i: int) -> Measured:
        if i in broken:
            raise ProbeFailed(f"commit {i} does not build")
        out = {}
        for name, steps in changes.items():
            level = 1000.0
            for at, factor in sorted(steps.items()):
                if at <= i:
                    level *= factor
            out[name] = [level, level]
        return out

    return probe


def test_one_step_is_found_exactly_in_log2_probes() -> None:
    got = bisect(64, history(64, {"b": {37: 1.10}, "same": {}}), moved)
    assert got.steps["b"] == [Step(before=36, at=37, ratio=pytest.approx(1.10))]
    assert got.steps["same"] == []
    assert len(got.probed) <= 2 * math.log2(64) + 2


def test_a_slowdown_in_two_commits_is_two_steps() -> None:
    got = bisect(40, history(40, {"b": {11: 1.08, 30: 1.04}}), moved)
    assert [(s.before, s.at) for s in got.steps["b"]] == [(10, 11), (29, 30)]
    assert [round(s.ratio, 3) for s in got.steps["b"]] == [1.08, 1.04]


def test_probes_are_shared_between_benchmarks() -> None:
    got = bisect(32, history(32, {"a": {20: 1.2}, "b": {20: 0.8}}), moved)
    assert got.steps["a"][0].at == got.steps["b"][0].at == 20
    assert len(got.probed) == len(set(got.probed)) <= 2 + math.log2(32)


def test_a_commit_that_does_not_build_is_skipped_and_named() -> None:
    got = bisect(16, history(16, {"b": {9: 1.5}}, broken=[8, 12]), moved)
    assert got.steps["b"] == [Step(before=7, at=9, ratio=pytest.approx(1.5))]
    assert 8 in got.skipped and "does not build" in got.skipped[8]


def test_a_step_among_broken_commits_spans_them() -> None:
    got = bisect(8, history(8, {"b": {4: 1.5}}, broken=[1, 2, 3, 4, 5, 6]), moved)
    assert got.steps["b"] == [Step(before=0, at=7, ratio=pytest.approx(1.5))]
    assert sorted(got.skipped) == [1, 2, 3, 4, 5, 6]


def test_a_change_that_went_and_came_back_is_said() -> None:
    # "b" slows at 10 and is fixed at 20; "c" moves at 15, so the search probes in between
    got = bisect(32, history(32, {"b": {10: 1.3, 20: 1 / 1.3}, "c": {15: 1.1}}), moved)
    assert got.steps["b"] == []
    assert "b" in got.came_back and 10 <= got.came_back["b"][0] < 20


def test_the_budget_stops_the_search_and_says_so() -> None:
    got = bisect(64, history(64, {"b": {37: 1.10}}), moved, max_probes=4)
    assert got.unfinished["b"] == "the probe budget (4) ran out" and len(got.probed) == 4


def test_the_minutes_budget_stops_the_search_after_the_good_and_bad_commits() -> None:
    """A budget in minutes (a fake clock here): the good and bad commits are measured whatever
    it says; then each probe asks it, and the search stops with its words."""
    probes = history(64, {"b": {37: 1.10}})
    ticks = iter(range(1000))

    def out_of_time() -> str | None:
        return "the time budget (1 min) ran out" if next(ticks) >= 2 else None

    got = bisect(64, probes, moved, out_of_time=out_of_time)
    assert got.unfinished["b"] == "the time budget (1 min) ran out"
    assert {0, 63} <= set(got.probed) and len(got.probed) == 4
    never = bisect(8, history(8, {"b": {5: 1.5}}), moved, out_of_time=lambda: "no time at all")
    assert sorted(never.probed) == [0, 7] and never.unfinished == {"b": "no time at all"}


def test_dependency_files_are_named_among_a_steps_changes() -> None:
    changed = [
        "src/lib/core.py",
        "pyproject.toml",
        "requirements-dev.txt",
        "docs/requirements.txt",
        "uv.lock",
        "lib/tomlish.py",
        "setup.py.orig",
    ]
    assert dependency_changes(changed) == [
        "docs/requirements.txt",
        "pyproject.toml",
        "requirements-dev.txt",
        "uv.lock",
    ]
    assert dependency_changes(["src/a.py"]) == []


def test_a_benchmark_added_later_is_named_with_its_first_commit() -> None:
    base = history(16, {"old": {}})

    def probe(i: int) -> Measured:
        got = dict(base(i))
        if i >= 6:
            got["new"] = [5.0, 5.0]
        return got

    got = bisect(16, probe, moved)
    assert got.added == {"new": 6} and "new" not in got.steps


def test_good_or_bad_that_cannot_be_measured_is_an_error() -> None:
    with pytest.raises(ProbeFailed, match="the good commit: commit 0 does not build"):
        bisect(8, history(8, {"b": {}}, broken=[0]), moved)


@pytest.mark.parametrize("parallel", [2, 3])
def test_commits_measured_side_by_side_find_the_same_steps(parallel: int) -> None:
    import threading

    changes = {"a": {11: 1.08, 30: 1.04}, "b": {20: 0.8}, "c": {}}
    serial = bisect(40, history(40, changes, broken=[19]), moved)
    plain = history(40, changes, broken=[19])
    ends = threading.Barrier(2, timeout=30)  # the good and bad commits: measured at once

    def probe(i: int) -> Measured:
        if i in (0, 39):
            ends.wait()
        return plain(i)

    side = bisect(40, probe, moved, parallel=parallel)
    assert side.steps == serial.steps and side.skipped.keys() <= {19}
    # two steps of "a" and one of "b": within the bound the issue sets per regression
    assert len(side.probed) <= 3 * (2 * math.log2(40) + 2)
    assert len(side.probed) == len(set(side.probed))


def test_paired_rounds_judge_a_move_by_its_interval_and_the_minimum_effect() -> None:
    """Device time, each commit's rounds as ratios to the good commit measured beside them."""
    good = [1.001, 0.999, 1.000]  # the good commit's own A/A session
    slow = paired_change(good, [1.101, 1.098, 1.100], threshold=0.05, alpha=0.01)
    assert slow.status == REGRESSED
    assert slow.ratio == pytest.approx(1.10, abs=0.002)
    assert slow.ratio_low is not None and slow.ratio_high is not None
    assert 1.05 < slow.ratio_low < slow.ratio < slow.ratio_high < 1.15
    assert paired_change(good, [0.90, 0.901, 0.899], threshold=0.05, alpha=0.01).status == IMPROVED
    # significant but below the minimum effect: not a step
    small = paired_change(good, [1.021, 1.019, 1.020], threshold=0.05, alpha=0.01)
    assert small.status == UNCHANGED and small.effect == 0.05
    # rounds that scatter more than the change: neither moved nor unchanged
    wide = paired_change(good, [1.00, 1.25, 1.06], threshold=0.05, alpha=0.01)
    assert wide.status == INCONCLUSIVE and "spread" in wide.reason
    assert wide.cause is Cause.NOISE
    # a ratio of 1 in every round of both sides (a clock that agrees exactly): no change
    assert paired_change([1.0] * 3, [1.0] * 3, threshold=0.05, alpha=0.01).status == UNCHANGED
    assert paired_change([1.0] * 3, [1.3] * 3, threshold=0.05, alpha=0.01).status == REGRESSED
    # one round a side says nothing about the spread
    assert paired_change([1.0], [1.3], threshold=0.05, alpha=0.01).status == INCONCLUSIVE
    assert paired_change([], [1.3], threshold=0.05, alpha=0.01).status == INCONCLUSIVE


def test_device_steps_are_found_from_noisy_paired_rounds() -> None:
    """A +8% then a +6% step of device time, each probe's rounds scattered by 0.5% around its
    ratio to the good commit (and a session-wide shift the pairing cancels): both found at
    their commits, in 40 seeds."""

    def rule(_name: str, a: Sequence[float], b: Sequence[float]) -> bool:
        return paired_change(a, b, threshold=0.05, alpha=0.01).status in (REGRESSED, IMPROVED)

    def noisy(at1: int, at2: int, rng: random.Random) -> Callable[[int], Measured]:
        def probe(i: int) -> Measured:
            level = (1.08 if i >= at1 else 1.0) * (1.06 if i >= at2 else 1.0)
            return {"gpu": [level * rng.gauss(1.0, 0.005) for _ in range(4)]}

        return probe

    for seed in range(40):
        rng = random.Random(seed)
        at1, at2 = sorted(rng.sample(range(1, 32), 2))
        got = bisect(32, noisy(at1, at2, rng), rule).steps["gpu"]
        assert [s.at for s in got] == [at1, at2], seed


def test_the_search_narrows_one_commit_at_a_time_once_told_so() -> None:
    """Timed sessions run one at a time, so once the ends show timed benchmarks the search
    halves (fewest commits) instead of splitting ranges for side-by-side probes."""
    probe = history(64, {"b": {37: 1.10}})
    wide = bisect(64, probe, moved, parallel=4)
    narrow = bisect(64, probe, moved, parallel=4, narrow_by=lambda: 1)
    assert wide.steps == narrow.steps == {"b": [Step(before=36, at=37, ratio=pytest.approx(1.1))]}
    assert len(narrow.probed) <= 2 + math.ceil(math.log2(63)) < len(wide.probed)
