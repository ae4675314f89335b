"""The memory verdict (core/memory/memory_verdict.py) and each call's figures from one stream of
allocator events (core/memory/call_figures.py): pure logic, figures written by hand."""

from __future__ import annotations

import pytest

from pytest_burnperf.core.memory.allocations import Allocations
from pytest_burnperf.core.memory.call_figures import (
    MARKER_BYTES,
    Event,
    MarkersMissing,
    arena_bytes,
    interpreter_map_sizes,
    per_call,
    sites_per_call,
    top_sites,
    where_grew,
)
from pytest_burnperf.core.memory.memory_verdict import FLOOR_BYTES, agreed, judge

MiB = 1 << 20
KEY = {"allocator": "memray", "python": "3.11", "library": "numpy 2.1.0"}


def _marker(address: int = 1) -> list[Event]:
    return [
        Event("map", address, MARKER_BYTES),
        Event("alloc", 99, 800),
        Event("unmap", address, MARKER_BYTES),
    ]


def test_each_call_between_two_markers_gets_its_bytes_count_and_peak() -> None:
    events = [
        Event("alloc", 500, 1000),  # before the first marker: held, not a call's
        *_marker(),
        Event("alloc", 10, 8 * MiB),
        Event("alloc", 11, 4 * MiB),
        Event("free", 10, 0),
        Event("free", 11, 0),
        *_marker(),
        Event("alloc", 12, 8 * MiB),
        Event("free", 12, 0),
        Event("alloc", 13, 8 * MiB),  # kept past the call: counts in its peak
        *_marker(),
    ]
    first, second = per_call(events, calls=2)
    assert first == Allocations(allocated=12 * MiB, count=2, peak=12 * MiB)
    assert second == Allocations(allocated=16 * MiB, count=2, peak=8 * MiB)


def test_a_free_of_what_was_held_before_the_call_lowers_its_start_not_its_peak() -> None:
    events = [
        Event("alloc", 1, 5 * MiB),
        *_marker(7),
        Event("free", 1, 0),  # frees 5 MiB held before: the call held less than at its start
        Event("alloc", 2, 3 * MiB),
        Event("free", 2, 0),
        Event("free", 12345, 0),  # allocated before tracking began: unknown, left out
        *_marker(7),
    ]
    assert per_call(events, calls=1) == [Allocations(allocated=3 * MiB, count=1, peak=0)]


def test_arena_mappings_are_left_out_and_other_mappings_count() -> None:
    arena = arena_bytes()
    events = [
        *_marker(),
        Event("map", 20, arena),
        Event("map", 21, 2 * MiB + 4096),
        Event("unmap", 21, 2 * MiB + 4096),
        Event("unmap", 20, arena),
        *_marker(),
    ]
    got = per_call(events, calls=1, skip_maps_of=frozenset({arena}))
    assert got == [Allocations(allocated=2 * MiB + 4096, count=1, peak=2 * MiB + 4096)]
    assert arena_bytes((3, 11)) == MiB and arena_bytes((3, 9)) == 256 << 10


def test_the_interpreters_own_mappings_are_its_arenas_and_from_3_11_its_frame_stack_chunks() -> (
    None
):
    chunks = {16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10, 512 << 10}
    assert interpreter_map_sizes((3, 11)) == frozenset({MiB, *chunks})
    assert interpreter_map_sizes((3, 13)) == frozenset({MiB, *chunks})
    assert interpreter_map_sizes((3, 10)) == frozenset({MiB})  # frames were objects then
    assert interpreter_map_sizes((3, 9)) == frozenset({256 << 10})
    # a chunk mapped inside a call is left out with its unmapping, as an arena is
    events = [
        *_marker(),
        Event("map", 30, 16 << 10),
        Event("alloc", 31, 8000),
        Event("unmap", 30, 16 << 10),
        *_marker(),
    ]
    got = per_call(events, calls=1, skip_maps_of=interpreter_map_sizes((3, 11)))
    assert got == [Allocations(allocated=8000, count=1, peak=8000)]


def test_a_stream_without_its_markers_is_refused_saying_what_it_held() -> None:
    with pytest.raises(MarkersMissing, match="expected 3 marker mappings around 2 calls, found 2"):
        per_call([*_marker(), Event("alloc", 1, 10), *_marker()], calls=2)


def _calls(peak: int, allocated: int, n: int = 3) -> list[Allocations]:
    return [Allocations(allocated=allocated, count=1, peak=peak)] * n


def test_a_planted_temporary_of_the_inputs_size_regresses_naming_both_figures() -> None:
    base = Allocations(allocated=8 * MiB, count=1, peak=8 * MiB)
    v = judge(_calls(16 * MiB, 16 * MiB), base, key=KEY, baseline_key=KEY, threshold=None)
    assert v.status == "regressed"
    assert v.change_text() == "peak +8.0 MiB (+100.0%), allocated +8.0 MiB (+100.0%)"
    assert v.line().startswith("memory regressed: peak +8.0 MiB (+100.0%)")
    assert "1% of the baseline" in v.reason


def test_growth_under_the_minimum_effect_is_unchanged_and_the_floor_holds_for_small_calls() -> None:
    base = Allocations(allocated=8 * MiB, count=1, peak=8 * MiB)
    tiny = judge(_calls(8 * MiB + 40_000, 8 * MiB), base, key=KEY, baseline_key=KEY, threshold=None)
    assert tiny.status == "unchanged"  # under 1% of 8 MiB
    small = Allocations(allocated=100, count=1, peak=100)
    v = judge(_calls(100 + FLOOR_BYTES, 100), small, key=KEY, baseline_key=KEY, threshold=None)
    assert v.status == "unchanged" and v.effect == (FLOOR_BYTES, FLOOR_BYTES)
    grew = judge(_calls(101 + FLOOR_BYTES, 100), small, key=KEY, baseline_key=KEY, threshold=None)
    assert grew.status == "regressed"


def test_the_users_threshold_sets_the_minimum_effect() -> None:
    base = Allocations(allocated=10 * MiB, count=1, peak=10 * MiB)
    now = _calls(10 * MiB + MiB // 2, 10 * MiB)  # +5%
    assert judge(now, base, key=KEY, baseline_key=KEY, threshold=None).status == "regressed"
    v = judge(now, base, key=KEY, baseline_key=KEY, threshold=0.10)
    assert v.status == "unchanged" and "the threshold" in v.reason


def test_smaller_is_improved_and_the_count_alone_is_not_judged() -> None:
    base = Allocations(allocated=16 * MiB, count=2, peak=16 * MiB)
    assert (
        judge(_calls(8 * MiB, 8 * MiB), base, key=KEY, baseline_key=KEY, threshold=None).status
        == "improved"
    )
    many = [Allocations(allocated=16 * MiB, count=200, peak=16 * MiB)] * 3
    assert judge(many, base, key=KEY, baseline_key=KEY, threshold=None).status == "unchanged"


def test_calls_that_allocate_differently_are_said_not_judged() -> None:
    growing = [Allocations(allocated=MiB * i, count=i, peak=MiB * i) for i in (1, 2, 3)]
    base = Allocations(allocated=MiB, count=1, peak=MiB)
    v = judge(growing, base, key=KEY, baseline_key=KEY, threshold=None)
    assert v.status == "varies" and not v.judged and v.figures is None
    assert "allocate differently" in v.reason and v.line().startswith("memory not judged")
    # within the floor they agree, the largest of each taken
    close = [Allocations(100, 1, 1000), Allocations(200, 2, 1000 + FLOOR_BYTES)]
    assert agreed(close) == Allocations(200, 2, 1000 + FLOOR_BYTES)
    assert agreed([]) == "no call was tracked"


def test_no_memory_baseline_or_another_key_is_said_with_what_differs() -> None:
    calls = _calls(MiB, MiB)
    none = judge(calls, None, key=KEY, baseline_key=None, threshold=None)
    assert none.status == "no-baseline" and "--update-baselines" in none.reason
    other = {**KEY, "library": "numpy 2.2.0"}
    v = judge(calls, Allocations(MiB, 1, MiB), key=KEY, baseline_key=other, threshold=None)
    assert v.status == "incomparable"
    assert "library: 'numpy 2.2.0' -> 'numpy 2.1.0'" in v.reason
    assert v.as_json()["status"] == "incomparable"


def test_a_call_over_max_memory_is_over_the_limit_with_or_without_a_baseline() -> None:
    calls = _calls(16 * MiB, 16 * MiB)
    alone = judge(calls, None, key=KEY, baseline_key=None, threshold=None, ceiling=8 * MiB)
    assert alone.status == "over-limit" and alone.ceiling == 8 * MiB
    assert "peak of 16.0 MiB (16,777,216 bytes) is over max_memory=8.0 MiB" in alone.reason
    assert alone.line().startswith("memory over max_memory: a call's peak of 16.0 MiB")
    # calls that vary are judged against the ceiling by their largest
    varied = [Allocations(MiB, 1, MiB), Allocations(9 * MiB, 1, 9 * MiB)]
    v = judge(varied, None, key=KEY, baseline_key=None, threshold=None, ceiling=8 * MiB)
    assert v.status == "over-limit"
    under = judge(calls, None, key=KEY, baseline_key=None, threshold=None, ceiling=16 * MiB)
    assert under.status == "no-baseline" and under.ceiling == 16 * MiB  # at the ceiling: within
    assert under.as_json()["max_memory_bytes"] == 16 * MiB


def test_max_memory_reads_sizes_with_their_units_and_names_what_is_allowed() -> None:
    from pytest_burnperf.core.options.settings import SettingsError, parse_max_memory

    assert parse_max_memory("64 MB", "w") == 64_000_000
    assert parse_max_memory("1.5 GiB", "w") == 3 * 2**29
    assert parse_max_memory("512KiB", "w") == 512 * 1024
    assert parse_max_memory(4096, "w") == 4096
    for bad in ("lots", 0, True, "-1 MB", "64 MBs", 1.5):
        with pytest.raises(SettingsError, match=r"t::x: max_memory must be a size such as"):
            parse_max_memory(bad, "t::x")


def test_each_calls_sites_are_its_own_and_arenas_and_siteless_allocations_are_left_out() -> None:
    arena = arena_bytes()
    events = [
        Event("alloc", 1, 5 * MiB, "setup (b.py:3)"),  # before the first marker
        *_marker(),
        Event("alloc", 10, 8 * MiB, "add (b.py:8)"),
        Event("alloc", 11, 8 * MiB, "add (b.py:8)"),
        Event("alloc", 12, 100),  # small: no site
        Event("map", 13, arena, "add (b.py:9)"),
        *_marker(),
        Event("alloc", 14, MiB, "add (b.py:9)"),
        *_marker(),
    ]
    got = sites_per_call(events, calls=2, skip_maps_of=frozenset({arena}))
    assert got == [{"add (b.py:8)": 16 * MiB}, {"add (b.py:9)": MiB}]


def test_where_grew_names_the_sites_that_grew_most_and_new_ones() -> None:
    before = {"f (b.py:1) [a = x * 2]": MiB, "f (b.py:2) [b = a + 1]": 2 * MiB}
    now = {
        "f (b.py:1) [a = x * 2]": 3 * MiB,
        "f (b.py:2) [b = a + 1]": MiB,
        "f (b.py:5) [c = a.copy()]": 8 * MiB,
    }
    assert where_grew(now, before) == (
        "f (b.py:5) [c = a.copy()] +8.0 MiB (new), f (b.py:1) [a = x * 2] +2.0 MiB"
    )
    assert where_grew(before, before) == ""


def test_a_line_moved_by_an_edit_above_it_is_the_same_line() -> None:
    before = {"f (b.py:10) [out = a * 2]": 8 * MiB}
    now = {"f (b.py:10) [t = a.copy()]": 8 * MiB, "f (b.py:11) [out = a * 2]": 8 * MiB}
    assert where_grew(now, before) == "f (b.py:10) [t = a.copy()] +8.0 MiB (new)"
    assert list(top_sites({"a": 1, "b": 3, "c": 2}, 2)) == ["b", "c"]
