"""What --perf-profile could not profile in an environment of a same-session comparison is said
in the run's messages, never left out silently (plugin/output/run_files.py); the state is a stand-in,
the rule is the plugin's."""

from __future__ import annotations

import types
from typing import Any

from pytest_burnperf.plugin.output.run_files import _profile_gaps
from pytest_burnperf.runs.scheduler import Measured


def _state(profile: str, gaps: dict[str, dict[str, str]] | None) -> Any:
    measured = None if gaps is None else Measured(profile_gaps=gaps)
    return types.SimpleNamespace(
        output=types.SimpleNamespace(profile=profile),
        findings=types.SimpleNamespace(measured=measured),
        notes=[],
    )


def test_benchmarks_an_environment_could_not_profile_are_named() -> None:
    state = _state(
        "regressed",
        {
            "main": {
                "t.py::b": "torch.profiler is missing",
                "t.py::a": "torch.profiler is missing",
            },
            "current": {},
        },
    )
    _profile_gaps(state)
    assert state.notes == [
        "--perf-profile: not profiled in main: t.py::a and 1 more (torch.profiler is missing)"
    ]


def test_nothing_is_said_when_profiling_is_off_or_complete() -> None:
    for state in (
        _state("off", {"main": {"t.py::a": "why"}}),
        _state("all", {"main": {}, "current": {}}),
        _state("all", None),
    ):
        _profile_gaps(state)
        assert state.notes == []
