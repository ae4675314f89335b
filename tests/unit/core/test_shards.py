"""Splitting a selection into shards (core/options/shards.py)."""

from __future__ import annotations

import random

import pytest

from pytest_burnperf.core.options.settings import SettingsError
from pytest_burnperf.core.options.shards import expected_seconds, parse_shard, selection_id, split


def test_parse_shard() -> None:
    assert parse_shard("2/4", "--perf-shard") == (2, 4)
    assert parse_shard(" 1 / 1 ", "x") == (1, 1)
    for bad in ("0/4", "5/4", "1/0", "a/b", "2", "", "1/2000", 3):
        with pytest.raises(SettingsError, match="K/N"):
            parse_shard(bad, "--perf-shard")


def test_the_split_is_deterministic_whole_and_balanced() -> None:
    rng = random.Random(7)
    weights: dict[str, float | None] = {f"t.py::b{i}": rng.lognormvariate(0, 1) for i in range(125)}
    plans = [split(dict(sorted(weights.items(), key=lambda _: rng.random())), 4) for _ in range(3)]
    assert plans[0].shard_of == plans[1].shard_of == plans[2].shard_of  # order does not matter
    plan = plans[0]
    assert set(plan.shard_of) == set(weights) and set(plan.shard_of.values()) == {1, 2, 3, 4}
    total = sum(w for w in weights.values() if w is not None)
    assert max(plan.seconds) <= 1.15 * total / 4


def test_unknown_durations_count_at_the_median_and_by_count_when_none_is_known() -> None:
    plan = split({"a": 10.0, "b": None, "c": 1.0, "d": None}, 2)
    # b and d count as 10 s (the upper median of 1 and 10): a, b, d, then c to the lighter shard
    assert plan.guessed == 2 and plan.seconds == (20.0, 11.0)
    assert plan.shard_of == {"a": 1, "b": 2, "d": 1, "c": 2}
    even = split({f"g{i}": None for i in range(8)}, 4)
    assert sorted(list(even.shard_of.values()).count(k) for k in (1, 2, 3, 4)) == [2, 2, 2, 2]


def test_selection_id_and_expected_seconds() -> None:
    assert selection_id(["b", "a"]) == selection_id(["a", "b", "a"]) != selection_id(["a"])
    entry = {"runs": [[1e-3, 2e-3], [5.0]], "loops": 10}
    assert expected_seconds(entry, 0.2) == pytest.approx(0.2 + 3e-3 * 10)
    assert expected_seconds({"samples": [1e-3]}, 0.0) == pytest.approx(1e-3)
    assert expected_seconds(None, 0.2) is None and expected_seconds({"runs": "x"}, 0.2) is None


def test_a_recorded_wall_time_is_preferred_to_the_samples() -> None:
    assert expected_seconds({"seconds": 2.5, "runs": [[1e-3]], "loops": 1}, 0.2) == 2.5
    assert expected_seconds({"seconds": True, "samples": [1e-3]}, 0.0) == pytest.approx(1e-3)
