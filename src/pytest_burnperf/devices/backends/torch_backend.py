"""torch on the CPU, CUDA, ROCm (HIP builds) and Metal (MPS).

Device clock: CUDA/HIP events (``torch.cuda.Event``) on the stream current when a sample starts,
queued behind a ``torch.cuda._sleep`` pad so the launch latency stays out of the span
(``event_timer.EventTimer``); Metal is timed on the host clock around ``torch.mps.synchronize`` (MPS
events are host callback times). The host clock brackets the work with ``torch.cuda.synchronize``
/ ``torch.mps.synchronize``. The L2 flush (CUDA/HIP) zeroes a buffer of
at least twice the L2 size, plus the Infinity Cache on the AMD GPUs that have one (256 MiB at
least, as triton's ``do_bench`` does; ``l2_flush.flush_bytes``). Peak memory comes
from the caching allocator's statistics on CUDA/HIP, from the growth of the MPS driver allocation
after emptying the cache on Metal, and from the resident-set high-water mark on the CPU.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Callable, Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING

from pytest_burnperf.core.clocks import GraphCaptureError
from pytest_burnperf.core.judging.precision import torch_modes
from pytest_burnperf.core.memory.allocations import Allocations
from pytest_burnperf.core.memory.call_figures import MemoryCalls
from pytest_burnperf.core.timing import Capture
from pytest_burnperf.devices.base import (
    GRAPH_DEVICES,
    DeviceBase,
    MakeCall,
    Probe,
    capture_failure,
    identity,
    nvml_fields,
)
from pytest_burnperf.devices.event_timer import EventTimer, SleepPad
from pytest_burnperf.devices.l2_flush import flush_bytes
from pytest_burnperf.devices.memory_meters import (
    allocator_unavailable,
    host_calls,
    host_meter,
    host_peak,
    rss_peak,
)
from pytest_burnperf.devices.thread_limits import cpu_threads
from pytest_burnperf.host.hardware import cpu_count, cpu_model, memory_bytes
from pytest_burnperf.host.nvml import Watch, pci_address, slowdown

if TYPE_CHECKING:  # torch is typed; imported at run time only when a device is probed
    import numpy as np
    import numpy.typing as npt
    import torch as t

_NATIVE = {
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "i32": "int32",
    "i64": "int64",
}


#: torch's caching allocator's counters (torch.cuda.memory_stats): bytes and blocks allocated
#: since the process started, every pool, as the allocator rounds them.
_ALLOCATED_BYTES = "allocated_bytes.all.allocated"
_ALLOCATIONS = "allocation.all.allocated"
#: The meter's name in a memory key.
CACHING_ALLOCATOR = "torch caching allocator (torch.cuda.memory_stats)"


class TorchDevice(DeviceBase):
    library = "torch"
    compat = "torch"

    def __init__(self, torch: ModuleType, kind: str, index: int | None = None) -> None:
        self._torch = torch
        self.kind = kind
        self.index = index
        if kind == "cpu":
            self._dev = torch.device("cpu")
            self.id = "torch-cpu"
            self.name = cpu_model()
        elif kind == "metal":
            self._dev = torch.device("mps")
            self.id = "torch-metal"
            self.name = "Apple GPU (MPS)"
        else:  # cuda or rocm: torch calls both "cuda"
            self._dev = torch.device("cuda", index or 0)
            self.id = f"torch-{kind}{index or 0}"
            self.name = str(torch.cuda.get_device_name(index or 0))
        self._gen: t.Generator | None = None

    @property
    def lib(self) -> ModuleType:
        return self._torch

    @property
    def torch_device(self) -> t.device:
        dev: t.device = self._dev
        return dev

    def unsupported(self, dtype: str) -> str | None:
        if dtype not in _NATIVE:
            return f"torch has no dtype {dtype!r}"
        if self.kind == "metal" and dtype == "f64":
            return "Metal (MPS) has no float64"
        return None

    def dtype(self, name: str) -> t.dtype:
        reason = self.unsupported(name)
        if reason:
            raise ValueError(f"{self.id}: {reason}")
        dt: t.dtype = getattr(self._torch, _NATIVE[name])
        return dt

    def reseed(self, seed: int) -> None:
        self._gen = self._torch.Generator(device=self._dev)
        self._gen.manual_seed(seed)

    def random(self, shape: Sequence[int], dtype: str = "f32") -> t.Tensor:
        if self._gen is None:
            self.reseed(0)
        dt = self.dtype(dtype)
        out: t.Tensor
        if dtype.startswith("i"):
            out = self._torch.randint(
                0, 100, tuple(shape), generator=self._gen, dtype=dt, device=self._dev
            )
        else:
            out = self._torch.randn(tuple(shape), generator=self._gen, dtype=dt, device=self._dev)
        return out

    def zeros(self, shape: Sequence[int], dtype: str = "f32") -> t.Tensor:
        out: t.Tensor = self._torch.zeros(tuple(shape), dtype=self.dtype(dtype), device=self._dev)
        return out

    def asarray(self, obj: object, dtype: str | None = None) -> t.Tensor:
        out: t.Tensor = self._torch.asarray(
            obj, dtype=None if dtype is None else self.dtype(dtype), device=self._dev
        )
        return out

    def to_host(self, x: t.Tensor) -> npt.NDArray[np.generic]:
        t = x.detach().to("cpu")
        if t.dtype == self._torch.bfloat16:
            t = t.to(self._torch.float32)
        return t.numpy()

    def sync(self) -> None:
        if self.kind in ("cuda", "rocm"):
            self._torch.cuda.synchronize(self._dev)
        elif self.kind == "metal":
            self._torch.mps.synchronize()

    @contextlib.contextmanager
    def threads(self, n: int) -> Iterator[None]:
        if self.kind != "cpu":
            yield
            return
        with cpu_threads(n, self._torch):
            yield

    def timer(self) -> EventTimer | None:
        """CUDA/HIP events on the stream current when each sample starts, behind a
        ``torch.cuda._sleep`` pad (no launch idle in the span). Metal has no device clock here:
        MPS events are stamped by host-side callbacks, and waiting on an MPS end event then
        reading ``elapsed_time`` can hang or fail for short spans (a known torch issue), so
        Metal is timed on the host clock around ``torch.mps.synchronize()``."""
        torch = self._torch
        if self.kind not in ("cuda", "rocm"):
            return None
        dev = self._dev

        def make() -> t.cuda.Event:
            event: t.cuda.Event = torch.cuda.Event(enable_timing=True)
            return event

        sleep = getattr(torch.cuda, "_sleep", None)
        return EventTimer(
            make,
            lambda: torch.cuda.current_stream(dev),
            label="HIP events" if self.kind == "rocm" else "CUDA events",
            pad=None if sleep is None else SleepPad(sleep, make),
            device_sync=self.sync,
        )

    def graph_unsupported(self) -> str | None:
        if self.kind not in ("cuda", "rocm"):
            return f"{self.id} has no device graphs ({GRAPH_DEVICES})"
        if not hasattr(self._torch.cuda, "CUDAGraph"):
            return f"torch {self._torch.__version__} has no torch.cuda.CUDAGraph ({GRAPH_DEVICES})"
        return None

    def graph_capture(self) -> Capture | None:
        """CUDA (HIP) graphs through ``torch.cuda.CUDAGraph``: the calls run once on a side
        stream (what they set up lazily per stream, such as cuBLAS workspaces, is set up
        there, not during the capture), then are captured on that stream; the graph replays on
        the stream current at each sample, where the timer's events are."""
        if self.graph_unsupported() is not None:
            return None
        torch, dev = self._torch, self._dev
        graph_name = "HIP graph" if self.kind == "rocm" else "CUDA graph"

        def capture(body: Callable[[], None]) -> Callable[[], object]:
            current = torch.cuda.current_stream(dev)
            side = torch.cuda.Stream(dev)
            side.wait_stream(current)
            with torch.cuda.stream(side):
                body()
            current.wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            try:
                with torch.cuda.graph(graph, stream=side):
                    body()
            except Exception as exc:  # what the calls did that a graph cannot hold
                raise GraphCaptureError(capture_failure(exc, graph_name)) from exc
            return graph.replay  # type: ignore[no-any-return]

        return capture

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """This GPU current (``torch.cuda.device``) for everything timed, metered or flushed."""
        if self.kind in ("cuda", "rocm"):
            with self._torch.cuda.device(self.index or 0):
                yield
        else:
            yield

    def l2_flusher(self) -> Callable[[], None] | None:
        if self.kind not in ("cuda", "rocm"):
            return None
        torch = self._torch
        props = torch.cuda.get_device_properties(self.index or 0)
        size = flush_bytes(
            int(getattr(props, "L2_cache_size", 0) or 0),
            str(getattr(props, "gcnArchName", "") or "") if self.kind == "rocm" else "",
        )
        buf = torch.empty(size, dtype=torch.int8, device=self._dev)

        def flush() -> None:
            buf.zero_()

        return flush

    @property
    def memory_meter(self) -> str:  # type: ignore[override]
        if self.kind in ("cuda", "rocm"):
            return (
                "peak of torch's caching allocator during the call above its level at entry "
                "(torch.cuda.max_memory_allocated)"
            )
        if self.kind == "metal":
            return (
                "growth of the Metal driver's allocation during the call, after emptying the "
                "cache (torch.mps.driver_allocated_memory): what the driver holds, not the "
                "tensors' peak"
            )
        return host_meter("growth of the process's resident-set high-water mark during the call")

    def peak_memory(self, call: Callable[[], object]) -> int | None:
        torch = self._torch
        if self.kind in ("cuda", "rocm"):
            self.sync()
            torch.cuda.reset_peak_memory_stats(self._dev)
            before = int(torch.cuda.memory_allocated(self._dev))
            call()
            self.sync()
            return max(0, int(torch.cuda.max_memory_allocated(self._dev)) - before)
        if self.kind == "metal":
            self.sync()
            torch.mps.empty_cache()
            before = int(torch.mps.driver_allocated_memory())
            call()
            self.sync()
            return max(0, int(torch.mps.driver_allocated_memory()) - before)
        return host_peak(call, rss_peak)

    def peak_is_tracked(self) -> bool:
        return self.kind == "cpu" and allocator_unavailable() is None

    def memory_per_call(self, make_call: MakeCall, calls: int = 3) -> MemoryCalls | str:
        __tracebackhide__ = True
        if self.kind == "cpu":
            return host_calls(make_call, calls)
        if self.kind not in ("cuda", "rocm"):
            return (
                f"memory per call is not tracked on {self.id} (Metal's driver tells what it "
                "holds, not what a call allocated)"
            )
        cuda, dev = self._torch.cuda, self._dev
        out = []
        for _ in range(calls):
            call, after = make_call()
            self.sync()
            before = cuda.memory_stats(dev)
            held = int(cuda.memory_allocated(dev))
            cuda.reset_peak_memory_stats(dev)
            call()
            self.sync()
            now = cuda.memory_stats(dev)
            out.append(
                Allocations(
                    allocated=int(now.get(_ALLOCATED_BYTES, 0))
                    - int(before.get(_ALLOCATED_BYTES, 0)),
                    count=int(now.get(_ALLOCATIONS, 0)) - int(before.get(_ALLOCATIONS, 0)),
                    peak=max(0, int(cuda.max_memory_allocated(dev)) - held),
                )
            )
            if after is not None:
                after()
        return MemoryCalls(out, CACHING_ALLOCATOR, {})

    def precision(self) -> dict[str, object]:

        return torch_modes(self._torch, self.kind)

    def pci(self) -> str | None:
        """PCI address of a CUDA GPU (NVML finds it by that), or None."""
        if self.kind != "cuda":
            return None

        props = self._torch.cuda.get_device_properties(self.index or 0)
        try:
            return pci_address(
                int(getattr(props, "pci_domain_id", 0)),
                int(props.pci_bus_id),
                int(props.pci_device_id),
            )
        except (AttributeError, TypeError, ValueError):  # an older torch without PCI ids
            return None

    def gpu_watch(self) -> Watch | None:
        return Watch(self.pci()) if self.kind == "cuda" else None

    def gpu_slowdown(self) -> str | None:

        return slowdown(self.pci()) if self.kind == "cuda" else None

    def fingerprint(self) -> dict[str, object]:
        torch = self._torch
        fp: dict[str, object] = {
            "id": self.id,
            "kind": self.kind,
            "library": self.library,
            "name": self.name,
            "versions": {"torch": str(torch.__version__)},
        }
        if self.kind == "cpu":
            fp["cpus"] = cpu_count()
            fp["threads"] = int(torch.get_num_threads())
            fp["host_memory_bytes"] = memory_bytes()
            fp["blas"] = _torch_blas(torch)
            fp.update(identity(host_cpu=True, dispatch={"torch": _torch_capability(torch)}))
        else:
            fp.update(identity(host_cpu=False))
        fp["precision"] = self.precision()
        fp["memory_meter"] = self.memory_meter
        if self.kind in ("cuda", "rocm"):
            props = torch.cuda.get_device_properties(self.index or 0)
            fp["memory_bytes"] = int(props.total_memory)
            fp["compute_units"] = int(props.multi_processor_count)
            if self.kind == "cuda":
                fp["capability"] = f"{props.major}.{props.minor}"
            else:
                fp["capability"] = str(
                    getattr(props, "gcnArchName", f"{props.major}.{props.minor}")
                )
            fp["runtime"] = (
                f"HIP {torch.version.hip}" if self.kind == "rocm" else f"CUDA {torch.version.cuda}"
            )
            if self.kind == "cuda":
                fp.update(nvml_fields(self.pci()))
        return fp


def _torch_capability(torch: ModuleType) -> str | None:
    """The CPU kernels ATen dispatches to here (``AVX2``, ``AVX512``, ``DEFAULT``...)."""
    try:
        return str(torch.backends.cpu.get_cpu_capability())
    except Exception:  # an old torch or a fake module: not known
        return None


def _torch_blas(torch: ModuleType) -> str:
    try:
        m = re.search(r"BLAS_INFO=(\w+)", str(torch.__config__.show()))
    except Exception:  # a fake or unusual build: the BLAS name is a nicety
        return "unknown"
    return m.group(1) if m else "unknown"


#: torch's structured-trace logger (for tlparse) logs every torch.compile step at DEBUG with an
#: empty message. It does not propagate, but pytest attaches its capture handlers to it as well, so
#: hundreds of such lines landed in every failure report of a compiled benchmark.
TRACE_LOGGER = "torch.__trace"


def _drop(record: object) -> bool:
    return False


def quiet_structured_trace() -> None:
    """Drop torch's structured-trace records unless the user asked for the trace (TORCH_TRACE);
    then nothing is changed and torch's own trace handler gets every record."""
    import logging
    import os

    logger = logging.getLogger(TRACE_LOGGER)
    if os.environ.get("TORCH_TRACE"):
        logger.removeFilter(_drop)
    elif _drop not in logger.filters:
        logger.addFilter(_drop)


def probe(torch: ModuleType | None = None) -> Probe:
    """Find torch's devices. ``torch`` may be passed in (tests use a fake module)."""
    result = Probe("torch")
    if torch is None:
        try:
            import torch as _torch
        except ModuleNotFoundError:
            for kind in ("cpu", "cuda", "rocm", "metal"):
                result.absent[kind] = "torch not installed (pip install pytest-burnperf[torch])"
            return result
        except Exception as exc:  # a broken install: say what it said
            for kind in ("cpu", "cuda", "rocm", "metal"):
                result.absent[kind] = f"torch failed to import: {exc}"
            return result
        torch = _torch
    version = str(torch.__version__)
    quiet_structured_trace()
    result.devices.append(TorchDevice(torch, "cpu"))

    hip = getattr(torch.version, "hip", None)
    cuda = getattr(torch.version, "cuda", None)
    if hip:
        gpu_kind, other = "rocm", "cuda"
        result.absent["cuda"] = f"torch {version} is a ROCm build; its GPUs are kind 'rocm'"
    elif cuda:
        gpu_kind, other = "cuda", "rocm"
        result.absent["rocm"] = f"torch {version} is a CUDA build, not a ROCm (HIP) build"
    else:
        gpu_kind = other = ""
        result.absent["cuda"] = f"torch {version} is built without CUDA (a CPU-only build)"
        result.absent["rocm"] = f"torch {version} is built without ROCm (HIP)"
    if gpu_kind:
        try:
            count = int(torch.cuda.device_count()) if torch.cuda.is_available() else 0
        except Exception as exc:  # driver errors: report their text
            count = 0
            result.absent[gpu_kind] = f"torch could not query {gpu_kind.upper()} devices: {exc}"
        else:
            if count == 0:
                name = "ROCm" if gpu_kind == "rocm" else "CUDA"
                result.absent[gpu_kind] = (
                    f"no {name} device found (torch.cuda.is_available() is False)"
                )
        for i in range(count):
            result.open(
                gpu_kind, f"torch-{gpu_kind}{i}", functools.partial(TorchDevice, torch, gpu_kind, i)
            )
    del other

    mps = getattr(getattr(torch, "backends", None), "mps", None)
    if mps is not None and mps.is_available():
        result.open("metal", "torch-metal", lambda: TorchDevice(torch, "metal"))
    else:
        result.absent["metal"] = (
            "no Metal (MPS) device (torch.backends.mps.is_available() is False)"
        )
    return result
