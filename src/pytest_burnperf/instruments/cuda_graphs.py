"""The device's clock around replays of a captured graph (``timer="graph"``): the calls are
captured once as a CUDA graph and replayed, so launch overhead leaves the sample and what is
left is the kernels' own time."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_burnperf.devices.base import Device, graph_unsupported
from pytest_burnperf.instruments.instrument import (
    ClockParts,
    InstrumentName,
    Measurement,
    Situation,
    Unavailable,
)


@dataclass(frozen=True)
class GraphReplays:
    name: InstrumentName = "graph"
    unit: str = "s"
    records: str = "the samples (device seconds per replayed call)"
    blind_to: str = (
        "launch overhead and anything the capture leaves out (host work, allocations made "
        "outside the graph): a slowdown there needs timer='device' or 'host'"
    )

    def applies(self, situation: Situation) -> bool:
        return situation.timer == "graph"

    def measure(self, calls: Measurement) -> object:
        __tracebackhide__ = True  # a failing call shows the test's line
        return calls.time_calls(self)

    def open(self, device: Device, *, flush_l2: bool) -> ClockParts:
        timer = device.timer()
        capture = getattr(device, "graph_capture", lambda: None)()
        if capture is None or timer is None:
            raise Unavailable(graph_unsupported(device) or f"{device.id} has no clock")
        return ClockParts(
            timer=timer, flush=device.l2_flusher() if flush_l2 else None, capture=capture
        )


GRAPH_REPLAYS = GraphReplays()
