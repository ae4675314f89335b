"""A run's recorded memory read back strictly and judged against another run's
(core/memory/recorded_memory.py): what ``burnperf compare`` and ``compare-history`` judge by."""

from __future__ import annotations

import pytest

from pytest_burnperf.core.memory.allocations import Allocations, AllocationsError
from pytest_burnperf.core.memory.memory_verdict import memory_summary
from pytest_burnperf.core.memory.recorded_memory import RecordedMemory, judge_recorded

MiB = 1 << 20
KEY = {"meter": "memray", "python": "3.11", "versions": {"numpy": "2.1.0"}}


def recorded(peak: int, allocated: int | None = None, **kw: object) -> RecordedMemory:
    figures = Allocations(allocated=peak if allocated is None else allocated, count=3, peak=peak)
    return RecordedMemory(figures=figures, **{"key": KEY, **kw})  # type: ignore[arg-type]


def test_a_record_round_trips_through_its_json() -> None:
    mem = recorded(8 * MiB, sites={"add (b.py:3) [t = a + b]": 8 * MiB}, ceiling=64 * MiB)
    assert RecordedMemory.from_json(mem.to_json(), "memory") == mem
    varied = RecordedMemory(figures=None, key=KEY, reason="its calls allocate differently")
    assert RecordedMemory.from_json(varied.to_json(), "memory") == varied


@pytest.mark.parametrize(
    ("doc", "names"),
    [
        ([], "results[0].memory: must be an object"),
        ({"figures": {"peak_bytes": -1}}, "results[0].memory.figures: allocated_bytes"),
        (
            {"figures": {"allocated_bytes": 1, "allocations": 1, "peak_bytes": "8"}},
            "results[0].memory.figures: peak_bytes must be a whole number",
        ),
        ({"figures": None, "key": "numpy"}, "results[0].memory.key: must be an object or null"),
        ({"figures": None, "sites": {"a": "8"}}, "results[0].memory.sites: must map"),
        ({"figures": None, "max_memory_bytes": 0}, "results[0].memory.max_memory_bytes"),
        ({"figures": None, "max_memory_bytes": True}, "results[0].memory.max_memory_bytes"),
    ],
)
def test_a_record_that_is_not_one_is_named_by_its_field(doc: object, names: str) -> None:
    with pytest.raises(AllocationsError, match=names.replace("[", r"\[").replace("]", r"\]")):
        RecordedMemory.from_json(doc, "results[0].memory")


def test_text_from_a_file_reaches_no_terminal_raw() -> None:
    """A results file (or a store) is read back with its sites' lines and reasons escaped: a
    verdict's line printed by burnperf compare cannot clear the screen."""
    doc = {
        **recorded(MiB).to_json(),
        "sites": {"f (a.py:1) [x = \x1b[2J]": MiB},
        "reason": "calls\nvary",
    }
    mem = RecordedMemory.from_json(doc, "memory")
    assert list(mem.sites) == ["f (a.py:1) [x = \\x1b[2J]"] and mem.reason == "calls\\x0avary"
    v = judge_recorded(
        recorded(2 * MiB, sites={"g (a.py:2) [y]": 2 * MiB}),
        mem,
        threshold=None,
        before_name="old.json",
    )
    assert "\x1b" not in v.line() and "\n" not in v.line()


def test_a_grown_call_regresses_and_says_where_it_grew() -> None:
    before = recorded(8 * MiB, sites={"add (b.py:3) [t = a + b]": 8 * MiB})
    now = recorded(
        16 * MiB,
        sites={"add (b.py:3) [t = a + b]": 8 * MiB, "add (b.py:4) [u = t.copy()]": 8 * MiB},
    )
    v = judge_recorded(now, before, threshold=None, before_name="old.json")
    assert v.status == "regressed"
    assert v.where == "grew at add (b.py:4) [u = t.copy()] +8.0 MiB (new)"
    assert "peak +8.0 MiB (+100.0%)" in v.line()


def test_the_same_figures_are_unchanged_and_a_smaller_call_improved() -> None:
    assert judge_recorded(recorded(MiB), recorded(MiB), threshold=None, before_name="x").status == (
        "unchanged"
    )
    assert judge_recorded(
        recorded(MiB), recorded(2 * MiB), threshold=None, before_name="x"
    ).status == ("improved")


def test_the_threshold_given_is_the_minimum_effect() -> None:
    # +5% of 8 MiB: a change past the default 1%, not past a threshold of 10%
    now, before = recorded(8 * MiB + 8 * MiB // 20), recorded(8 * MiB)
    assert judge_recorded(now, before, threshold=None, before_name="x").status == "regressed"
    assert judge_recorded(now, before, threshold=0.10, before_name="x").status == "unchanged"


def test_what_cannot_be_compared_is_said_with_its_reason() -> None:
    varied = RecordedMemory(figures=None, key=KEY, reason="its calls allocate differently (...)")
    v = judge_recorded(varied, recorded(MiB), threshold=None, before_name="old.json")
    assert (v.status, v.reason) == ("varies", "its calls allocate differently (...)")
    v = judge_recorded(recorded(MiB), None, threshold=None, before_name="old.json")
    assert (v.status, v.reason) == ("no-baseline", "old.json kept no memory figures for it")
    v = judge_recorded(recorded(MiB), varied, threshold=None, before_name="old.json")
    assert (v.status, v.reason) == ("no-baseline", "its calls allocated differently in old.json")
    other = recorded(MiB, key={**KEY, "versions": {"numpy": "2.2.0"}})
    v = judge_recorded(recorded(4 * MiB), other, threshold=None, before_name="old.json")
    assert v.status == "incomparable"
    assert v.reason.startswith("old.json tracked its memory under another key (versions: ")
    assert memory_summary(["incomparable", "varies", "no-baseline", "no-baseline"]) == (
        "memory per call: 1 calls vary, 1 memory baseline of another key, 2 no memory baseline"
    )


def test_max_memory_holds_whatever_the_other_run_was() -> None:
    over = recorded(80 * MiB, ceiling=64 * MiB)
    other_key = recorded(MiB, key={"meter": "torch"})
    for before in (None, recorded(80 * MiB), other_key):
        v = judge_recorded(over, before, threshold=None, before_name="old.json")
        assert v.status == "over-limit", before
        assert "over max_memory=64.0 MiB" in v.reason


def test_the_sides_of_a_comparison_compare_across_library_versions_not_threads() -> None:
    """--perf-versions compares numpy releases: their memory compares; a side run with
    other threads does not; a reference whose tracking process failed says why."""
    from pytest_burnperf.core.memory.recorded_memory import judge_sides

    ref = recorded(8 * MiB)
    cur = recorded(16 * MiB, key={**KEY, "versions": {"numpy": "2.3.5"}})
    v = judge_sides(cur, ref, threshold=None, label="numpy==2.2.6")
    assert v.status == "regressed" and "peak +8.0 MiB (+100.0%)" in v.line()
    threads = recorded(8 * MiB, key={**KEY, "threads": 4})
    v = judge_sides(threads, ref, threshold=None, label="main")
    assert v.status == "incomparable" and "threads: None -> 4" in v.reason
    v = judge_sides(cur, None, threshold=None, label="main", gap="its tracking process failed")
    assert (v.status, v.reason) == (
        "no-baseline",
        "main: not tracked (its tracking process failed)",
    )
