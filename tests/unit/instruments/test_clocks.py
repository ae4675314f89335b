"""The clock instruments open their timer, flush and capture from the device."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_burnperf.instruments.cuda_graphs import GRAPH_REPLAYS
from pytest_burnperf.instruments.device_events import DEVICE_EVENTS
from pytest_burnperf.instruments.host_clock import HOST_CLOCK
from pytest_burnperf.instruments.instrument import Unavailable


class FakeDevice:
    id = "fake:0"
    kind = "cuda"
    library = "fake"

    def __init__(self, capture: Any = None) -> None:
        self._capture = capture

    def timer(self) -> str:
        return "events"

    def l2_flusher(self) -> str:
        return "flush"

    def graph_capture(self) -> Any:
        return self._capture


def test_the_host_clock_uses_the_hosts_timer_and_flushes_only_when_asked() -> None:
    parts = HOST_CLOCK.open(FakeDevice(), flush_l2=False)
    assert (parts.timer, parts.flush, parts.capture) == (None, None, None)
    assert HOST_CLOCK.open(FakeDevice(), flush_l2=True).flush == "flush"


def test_device_events_use_the_devices_timer() -> None:
    parts = DEVICE_EVENTS.open(FakeDevice(), flush_l2=False)
    assert (parts.timer, parts.capture) == ("events", None)


def test_graph_replays_need_a_capture_and_say_why_not() -> None:
    parts = GRAPH_REPLAYS.open(FakeDevice(capture="graph"), flush_l2=True)
    assert (parts.timer, parts.flush, parts.capture) == ("events", "flush", "graph")
    with pytest.raises(Unavailable, match="fake"):
        GRAPH_REPLAYS.open(FakeDevice(capture=None), flush_l2=False)
