"""CUDA, ROCm and Metal code paths with fake torch and cupy modules (no GPU needed).

The fakes are checked against the real libraries (torch's CPU build and cupy both import here
without a GPU): every attribute a fake offers must exist on the real module or class
(``test_the_fakes_offer_nothing_the_real_libraries_lack``), so code that calls something the
library does not have (cupy's events have no ``elapsed_time``) fails here, not on a GPU.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest

from pytest_burnperf.core.clocks import GraphCaptureError
from pytest_burnperf.core.memory.allocations import Allocations
from pytest_burnperf.devices.backends import cupy_backend, torch_backend
from pytest_burnperf.devices.base import graph_unsupported
from pytest_burnperf.devices.device_errors import device_error
from pytest_burnperf.devices.event_timer import (
    FOREIGN_MIN_S,
    PAD_MAX_S,
    PAD_MIN_S,
    EventTimer,
    SleepPad,
    timer_messages,
)
from pytest_burnperf.devices.l2_flush import flush_bytes

#: Attributes of the fakes that are test helpers, not library API.
HELPERS = {"_mem", "_log"}
#: Dunder names the code relies on (a module's version, a context manager, a callable).
API_DUNDERS = ("__version__", "__enter__", "__exit__", "__call__")


def unfaithful(fake: Any, real: Any, path: str) -> list[str]:
    """What ``fake`` offers that ``real`` lacks (recursively through namespaces and classes)."""
    missing: list[str] = []
    if not (isinstance(fake, SimpleNamespace) or inspect.isclass(fake)):
        return missing
    for name, value in vars(fake).items():
        if name in HELPERS or (name.startswith("__") and name not in API_DUNDERS):
            continue
        if name in ("clock_ms", "records", "launches", "log", "invalidate"):  # the fakes' state
            continue
        if not hasattr(real, name):
            missing.append(f"{path}.{name}")
            continue
        ours = inspect.isclass(value) and value.__module__ == __name__  # a fake class of this file
        if isinstance(value, SimpleNamespace) or ours:
            missing += unfaithful(value, getattr(real, name), f"{path}.{name}")
    return missing


class FakeTorchEvent:
    """torch.cuda.Event: 'device time' read from a shared counter, in milliseconds."""

    clock_ms: ClassVar[list[float]] = [0.0]
    records: ClassVar[list[Any]] = []

    def __init__(self, enable_timing: bool = True) -> None:
        assert enable_timing
        self.t = 0.0
        self.synced = False

    def record(self, stream: Any = None) -> None:
        FakeTorchEvent.records.append(stream)
        self.t = FakeTorchEvent.clock_ms[0]

    def synchronize(self) -> None:
        self.synced = True

    def query(self) -> bool:
        return True

    def elapsed_time(self, end: FakeTorchEvent) -> float:
        assert end.synced, "elapsed time read before the end event completed"
        return end.t - self.t


class FakeCupyEvent:
    """cupy.cuda.Event: no elapsed_time method (cupy.cuda.get_elapsed_time reads a pair)."""

    clock_ms: ClassVar[list[float]] = [0.0]
    records: ClassVar[list[Any]] = []

    def __init__(self, block: bool = False, disable_timing: bool = False) -> None:
        self.t = 0.0
        self.synced = False

    def record(self, stream: Any = None) -> None:
        FakeCupyEvent.records.append(stream)
        self.t = FakeCupyEvent.clock_ms[0]

    def synchronize(self) -> None:
        self.synced = True

    @property
    def done(self) -> bool:
        return True


def cupy_elapsed(start: FakeCupyEvent, end: FakeCupyEvent) -> float:
    assert end.synced, "elapsed time read before the end event completed"
    return end.t - start.t


class Clock:
    """A fake host clock (ns) and a log of what the timer did, in order."""

    def __init__(self) -> None:
        self.now = 0
        self.log: list[str] = []

    def __call__(self) -> int:
        return self.now


def test_event_timer_records_on_the_stream_and_converts_ms() -> None:
    FakeTorchEvent.records.clear()
    timer = EventTimer(FakeTorchEvent, lambda: "stream-1", label="CUDA events")
    timer.start()
    FakeTorchEvent.clock_ms[0] += 2.5
    assert timer.stop() == pytest.approx(2.5e-3)
    assert FakeTorchEvent.records == ["stream-1", "stream-1"] and timer.name == "device"


def test_the_stream_is_the_one_current_when_the_sample_starts() -> None:
    FakeTorchEvent.records.clear()
    streams = iter(["s-a", "s-b"])
    timer = EventTimer(FakeTorchEvent, lambda: next(streams))
    for _ in range(2):
        timer.start()
        timer.stop()
    # each span starts and ends on the stream current at its start
    assert FakeTorchEvent.records == ["s-a", "s-a", "s-b", "s-b"]


def test_the_pad_is_queued_before_the_start_event_and_follows_the_queue_time() -> None:
    clock = Clock()
    pads: list[float] = []

    class Ev(FakeTorchEvent):
        def record(self, stream: Any = None) -> None:
            clock.log.append("record")
            super().record(stream)

    def pad(seconds: float) -> None:
        clock.log.append("pad")
        pads.append(seconds)

    timer = EventTimer(Ev, pad=pad, clock=clock)
    timer.start()
    clock.now += 4_000_000  # the host takes 4 ms to queue this sample's calls
    timer.stop()
    timer.start()
    timer.stop()
    assert clock.log[:2] == ["pad", "record"]  # no sync between the pad and the start event
    assert pads[0] == PAD_MIN_S
    assert pads[1] == pytest.approx(1.5 * 4e-3)  # a little longer than the host took to queue
    timer.start()
    clock.now += 10**9  # a second to queue: the pad is capped
    timer.stop()
    timer.start()
    assert pads[-1] == PAD_MAX_S


def test_work_on_other_streams_is_counted() -> None:
    clock = Clock()

    def device_sync() -> None:  # the device is still busy: another stream's 1 ms of work
        clock.now += 1_000_000

    timer = EventTimer(FakeTorchEvent, device_sync=device_sync, clock=clock)
    timer.start()
    FakeTorchEvent.clock_ms[0] += 0.5
    timer.stop()
    assert (timer.foreign, timer.samples) == (1, 1)
    quiet = EventTimer(FakeTorchEvent, device_sync=lambda: None, clock=clock)
    quiet.start()
    quiet.stop()
    assert quiet.foreign == 0 and FOREIGN_MIN_S > 0


class WaitingEvent(FakeTorchEvent):
    """An event whose ``synchronize`` costs the host ``wait_ns`` on the fake clock."""

    clock: ClassVar[Clock | None] = None
    wait_ns: ClassVar[int] = 0

    def synchronize(self) -> None:
        super().synchronize()
        assert WaitingEvent.clock is not None
        WaitingEvent.clock.now += WaitingEvent.wait_ns


def test_host_time_leaves_the_pad_out_and_a_host_that_cannot_keep_up_is_counted() -> None:
    clock = Clock()
    WaitingEvent.clock = clock
    timer = EventTimer(WaitingEvent, pad=lambda seconds: None, clock=clock)
    # device-bound: 10 us to queue, the device then runs the 50 us pad and 1 ms of work
    timer.start()
    clock.now += 10_000
    WaitingEvent.wait_ns = 1_040_000
    timer.stop()
    assert timer.host_ns == 1_000_000  # the span's host time without the pad's 50 us
    assert timer.host_bound == 0
    # launch-bound: 2 ms to queue, behind a 15 us-per-call device: the pad (1.5 x 10 us = 50
    # us minimum) ran out long before the host was done
    timer.start()
    clock.now += 2_000_000
    WaitingEvent.wait_ns = 5_000
    timer.stop()
    assert timer.host_ns == 2_000_000  # the queue time: the host was the bottleneck
    assert (timer.host_bound, timer.samples) == (1, 2)
    # no pad: nothing is taken out, nothing is counted as host-bound
    bare = EventTimer(WaitingEvent, clock=clock)
    bare.start()
    clock.now += 2_000_000
    bare.stop()
    assert bare.host_ns == 2_005_000 and bare.host_bound == 0


def test_a_pad_that_failed_to_calibrate_is_not_taken_out_of_host_time() -> None:
    clock = Clock()
    WaitingEvent.clock = clock
    WaitingEvent.wait_ns = 300_000
    pad = SleepPad(lambda cycles: None, FakeTorchEvent)
    pad.rate = 0.0  # calibration failed: the pad queues nothing
    timer = EventTimer(WaitingEvent, pad=pad, clock=clock)
    timer.start()
    timer.stop()
    assert timer.host_ns == 300_000 and timer.host_bound == 0


@pytest.mark.parametrize(
    ("foreign", "host_bound", "spans", "expected"),
    [
        (0, 0, 200, []),
        (1, 1, 2673, []),  # rare: not reported
        (14, 0, 2269, []),
        (10, 0, 58, []),  # 1 in 6: not a quarter
        (60, 0, 200, ["other streams"]),
        (0, 120, 200, ["launch-bound"]),
        (1, 1, 2, []),  # once is never enough
        (2, 2, 4, ["other streams", "launch-bound"]),
    ],
)
def test_timer_messages_report_what_happened_in_a_quarter_of_the_spans(
    foreign: int, host_bound: int, spans: int, expected: list[str]
) -> None:
    timer = SimpleNamespace(foreign=foreign, host_bound=host_bound, samples=spans)
    messages = timer_messages(timer)
    assert len(messages) == len(expected)
    for message, word in zip(messages, expected, strict=True):
        assert word in message and f"of {spans} timed spans" in message
    assert timer_messages(SimpleNamespace()) == []  # a host timer has none of these


def test_the_sleep_pad_measures_its_rate_once() -> None:
    slept: list[int] = []

    def sleep(cycles: int) -> None:  # 2 GHz: 1e6 cycles take 0.5 ms
        slept.append(cycles)
        FakeTorchEvent.clock_ms[0] += cycles / 2e6

    pad = SleepPad(sleep, FakeTorchEvent)
    pad(1e-4)
    pad(2e-4)
    assert pad.rate == pytest.approx(2e9)
    assert slept == [SleepPad.CALIBRATION_CYCLES, 200_000, 400_000]


class FakeTensor:
    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes
        self.zeroed = 0

    def zero_(self) -> None:
        self.zeroed += 1


def fake_cuda_device(log: list[str]) -> type:
    class Device:  # torch.cuda.device: a context manager that makes GPU i current
        def __init__(self, device: Any) -> None:
            self.idx = device

        def __enter__(self) -> None:
            log.append(f"enter {self.idx}")

        def __exit__(self, *exc: object) -> None:
            log.append(f"exit {self.idx}")

    return Device


class FakeTorchStream:
    """torch.cuda.Stream: logs what waits for what (into the fake module's log)."""

    log: ClassVar[list[str]] = []

    def __init__(self, device: Any = None, name: str = "side") -> None:
        self.name = name

    def wait_stream(self, stream: FakeTorchStream) -> None:
        FakeTorchStream.log.append(f"{self.name} waits for {stream.name}")

    def __repr__(self) -> str:
        return self.name


class FakeCUDAGraph:
    """torch.cuda.CUDAGraph: replays log themselves."""

    def replay(self) -> None:
        FakeTorchStream.log.append("replay")


class FakeGraphCapture:
    """torch.cuda.graph(g, stream=s): logs the capture's start and end; an error inside ends
    the capture and propagates, as torch's does."""

    def __init__(self, cuda_graph: Any, pool: Any = None, stream: Any = None) -> None:
        assert isinstance(cuda_graph, FakeCUDAGraph)
        self.stream = stream

    def __enter__(self) -> None:
        FakeTorchStream.log.append(f"capture on {self.stream}")

    def __exit__(self, *exc: object) -> None:
        FakeTorchStream.log.append("capture end")


@contextlib.contextmanager
def fake_stream_context(stream: FakeTorchStream) -> Iterator[None]:
    """torch.cuda.stream(s): ``s`` current inside."""
    FakeTorchStream.log.append(f"on {stream}")
    yield
    FakeTorchStream.log.append(f"off {stream}")


def fake_torch_gpu(*, hip: str | None = None) -> SimpleNamespace:
    mem = {"allocated": 100, "peak": 100, "driver": 2**20, "total": 100, "count": 1}
    log: list[str] = []
    current = FakeTorchStream(name="current")
    props = SimpleNamespace(
        total_memory=80 * 2**30,
        multi_processor_count=132,
        major=9,
        minor=0,
        L2_cache_size=50 * 2**20,
        gcnArchName="gfx942",
    )

    def reset_peak(dev: Any) -> None:
        mem["peak"] = mem["allocated"]

    torch = SimpleNamespace(
        __version__="9.9.9",
        int8="int8",
        version=SimpleNamespace(cuda=None if hip else "12.8", hip=hip),
        device=lambda *a: a,
        empty=lambda n, dtype, device: FakeTensor(n),
        cuda=SimpleNamespace(
            is_available=lambda: True,
            device_count=lambda: 1,
            get_device_name=lambda i: "Fake GPU",
            get_device_properties=lambda i: props,
            Event=FakeTorchEvent,
            current_stream=lambda device=None: current,
            Stream=FakeTorchStream,
            stream=fake_stream_context,
            CUDAGraph=FakeCUDAGraph,
            graph=FakeGraphCapture,
            _sleep=lambda cycles: log.append(f"sleep {cycles}"),
            device=fake_cuda_device(log),
            synchronize=lambda dev=None: None,
            reset_peak_memory_stats=reset_peak,
            memory_allocated=lambda dev: mem["allocated"],
            max_memory_allocated=lambda dev: mem["peak"],
            memory_stats=lambda dev: {
                "allocated_bytes.all.allocated": mem["total"],
                "allocation.all.allocated": mem["count"],
            },
        ),
        backends=SimpleNamespace(mps=SimpleNamespace(is_available=lambda: False)),
        mps=SimpleNamespace(
            synchronize=lambda: log.append("mps sync"),
            empty_cache=lambda: log.append("mps empty"),
            driver_allocated_memory=lambda: mem["driver"],
        ),
        _mem=mem,
        _log=log,
    )
    return torch


def test_torch_cuda_clock_flush_memory_and_fingerprint() -> None:
    torch = fake_torch_gpu()
    gpu = torch_backend.probe(torch).devices[1]
    assert gpu.id == "torch-cuda0"
    timer = gpu.timer()
    assert timer is not None and timer.label == "CUDA events"
    flush = gpu.l2_flusher()
    assert flush is not None
    flush()
    flush()

    def call() -> None:  # allocates 1 MiB at its peak, frees half
        torch._mem["allocated"] += 2**20
        torch._mem["peak"] = max(torch._mem["peak"], torch._mem["allocated"])
        torch._mem["allocated"] -= 2**19

    assert gpu.peak_memory(call) == 2**20
    fp = gpu.fingerprint()
    assert (fp["memory_bytes"], fp["compute_units"], fp["capability"]) == (80 * 2**30, 132, "9.0")
    assert fp["runtime"] == "CUDA 12.8"


def test_torch_cuda_memory_per_call_from_the_caching_allocators_counters() -> None:
    torch = fake_torch_gpu()
    gpu = torch_backend.probe(torch).devices[1]
    mem = torch._mem
    made: list[str] = []

    def call() -> None:  # two blocks of 1 MiB, one freed before the other is made
        for _ in range(2):
            mem["allocated"] += 2**20
            mem["total"] += 2**20
            mem["count"] += 1
            mem["peak"] = max(mem["peak"], mem["allocated"])
            mem["allocated"] -= 2**20

    def make_call() -> tuple[Any, Any]:
        made.append("setup")
        return call, lambda: made.append("teardown")

    got = gpu.memory_per_call(make_call)
    assert not isinstance(got, str)
    calls, meter = got.calls, got.meter
    assert meter == torch_backend.CACHING_ALLOCATOR and got.sites == {}
    assert [(c.allocated, c.count, c.peak) for c in calls] == [(2**21, 2, 2**20)] * len(calls)
    assert made == ["setup", "teardown"] * len(calls)
    metal = torch_backend.TorchDevice(torch, "metal")
    assert "not tracked on torch-metal" in str(metal.memory_per_call(make_call))


def test_torch_flush_buffer_is_at_least_256_mib_and_twice_l2() -> None:
    torch = fake_torch_gpu()
    sizes: list[int] = []

    def empty(n: int, dtype: Any, device: Any) -> FakeTensor:
        sizes.append(n)
        return FakeTensor(n)

    torch.empty = empty
    torch_backend.probe(torch).devices[1].l2_flusher()
    torch.cuda.get_device_properties(0).L2_cache_size = 200 * 2**20
    torch_backend.probe(torch).devices[1].l2_flusher()
    assert sizes == [256 * 2**20, 400 * 2**20]


def test_torch_rocm_names_hip_and_the_gfx_arch() -> None:
    gpu = torch_backend.probe(fake_torch_gpu(hip="6.2")).devices[1]
    assert gpu.id == "torch-rocm0"
    assert gpu.timer().label == "HIP events"  # type: ignore[union-attr]
    fp = gpu.fingerprint()
    assert fp["capability"] == "gfx942" and fp["runtime"] == "HIP 6.2"


def test_cpu_and_metal_have_no_flush_and_cpu_has_no_device_clock() -> None:
    torch = fake_torch_gpu()
    cpu = torch_backend.probe(torch).devices[0]
    assert cpu.timer() is None and cpu.l2_flusher() is None


def test_metal_is_timed_on_the_host_clock() -> None:
    """MPS events are host callback times, and synchronize-then-elapsed_time on them can hang:
    Metal has no device timer; its memory figure says it is the driver's allocation."""
    torch = fake_torch_gpu()
    torch.backends.mps.is_available = lambda: True
    metal = next(d for d in torch_backend.probe(torch).devices if d.kind == "metal")
    assert metal.timer() is None
    assert "driver" in metal.memory_meter

    def call() -> None:  # the driver's allocation grows by 3 MiB
        torch._mem["driver"] += 3 * 2**20

    assert metal.peak_memory(call) == 3 * 2**20
    assert torch._log == ["mps sync", "mps empty", "mps sync"]
    metal.sync()
    assert torch._log[-1] == "mps sync"
    assert (
        metal.graph_capture() is None and metal.unsupported("f64") == "Metal (MPS) has no float64"
    )


def test_torch_cuda_timer_pads_with_sleep_and_runs_inside_its_device() -> None:
    torch = fake_torch_gpu()
    gpu = torch_backend.probe(torch).devices[1]
    timer = gpu.timer()
    assert timer is not None
    timer.start()
    timer.stop()
    assert [x for x in torch._log if x.startswith("sleep")][:1] == ["sleep 1000000"]
    with gpu.active():
        pass
    assert torch._log[-2:] == ["enter 0", "exit 0"]


def test_a_gpu_that_fails_to_open_hides_neither_the_cpu_nor_the_other_gpus() -> None:
    torch = fake_torch_gpu()
    torch.cuda.device_count = lambda: 2

    def name(i: int) -> str:
        if i == 0:
            raise RuntimeError("CUDA error: unknown error")
        return "Fake GPU"

    torch.cuda.get_device_name = name
    p = torch_backend.probe(torch)
    assert [d.id for d in p.devices] == ["torch-cpu", "torch-cuda1"]
    assert "torch-cuda0 was found but could not be opened" in p.broken["torch-cuda0"][1]
    torch.cuda.device_count = lambda: 1
    p = torch_backend.probe(torch)
    assert [d.id for d in p.devices] == ["torch-cpu"]
    assert "could not be opened: RuntimeError: CUDA error" in p.absent["cuda"]


def test_gpu_faults_are_told_from_ordinary_errors() -> None:
    fault = RuntimeError("CUDA error: an illegal memory access was encountered")
    assert (
        device_error(fault) == "RuntimeError: CUDA error: an illegal memory access was encountered"
    )
    assert device_error(RuntimeError("CUDA error: out of memory")) is None
    assert device_error(AssertionError("result differs from the reference")) is None
    assert device_error(type("CUDARuntimeError", (Exception,), {})("cudaErrorLaunchFailure"))


def test_the_fakes_offer_nothing_the_real_libraries_lack() -> None:
    real_torch = pytest.importorskip("torch")
    assert unfaithful(fake_torch_gpu(), real_torch, "torch") == []
    assert unfaithful(FakeTorchEvent, real_torch.cuda.Event, "torch.cuda.Event") == []
    real_cupy = pytest.importorskip("cupy")
    assert unfaithful(fake_cupy(count=1), real_cupy, "cupy") == []
    # the check bites: an elapsed_time method on cupy's fake event would be reported
    drifted = type("Drifted", (FakeCupyEvent,), {"elapsed_time": lambda self, end: 0.0})
    assert unfaithful(drifted, real_cupy.cuda.Event, "cupy.cuda.Event") == [
        "cupy.cuda.Event.elapsed_time"
    ]


class FakeCupyDevice:
    log: ClassVar[list[str]] = []

    def __init__(self, device: int | None = None) -> None:
        self.id = device

    def __enter__(self) -> FakeCupyDevice:
        FakeCupyDevice.log.append(f"enter {self.id}")
        return self

    def __exit__(self, *exc: object) -> None:
        FakeCupyDevice.log.append(f"exit {self.id}")

    def synchronize(self) -> None:
        FakeCupyDevice.log.append(f"sync {self.id}")


class FakeRawKernel:
    launches: ClassVar[list[tuple[Any, ...]]] = []

    def __init__(self, code: str, name: str) -> None:
        assert "clock64" in code and name == "burnperf_spin"

    def __call__(self, grid: Any, block: Any, args: Any) -> None:
        FakeRawKernel.launches.append((grid, block, args))
        FakeCupyEvent.clock_ms[0] += int(args[0]) / 1e6  # 1 GHz


def _memory_hook_base() -> type:
    """cupy's own MemoryHook where cupy is installed, so the hook is tested on the real base."""
    try:
        import cupy
    except ImportError:

        class MemoryHook:
            name = "fake"

            def __enter__(self) -> Any:
                return self

            def __exit__(self, *exc: object) -> None:
                return None

        return MemoryHook
    return cupy.cuda.MemoryHook  # type: ignore[no-any-return]


class FakeCupyGraph:
    """cupy.cuda.Graph: launches log themselves."""

    def __init__(self, calls: int) -> None:
        self.calls = calls

    def launch(self, stream: Any = None) -> None:
        FakeCupyStream.log.append(f"launch {self.calls}")


class FakeCupyStream:
    """cupy.cuda.Stream: events, waits, ``with`` and stream capture, logged."""

    log: ClassVar[list[str]] = []
    invalidate: ClassVar[bool] = False

    def __init__(self, null: bool = False, non_blocking: bool = False) -> None:
        self.name = "current" if null else "side"
        self.capturing = False
        self.mark = 0

    def record(self, event: Any = None) -> str:
        return f"event on {self.name}"

    def wait_event(self, event: str) -> None:
        FakeCupyStream.log.append(f"{self.name} waits for {event}")

    def __enter__(self) -> FakeCupyStream:
        FakeCupyStream.log.append(f"on {self.name}")
        return self

    def __exit__(self, *exc: object) -> None:
        FakeCupyStream.log.append(f"off {self.name}")

    def begin_capture(self, mode: Any = None) -> None:
        FakeCupyStream.log.append(f"capture on {self.name}")
        self.capturing = True
        self.mark = len(FakeCupyStream.log)

    def end_capture(self) -> FakeCupyGraph:
        self.capturing = False
        calls = FakeCupyStream.log[self.mark :].count("body")
        FakeCupyStream.log.append("capture end")
        if FakeCupyStream.invalidate:
            raise RuntimeError("cudaErrorStreamCaptureInvalidated: operation failed")
        return FakeCupyGraph(calls)


FAKE_CUPY_CURRENT = FakeCupyStream(null=True)


def fake_cupy(*, count: int | Exception, hip: bool = False) -> SimpleNamespace:
    def get_count() -> int:
        if isinstance(count, Exception):
            raise count
        return count

    runtime = SimpleNamespace(
        is_hip=hip,
        getDeviceCount=get_count,
        getDeviceProperties=lambda i: {
            "name": f"Fake GPU {i}".encode(),
            "totalGlobalMem": 80 * 2**30,
            "multiProcessorCount": 132,
            "major": 9,
            "minor": 0,
            "l2CacheSize": 50 * 2**20,
            "gcnArchName": b"gfx942",
        },
        driverGetVersion=lambda: 12080,
        runtimeGetVersion=lambda: 60_200_000 if hip else 12090,
    )
    return SimpleNamespace(
        __version__="14.0.0",
        cuda=SimpleNamespace(
            runtime=runtime,
            Device=FakeCupyDevice,
            Event=FakeCupyEvent,
            get_current_stream=lambda: FAKE_CUPY_CURRENT,
            Stream=FakeCupyStream,
            Graph=FakeCupyGraph,
            get_elapsed_time=cupy_elapsed,
            MemoryHook=_memory_hook_base(),
        ),
        RawKernel=FakeRawKernel,
        int64=int,
        int8="int8",
        empty=lambda n, dtype: FakeTensor(n),
    )


def test_cupy_without_a_driver_gives_the_runtime_error_text() -> None:
    err = RuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient")
    p = cupy_backend.probe(fake_cupy(count=err))
    assert p.devices == []
    assert p.absent["cuda"] == (
        "cupy 14.0.0 is installed, but found no CUDA device: cudaErrorInsufficientDriver: "
        "CUDA driver version is insufficient"
    )
    assert p.absent["rocm"] == "cupy 14.0.0 is built for CUDA, not ROCm"


def test_cupy_cuda_devices_ids_dtypes_and_fingerprint() -> None:
    p = cupy_backend.probe(fake_cupy(count=2))
    assert [d.id for d in p.devices] == ["cupy-cuda0", "cupy-cuda1"]
    gpu = p.devices[1]
    assert gpu.name == "Fake GPU 1"
    assert gpu.unsupported("bf16") == "cupy has no bfloat16 dtype"
    assert gpu.unsupported("f16") is None
    fp = gpu.fingerprint()
    assert (fp["capability"], fp["driver"], fp["runtime"]) == ("9.0", "12.8", "CUDA 12.9")
    assert gpu.timer().label == "CUDA events"  # type: ignore[union-attr]


def test_cupy_rocm_build() -> None:
    p = cupy_backend.probe(fake_cupy(count=1, hip=True))
    assert [d.id for d in p.devices] == ["cupy-rocm0"]
    assert p.absent["cuda"] == "cupy 14.0.0 is built for ROCm, not CUDA"
    fp = p.devices[0].fingerprint()
    assert fp["capability"] == "gfx942" and fp["runtime"] == "HIP 6.2.0"


def test_cupy_timer_reads_the_span_with_get_elapsed_time_behind_a_spin_pad() -> None:
    gpu = cupy_backend.probe(fake_cupy(count=1)).devices[0]
    timer = gpu.timer()
    FakeRawKernel.launches.clear()
    FakeCupyEvent.records.clear()
    timer.start()
    FakeCupyEvent.clock_ms[0] += 0.25
    assert timer.stop() == pytest.approx(0.25e-3)
    # the calibration spin (1e6 cycles) and the pad (50 us at the measured 1 GHz)
    assert [launch[2][0] for launch in FakeRawKernel.launches] == [1_000_000, 50_000]
    assert FakeCupyEvent.records[-2:] == [FAKE_CUPY_CURRENT] * 2


def test_cupy_times_meters_and_flushes_inside_its_device() -> None:
    gpu = cupy_backend.probe(fake_cupy(count=2)).devices[1]
    FakeCupyDevice.log.clear()
    with gpu.active():
        pass
    assert FakeCupyDevice.log == ["enter 1", "exit 1"]
    FakeCupyDevice.log.clear()

    def call() -> None:  # two blocks of 1 MiB live at once, one freed, then 512 KiB
        hook = gpu_hook[0]
        hook.malloc_postprocess(device_id=1, size=2**20, mem_size=2**20, mem_ptr=1, pmem_id=1)
        hook.malloc_postprocess(device_id=1, size=2**20, mem_size=2**20, mem_ptr=2, pmem_id=2)
        hook.free_postprocess(device_id=1, mem_size=2**20, mem_ptr=1, pmem_id=1)
        hook.malloc_postprocess(device_id=1, size=2**19, mem_size=2**19, mem_ptr=3, pmem_id=3)
        hook.free_postprocess(device_id=1, mem_size=2**20, mem_ptr=99, pmem_id=9)  # older block

    gpu_hook: list[Any] = []
    real = cupy_backend.peak_hook

    def keep(cp: Any) -> Any:
        gpu_hook.append(real(cp))
        return gpu_hook[0]

    cupy_backend.peak_hook = keep  # type: ignore[assignment]
    try:
        assert gpu.peak_memory(call) == 2 * 2**20  # the true high-water mark, reuse included
    finally:
        cupy_backend.peak_hook = real  # type: ignore[assignment]
    assert "enter 1" in FakeCupyDevice.log
    assert "memory hook" in gpu.fingerprint()["memory_meter"]


def test_cupy_memory_per_call_from_a_hook_on_its_pool() -> None:
    """Each tracked call gets its own hook: the blocks the pool handed out (reused or not),
    their bytes and the high-water mark above the call's start; a block allocated before the
    call and freed in it does not lower the figures."""
    gpu = cupy_backend.probe(fake_cupy(count=1)).devices[0]
    hooks: list[Any] = []
    real = cupy_backend.peak_hook

    def keep(cp: Any) -> Any:
        hooks.append(real(cp))
        return hooks[-1]

    def make_call() -> tuple[Any, Any]:
        def call() -> None:  # a 1 MiB temporary freed, then the 1 MiB result kept
            hook = hooks[-1]
            hook.malloc_postprocess(device_id=0, size=10**6, mem_size=2**20, mem_ptr=1, pmem_id=1)
            hook.malloc_postprocess(device_id=0, size=10**6, mem_size=2**20, mem_ptr=2, pmem_id=2)
            hook.free_postprocess(device_id=0, mem_size=2**20, mem_ptr=1, pmem_id=1)
            hook.free_postprocess(device_id=0, mem_size=2**20, mem_ptr=77, pmem_id=7)  # older

        ran.append("call")
        return call, lambda: ran.append("after")

    ran: list[str] = []
    cupy_backend.peak_hook = keep  # type: ignore[assignment]
    try:
        got = gpu.memory_per_call(make_call, calls=3)
    finally:
        cupy_backend.peak_hook = real  # type: ignore[assignment]
    assert not isinstance(got, str)
    assert got.calls == [Allocations(allocated=2 * 2**20, count=2, peak=2 * 2**20)] * 3
    assert got.meter == cupy_backend.POOL_METER and len(hooks) == 3
    assert ran == ["call", "after"] * 3


def test_the_flush_clears_the_infinity_cache_too() -> None:
    mib = 2**20
    assert flush_bytes(50 * mib) == 256 * mib  # H100: 50 MiB L2, triton's 256 MiB floor
    assert flush_bytes(200 * mib) == 400 * mib
    # MI300X: 4 MiB L2 + 256 MiB Infinity Cache; the runtime adds feature flags to the name
    assert flush_bytes(4 * mib, "gfx942:sramecc+:xnack-") == 2 * 260 * mib
    assert flush_bytes(4 * mib, "gfx90a") == 256 * mib  # MI200: no Infinity Cache
    torch = fake_torch_gpu(hip="6.2")
    torch.cuda.get_device_properties(0).L2_cache_size = 4 * mib
    sizes: list[int] = []
    torch.empty = lambda n, dtype, device: sizes.append(n)
    torch_backend.probe(torch).devices[1].l2_flusher()
    assert sizes == [2 * 260 * mib]


def test_cupy_when_installed_here_probes_without_crashing() -> None:
    pytest.importorskip("cupy")
    p = cupy_backend.probe()
    assert p.devices or p.absent["cuda"].startswith("cupy ")


def test_torchs_structured_trace_stays_out_of_pytests_captured_log(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """torch.compile logs each step to `torch.__trace` at DEBUG; pytest captures that logger too,
    so hundreds of empty lines filled a compiled benchmark's failure report."""
    import logging

    logger = logging.getLogger(torch_backend.TRACE_LOGGER)
    monkeypatch.setattr(logger, "filters", [])
    record = logging.LogRecord(torch_backend.TRACE_LOGGER, logging.DEBUG, "x.py", 1, "", (), None)
    monkeypatch.setenv("TORCH_TRACE", "/somewhere")
    torch_backend.quiet_structured_trace()
    assert logger.filter(record)  # the user asked for the trace: records pass
    monkeypatch.delenv("TORCH_TRACE")
    torch_backend.quiet_structured_trace()
    torch_backend.quiet_structured_trace()  # idempotent
    assert not logger.filter(record) and len(logger.filters) == 1


def test_torch_captures_a_graph_on_a_side_stream_warmed_up_there() -> None:
    """torch.cuda.graph on a side stream that waited for the current one, after the calls ran
    once there (lazy per-stream setup such as cuBLAS workspaces is illegal inside a capture);
    the current stream waits for the warm-up; the graph replays where the timer's events are."""
    gpu = torch_backend.probe(fake_torch_gpu()).devices[1]
    assert gpu.graph_unsupported() is None and graph_unsupported(gpu) is None
    capture = gpu.graph_capture()
    assert capture is not None
    FakeTorchStream.log.clear()
    replay = capture(lambda: FakeTorchStream.log.append("body"))
    assert FakeTorchStream.log == [
        "side waits for current",
        "on side",
        "body",
        "off side",
        "current waits for side",
        "capture on side",
        "body",
        "capture end",
    ]
    replay()
    assert FakeTorchStream.log[-1] == "replay"


def test_a_torch_capture_failure_says_what_to_do_and_is_not_a_device_fault() -> None:
    gpu = torch_backend.probe(fake_torch_gpu()).devices[1]
    capture = gpu.graph_capture()
    assert capture is not None
    state = {"capturing": False}

    def body() -> None:  # .item() inside: fine eagerly, illegal while capturing
        if state["capturing"]:
            raise RuntimeError("CUDA error: operation not permitted when stream is capturing")
        state["capturing"] = True

    with pytest.raises(GraphCaptureError) as caught:
        capture(body)
    text = str(caught.value)
    assert "could not be captured into a CUDA graph (RuntimeError: CUDA error: operation" in text
    assert ".item()" in text and "timer='device'" in text
    assert FakeTorchStream.log[-1] == "capture end"  # the capture was ended
    assert device_error(caught.value) is None  # the GPU stays usable: not a sticky fault


def test_devices_without_graphs_say_why() -> None:
    torch = fake_torch_gpu()
    found = torch_backend.probe(torch).devices
    cpu = found[0]
    assert cpu.graph_capture() is None
    assert cpu.graph_unsupported() == (
        "torch-cpu has no device graphs (timer='graph' captures CUDA graphs: torch on CUDA or "
        "ROCm, cupy on CUDA)"
    )
    del torch.cuda.CUDAGraph  # an old or unusual torch build
    gpu = torch_backend.probe(torch).devices[1]
    assert gpu.graph_capture() is None
    assert "torch 9.9.9 has no torch.cuda.CUDAGraph" in str(gpu.graph_unsupported())
    hip = torch_backend.probe(fake_torch_gpu(hip="6.2")).devices[1]
    assert hip.graph_unsupported() is None  # torch's HIP builds capture HIP graphs
    assert cupy_backend.probe(fake_cupy(count=1, hip=True)).devices[0].graph_capture() is None
    assert "not supported on HIP" in str(
        cupy_backend.probe(fake_cupy(count=1, hip=True)).devices[0].graph_unsupported()
    )
    own = SimpleNamespace(id="mylib-gpu0")  # a project's own device without the method
    assert "mylib-gpu0 has no device graphs" in str(graph_unsupported(own))
    cupy = pytest.importorskip("cupy")  # the reason stands on cupy's own documentation
    assert "not supported on HIP" in str(cupy.cuda.Stream.begin_capture.__doc__)


def test_cupy_captures_a_graph_on_a_side_stream_warmed_up_there() -> None:
    gpu = cupy_backend.probe(fake_cupy(count=1)).devices[0]
    capture = gpu.graph_capture()
    assert capture is not None
    FakeCupyStream.log.clear()
    replay = capture(lambda: FakeCupyStream.log.append("body"))
    assert FakeCupyStream.log == [
        "side waits for event on current",
        "on side",
        "body",
        "off side",
        "current waits for event on side",
        "on side",
        "capture on side",
        "body",
        "capture end",
        "off side",
    ]
    replay()
    assert FakeCupyStream.log[-1] == "launch 1"


def test_a_cupy_capture_that_fails_is_ended_and_reported() -> None:
    gpu = cupy_backend.probe(fake_cupy(count=1)).devices[0]
    capture = gpu.graph_capture()
    assert capture is not None
    state = {"calls": 0}

    def body() -> None:
        state["calls"] += 1
        if state["calls"] == 2:  # inside the capture
            raise RuntimeError("cudaErrorStreamCaptureUnsupported: operation not permitted")

    FakeCupyStream.log.clear()
    with pytest.raises(GraphCaptureError, match=r"captured into a CUDA graph \(RuntimeError"):
        capture(body)
    assert "capture end" in FakeCupyStream.log  # the stream left capture mode
    FakeCupyStream.invalidate = True  # a sync inside: the capture is invalidated at its end
    try:
        with pytest.raises(GraphCaptureError, match="StreamCaptureInvalidated"):
            capture(lambda: None)
    finally:
        FakeCupyStream.invalidate = False
