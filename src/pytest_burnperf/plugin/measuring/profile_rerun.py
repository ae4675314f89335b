"""``--perf-profile``: a measured benchmark rerun once more under a profiler, after its samples
and before its verdict is reported (runs/profiling.py runs the profiler), and the note of what
grew against the baseline's profile summary (core/records/profiles.py).

Only the session the user started profiles this way (not a round process: its samples would
not be the parent's); with ``regressed`` only a benchmark that regressed, so a run where nothing
did pays nothing. The environments of a same-session comparison are profiled by a profiled
process each (:func:`profile_here` runs in it; plugin/measuring/side_processes.py starts them). The
profiled calls never enter a sample, a verdict or a baseline's timing; recorded with
``--perf-update``, the profile's summary is kept beside the baseline for later runs."""

from __future__ import annotations

import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_burnperf.core.judging.verdict import REGRESSED
from pytest_burnperf.core.records.profiles import (
    ProfileRecord,
    grew_note,
    what_grew,
    where_it_grew,
)
from pytest_burnperf.core.records.results import Result
from pytest_burnperf.devices.base import Device
from pytest_burnperf.instruments import profiler
from pytest_burnperf.instruments.instrument import Prepare
from pytest_burnperf.plugin.measuring.result_record import keep_round_record
from pytest_burnperf.plugin.session.perf_state import PerfState, rel
from pytest_burnperf.runs import profiling
from pytest_burnperf.storage.paths import folder_problem

#: Where profiles go without --perf-profile-dir.
DEFAULT_FOLDER = "perf-profiles"


def folder_refusal(here: Path, given: str | None) -> str | None:
    """The usage error for a profile folder the run must not write into (it holds files
    pytest-burnperf did not write: storage/paths.folder_problem), or None."""
    folder = given or DEFAULT_FOLDER
    problem = folder_problem(here / folder, profiling.MARK, "profiles of --perf-profile")
    if problem is None:
        return None
    if given is None:
        return f"--perf-profile writes to {folder}, which {problem}; or give --perf-profile-dir"
    return f"--perf-profile-dir {folder}: {problem}"


def wanted(state: PerfState, result: Result) -> bool:
    """Whether this run profiles ``result``'s benchmark."""
    when = state.output.profile
    if when == "off" or not state.run.mode.reports:
        return False
    return when == "all" or result.verdict.status == REGRESSED


def profiled(
    state: PerfState,
    device: Device,
    threads: int,
    result: Result,
    prepare: Prepare,
    *,
    repeat: bool,
) -> Result:
    """``result`` with its profile (and the note of what grew) where this run profiles it;
    ``repeat``: the call may run back to back (``perf(fn)``), else once (a pedantic round)."""
    if not wanted(state, result):
        return result
    if not result.judged_by.counted:
        per_call = statistics.median(result.sample.values)
    else:  # counted: one call on the clock sizes the profile
        per_call, _ = profiler.first_call(device, threads, prepare)
    try:
        summary, path = profiler.profile_calls(
            device,
            threads,
            prepare,
            library=result.library,
            kind=result.kind,
            nodeid=result.nodeid,
            side="current",
            calls=profiling.calls_for(per_call),
            out_dir=state.output.profile_dir,
            fresh=not repeat,
        )
    except profiling.ProfileError as exc:
        state.notes.append(f"--perf-profile: {result.nodeid}: {exc}")
        return result
    against = None if result.baseline is None else result.baseline.profile
    where = rel(path, state.run.rootpath)
    if against is not None:
        grown = what_grew(against, summary)
        note = grew_note(grown, "baseline", "this run", where_it_grew(against, summary))
        note += f" ({where})"
    elif result.verdict.status == REGRESSED and not state.run.mode.records:
        note = (
            f"profile of this run: {where}; the baseline has no profile to compare with "
            "(record it with --perf-update --perf-profile)"
        )
    else:
        note = f"profile: {where}"
    profile = ProfileRecord(
        tool=summary.tool,
        file=where,
        summary=summary,
        note=note,
        against=None if against is None else "baseline",
        against_summary=against,
    )
    verdict = replace(result.verdict, notes=(*result.verdict.notes, note))
    return replace(result, profile=profile, verdict=verdict)


def profile_here(
    state: PerfState,
    case: Any,
    nodeid: str,
    prepare: Prepare,
    *,
    threads: int,
    repeat: bool,
) -> Any:
    """In a profiled process (runs/profiled.py): the profile instrument
    (instruments/profiler.py) profiles the benchmark; what came of it goes to the process's
    file for the parent. Returns the first call's result (the test's own checks see it)."""
    __tracebackhide__ = True
    side = state.output.profile_side
    assert side is not None
    record, first = profiler.profile_side(
        case.entry.device,
        threads,
        prepare,
        library=case.entry.library,
        kind=case.entry.kind,
        nodeid=nodeid,
        side=side,
        repeat=repeat,
        out_dir=state.output.profile_dir,
    )
    keep_round_record(state, nodeid, record)
    return first
