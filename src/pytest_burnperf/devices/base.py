"""The device protocol every backend implements, and the result of probing a library."""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ..timing import Timer


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

    def fingerprint(self) -> dict[str, Any]:
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

    def peak_memory(self, call: Callable[[], Any]) -> int | None:
        """Run ``call`` once; the peak memory it allocated on this device in bytes, or None."""

    def gpu_slowdown(self) -> str | None:
        """Why the device is slowing itself down right now (a thermal slowdown...), or None."""


class EventTimer:
    """Elapsed time between two timing events recorded on a stream (CUDA, HIP or MPS events)."""

    name = "device"

    def __init__(
        self, make_event: Callable[[], Any], stream: Any = None, label: str = "device events"
    ) -> None:
        self.label = label
        self._e0 = make_event()
        self._e1 = make_event()
        self._stream = stream

    def _record(self, event: Any) -> None:
        if self._stream is None:
            event.record()
        else:
            event.record(self._stream)

    def start(self) -> None:
        self._record(self._e0)

    def stop(self) -> float:
        self._record(self._e1)
        self._e1.synchronize()
        return float(self._e0.elapsed_time(self._e1)) * 1e-3  # events report milliseconds


class DeviceBase:
    """Defaults for what a device may lack: no device clock, no L2 flush, no memory meter, no
    host thread pool to pin."""

    id: str
    #: The ``array_api_compat`` sub-package that wraps this device's library, if any.
    compat: str | None = None

    @contextlib.contextmanager
    def threads(self, n: int) -> Iterator[None]:
        """Run the body with ``n`` host threads (0: the libraries' default); GPUs ignore it."""
        yield

    @property
    def xp(self) -> Any:
        if self.compat is not None:  # imported on first use, then a sys.modules lookup
            return importlib.import_module(f"array_api_compat.{self.compat}")
        raise AttributeError(
            f"{self.id} has no array namespace (device.xp); write the benchmark with this "
            "device's own API (see the README section on OpenCL and Vulkan benchmarks)"
        )

    def timer(self) -> Timer | None:
        return None

    def l2_flusher(self) -> Callable[[], None] | None:
        return None

    def peak_memory(self, call: Callable[[], Any]) -> int | None:
        call()
        return None

    def precision(self) -> dict[str, Any]:
        """The library's precision modes now (``precision.py``); {} where it has none."""
        return {}

    def gpu_slowdown(self) -> str | None:
        """Why the device is slowing itself down right now (NVML's clock-event reasons), or None."""
        return None


def nvml_fields(pci: str | None) -> dict[str, Any]:
    """Max clocks, power limit and driver of an NVIDIA GPU from NVML (the ``nvml`` extra), or {}."""
    from .. import nvml

    return nvml.facts(pci) or {}


#: numpy (and cupy) dtype names for the dtype names of ``spec.DTYPES`` they have.
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


def identity(*, host_cpu: bool, dispatch: dict[str, str | None] | None = None) -> dict[str, Any]:
    """The hardware-identity part of a fingerprint: its version, and for a device that computes
    on the host CPU (numpy, torch-cpu, PoCL, llvmpipe) the CPU's identity and the code paths the
    libraries dispatch to there."""
    from ..hardware import IDENTITY_VERSION, cpu_identity

    out: dict[str, Any] = {"identity": IDENTITY_VERSION}
    if host_cpu:
        out["cpu"] = cpu_identity()
        out["dispatch"] = {k: v for k, v in (dispatch or {}).items() if v is not None}
    return out


def blas_threads() -> int | None:
    """Threads of the BLAS/OpenMP pools loaded in this process (the smallest, if they differ)."""
    from threadpoolctl import threadpool_info

    counts = [int(i["num_threads"]) for i in threadpool_info() if i.get("num_threads")]
    return min(counts) if counts else None


@contextlib.contextmanager
def cpu_threads(n: int, torch: Any = None) -> Iterator[None]:
    """Limit BLAS/OpenMP pools (threadpoolctl) and torch's intra-op pool to ``n`` threads."""
    if n == 0:
        yield
        return
    from threadpoolctl import threadpool_limits

    old = int(torch.get_num_threads()) if torch is not None else None
    with threadpool_limits(limits=n):
        if torch is not None:
            torch.set_num_threads(n)
        try:
            yield
        finally:
            if torch is not None and old is not None:
                torch.set_num_threads(old)


def tracemalloc_peak(call: Callable[[], Any]) -> int:
    """Peak bytes traced by ``tracemalloc`` while ``call`` runs (numpy reports its buffers)."""
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        call()
        return max(0, tracemalloc.get_traced_memory()[1] - before)
    finally:
        if started:
            tracemalloc.stop()


_STATUS = "/proc/self/status"


def _status_bytes(field_name: str) -> int | None:
    try:
        with open(_STATUS, encoding="ascii", errors="replace") as fh:
            m = re.search(rf"^{field_name}:\s+(\d+) kB", fh.read(), re.MULTILINE)
    except OSError:
        return None
    return int(m.group(1)) * 1024 if m else None


def rss_peak(call: Callable[[], Any]) -> int | None:
    """Growth of the process's resident-set high-water mark while ``call`` runs (Linux only).

    Resets the mark through ``/proc/self/clear_refs`` first; None where that is not possible.
    For libraries whose allocations ``tracemalloc`` does not see (torch on the CPU).
    """
    try:
        fd = os.open("/proc/self/clear_refs", os.O_WRONLY)
        try:
            os.write(fd, b"5")
        finally:
            os.close(fd)
    except OSError:
        call()
        return None
    before = _status_bytes("VmRSS")
    call()
    after = _status_bytes("VmHWM")
    if before is None or after is None:
        return None
    return max(0, after - before)


@dataclass
class Probe:
    """What probing one library found: devices, and for each kind it found nothing of, why."""

    library: str
    devices: list[Device] = field(default_factory=list)
    absent: dict[str, str] = field(default_factory=dict)
