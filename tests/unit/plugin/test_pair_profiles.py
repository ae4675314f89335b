"""Both environments' profiles beside a same-session verdict (plugin/side_processes.attach): the
note of what grew from the reference to the candidate, and what is said where one environment
has no profile. The state is a stand-in; the profiles are made-up summaries."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

from pytest_burnperf.core.judging.verdict import REGRESSED, Verdict
from pytest_burnperf.core.memory.memory_verdict import MemoryVerdict
from pytest_burnperf.core.records.profiles import summarize
from pytest_burnperf.core.records.results import Result
from pytest_burnperf.plugin.measuring.side_processes import attach
from pytest_burnperf.runs.profiled import SideProfile
from pytest_burnperf.runs.scheduler import Measured

from .._results import NODE, numpy_result

ROOT = Path("/project")
BEFORE = summarize("cProfile", 10, [("work (pkg.py)", 1e-3, 10, 1e-3)])
AFTER = summarize(
    "cProfile", 10, [("work (pkg.py)", 1e-3, 10, 3e-3), ("extra_pass (pkg.py)", 2e-3, 10, 2e-3)]
)


def _result() -> Result:
    return numpy_result(Verdict(REGRESSED, 3e-3, ratio=3.0))


def _state(profiles: dict[str, Any], gaps: dict[str, dict[str, str]], profile: str = "all") -> Any:
    return types.SimpleNamespace(
        run=types.SimpleNamespace(
            plan=types.SimpleNamespace(reference="main", candidate="current"), rootpath=ROOT
        ),
        output=types.SimpleNamespace(profile=profile),
        findings=types.SimpleNamespace(measured=Measured(profiles=profiles, profile_gaps=gaps)),
    )


def _side(label: str, summary: Any) -> dict[str, SideProfile]:
    return {NODE: SideProfile(summary, ROOT / "perf-profiles" / f"k.{label}.pstats")}


def test_both_sides_give_what_grew_and_both_files() -> None:
    state = _state({"main": _side("main", BEFORE), "current": _side("current", AFTER)}, {})
    r = attach(state, _result())
    assert r.profile is not None
    note = r.profile.note
    assert note.startswith("what grew (main -> current, per call):")
    assert "extra_pass (pkg.py) new:" in note
    assert note.endswith("(perf-profiles/k.main.pstats, perf-profiles/k.current.pstats)")
    assert r.profile.file == "perf-profiles/k.current.pstats"
    assert r.profile.against == "main"
    assert r.profile.against_file == "perf-profiles/k.main.pstats"
    assert r.profile.against_summary == BEFORE
    assert note in r.verdict.notes


def test_a_side_without_a_profile_is_named_with_why() -> None:
    state = _state(
        {"main": {}, "current": _side("current", AFTER)},
        {"main": {NODE: "its profiled process failed (exit 2)"}},
    )
    r = attach(state, _result())
    assert r.profile is not None and r.profile.against is None
    assert r.profile.note == (
        "profile of current: perf-profiles/k.current.pstats; main has none (its profiled "
        "process failed (exit 2))"
    )


def test_nothing_is_added_where_nothing_was_profiled() -> None:
    plain = _result()
    assert attach(_state({}, {}), plain) is plain
    profiled = _state({"main": _side("main", BEFORE), "current": _side("current", AFTER)}, {})
    assert attach(_state(profiled.findings.measured.profiles, {}, "off"), plain) is plain


# --------------------------------------------------------------------------------------------
# memory per call of both sides (side_processes.attach_tracked)


def _memory_state(memory: dict[str, Any], gaps: dict[str, dict[str, str]]) -> Any:
    """A comparison's state whose tracking processes found ``memory`` (records by environment
    and node id) and ``gaps`` (why a benchmark has nothing, by environment and node id)."""
    from pytest_burnperf.runs.tracked_sides import Tracked

    tracked = {
        label: {node: Tracked(records={"memory": rec}) for node, rec in found.items()}
        for label, found in memory.items()
    }
    return types.SimpleNamespace(
        run=types.SimpleNamespace(
            plan=types.SimpleNamespace(reference="main", candidate="current"),
            rootpath=ROOT,
            memory=True,
        ),
        findings=types.SimpleNamespace(measured=Measured(tracked=tracked, tracked_gaps=gaps)),
    )


def _recorded(peak: int) -> Any:
    from pytest_burnperf.core.memory.allocations import Allocations
    from pytest_burnperf.core.memory.recorded_memory import RecordedMemory

    return RecordedMemory(
        figures=Allocations(allocated=peak, count=1, peak=peak),
        key={"meter": "allocator (memray)", "versions": {"numpy": "2.4.6"}, "threads": 1},
        sites={"work (pkg.py:9) [t = a.copy()]": peak},
    )


def _memory(r: Result) -> MemoryVerdict:
    """The memory verdict judged beside ``r``'s (it must have one)."""
    m = r.sides.get("memory")
    assert isinstance(m, MemoryVerdict), r.sides
    return m


def test_the_candidates_memory_is_judged_against_the_references() -> None:
    from pytest_burnperf.plugin.measuring.side_processes import attach_tracked

    mib = 1 << 20
    state = _memory_state(
        {"main": {NODE: _recorded(8 * mib)}, "current": {NODE: _recorded(16 * mib)}}, {}
    )
    r = attach_tracked(state, _result(), None)
    m = _memory(r)
    assert m.status == "regressed"
    assert m.baseline is not None and m.baseline.peak == 8 * mib
    assert m.key is not None and m.key["threads"] == 1
    assert r.as_json()["memory"]["key"] == dict(m.key)  # type: ignore[index]
    same = attach_tracked(
        _memory_state({"main": {NODE: _recorded(mib)}, "current": {NODE: _recorded(mib)}}, {}),
        _result(),
        None,
    )
    assert _memory(same).status == "unchanged"


def test_a_reference_without_memory_is_said_and_nothing_is_added_where_none_was_tracked() -> None:
    from pytest_burnperf.plugin.measuring.side_processes import attach_tracked

    state = _memory_state(
        {"main": {}, "current": {NODE: _recorded(1 << 20)}},
        {"main": {NODE: "its tracking process failed (exit 3)"}},
    )
    r = attach_tracked(state, _result(), None)
    assert _memory(r).status == "no-baseline"
    assert _memory(r).reason == "main: not tracked (its tracking process failed (exit 3))"
    plain = _result()
    assert attach_tracked(_memory_state({}, {}), plain, None) is plain
    # a reference whose process tracked the benchmark but not its memory says why
    from pytest_burnperf.runs.tracked_sides import Tracked

    state = _memory_state({"current": {NODE: _recorded(1 << 20)}}, {})
    state.findings.measured.tracked["main"] = {
        NODE: Tracked(gaps={"memory": "memory per call is not tracked on opencl-x"})
    }
    said = _memory(attach_tracked(state, _result(), None)).reason
    assert said == "main: not tracked (memory per call is not tracked on opencl-x)"


def test_a_candidate_without_memory_is_counted_as_not_measured_with_why() -> None:
    """The run's side line counts a benchmark the candidate's tracking found no memory of, with
    why (``1 not measured (why)``), as a run against baselines does: it was left out silently."""
    from pytest_burnperf.plugin.measuring.side_processes import attach_tracked
    from pytest_burnperf.report.run_header import side_lines
    from pytest_burnperf.runs.tracked_sides import Tracked

    failed = _memory_state(
        {"main": {NODE: _recorded(1 << 20)}},
        {"current": {NODE: "its tracking process failed (exit 3)"}},
    )
    r = attach_tracked(failed, _result(), None)
    assert "memory" not in r.sides
    assert r.not_measured == {"memory": "its tracking process failed (exit 3)"}
    assert r.as_json()["not_measured"] == {"memory": "its tracking process failed (exit 3)"}
    (line,) = side_lines([r, _result()])
    assert line.endswith("1 not measured (its tracking process failed (exit 3))"), line
    # its process ran, but the device's API does not tell memory
    state = _memory_state({"main": {NODE: _recorded(1 << 20)}}, {})
    state.findings.measured.tracked["current"] = {
        NODE: Tracked(gaps={"memory": "memory per call is not tracked on opencl-x"})
    }
    r = attach_tracked(state, _result(), None)
    assert r.not_measured == {"memory": "memory per call is not tracked on opencl-x"}
    assert "memory" not in r.sides
