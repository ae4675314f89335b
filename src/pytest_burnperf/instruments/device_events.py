"""The device's own clock (``timer="device"``): events recorded before and after the calls on
the device's queue (CUDA/ROCm events, OpenCL profiling, Vulkan timestamps), so the host's
scheduling between launches is not in the sample (devices/event_timer.py)."""

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
class DeviceEvents:
    name: InstrumentName = "device"
    unit: str = "s"
    records: str = "the samples (device seconds per call) and the device's clocks and state"
    blind_to: str = (
        "the host's work between launches (launch overhead, Python, copies the device does "
        "not queue): a slowdown there shows only on the host clock"
    )

    def applies(self, situation: Situation) -> bool:
        return situation.timer == "device"

    def measure(self, calls: Measurement) -> object:
        __tracebackhide__ = True  # a failing call shows the test's line
        return calls.time_calls(self)

    def open(self, device: Device, *, flush_l2: bool) -> ClockParts:
        return ClockParts(
            timer=device.timer(), flush=device.l2_flusher() if flush_l2 else None, capture=None
        )


DEVICE_EVENTS = DeviceEvents()
