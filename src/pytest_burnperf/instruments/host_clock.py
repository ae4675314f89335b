"""The host's clock around each call and the device's sync (``timer="host"``, the default):
``time.perf_counter_ns`` read by core/timing.py, the device synchronised before the clock is
read again, so queued device work is inside the sample."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_burnperf.devices.base import Device
from pytest_burnperf.instruments.instrument import (
    ClockParts,
    InstrumentName,
    Measurement,
    Situation,
)


@dataclass(frozen=True)
class HostClock:
    name: InstrumentName = "host"
    unit: str = "s"
    records: str = "the samples (seconds per call) and the host's window around them"
    blind_to: str = (
        "nothing of the code's cost, but everything else on the host: other processes, "
        "frequency changes, a slow spell; the verdict weighs the host's evidence"
    )

    def applies(self, situation: Situation) -> bool:
        return situation.timer == "host"

    def measure(self, calls: Measurement) -> object:
        __tracebackhide__ = True  # a failing call shows the test's line
        return calls.time_calls(self)

    def open(self, device: Device, *, flush_l2: bool) -> ClockParts:
        return ClockParts(timer=None, flush=device.l2_flusher() if flush_l2 else None, capture=None)


HOST_CLOCK = HostClock()
