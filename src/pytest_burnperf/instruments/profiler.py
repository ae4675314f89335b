"""Profiles: the benchmark's calls run under its library's profiler (cProfile, torch.profiler,
CUPTI through runs/profiling.py), never timed into a sample, a verdict or a baseline.

The ``profile`` instrument measures a benchmark in a profiled process (runs/profiled.py: one per
environment of a same-session comparison, ``--perf-profile``): the first call on the clock sizes
the profile, then :func:`profile_calls` profiles it. A measured benchmark rerun once more under
the profiler after its samples (plugin/measuring/profile_rerun.py) uses the same two steps."""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_burnperf.core.records.profiles import ProfileSummary
from pytest_burnperf.devices.base import Device
from pytest_burnperf.instruments.instrument import InstrumentName, Measurement, Prepare, Situation
from pytest_burnperf.runs import profiling


@dataclass(frozen=True)
class ProfileHere:
    name: InstrumentName = "profile"
    unit: str = "profile"
    records: str = "the profile file and its summary (the functions' own and total time)"
    blind_to: str = (
        "nothing it judges: a profile explains a verdict (what grew), it never makes one; "
        "the profiler's overhead is in its times"
    )

    def applies(self, situation: Situation) -> bool:
        return situation.profiling_round

    def measure(self, calls: Measurement) -> object:
        __tracebackhide__ = True  # a failing call shows the test's line
        return calls.profile_calls()


PROFILE_HERE = ProfileHere()


def first_call(device: Device, threads: int, prepare: Prepare) -> tuple[float, Any]:
    """One call of the benchmark on the clock (to size its profile): (seconds, its result)."""
    active = getattr(device, "active", contextlib.nullcontext)
    call, after = prepare()
    box: list[Any] = []

    def once() -> None:
        box.append(call())
        device.sync()

    try:
        with device.threads(threads), active():
            seconds = profiling.timed(once)
    finally:
        if after is not None:
            after()
    return seconds, box[0] if box else None


def profile_calls(
    device: Device,
    threads: int,
    prepare: Prepare,
    *,
    library: str,
    kind: str,
    nodeid: str,
    side: str,
    calls: int,
    out_dir: Path,
    fresh: bool = False,
) -> tuple[ProfileSummary, Path]:
    """``calls`` calls of the benchmark under its library's profiler, the file named by
    ``nodeid`` and ``side`` (profiling.file_stem: one file per benchmark and side);
    :class:`profiling.ProfileError` says why there is none. ``fresh``: each call is a pedantic
    round of its own, made by ``prepare`` (its setup and teardown not profiled)."""
    active = getattr(device, "active", contextlib.nullcontext)
    stem = profiling.file_stem(nodeid, side)
    call, after = (None, None) if fresh else prepare()
    run = (
        functools.partial(profiling.profile_rounds, prepare)
        if call is None
        else functools.partial(profiling.profile, call)
    )
    try:
        with device.threads(threads), active():
            return run(
                device.sync, library=library, kind=kind, calls=calls, out_dir=out_dir, stem=stem
            )
    except (profiling.ProfilerMissing, profiling.ProfileFolderError) as exc:
        raise profiling.ProfileError(str(exc)) from None
    except OSError as exc:
        raise profiling.ProfileError(
            f"could not write its profile under {out_dir}: {exc}"
        ) from None
    finally:
        if after is not None:
            after()


def profile_side(
    device: Device,
    threads: int,
    prepare: Prepare,
    *,
    library: str,
    kind: str,
    nodeid: str,
    side: str,
    repeat: bool,
    out_dir: Path,
) -> tuple[dict[str, object], Any]:
    """In a profiled process: call the benchmark once (its first call, also timed to size the
    profile), then profile it. Returns the record for the parent (the profile's file and
    summary, or why there is none) and the first call's result (the test's checks see it);
    ``repeat``: the call may run back to back, else once (a pedantic round)."""
    __tracebackhide__ = True
    per_call, first = first_call(device, threads, prepare)
    try:
        summary, path = profile_calls(
            device,
            threads,
            prepare,
            library=library,
            kind=kind,
            nodeid=nodeid,
            side=side,
            calls=profiling.calls_for(per_call),
            out_dir=out_dir,
            fresh=not repeat,
        )
        record: dict[str, object] = {"profile": {"file": str(path), "summary": summary.as_json()}}
    except profiling.ProfileError as exc:
        record = {"profile_error": str(exc)}
    return record, first
