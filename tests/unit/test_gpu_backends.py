"""CUDA, ROCm and Metal code paths with fake torch and cupy modules (no GPU needed).

Where the lent GPU is available these paths also run for real (see the issue notes); here the
fakes check detection, ids, skip reasons, dtype rules, the device clocks, the L2 flush and the
memory meters.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, ClassVar

import pytest

from pytest_burnperf.devices import cupy_backend, torch_backend
from pytest_burnperf.devices.base import EventTimer


class FakeEvent:
    """A timing event whose 'device time' is read from a shared counter, in milliseconds."""

    clock_ms: ClassVar[list[float]] = [0.0]
    records: ClassVar[list[Any]] = []

    def __init__(self, enable_timing: bool = True) -> None:
        assert enable_timing
        self.t = 0.0
        self.synced = False

    def record(self, stream: Any = None) -> None:
        FakeEvent.records.append(stream)
        self.t = FakeEvent.clock_ms[0]

    def synchronize(self) -> None:
        self.synced = True

    def elapsed_time(self, end: FakeEvent) -> float:
        assert end.synced, "elapsed time read before the end event completed"
        return end.t - self.t


def test_event_timer_records_on_the_stream_and_converts_ms() -> None:
    FakeEvent.records.clear()
    timer = EventTimer(FakeEvent, stream="stream-1", label="CUDA events")
    timer.start()
    FakeEvent.clock_ms[0] += 2.5
    assert timer.stop() == pytest.approx(2.5e-3)
    assert FakeEvent.records == ["stream-1", "stream-1"] and timer.name == "device"


class FakeTensor:
    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes
        self.zeroed = 0

    def zero_(self) -> None:
        self.zeroed += 1


def fake_torch_gpu(*, hip: str | None = None) -> SimpleNamespace:
    mem = {"allocated": 100, "peak": 100}
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
            Event=FakeEvent,
            current_stream=lambda dev: ("stream", dev),
            synchronize=lambda dev=None: None,
            reset_peak_memory_stats=reset_peak,
            memory_allocated=lambda dev: mem["allocated"],
            max_memory_allocated=lambda dev: mem["peak"],
        ),
        backends=SimpleNamespace(mps=SimpleNamespace(is_available=lambda: False)),
        _mem=mem,
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


class FakeCupyDevice:
    def __init__(self, index: int) -> None:
        self.id = index

    def __enter__(self) -> FakeCupyDevice:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def synchronize(self) -> None:
        return None


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
            Event=FakeEvent,
            get_current_stream=lambda: "cupy-stream",
        ),
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
