"""The device protocol every backend implements, the base class and host-data helpers they share,
the graph checks, and the result of probing a library. Timers, cache flushes, memory meters,
thread limits and device errors each have their own module beside this one."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pytest_burnperf.host import nvml
from pytest_burnperf.host.hardware import IDENTITY_VERSION, cpu_identity

#: Makes one call of a benchmark ready: (the call, what to run after it or None).
MakeCall = Callable[[], tuple[Callable[[], object], Callable[[], object] | None]]

if TYPE_CHECKING:
    from pytest_burnperf.core.clocks import Timer
    from pytest_burnperf.core.memory.call_figures import MemoryCalls
    from pytest_burnperf.core.timing import Capture


@runtime_checkable
class Device(Protocol):
    """What a benchmark gets as its ``device`` fixture.

    ``xp`` is an array-API namespace, so one benchmark body serves numpy, torch and friends;
    ``lib`` is the library itself for library-specific code (``torch.nn.functional`` and so on).
    """

    id: str
    kind: str
    library: str
    name: str

    @property
    def xp(self) -> Any: ...

    @property
    def lib(self) -> Any: ...

    def dtype(self, name: str) -> Any:
        """The library's dtype object for a dtype name such as ``"f32"``."""

    def unsupported(self, dtype: str) -> str | None:
        """``None`` if the device can compute in ``dtype``, else the reason it cannot."""

    def random(self, shape: Sequence[int], dtype: str = "f32") -> Any:
        """Seeded data: standard normal for floats, uniform in [0, 100) for integers."""

    def zeros(self, shape: Sequence[int], dtype: str = "f32") -> Any: ...

    def asarray(self, obj: Any, dtype: str | None = None) -> Any: ...

    def to_host(self, x: Any) -> Any:
        """A numpy array with the values of ``x``."""

    def sync(self) -> None:
        """Wait until all work queued on the device has finished."""

    def reseed(self, seed: int) -> None:
        """Restart the generator behind :meth:`random` (done before every benchmark)."""

    def fingerprint(self) -> dict[str, object]:
        """What identifies this device and its software, for results and baselines.

        ``comparability.py`` decides from it whether a baseline is comparable: ``identity`` (the
        version of these rules), the keys of ``comparability.IDENTITY_KEYS`` (name, memory,
        compute units, ...), and for devices that run on the host CPU its ``cpu`` identity and the
        ``dispatch`` each library chose; ``versions``, ``driver``, ``runtime`` and ``blas`` are
        noted.
        """

    def timer(self) -> Timer | None:
        """The device's own clock (events on its queue), or None where only the host clock exists."""

    def threads(self, n: int) -> contextlib.AbstractContextManager[None]:
        """Host threads for the body (CPU devices; 0 = the libraries' default)."""

    def l2_flusher(self) -> Callable[[], None] | None:
        """A function that evicts the device's L2 cache, or None where there is none."""

    def peak_memory(self, call: Callable[[], object]) -> int | None:
        """Run ``call`` once; the peak memory it allocated on this device in bytes, or None."""

    def peak_is_tracked(self) -> bool:
        """Whether :meth:`peak_memory` reads what :meth:`memory_per_call` tracks (the allocator
        on the CPU): then a benchmark whose memory is tracked takes its peak from those calls
        instead of a call of its own under the tracker (each tracking patches every loaded
        library: tens of milliseconds, over 100 ms with torch and the device libraries)."""

    def memory_per_call(self, make_call: MakeCall, calls: int = 3) -> MemoryCalls | str:
        """Each of a few calls' memory (bytes allocated, allocations, peak above its start),
        the meter's name for the memory key and where the last call allocated; or why this
        device's memory is not tracked. ``calls``: how many calls are tracked.
        ``make_call`` makes each call ready and gives what to run after it."""

    def gpu_slowdown(self) -> str | None:
        """Why the device is slowing itself down right now (a thermal slowdown...), or None."""


class DeviceBase:
    """Defaults for what a device may lack: no device clock, no L2 flush, no memory meter, no
    host thread pool to pin."""

    id: str
    #: The ``array_api_compat`` sub-package that wraps this device's library, if any.
    compat: str | None = None
    #: The host parts of the reference probe (host/probe.py) that describe this device's work;
    #: None: all of them.
    probe_parts: tuple[str, ...] | None = None

    @contextlib.contextmanager
    def threads(self, n: int) -> Iterator[None]:
        """Run the body with ``n`` host threads (0: the libraries' default); GPUs ignore it."""
        yield

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """This device current for the body (a GPU of several): the benchmark's calls, the L2
        flush, the memory meter, the calibration and the clock all run inside it."""
        yield

    @property
    def xp(self) -> Any:
        __tracebackhide__ = True  # the error shows the benchmark's line that asked
        if self.compat is not None:  # imported on first use, then a sys.modules lookup
            return importlib.import_module(f"array_api_compat.{self.compat}")
        raise AttributeError(
            f"{self.id} has no array namespace (device.xp); write the benchmark with this "
            'device\'s own API (docs/devices.md, "OpenCL and Vulkan benchmarks")'
        )

    def timer(self) -> Timer | None:
        return None

    def l2_flusher(self) -> Callable[[], None] | None:
        return None

    def peak_memory(self, call: Callable[[], object]) -> int | None:
        call()
        return None

    def peak_is_tracked(self) -> bool:
        return False

    def memory_per_call(self, make_call: MakeCall, calls: int = 3) -> MemoryCalls | str:
        return (
            f"memory per call is not tracked on {self.id}: its API does not say what a call "
            "allocated (tracked: numpy, torch and Python on the CPU, torch on CUDA and ROCm, "
            "cupy)"
        )

    def precision(self) -> dict[str, object]:
        """The library's precision modes now (``precision.py``); {} where it has none."""
        return {}

    #: What :meth:`peak_memory` measures, in words (fingerprints carry it as ``memory_meter``).
    memory_meter: str | None = None

    def gpu_slowdown(self) -> str | None:
        """Why the device is slowing itself down right now (NVML's clock-event reasons), or None."""
        return None

    def gpu_watch(self) -> nvml.Watch | None:
        """NVML's view of this GPU during a benchmark's samples (NVIDIA GPUs), or None."""
        return None

    def graph_unsupported(self) -> str | None:
        """Why ``timer='graph'`` cannot run here, or None where :meth:`graph_capture` works."""
        return f"{self.id} has no device graphs ({GRAPH_DEVICES})"

    def graph_capture(self) -> Capture | None:
        """What captures a benchmark's calls into a device graph for ``timer='graph'``
        (``core.timing.Capture``), or None (:meth:`graph_unsupported` says why)."""
        return None


#: Where ``timer='graph'`` runs, in words for the reasons it cannot run elsewhere.
GRAPH_DEVICES = "timer='graph' captures CUDA graphs: torch on CUDA or ROCm, cupy on CUDA"


def graph_unsupported(device: Device) -> str | None:
    """Why ``timer='graph'`` cannot run on ``device`` (a project's own device without the
    method has no graphs), or None."""
    check = getattr(device, "graph_unsupported", None)
    if check is None:
        return f"{device.id} has no device graphs ({GRAPH_DEVICES})"
    reason = check()
    return None if reason is None else str(reason)


def capture_failure(exc: BaseException, graph: str = "CUDA graph") -> str:
    """Why a benchmark's calls could not be captured into a graph, and what to do instead."""
    first = " ".join(str(exc).strip().splitlines()[:1])[:300]
    return (
        f"its calls could not be captured into a {graph} ({type(exc).__name__}: {first}). "
        "Graph timing needs a function that only queues device work with fixed shapes: no "
        "synchronize, .item(), .cpu(), printing a tensor or a shape that depends on data "
        "inside it; time it with timer='device' instead"
    )


def nvml_fields(pci: str | None) -> dict[str, object]:
    """Max clocks, power limit and driver of an NVIDIA GPU from NVML (the ``nvml`` extra), or {}."""

    return nvml.facts(pci) or {}


#: numpy (and cupy) dtype names for the dtype names of ``settings.DTYPES`` they have.
NUMPY_DTYPE_NAMES = {
    "f16": "float16",
    "f32": "float32",
    "f64": "float64",
    "i32": "int32",
    "i64": "int64",
}


def fill_random(rng: Any, shape: Sequence[int], dtype: str, dt: Any, f32: Any) -> Any:
    """What every device's ``random()`` holds: standard normal floats (drawn in float32 for the
    dtypes a generator cannot draw directly), integers uniform in [0, 100). ``rng`` is a numpy or
    cupy ``Generator``, ``dt`` the target dtype, ``f32`` that library's float32."""
    if dtype.startswith("i"):
        return rng.integers(0, 100, size=tuple(shape), dtype=dt)
    if dtype in ("f32", "f64"):
        return rng.standard_normal(size=tuple(shape), dtype=dt)
    return rng.standard_normal(size=tuple(shape), dtype=f32).astype(dt)


class HostData:
    """Dtypes, seeding and random inputs for devices whose data numpy makes on the host and
    copies over (OpenCL, Vulkan). Subclasses define ``unsupported``."""

    id: str
    _rng: Any = None

    def unsupported(self, dtype: str) -> str | None:
        raise NotImplementedError

    def dtype(self, name: str) -> Any:
        import numpy as np

        reason = self.unsupported(name)
        if reason:
            raise ValueError(f"{self.id}: {reason}")
        return np.dtype(NUMPY_DTYPE_NAMES[name])

    def reseed(self, seed: int) -> None:
        import numpy as np

        self._rng = np.random.default_rng(seed)

    def host_random(self, shape: Sequence[int], dtype: str) -> Any:
        """Seeded numpy values for ``random()``, in ``dtype``."""
        import numpy as np

        if self._rng is None:
            self.reseed(0)
        return fill_random(self._rng, shape, dtype, self.dtype(dtype), np.float32)


def identity(*, host_cpu: bool, dispatch: dict[str, str | None] | None = None) -> dict[str, object]:
    """The hardware-identity part of a fingerprint: its version, and for a device that computes
    on the host CPU (numpy, torch-cpu, PoCL, llvmpipe) the CPU's identity and the code paths the
    libraries dispatch to there."""

    out: dict[str, object] = {"identity": IDENTITY_VERSION}
    if host_cpu:
        out["cpu"] = cpu_identity()
        out["dispatch"] = {k: v for k, v in (dispatch or {}).items() if v is not None}
    return out


@dataclass
class Probe:
    """What probing one library found: devices, and for each kind it found nothing of, why."""

    library: str
    devices: list[Device] = field(default_factory=list)
    absent: dict[str, str] = field(default_factory=dict)
    #: Devices found but failing to open, by the id they would have had: ``{id: (kind, why)}``.
    #: One broken GPU never hides the others, nor the library's CPU device.
    broken: dict[str, tuple[str, str]] = field(default_factory=dict)

    def open(self, kind: str, device_id: str, make: Callable[[], Device]) -> None:
        """Add the device ``make()`` opens, or note why it could not be opened."""
        try:
            self.devices.append(make())
        except Exception as exc:  # a bad driver or device: this one is out, the rest stay
            why = f"{device_id} was found but could not be opened: {type(exc).__name__}: {exc}"
            self.broken[device_id] = (kind, why)
            if not any(d.kind == kind for d in self.devices):
                self.absent[kind] = why
