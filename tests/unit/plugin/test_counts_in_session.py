"""--perf-measure auto in a same-session comparison: which benchmarks with counts baselines of
another key are judged by counts in the session, and what the summary says (pure logic, on
fake counted runs)."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

from pytest_burnperf.core import measures
from pytest_burnperf.core.counting.counts import Counted
from pytest_burnperf.instruments.counts_run import Counting
from pytest_burnperf.plugin.measuring.counts.session_counts import counted_in_session

#: A compiled call's counts: alike in every environment, judged by counts.
STEADY = Counted(instructions=(1_000_000, 1_000_000), cycles=())


def _state(
    sides: dict[str, set[str]], moved: list[str], counted: dict[str, Counted] | None = None
) -> Any:
    counting = Counting(
        measure=measures.AUTO,
        valgrind="valgrind",
        version="3.19.0",
        baselines_root=Path("baselines"),
        size="small",
        caches=False,
    )
    counting.incomparable = {
        n: "counts baseline recorded with numpy 2.4.6, this run has 2.3.5" for n in moved
    }
    counting.sides = {
        label: types.SimpleNamespace(
            counts={n: (counted or {}).get(n, STEADY) for n in nodes}, timed_instead={}
        )
        for label, nodes in sides.items()
    }
    return types.SimpleNamespace(
        counting=counting,
        run=types.SimpleNamespace(
            plan=types.SimpleNamespace(
                refs=["main", "current"], reference="main", candidate="current"
            ),
            invocation=("--perf", "--perf-against", "auto", "perf_tests", "-v"),
        ),
        notes=[],
    )


def test_those_counted_in_every_environment_are_judged_by_counts_the_rest_by_time() -> None:
    moved = ["t.py::a", "t.py::b"]
    state = _state({"main": {"t.py::a"}, "current": {"t.py::a", "t.py::b"}}, moved)
    counted_in_session(state, moved)
    c = state.counting
    assert c.in_session == {"t.py::a"}
    # judged by counts: no longer timed instead; the one main could not count is
    assert c.timed_instead("t.py::a") is None
    assert c.timed_instead("t.py::b") == c.incomparable["t.py::b"]
    first, second = state.notes
    assert first == (
        "1 CPU benchmark(s) with counts baselines of another key (counts baseline recorded "
        "with numpy 2.4.6, this run has 2.3.5) counted in main and current and judged by "
        "counts in this session"
    )
    assert second.startswith("1 CPU benchmark(s) with counts baselines judged by time in this")
    # the recording command it gives is runnable: no --perf-against beside --perf-update, no -v
    assert "`pytest --perf --perf-update perf_tests` records them again" in second


def test_all_counted_leaves_no_time_note() -> None:
    moved = ["t.py::a"]
    state = _state({"main": {"t.py::a"}, "current": {"t.py::a"}}, moved)
    counted_in_session(state, moved)
    assert state.counting.in_session == {"t.py::a"}
    assert len(state.notes) == 1 and "judged by counts in this session" in state.notes[0]


def test_a_named_reference_times_what_an_environment_could_not_count() -> None:
    """--perf-against REF (named): every CPU benchmark was counted in each environment; one that
    main could not count is timed in the session, and the note says why."""
    state = _state({"main": {"t.py::a"}, "current": {"t.py::a", "t.py::b"}}, [])
    state.counting.named_reference = True
    state.counting.sides["main"].missing = {"t.py::b": "it failed in the counted process"}
    counted_in_session(state, ["t.py::a", "t.py::b"])
    c = state.counting
    assert c.in_session == {"t.py::a"} and c.left_to_time == {"t.py::b"}
    first, second = state.notes
    assert first == (
        "1 CPU benchmark(s) counted in main and current and judged by counts in this session"
    )
    assert second == (
        "1 CPU benchmark(s) not counted in every environment (first, t.py::b: main: it failed "
        "in the counted process): judged by time in this session"
    )


def test_an_environment_with_no_counted_process_is_named_not_a_crash() -> None:
    state = _state({"current": {"t.py::a"}}, [])
    state.counting.named_reference = True
    counted_in_session(state, ["t.py::a"])
    assert state.counting.in_session == set() and state.counting.left_to_time == {"t.py::a"}
    assert "(first, t.py::a: main: not counted): judged by time" in state.notes[-1]


def test_counts_that_cannot_decide_are_timed_in_the_session_with_why() -> None:
    """A call of 4 k interpreted instructions, counted in both environments: the interpreter's
    state may move it by more than the threshold, so it is timed in the session, and the
    summary and its note say why; the compiled one beside it is judged by counts."""
    moved = ["t.py::small", "t.py::big"]
    small = Counted(instructions=(4_077, 4_077), cycles=(), interpreter=0.85)
    both = {"t.py::small", "t.py::big"}
    state = _state({"main": both, "current": both}, moved, {"t.py::small": small})
    counted_in_session(state, moved)
    c = state.counting
    assert c.in_session == {"t.py::big"}
    why = c.timed_instead("t.py::small")
    assert why is not None and why.startswith("counts +0.00%, but a call of 4.08 k instructions")
    # what the counts measured is kept for its result (counts_not_judged), the same why
    kept = c.undecided_counts["t.py::small"]
    assert kept["instructions"] == [4_077, 4_077] and kept["why"] == why and kept["key"] is None
    assert set(c.undecided_counts) == {"t.py::small"}
    (note,) = [n for n in state.notes if "judged by time in this session" in n]
    assert note.startswith("1 CPU benchmark(s) counted in main and current judged by time")
    assert not any("not counted in every environment" in n for n in state.notes)


def test_counts_that_spread_judge_in_the_session_where_the_threshold_set_is_larger() -> None:
    """Counts spreading about 3% between calls cannot tell a 5% change apart: left to the
    clock by default; with a 10% threshold set for the benchmark they can tell what it asks."""
    moved = ["t.py::a"]
    spread = {"t.py::a": Counted(instructions=(1_000_000, 1_030_000), cycles=())}
    state = _state({"main": set(moved), "current": set(moved)}, moved, spread)
    counted_in_session(state, moved)
    assert state.counting.in_session == set() and "t.py::a" in state.counting.undecided
    state = _state({"main": set(moved), "current": set(moved)}, moved, spread)
    counted_in_session(state, moved, {"t.py::a": 0.10})
    assert state.counting.in_session == {"t.py::a"} and not state.counting.undecided
