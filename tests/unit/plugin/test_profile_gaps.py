"""What --perf-profile leaves unprofiled is said in the run's messages, never left out silently
(plugin/run_files.py); the state is a stand-in, the rule is the plugin's."""

from __future__ import annotations

import types
from typing import Any

from pytest_burnperf.core.run_mode import Mode
from pytest_burnperf.plugin.run_files import _profile_gaps


def _state(mode: Mode, profile: str, measures: list[str]) -> Any:
    results = {str(i): types.SimpleNamespace(measure=m) for i, m in enumerate(measures)}
    return types.SimpleNamespace(
        run=types.SimpleNamespace(mode=mode),
        output=types.SimpleNamespace(profile=profile),
        collected=types.SimpleNamespace(results=results, messages=[]),
    )


def test_a_same_session_comparison_says_it_is_not_profiled() -> None:
    state = _state(Mode.COMPARE, "regressed", ["time"])
    _profile_gaps(state)
    assert state.collected.messages == [
        "--perf-profile: same-session comparisons are not profiled yet; profiles of both sides "
        "come from a run against baselines recorded with --perf-update --perf-profile"
    ]


def test_benchmarks_judged_by_counts_are_counted_in_the_message() -> None:
    state = _state(Mode.JUDGE, "all", ["counts", "time", "counts"])
    _profile_gaps(state)
    assert state.collected.messages == [
        "--perf-profile: 2 benchmark(s) judged by counts were not profiled (--perf-measure time "
        "profiles them)"
    ]


def test_nothing_is_said_when_profiling_is_off_or_complete() -> None:
    for state in (_state(Mode.COMPARE, "off", ["time"]), _state(Mode.JUDGE, "all", ["time"])):
        _profile_gaps(state)
        assert state.collected.messages == []
