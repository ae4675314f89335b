"""Counting again in fresh processes (plugin/measuring/counts/recounting.py): which recorded
benchmarks are counted in more processes, and how the processes' counts are pooled, with what
a process that failed to count leaves (pure logic, on counted runs made by hand)."""

from __future__ import annotations

import types
from typing import Any

import pytest

from pytest_burnperf.core.counting import counts_key
from pytest_burnperf.core.counting.counts import Counted
from pytest_burnperf.plugin.measuring.counts import recounting
from pytest_burnperf.runs.counted import CountedRun

KEY = {
    **{name: "same" for name in counts_key.KEY_FIELDS},
    "python": "CPython 3.11.2",
    "libraries": {"numpy": "2.4.6"},
    "calls_into": {},
    "simulated_cpu": "x86-64",
}


def _counted(median: int, interpreter: float) -> Counted:
    return Counted(instructions=(median, median), cycles=(), interpreter=interpreter)


def _run(counts: dict[str, Counted], **kw: object) -> CountedRun:
    return CountedRun(counts=dict(counts), keys={n: dict(KEY) for n in counts}, **kw)  # type: ignore[arg-type]


def test_only_benchmarks_running_interpreted_code_are_recorded_again() -> None:
    first = _run({"py": _counted(10_000, 0.9), "blas": _counted(9_000_000, 0.001)})
    assert recounting.to_record_again(first, ["blas", "py", "gone"]) == ["py"]


def test_every_process_that_counted_it_is_pooled_and_one_that_failed_is_said() -> None:
    first = _run({"a": _counted(1_000, 0.9), "b": _counted(2_000, 0.9), "c": _counted(5, 0.9)})
    second = _run(
        {"a": _counted(1_030, 0.9)},
        missing={"b": "the counted process died while counting it (killed by SIGSEGV)"},
        problems=["the counted process ended with exit 3"],
    )
    third = _run({"a": _counted(1_010, 0.9), "b": _counted(2_000, 0.9)})
    third.keys["b"] = {**KEY, "python": "CPython 3.12.0"}
    notes = recounting.merge(first, [second, third], ["a", "b", "absent"], {"arch": "x86_64"})
    assert first.counts["a"].process_medians == (1_000, 1_030, 1_010)
    assert len(first.counts["a"].instructions) == 6
    # b: the second process died on it, the third counted it under another key: one process
    assert first.counts["b"] == _counted(2_000, 0.9)
    assert first.counts["c"].process_medians == ()  # not asked for: untouched
    assert notes[0] == "the counted process ended with exit 3"
    assert (
        "b: counted again in a fresh process, which failed to count it (the counted process "
        "died while counting it (killed by SIGSEGV))" in notes[1]
    )
    assert "(its counts key differed: " in notes[2] and "CPython 3.12.0" in notes[2]
    assert notes[2].endswith("its counts rest on 1 process(es), whose memory layout may move them")
    assert len(notes) == 3


def test_a_comparison_counts_again_in_both_environments_only_what_one_process_called_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A same-session comparison: interpreted code whose two environments' counts differ by
    3% (one process each) is counted again; the same with native code, or counts alike, is
    not."""
    monkeypatch.setattr(recounting, "case_of", lambda item: types.SimpleNamespace(spec=None))
    settings = types.SimpleNamespace(alpha=0.05, threshold=0.05, chosen_threshold=None)
    state: Any = types.SimpleNamespace(
        run=types.SimpleNamespace(settings_for=lambda spec: settings),
        findings=types.SimpleNamespace(comparisons=1),
    )
    items: list[Any] = [types.SimpleNamespace(nodeid=n) for n in ("py", "blas", "same")]
    reference = _run(
        {
            "py": _counted(100_000, 0.9),
            "blas": _counted(9_000_000, 0.001),
            "same": _counted(5_000, 0.9),
        }
    )
    candidate = _run(
        {
            "py": _counted(103_000, 0.9),
            "blas": _counted(9_270_000, 0.001),
            "same": _counted(5_000, 0.9),
        }
    )
    assert recounting.to_compare_again(state, items, reference, candidate) == ["py"]
