"""--perf-count-limit: basic blocks per call under valgrind (core/options/run_options.parse_count_limit),
and what decides, from a recording's timed calls, that a benchmark is surely over it
(instruments/instruction_counts.worth_counting), with the words a user reads."""

from __future__ import annotations

import pytest

from pytest_burnperf.core.counting import counted_calls
from pytest_burnperf.core.options.run_options import (
    DEFAULT_COUNT_LIMIT,
    count_text,
    parse_count_limit,
)
from pytest_burnperf.core.options.settings import SettingsError
from pytest_burnperf.instruments.instruction_counts import (
    surely_counted,
    too_slow_text,
    worth_counting,
)


@pytest.mark.parametrize(
    ("given", "instructions"),
    [("400M", 400_000_000), ("2G", 2_000_000_000), ("50k", 50_000), ("1.5g", 1_500_000_000),
     ("0", 0), (0, 0), (400_000_000, 400_000_000), ("2_000_000", 2_000_000), ("1k", 1000)],
)  # fmt: skip
def test_a_count_with_or_without_its_suffix(given: object, instructions: int) -> None:
    assert parse_count_limit(given, "--perf-count-limit") == instructions
    assert parse_count_limit(count_text(instructions), "x") == instructions  # as it is printed


@pytest.mark.parametrize("seconds", ["1", 1, "0.5", "3", 0.0001])
def test_a_bare_small_number_is_refused_as_the_seconds_it_once_was(seconds: object) -> None:
    with pytest.raises(
        SettingsError, match="basic blocks per call under valgrind now, not seconds"
    ) as info:
        parse_count_limit(seconds, "--perf-count-limit")
    assert str(info.value).startswith("--perf-count-limit: ") and "150M" in str(info.value)


@pytest.mark.parametrize("bad", ["-1", "abc", True, "5 s", "1e9", "", "4\x00M", None, [1]])
def test_anything_else_is_refused_with_what_is_allowed(bad: object) -> None:
    with pytest.raises(SettingsError, match=r"perf_count_limit: .*such as 150M, 1G or 50k"):
        parse_count_limit(bad, "perf_count_limit")


@pytest.mark.parametrize(
    "bad",
    [
        "\u0661\u0660\u0660\u0660",  # Arabic-Indic digits: the docs say decimals
        "1000.5",  # a bare count is whole
        "1_000.5",
        "_1000",
        "1__000",
        "9" * 400,  # was an OverflowError traceback (an INTERNALERROR from an ini file)
        int("9" * 400),
        1e35,
        float("inf"),
        float("nan"),
    ],
)
def test_one_strict_rule_refuses_what_the_docs_do_not_allow(bad: object) -> None:
    """Issue 74: these were accepted, or a traceback; the same rule reads the command line,
    the ini file and benchmarks.toml (all call parse_count_limit)."""
    with pytest.raises(SettingsError, match=r"^perf_count_limit: .*150M"):
        parse_count_limit(bad, "perf_count_limit")


def test_a_limit_beyond_any_call_is_refused_naming_the_largest() -> None:
    with pytest.raises(
        SettingsError, match=r"beyond any call valgrind could finish \(at most 1000T\)"
    ):
        parse_count_limit("1" + "0" * 35, "--perf-count-limit")
    assert parse_count_limit("1000T", "x") == 10**15


def test_the_default_and_how_it_is_printed() -> None:
    assert count_text(DEFAULT_COUNT_LIMIT) == "150M"
    assert count_text(2_500_000_000) == "2.5G" and count_text(999) == "0.999k"
    assert parse_count_limit(count_text(500), "x") == 500


def test_only_calls_surely_over_the_limit_are_left_to_time_when_recording() -> None:
    # a pure-Python call runs 1 G basic blocks a second or more, anything else 0.2 G or more
    assert worth_counting(0.1, "python", 150_000_000)  # 100 M at least: may be under
    assert not worth_counting(0.2, "python", 150_000_000)  # 200 M at least
    # a 100 ms BLAS call (125 M blocks counted) may be under; a 1 s one surely is not
    assert worth_counting(0.5, "numpy", 150_000_000) and not worth_counting(
        1.0, "torch", 150_000_000
    )
    assert worth_counting(100.0, "numpy", 0) and worth_counting(None, "numpy", 150_000_000)


def test_only_calls_far_under_the_limit_skip_the_adaptive_recording_rounds() -> None:
    """surely_counted: room for a host ten times slower per block than the floor's rate."""
    assert surely_counted(0.01, "python", 150_000_000)  # 10 M at least: 100 M with room
    assert not surely_counted(0.02, "python", 150_000_000)  # 20 M: 200 M with room, may be over
    assert worth_counting(0.02, "python", 150_000_000)  # ... yet counted where it is under
    assert surely_counted(0.05, "numpy", 150_000_000) and not surely_counted(
        0.1, "numpy", 150_000_000
    )
    assert surely_counted(100.0, "numpy", 0)  # no limit: everything is counted


def test_why_a_benchmark_is_timed_instead_names_the_measure_that_decided() -> None:
    too_slow = counted_calls.TooSlow(None, instructions=5_750_000_000, blocks=200_000_000)
    by_count = too_slow_text(too_slow, 150_000_000)
    assert "run 5.75 G instructions in 200 M basic blocks under valgrind" in by_count
    assert "over --perf-count-limit 150M" in by_count
    assert "about 4.20 s-9.80 s there" in by_count  # 21 and 49 ns a block
    assert "--perf-count-limit 0 counts it anyway" in by_count and "took" not in by_count
    by_guard = too_slow_text(counted_calls.TooSlow(31.5), 150_000_000)
    assert "took 31.5 s under valgrind uninstrumented" in by_guard
    assert f"{counted_calls.COUNT_GUARD_S:g} s counting waits" in by_guard
