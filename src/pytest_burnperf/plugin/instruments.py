"""What measures a benchmark's calls, chosen in one place (:func:`choose`) from the run's mode,
its measure and the benchmark's settings and device:

==============  ===================================================================  ==========
instrument      what it does                                                         chosen by
==============  ===================================================================  ==========
``counts``      counts each call's instructions under callgrind (a counted round)    Mode.COUNT
``counted``     counts alone judge: the call runs once here, untimed, and the        ``--perf-measure counts``
                counted round's counts are judged
``profile``     a profiler: the calls are profiled, not measured (the profiled       ``--perf-profile`` in a
                process of one environment of a same-session comparison)            comparison
``host``        the host's clock around the device's sync                            ``timer="host"``
``device``      the device's own clock: events before and after the calls            ``timer="device"``
``graph``       the device's clock around replays of a captured CUDA graph           ``timer="graph"``
==============  ===================================================================  ==========

A clock instrument makes its timer, cache flush and graph capture with :meth:`Clock.open`,
inside the benchmark's thread and device context; core/timing.py then takes the samples."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, cast

import pytest

from pytest_burnperf.core.settings import Settings
from pytest_burnperf.devices.base import graph_unsupported
from pytest_burnperf.plugin import counting
from pytest_burnperf.plugin.session import PerfState

InstrumentName = Literal["counts", "counted", "profile", "host", "device", "graph"]


class Instrument(Protocol):
    """What measures a benchmark's calls; ``name`` is what reports and baselines call it."""

    @property
    def name(self) -> InstrumentName: ...


@dataclass(frozen=True)
class CountsHere:
    """In a counted round (``Mode.COUNT``): callgrind counts each call (plugin/counting.py)."""

    name: InstrumentName = "counts"


@dataclass(frozen=True)
class CountsJudge:
    """Counts alone judge this CPU benchmark (``--perf-measure counts``): no clock runs."""

    name: InstrumentName = "counted"


@dataclass(frozen=True)
class ProfileHere:
    """In a profiled process (runs/profiled.py): the calls run under a profiler, for the
    profiles of both sides of a same-session comparison (plugin/pair_profiles.py)."""

    name: InstrumentName = "profile"


@dataclass(frozen=True)
class Clock:
    """A clock: the host's, the device's events, or the device's events around graph replays."""

    name: InstrumentName
    flush_l2: bool

    def open(self, device: Any) -> tuple[Any, Callable[[], None] | None, Any]:
        """The timer (None: the host's), the L2 flush (or None) and, for ``graph``, the
        device's graph capture (collection skipped the devices without one)."""
        timer = device.timer() if self.name in ("device", "graph") else None
        flush = device.l2_flusher() if self.flush_l2 else None
        capture = None
        if self.name == "graph":
            capture = getattr(device, "graph_capture", lambda: None)()
            if capture is None or timer is None:
                pytest.skip(graph_unsupported(device) or f"{device.id} has no clock")
        return timer, flush, capture


def choose(state: PerfState, device: Any, settings: Settings, nodeid: str) -> Instrument:
    """The instrument that measures this benchmark's calls in this run."""
    if state.output.profile_side is not None:
        return ProfileHere()
    if state.run.mode.counts_calls:
        return CountsHere()
    if counting.counts_only(state, device.kind, nodeid):
        return CountsJudge()
    return Clock(name=cast(InstrumentName, settings.timer), flush_l2=settings.flush_l2)
