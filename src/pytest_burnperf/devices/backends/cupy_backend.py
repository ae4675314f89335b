"""cupy on CUDA and ROCm (cupy built for HIP reports ``cupy.cuda.runtime.is_hip``).

Device clock: ``cupy.cuda.Event`` pairs on the current stream, read with
``cupy.cuda.get_elapsed_time``, behind a spin-kernel pad (``event_timer.EventTimer``). Everything a
benchmark's sample does runs inside ``with cupy.cuda.Device(i)`` (``active``). Peak memory: a
memory hook on the pool's mallocs and frees (the true high-water mark of what the pool handed
out; allocations outside cupy's pool are not seen).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING

from pytest_burnperf.core.clocks import GraphCaptureError
from pytest_burnperf.core.judging.precision import cupy_modes
from pytest_burnperf.core.memory.allocations import Allocations
from pytest_burnperf.core.memory.call_figures import MemoryCalls
from pytest_burnperf.core.timing import Capture
from pytest_burnperf.devices.base import (
    GRAPH_DEVICES,
    NUMPY_DTYPE_NAMES,
    DeviceBase,
    MakeCall,
    Probe,
    capture_failure,
    fill_random,
    identity,
    nvml_fields,
)
from pytest_burnperf.devices.event_timer import EventTimer, SleepPad
from pytest_burnperf.devices.l2_flush import flush_bytes
from pytest_burnperf.host.nvml import Watch, pci_address, slowdown

if TYPE_CHECKING:  # cupy ships no type information: these name its types for the reader
    import cupy as cp
    import numpy as np
    import numpy.typing as npt

#: The pad before a start event: one thread spinning on the GPU clock.
SPIN_SOURCE = r"""
extern "C" __global__ void burnperf_spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
}
"""


#: The meter of cupy's memory per call, as the memory key names it.
POOL_METER = "cupy memory pool (memory hook)"


def peak_hook(cupy: ModuleType) -> cp.cuda.MemoryHook:
    """A ``cupy.cuda.MemoryHook`` that follows the bytes in use from the pool (every
    ``malloc``/``free`` of a pool block, whether the pool reused it or allocated it) and keeps
    their high-water mark above the level at entry, as ``peak``; ``allocated`` and ``count``
    sum the blocks handed out (the pool's rounded sizes) and their number."""

    class PeakHook(cupy.cuda.MemoryHook):  # type: ignore[name-defined,misc]  # cupy: no types
        name = "burnperf_peak"

        def __init__(self) -> None:
            super().__init__()
            self.live: dict[int, int] = {}
            self.used = 0
            self.peak = 0
            self.allocated = 0
            self.count = 0

        def malloc_postprocess(self, **kw: object) -> None:
            size = _whole(kw.get("mem_size") or kw.get("size"))
            self.live[_whole(kw.get("mem_ptr"))] = size
            self.used += size
            self.peak = max(self.peak, self.used)
            self.allocated += size
            self.count += 1

        def free_postprocess(self, **kw: object) -> None:
            self.used -= self.live.pop(_whole(kw.get("mem_ptr")), 0)

    return PeakHook()


def _whole(value: object) -> int:
    """A size or pointer cupy's memory hooks pass (an int), 0 where it passed none."""
    return int(value) if isinstance(value, int) else 0


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _version(code: int) -> str:
    """CUDA encodes 12.9 as 12090; HIP as major*10_000_000 + minor*100_000 + patch."""
    if code >= 10_000_000:
        return f"{code // 10_000_000}.{code // 100_000 % 100}.{code % 100_000}"
    return f"{code // 1000}.{code % 1000 // 10}"


class CupyDevice(DeviceBase):
    library = "cupy"
    compat = "cupy"

    def __init__(self, cupy: ModuleType, kind: str, index: int) -> None:
        self._cp = cupy
        self.kind = kind
        self.index = index
        self.id = f"cupy-{kind}{index}"
        self._props = cupy.cuda.runtime.getDeviceProperties(index)
        self.name = _text(self._props["name"])
        self._dev = cupy.cuda.Device(index)
        self._rng: cp.random.Generator | None = None
        self._spin_kernel: cp.RawKernel | None = None

    @property
    def lib(self) -> ModuleType:
        return self._cp

    def unsupported(self, dtype: str) -> str | None:
        if dtype == "bf16":
            return "cupy has no bfloat16 dtype"
        return None if dtype in NUMPY_DTYPE_NAMES else f"cupy has no dtype {dtype!r}"

    def dtype(self, name: str) -> type[np.generic]:
        reason = self.unsupported(name)
        if reason:
            raise ValueError(f"{self.id}: {reason}")
        scalar: type[np.generic] = getattr(self._cp, NUMPY_DTYPE_NAMES[name])
        return scalar

    def reseed(self, seed: int) -> None:
        with self._dev:
            self._rng = self._cp.random.default_rng(seed)

    def random(self, shape: Sequence[int], dtype: str = "f32") -> cp.ndarray:
        if self._rng is None:
            self.reseed(0)
        with self._dev:
            return fill_random(self._rng, shape, dtype, self.dtype(dtype), self._cp.float32)

    def zeros(self, shape: Sequence[int], dtype: str = "f32") -> cp.ndarray:
        with self._dev:
            return self._cp.zeros(tuple(shape), dtype=self.dtype(dtype))

    def asarray(self, obj: object, dtype: str | None = None) -> cp.ndarray:
        with self._dev:
            return self._cp.asarray(obj, dtype=None if dtype is None else self.dtype(dtype))

    def to_host(self, x: cp.ndarray) -> npt.NDArray[np.generic]:
        host: npt.NDArray[np.generic] = self._cp.asnumpy(x)
        return host

    def sync(self) -> None:
        self._dev.synchronize()

    def timer(self) -> EventTimer:
        """``cupy.cuda.Event`` pairs on the stream current when each sample starts, read with
        ``cupy.cuda.get_elapsed_time`` (cupy's events have no ``elapsed_time`` method), behind a
        spin-kernel pad so the launch latency stays out of the span (``event_timer.EventTimer``)."""
        cp = self._cp
        label = "HIP events" if self.kind == "rocm" else "CUDA events"
        return EventTimer(
            cp.cuda.Event,
            cp.cuda.get_current_stream,
            label=label,
            elapsed=cp.cuda.get_elapsed_time,
            pad=SleepPad(self._spin, cp.cuda.Event, cp.cuda.get_elapsed_time),
            device_sync=self.sync,
        )

    def graph_unsupported(self) -> str | None:
        if self.kind == "rocm":
            return f"{self.id}: cupy's stream capture is not supported on HIP ({GRAPH_DEVICES})"
        if not hasattr(self._cp.cuda.Stream, "begin_capture"):
            return f"cupy {self._cp.__version__} has no stream capture ({GRAPH_DEVICES})"
        return None

    def graph_capture(self) -> Capture | None:
        """CUDA graphs through cupy's stream capture: the calls run once on a side stream,
        then are captured there (``Stream.begin_capture`` / ``end_capture``); the graph
        launches on the stream current at each sample, where the timer's events are."""
        if self.graph_unsupported() is not None:
            return None
        cp = self._cp

        def capture(body: Callable[[], None]) -> Callable[[], object]:
            current = cp.cuda.get_current_stream()
            side = cp.cuda.Stream(non_blocking=True)
            side.wait_event(current.record())
            with side:
                body()
            current.wait_event(side.record())
            with side:
                side.begin_capture()
                try:
                    body()
                except Exception as exc:  # end the capture, then say what could not be held
                    # already invalidated by what failed: then there is nothing to end
                    with contextlib.suppress(Exception):
                        side.end_capture()
                    raise GraphCaptureError(capture_failure(exc)) from exc
                try:
                    graph = side.end_capture()
                except Exception as exc:  # the capture was invalidated (a sync inside it)
                    raise GraphCaptureError(capture_failure(exc)) from exc
            return graph.launch  # type: ignore[no-any-return]

        return capture

    def _spin(self, cycles: int) -> None:
        """Queue a one-thread kernel that spins for ``cycles`` GPU clock cycles (compiled once
        with NVRTC/hipRTC on first use)."""
        if self._spin_kernel is None:
            self._spin_kernel = self._cp.RawKernel(SPIN_SOURCE, "burnperf_spin")
        self._spin_kernel((1,), (1,), (self._cp.int64(cycles),))

    def active(self) -> cp.cuda.Device:
        """``with cupy.cuda.Device(i)``: everything timed, metered, flushed or calibrated runs
        on this GPU, its current stream and its memory pool (cupy-cuda1 no longer times GPU 0's
        work)."""
        return self._dev

    def l2_flusher(self) -> Callable[[], None]:
        props = self._props
        size = flush_bytes(
            int(props.get("l2CacheSize", 0) or 0), _text(props.get("gcnArchName", ""))
        )
        with self._dev:
            buf = self._cp.empty(size, dtype=self._cp.int8)

        def flush() -> None:
            buf.fill(0)

        return flush

    #: What :meth:`peak_memory` measures (the results carry it as ``peak_memory_how``).
    memory_meter = (
        "high-water mark of cupy's memory pool during the call (memory hook; allocations "
        "outside the pool, such as cuBLAS workspaces, are not seen)"
    )

    def peak_memory(self, call: Callable[[], object]) -> int | None:
        """The true high-water mark of the bytes cupy's pool handed out during ``call``, split
        and reused blocks included, from a memory hook on every pool malloc and free."""
        hook = peak_hook(self._cp)
        self.sync()
        with self._dev, hook:
            call()
            self.sync()
        return int(hook.peak)

    def memory_per_call(self, make_call: MakeCall, calls: int = 3) -> MemoryCalls | str:
        """Each call's blocks from cupy's pool, from one memory hook per call: bytes and blocks
        handed out (the pool's rounded sizes, reused blocks included) and the high-water mark
        above the call's start. Allocations outside the pool (cuBLAS and cuFFT workspaces,
        another library's allocator) are not seen."""
        __tracebackhide__ = True
        out = []
        for _ in range(calls):
            call, after = make_call()
            hook = peak_hook(self._cp)
            self.sync()
            with self._dev, hook:
                call()
                self.sync()
            out.append(Allocations(allocated=hook.allocated, count=hook.count, peak=hook.peak))
            if after is not None:
                after()
        return MemoryCalls(out, POOL_METER, {})

    def fingerprint(self) -> dict[str, object]:
        cp, p = self._cp, self._props
        rt = cp.cuda.runtime
        hip = bool(getattr(rt, "is_hip", False))
        if hip:
            capability = _text(p.get("gcnArchName", f"{p.get('major')}.{p.get('minor')}"))
        else:
            capability = f"{p.get('major')}.{p.get('minor')}"
        return {
            "id": self.id,
            "kind": self.kind,
            "library": self.library,
            "name": self.name,
            "memory_bytes": int(p.get("totalGlobalMem", 0)),
            "compute_units": int(p.get("multiProcessorCount", 0)),
            "capability": capability,
            "driver": _version(int(rt.driverGetVersion())),
            "runtime": f"{'HIP' if hip else 'CUDA'} {_version(int(rt.runtimeGetVersion()))}",
            "versions": {"cupy": str(cp.__version__)},
            "precision": self.precision(),
            "memory_meter": self.memory_meter,
            **identity(host_cpu=False),
            **({} if hip else nvml_fields(self.pci())),
        }

    def precision(self) -> dict[str, object]:

        return cupy_modes()

    def pci(self) -> str | None:
        """PCI address of the GPU (NVML finds it by that), or None."""

        p = self._props
        try:
            return pci_address(int(p["pciDomainID"]), int(p["pciBusID"]), int(p["pciDeviceID"]))
        except (KeyError, TypeError, ValueError):
            return None

    def gpu_watch(self) -> Watch | None:
        return None if self.kind == "rocm" else Watch(self.pci())

    def gpu_slowdown(self) -> str | None:

        return None if self.kind == "rocm" else slowdown(self.pci())


def probe(cupy: ModuleType | None = None) -> Probe:
    """Find cupy's GPUs. ``cupy`` may be passed in (tests use a fake module)."""
    result = Probe("cupy")
    if cupy is None:
        try:
            import cupy as _cupy
        except ModuleNotFoundError:
            reason = (
                "cupy not installed (pip install pytest-burnperf[cupy-cuda12] or [cupy-cuda13], "
                "for the CUDA major version of the driver)"
            )
            return Probe("cupy", absent={"cuda": reason, "rocm": reason})
        except Exception as exc:  # a broken install, e.g. a CUDA library missing: say what it said
            reason = f"cupy failed to import: {exc}"
            return Probe("cupy", absent={"cuda": reason, "rocm": reason})
        cupy = _cupy
    version = str(cupy.__version__)
    hip = bool(getattr(cupy.cuda.runtime, "is_hip", False))
    kind, other = ("rocm", "cuda") if hip else ("cuda", "rocm")
    label, other_label = ("ROCm", "CUDA") if hip else ("CUDA", "ROCm")
    result.absent[other] = f"cupy {version} is built for {label}, not {other_label}"
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as exc:  # no driver, no device: the runtime's own words
        result.absent[kind] = f"cupy {version} is installed, but found no {label} device: {exc}"
        return result
    if count == 0:
        result.absent[kind] = f"cupy {version} is installed, but found no {label} device"
    for i in range(count):
        result.open(kind, f"cupy-{kind}{i}", functools.partial(CupyDevice, cupy, kind, i))
    return result
