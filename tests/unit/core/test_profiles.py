"""Profile summaries and what grew between two of them (core/records/profiles.py), on made-up rows."""

from __future__ import annotations

import pytest

from pytest_burnperf.core.records.profiles import (
    Growth,
    ProfileFormatError,
    ProfileSummary,
    grew_note,
    summarize,
    what_grew,
    where_it_grew,
)


def test_a_summary_is_per_benchmark_call_ranked_by_own_time_and_merges_names() -> None:
    rows = [
        ("kernel", 0.004, 10, 0.004),
        ("body (b.py)", 0.010, 10, 0.010),
        ("kernel", 0.002, 10, 0.002),
    ]
    s = summarize("cProfile", 10, rows, top=2)
    assert [e.name for e in s.entries] == ["body (b.py)", "kernel"]
    assert s.entries[0].seconds == pytest.approx(0.001)
    assert s.entries[1].seconds == pytest.approx(0.0006)
    assert s.entries[1].calls == pytest.approx(2.0)
    assert s.total_s == pytest.approx(0.0016)
    assert len(summarize("cProfile", 1, [(f"f{i}", 1.0, 1, 1.0) for i in range(40)]).entries) == 25


def test_the_entry_that_grew_most_comes_first_and_noise_is_not_named() -> None:
    before = summarize(
        "cProfile",
        1,
        [("body", 1.0e-3, 1, 1.0e-3), ("add", 2.0e-3, 1, 2.0e-3), ("tiny", 1e-6, 1, 1e-6)],
    )
    after = summarize(
        "cProfile",
        1,
        [
            ("body", 1.01e-3, 1, 1.01e-3),
            ("add", 4.0e-3, 2, 4.0e-3),
            ("planted", 1.5e-3, 1, 1.5e-3),
            ("tiny", 3e-6, 1, 3e-6),
        ],
    )
    grew = what_grew(before, after)
    assert [g.name for g in grew] == ["add", "planted"]  # body +1 us and tiny are noise
    assert grew[0].grew_s == pytest.approx(2.0e-3)
    note = grew_note(grew, "baseline", "this run")
    assert note.startswith("what grew (baseline -> this run, per call): own time: add 2.00 ms")
    assert "1 -> 2 calls" in note
    assert "planted new: 1.50 ms (1 call)" in note


def test_where_it_grew_is_the_innermost_function_holding_the_growth() -> None:
    before = summarize(
        "cProfile", 1, [("test_body (t.py)", 1e-4, 1, 1e-3), ("work", 9e-4, 1, 9e-4)]
    )
    after = summarize(
        "cProfile",
        1,
        [
            ("test_body (t.py)", 1e-4, 1, 5e-3),
            ("work", 9e-4, 1, 9e-4),
            ("planted (t.py)", 1e-5, 1, 4e-3),
            ("<genexpr> (t.py)", 2.5e-3, 1000, 2.5e-3),
            ("<built-in method builtins.sum>", 1.5e-3, 1, 4e-3),
        ],
    )
    where = where_it_grew(before, after)
    assert where is not None and where.name == "planted (t.py)"
    note = grew_note(what_grew(before, after), "baseline", "this run", where)
    assert note.startswith("what grew (baseline -> this run, per call): in planted (t.py) new:")
    assert where_it_grew(after, before) is None  # nothing grew


def test_profiles_of_two_tools_do_not_compare_and_nothing_grown_is_said() -> None:
    a = summarize("cProfile", 1, [("x", 1.0, 1, 1.0)])
    b = summarize("torch.profiler", 1, [("x", 2.0, 1, 2.0)])
    assert what_grew(a, b) == []
    assert "no function's own time grew" in grew_note([], "baseline", "this run")


def test_a_summary_round_trips_through_json() -> None:
    s = summarize("torch.profiler", 3, [("aten::mul", 3e-4, 3, 3e-4), ("aten::add", 1e-4, 3, 1e-4)])
    back = ProfileSummary.from_json(s.as_json())
    assert back.tool == "torch.profiler" and back.calls == 3
    assert [(e.name, e.calls) for e in back.entries] == [("aten::mul", 1.0), ("aten::add", 1.0)]


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ([], "p"),
        ({"tool": "perf", "calls": 1, "total_s": 0, "entries": []}, "p.tool"),
        ({"tool": "cProfile", "calls": 0, "total_s": 0, "entries": []}, "p.calls"),
        ({"tool": "cProfile", "calls": 1, "total_s": -1, "entries": []}, "p.total_s"),
        ({"tool": "cProfile", "calls": 1, "total_s": 10**400, "entries": []}, "p.total_s"),
        ({"tool": "cProfile", "calls": 1, "total_s": 0, "entries": [["x", 1]]}, "p.entries[0]"),
        (
            {"tool": "cProfile", "calls": 1, "total_s": 0, "entries": [["x", 1, 1, -1]]},
            "p.entries[0][3]",
        ),
        (
            {"tool": "cProfile", "calls": 1, "total_s": 0, "entries": [["x", "1", 1]]},
            "p.entries[0][1]",
        ),
        ({"tool": "cProfile", "calls": 1, "total_s": 0, "entries": [], "x": 1}, "p"),
    ],
)
def test_a_bad_stored_summary_names_its_field(doc: object, field: str) -> None:
    with pytest.raises(ProfileFormatError) as info:
        ProfileSummary.from_json(doc, "p")
    assert info.value.field == field


def test_growth_text_says_the_call_counts_only_when_they_changed() -> None:
    assert "calls" not in Growth("f", 1e-3, 2e-3, 1, 1).text()
    assert "1 -> 3 calls" in Growth("f", 1e-3, 2e-3, 1, 3).text()
