"""Which instrument (instruments/) measures a benchmark's calls in this run: the run's mode, its
measure and the benchmark's settings and device made into a
:class:`~pytest_burnperf.instruments.instrument.Situation` for instruments/registry.py, and a
clock instrument opened inside the benchmark's thread and device context (a device that cannot
give what the clock needs skips the benchmark with the reason)."""

from __future__ import annotations

import pytest

from pytest_burnperf.core.options.settings import Settings
from pytest_burnperf.devices.base import Device
from pytest_burnperf.instruments import registry
from pytest_burnperf.instruments.instrument import (
    Clock,
    ClockParts,
    Instrument,
    Situation,
    Unavailable,
)
from pytest_burnperf.plugin.measuring.counts import counting
from pytest_burnperf.plugin.session.perf_state import PerfState


def situation(state: PerfState, device: Device, settings: Settings, nodeid: str) -> Situation:
    """What decides the instrument for this benchmark in this process."""
    return Situation(
        profiling_round=state.run.mode.profiles_calls,
        tracking_round=state.run.mode.tracks_sides,
        counting_round=state.run.mode.counts_calls,
        counts_judge=counting.counts_only(state, device.kind, nodeid),
        timer=settings.timer,
        timing_round=state.run.mode.in_round,
    )


def choose(state: PerfState, device: Device, settings: Settings, nodeid: str) -> Instrument:
    """The instrument that measures this benchmark's calls in this run."""
    return registry.choose(situation(state, device, settings, nodeid))


def open_clock(instrument: Clock, device: Device, settings: Settings) -> ClockParts:
    """The clock's timer, flush and capture for ``device``; a skip with the reason where the
    device cannot give them."""
    try:
        return instrument.open(device, flush_l2=settings.flush_l2)
    except Unavailable as exc:
        pytest.skip(str(exc))
