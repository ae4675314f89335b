"""``--perf-profile``: a measured benchmark rerun once more under a profiler, after its samples
and before its verdict is reported (runs/profiling.py runs the profiler), and the note of what
grew against the baseline's profile summary (core/profiles.py).

Only the session the user started profiles this way (not a round process: its samples would
not be the parent's); with ``regressed`` only a benchmark that regressed, so a run where nothing
did pays nothing. The environments of a same-session comparison are profiled by a profiled
process each (:func:`profile_here` runs in it; plugin/pair_profiles.py starts them). The
profiled calls never enter a sample, a verdict or a baseline's timing; recorded with
``--perf-update``, the profile's summary is kept beside the baseline for later runs."""

from __future__ import annotations

import contextlib
import statistics
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_burnperf.core.profiles import (
    ProfileFormatError,
    ProfileSummary,
    grew_note,
    what_grew,
    where_it_grew,
)
from pytest_burnperf.core.results import Result
from pytest_burnperf.core.verdict import REGRESSED
from pytest_burnperf.plugin.session import PerfState, rel
from pytest_burnperf.runs import profiling
from pytest_burnperf.storage.paths import folder_problem

#: Where profiles go without --perf-profile-dir.
DEFAULT_FOLDER = "perf-profiles"

#: Makes one call of the benchmark ready: (the call, what to run after it or None).
Prepare = Callable[[], tuple[Callable[[], Any], Callable[[], Any] | None]]


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
    device: Any,
    threads: int,
    key: str,
    result: Result,
    prepare: Prepare,
    *,
    repeat: bool,
) -> Result:
    """``result`` with its profile (and the note of what grew) where this run profiles it;
    ``repeat``: the call may run back to back (``perf(fn)``), else once (a pedantic round)."""
    if not wanted(state, result):
        return result
    active = getattr(device, "active", contextlib.nullcontext)
    if result.measure == "time":
        per_call = statistics.median(result.sample.values)
    else:  # counted: one call on the clock sizes the profile
        call, after = prepare()
        try:
            with device.threads(threads), active():
                per_call = profiling.timed(lambda: (call(), device.sync()))
        finally:
            if after is not None:
                after()
    calls = profiling.calls_for(per_call) if repeat else 1
    call, after = prepare()
    try:
        with device.threads(threads), active():
            summary, path = profiling.profile(
                call,
                device.sync,
                library=result.library,
                kind=result.kind,
                calls=calls,
                out_dir=state.output.profile_dir,
                stem=profiling.file_stem(key, "current"),
            )
    except (profiling.ProfilerMissing, profiling.ProfileFolderError) as exc:
        state.collected.messages.append(f"--perf-profile: {result.nodeid}: {exc}")
        return result
    except OSError as exc:
        state.collected.messages.append(
            f"--perf-profile: {result.nodeid}: could not write its profile under "
            f"{state.output.profile_dir}: {exc}"
        )
        return result
    finally:
        if after is not None:
            after()
    against = _baseline_summary(result.baseline)
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
    profile = {
        "tool": summary.tool,
        "file": where,
        "summary": summary.as_json(),
        "against": None if against is None else "baseline",
        "against_summary": None if against is None else against.as_json(),
        "note": note,
    }
    verdict = replace(result.verdict, notes=(*result.verdict.notes, note))
    return replace(result, profile=profile, verdict=verdict)


def profile_here(
    state: PerfState,
    case: Any,
    key: str,
    nodeid: str,
    prepare: Prepare,
    *,
    threads: int,
    repeat: bool,
) -> Any:
    """In a profiled process (runs/profiled.py): call the benchmark once (its first call,
    also timed to size the profile), then profile it; what came of it goes to the process's
    file for the parent. Returns the first call's result (the test's own checks see it)."""
    __tracebackhide__ = True
    side = state.output.profile_side
    assert side is not None
    device = case.entry.device
    active = getattr(device, "active", contextlib.nullcontext)
    call, after = prepare()
    box: list[Any] = []

    def first() -> None:
        box.append(call())
        device.sync()

    with device.threads(threads), active():
        try:
            per_call = profiling.timed(first)
        finally:
            if after is not None:
                after()
        calls = profiling.calls_for(per_call) if repeat else 1
        call, after = prepare()
        try:
            summary, path = profiling.profile(
                call,
                device.sync,
                library=case.entry.library,
                kind=case.entry.kind,
                calls=calls,
                out_dir=state.output.profile_dir,
                stem=profiling.file_stem(key, side),
            )
            record: dict[str, Any] = {"profile": {"file": str(path), "summary": summary.as_json()}}
        except (profiling.ProfilerMissing, profiling.ProfileFolderError) as exc:
            record = {"profile_error": str(exc)}
        except OSError as exc:
            record = {
                "profile_error": f"could not write its profile under "
                f"{state.output.profile_dir}: {exc}"
            }
        finally:
            if after is not None:
                after()
    state.collected.worker_samples[nodeid] = record
    return box[0] if box else None


def _baseline_summary(baseline: dict[str, Any] | None) -> ProfileSummary | None:
    """The profile summary kept beside the baseline (the file was checked when it was read)."""
    doc = (baseline or {}).get("profile")
    if doc is None:
        return None
    try:
        return ProfileSummary.from_json(doc)
    except ProfileFormatError:
        return None
