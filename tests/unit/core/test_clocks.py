"""Device clocks, L2 flushes and the memory meter inside the sampling loops (fake time)."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_burnperf.core.clocks import HostTimer, Sample, Timer
from pytest_burnperf.core.timing import measure, measure_pedantic


class Machine:
    """A fake device: host time advances by ``host_ns`` per call; the device clock counts only
    ``device_ns`` per call (the work), as device events do."""

    def __init__(self, host_ns: int, device_ns: int) -> None:
        self.now = 0
        self.host_ns = host_ns
        self.device_ns = device_ns
        self.device_work = 0
        self.log: list[str] = []

    def clock(self) -> int:
        return self.now

    def work(self) -> str:
        self.now += self.host_ns
        self.device_work += self.device_ns
        self.log.append("call")
        return "out"

    def flush(self) -> None:
        self.log.append("flush")

    def meter(self, call: object) -> int:
        self.log.append("meter")
        call()  # type: ignore[operator]
        return 4096


class DeviceClock:
    name = "device"

    def __init__(self, machine: Machine) -> None:
        self.m = machine
        self.started = 0

    def start(self) -> None:
        self.started = self.m.device_work

    def stop(self) -> float:
        return (self.m.device_work - self.started) * 1e-9


def test_device_timer_gates_and_host_time_is_kept_alongside() -> None:
    m = Machine(host_ns=3000, device_ns=1000)  # launch-bound: host 3 us, device 1 us a call
    timer = DeviceClock(m)
    assert isinstance(timer, Timer)
    _, sample = measure(m.work, samples=5, warmup=0.0, min_time=1e-5, clock=m.clock, timer=timer)
    assert sample.timer == "device"
    assert sample.loops == 10  # calibrated on the gating clock: 10 x 1 us reaches 10 us
    assert sample.values == pytest.approx((1e-6,) * 5)
    assert sample.host_values == pytest.approx((3e-6,) * 5)


class PaddedClock(DeviceClock):
    """A device timer behind a pad (as ``EventTimer``): it reports the host's own time for the
    span, without the pad's wait, in ``host_ns``."""

    def __init__(self, machine: Machine) -> None:
        super().__init__(machine)
        self.host_ns = 0
        self.t0 = 0

    def start(self) -> None:
        super().start()
        self.m.now += 50_000  # the host waits out a 50 us pad it will not count
        self.t0 = self.m.now

    def stop(self) -> float:
        self.host_ns = self.m.now - self.t0
        return super().stop()


def test_behind_a_pad_the_loop_is_sized_on_the_larger_clock_and_host_time_leaves_the_pad_out() -> (
    None
):
    # launch-bound: the host takes 3 us to queue a call the device runs in 1 us. Sized on the
    # device clock, a sample would queue 3x the minimum time of calls (and overflow a GPU's
    # launch queue for tiny kernels); sized on the host's queue time it holds 10 us of them.
    m = Machine(host_ns=3000, device_ns=1000)
    _, sample = measure(
        m.work, samples=5, warmup=0.0, min_time=3e-5, clock=m.clock, timer=PaddedClock(m)
    )
    assert sample.loops == 10
    assert sample.values == pytest.approx((1e-6,) * 5)
    assert sample.host_values == pytest.approx((3e-6,) * 5)  # the pad's 50 us left out
    # device-bound work is sized on the device clock as before
    d = Machine(host_ns=1000, device_ns=3000)
    _, sample = measure(
        d.work, samples=5, warmup=0.0, min_time=3e-5, clock=d.clock, timer=PaddedClock(d)
    )
    assert sample.loops == 10 and sample.values == pytest.approx((3e-6,) * 5)


def test_host_timer_has_no_second_series() -> None:
    m = Machine(host_ns=2000, device_ns=0)
    _, sample = measure(m.work, samples=3, warmup=0.0, min_time=0.0, clock=m.clock)
    assert sample.timer == "host" and sample.host_values is None
    assert HostTimer().name == "host"


def test_l2_flush_makes_every_sample_one_call_after_an_untimed_flush() -> None:
    m = Machine(host_ns=1000, device_ns=1000)
    _, sample = measure(m.work, samples=4, warmup=0.0, min_time=1.0, clock=m.clock, flush=m.flush)
    assert sample.loops == 1 and sample.l2_flush  # min_time would ask for a million loops
    assert m.log == ["flush", "call"] * 6  # the first call, one timed warm-up call, 4 samples


def test_meter_runs_on_the_second_warmup_call_untimed() -> None:
    m = Machine(host_ns=1000, device_ns=1000)
    _, sample = measure(m.work, samples=2, warmup=0.0, min_time=1e-5, clock=m.clock, meter=m.meter)
    assert m.log[:3] == [
        "call",
        "meter",
        "call",
    ]  # the first call (compiles, caches) is not metered
    assert sample.peak_memory == 4096 and sample.warmup_calls == 3  # first, metered, one timed
    assert sample.loops == 10


def test_pedantic_meters_the_last_warmup_round_and_never_adds_rounds() -> None:
    m = Machine(host_ns=1000, device_ns=1000)
    _, sample = measure_pedantic(
        m.work, rounds=3, warmup_rounds=2, clock=m.clock, meter=m.meter, flush=m.flush
    )
    assert m.log == ["flush", "call", "flush", "meter", "call"] + ["flush", "call"] * 3
    assert sample.peak_memory == 4096 and sample.l2_flush and len(sample.values) == 3
    m.log.clear()
    _, sample = measure_pedantic(m.work, rounds=3, clock=m.clock, meter=m.meter)
    assert m.log == ["call"] * 3 and sample.peak_memory is None


def test_sample_checks_its_second_series_and_timer() -> None:
    with pytest.raises(ValueError, match="one value per sample"):
        Sample(values=(1.0, 2.0), loops=1, warmup_calls=1, host_values=(1.0,))
    with pytest.raises(ValueError, match=r"> 0\.0"):
        Sample(values=(1.0,), loops=1, warmup_calls=1, host_values=(0.0,))
    with pytest.raises(ValueError, match="timer must be"):
        Sample(values=(1.0,), loops=1, warmup_calls=1, timer="wall")


def test_cpu_share_and_watch_cover_the_samples_only() -> None:
    """Per-sample CPU share from a fake process clock (half the wall time: descheduled), and the
    watch hook called once before the first sample and once after the last."""
    from pytest_burnperf.core.timing import measure as _measure

    wall = {"t": 0}
    cpu = {"t": 0}

    def clock() -> int:
        return wall["t"]

    def cpu_clock() -> int:
        return cpu["t"]

    def fn() -> None:
        wall["t"] += 1_000_000
        cpu["t"] += 500_000

    seen: list[int] = []
    _, sample = _measure(
        fn,
        samples=5,
        warmup=0.0,
        min_time=0.0,
        clock=clock,
        cpu_clock=cpu_clock,
        watch=lambda: seen.append(wall["t"]),
    )
    assert sample.cpu_share is not None and len(sample.cpu_share) == len(sample.values) == 5
    assert all(abs(s - 0.5) < 1e-9 for s in sample.cpu_share)
    assert len(seen) == 2 and seen[1] - seen[0] == 5_000_000  # the five samples, no warm-up
    _, plain = _measure(fn, samples=3, warmup=0.0, min_time=0.0, clock=clock)
    assert plain.cpu_share is None


class GraphMachine(Machine):
    """A GPU with CUDA graphs, in fake time. Eager calls: the host spends ``host_ns`` queueing
    each, and the device, which waits for it, spends the larger of that and ``device_ns``.
    ``capture`` records the calls a body queues without running them; a replay runs them back
    to back (``device_ns`` each) for one graph launch of ``launch_ns`` on the host."""

    def __init__(self, host_ns: int, device_ns: int, launch_ns: int = 5000) -> None:
        super().__init__(host_ns, device_ns)
        self.launch_ns = launch_ns
        self.capturing = False
        self.captured: list[int] = []  # calls held by each graph captured
        self.replays = 0
        self.fail_with: Exception | None = None

    def work(self) -> str:
        if self.capturing:
            self.log.append("captured")
            return "static-out"
        self.now += self.host_ns
        self.device_work += max(self.device_ns, self.host_ns)
        self.log.append("call")
        return "out"

    def capture(self, body: Any) -> Any:
        if self.fail_with is not None:
            raise self.fail_with
        before = len(self.log)
        self.capturing = True
        try:
            body()
        finally:
            self.capturing = False
        calls = len(self.log) - before
        del self.log[before:]
        self.captured.append(calls)

        def replay() -> None:
            self.replays += 1
            self.log.append("replay")
            self.now += self.launch_ns
            self.device_work += calls * self.device_ns

        return replay


def graph_measure(m: GraphMachine, **kw: Any) -> tuple[Any, Sample]:
    """measure() on the fake GPU: its clocks, its device timer and its graph capture."""
    return measure(m.work, clock=m.clock, timer=DeviceClock(m), capture=m.capture, **kw)


def test_graph_samples_are_replays_sized_from_a_timed_replay() -> None:
    """A launch-bound chain: 20 us to queue a call the device runs in 2 us. Eager device spans
    say 20 us a call (the device waits for the host), so the first graph holds 50 calls for a
    1 ms sample; its replay shows 2 us a call, and the graph is captured again with 500."""
    m = GraphMachine(host_ns=20_000, device_ns=2_000)
    result, sample = graph_measure(m, samples=5, warmup=0.0, min_time=1e-3)
    first, second = m.captured
    assert first == 50 and second in (500, 501)  # 1 ms / 2 us, rounded up in floating point
    assert sample.timer == "graph" and sample.loops == second
    assert sample.values == pytest.approx((2e-6,) * 5)  # the device's own time per call
    assert sample.host_values == pytest.approx((5e-6 / second,) * 5)  # one launch, shared
    # each graph's first launch uploads it, untimed; one timed replay sized the second graph
    assert m.replays == 1 + 1 + 1 + 5
    assert m.log.count("call") == 2  # eager: the untimed first call and one timed warm-up call
    assert result == "static-out"  # the captured calls' output, which each replay refreshes


def test_a_graph_that_already_holds_enough_calls_is_not_captured_again() -> None:
    m = GraphMachine(host_ns=1_000, device_ns=10_000)  # device-bound: eager time is true
    _, sample = graph_measure(m, samples=3, warmup=0.0, min_time=1e-4)
    assert m.captured == [10] and sample.loops == 10
    assert sample.values == pytest.approx((1e-5,) * 3)


def test_a_graph_never_holds_more_than_the_cap() -> None:
    from pytest_burnperf.core.clocks import MAX_GRAPH_CALLS

    m = GraphMachine(host_ns=1_000, device_ns=1)  # 1 ns a call: a 1 s sample wants 1e9 calls
    _, sample = graph_measure(m, samples=2, warmup=0.0, min_time=1.0)
    assert m.captured == [MAX_GRAPH_CALLS] and sample.loops == MAX_GRAPH_CALLS


def test_with_an_l2_flush_each_graph_replay_is_one_call_after_the_flush() -> None:
    m = GraphMachine(host_ns=20_000, device_ns=2_000)
    _, sample = graph_measure(m, samples=3, warmup=0.0, min_time=1e-3, flush=m.flush)
    assert m.captured == [1] and sample.loops == 1 and sample.l2_flush
    assert m.log[-6:] == ["flush", "replay"] * 3  # the flush is outside the graph, untimed
    assert sample.values == pytest.approx((2e-6,) * 3)


def test_a_capture_failure_reaches_the_caller() -> None:
    from pytest_burnperf.core.clocks import GraphCaptureError

    m = GraphMachine(host_ns=1_000, device_ns=1_000)
    m.fail_with = GraphCaptureError("its calls could not be captured")
    with pytest.raises(GraphCaptureError, match="could not be captured"):
        graph_measure(m, samples=3, warmup=0.0, min_time=1e-4)
    assert Sample(values=(1.0,), loops=1, warmup_calls=1, timer="graph").timer == "graph"
