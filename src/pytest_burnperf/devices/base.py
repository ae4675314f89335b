"""The device protocol every backend implements, and the result of probing a library."""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pytest_burnperf.core.timing import GraphCaptureError
from pytest_burnperf.host import nvml
from pytest_burnperf.host.hardware import IDENTITY_VERSION, cpu_identity

if TYPE_CHECKING:
    from pytest_burnperf.core.timing import Capture, Timer


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
    """Device time between two timing events (CUDA or HIP events), without the launch idle.

    * ``stream`` returns the stream to time; it is asked at each ``start()`` (the stream current
      when the sample begins), and the stop event goes on that same stream.
    * ``elapsed(start, end)`` reads the span in milliseconds after the end event completed:
      ``start.elapsed_time(end)`` for torch, ``cupy.cuda.get_elapsed_time`` for cupy (cupy's
      events have no such method).
    * **Launch idle.** A sample starts with the device idle (the previous sample, or the L2
      flush, was synchronised). A start event recorded on an idle device is stamped at once,
      before the host has even launched the first kernel, so the launch latency would land in
      the device span. With ``pad`` (``pad(seconds)`` queues a device-side wait of about that
      long, as nvbench queues a blocking kernel and triton queues the cache clear), the start
      event is queued behind the pad: it is stamped when the pad ends, by which time the host
      has queued the work. The pad lasts a little longer than the host took to queue the
      previous sample's calls (at least :data:`PAD_MIN_S`, at most :data:`PAD_MAX_S`), so
      the span holds device execution only, unless the host cannot keep up with the device
      for the whole sample (a launch-bound function: then the idle between its kernels is
      part of what it costs, and host time shows it too).
      When the host was still queueing after the pad had run out (its queue time exceeded the
      pad), the device may have waited for it: the span is counted in ``host_bound``.
    * **Host time.** ``host_ns`` is the host's time for the span without the pad's wait: the
      larger of the time it took to queue the calls and the wall time from the start event to
      the end of the end event's wait, less the pad (what the host would have waited without
      it). ``timing`` keeps it beside the device time and sizes the loop from the larger of the
      two, so a launch-bound call gets no more calls per sample than the host queues in the
      minimum time (more would overflow the launch queue and let the device wait for the host).
    * **Other streams.** Work the function queues on other streams is not between the events.
      ``device_sync`` (a whole-device synchronise) runs after the end event: when it still has
      to wait (longer than :data:`FOREIGN_MIN_S` and 2% of the span), work outside the timed
      stream outlasted it, and the sample is counted in ``foreign`` (the plugin reports a
      benchmark when that happened in a quarter of its spans or more).
    """

    name = "device"

    def __init__(
        self,
        make_event: Callable[[], Any],
        stream: Callable[[], Any] | None = None,
        label: str = "device events",
        *,
        elapsed: Callable[[Any, Any], float] | None = None,
        pad: Callable[[float], None] | None = None,
        device_sync: Callable[[], None] | None = None,
        clock: Callable[[], int] = time.perf_counter_ns,
    ) -> None:
        self.label = label
        self._e0 = make_event()
        self._e1 = make_event()
        self._stream_of = stream
        self._stream: Any = None
        self._elapsed = elapsed or (lambda a, b: a.elapsed_time(b))
        self._pad = pad
        self._device_sync = device_sync
        self._clock = clock
        self._queued_s = 0.0  # host time the previous sample took to queue its calls
        self._pad_s = 0.0  # the pad queued before this sample's start event
        self._t_started = 0
        #: Samples whose device-wide sync still waited after the end event.
        self.foreign = 0
        #: Samples where the host was still queueing calls when the pad had run out.
        self.host_bound = 0
        self.samples = 0
        #: The host's time for the last span, without the pad's wait (nanoseconds).
        self.host_ns = 0

    def _record(self, event: Any) -> None:
        if self._stream is None:
            event.record()
        else:
            event.record(self._stream)

    def start(self) -> None:
        self._stream = self._stream_of() if self._stream_of is not None else None
        self._pad_s = 0.0
        if self._pad is not None:
            self._pad_s = min(max(1.5 * self._queued_s, PAD_MIN_S), PAD_MAX_S)
            self._pad(self._pad_s)
        self._record(self._e0)
        self._t_started = self._clock()

    def stop(self) -> float:
        queued = self._clock()
        self._record(self._e1)
        self._queued_s = (queued - self._t_started) * 1e-9
        self._e1.synchronize()
        done = self._clock()
        pad_ns = int(self._pad_s * 1e9) if getattr(self._pad, "rate", 1) else 0
        self.host_ns = max(queued - self._t_started, done - self._t_started - pad_ns, 1)
        span = float(self._elapsed(self._e0, self._e1)) * 1e-3  # events report milliseconds
        self.samples += 1
        if pad_ns and queued - self._t_started > pad_ns:
            self.host_bound += 1
        if self._device_sync is not None:
            t0 = self._clock()
            self._device_sync()
            waited = (self._clock() - t0) * 1e-9
            if waited > max(FOREIGN_MIN_S, 0.02 * span):
                self.foreign += 1
        return max(span, 0.0)


def frequent(count: int, spans: int) -> bool:
    """Whether ``count`` of ``spans`` timed spans is often enough to report: in a quarter of them
    and at least twice: a rare late sync or pad is host-side jitter, while work left on another
    stream, or a host that cannot keep up, shows in most spans."""
    return count >= 2 and 4 * count >= spans


def timer_messages(timer: Any) -> list[str]:
    """What a device timer saw that the user should know: work on other streams outside the
    device time, and spans where the device waited for the host (a launch-bound function)."""
    spans = int(getattr(timer, "samples", 0) or 0)
    foreign = int(getattr(timer, "foreign", 0) or 0)
    host_bound = int(getattr(timer, "host_bound", 0) or 0)
    out: list[str] = []
    if frequent(foreign, spans):
        out.append(
            f"in {foreign} of {spans} timed spans the device was still busy after the end event: "
            "work queued on other streams is not in its device time (queue it on the current "
            "stream, or set timer='host' on the marker)"
        )
    if frequent(host_bound, spans):
        out.append(
            f"in {host_bound} of {spans} timed spans the host was still queueing calls when the "
            "device had run out of work: the function is launch-bound, its device time holds "
            "the device's waits for the host, and host time is its cost (timer='host' judges "
            "that)"
        )
    return out


class SleepPad:
    """``pad(seconds)`` for :class:`EventTimer`: queues a device-side busy wait of about that
    long through ``sleep(cycles)`` (``torch.cuda._sleep``, or a one-thread clock64 spin kernel
    for cupy). The cycles per second are measured once, on first use, with events around a
    known wait; where that fails the pad does nothing and ``rate`` stays 0."""

    CALIBRATION_CYCLES = 1_000_000

    def __init__(
        self,
        sleep: Callable[[int], Any],
        make_event: Callable[[], Any],
        elapsed: Callable[[Any, Any], float] | None = None,
    ) -> None:
        self._sleep = sleep
        self._make = make_event
        self._elapsed = elapsed or (lambda a, b: a.elapsed_time(b))
        self.rate: float | None = None

    def _calibrate(self) -> float:
        a, b = self._make(), self._make()
        a.record()
        self._sleep(self.CALIBRATION_CYCLES)
        b.record()
        b.synchronize()
        ms = float(self._elapsed(a, b))
        return self.CALIBRATION_CYCLES / (ms * 1e-3) if ms > 0 else 0.0

    def __call__(self, seconds: float) -> None:
        if self.rate is None:
            self.rate = self._calibrate()
        if self.rate > 0:
            self._sleep(max(1, int(seconds * self.rate)))


#: The L2 flush zeroes at least this much (as triton's do_bench).
FLUSH_MIN_BYTES = 256 * 1024 * 1024
#: AMD GPUs with an Infinity Cache (MALL) behind the L2, by gfx architecture: the flush must
#: clear it too. The runtime reports the L2 only; sizes from AMD's product specifications (the
#: largest part of each architecture).
INFINITY_CACHE_BYTES = {
    "gfx942": 256 * 2**20,  # MI300X / MI300A / MI325X
    "gfx950": 256 * 2**20,  # MI350 / MI355X
    "gfx1030": 128 * 2**20,  # RX 6800 / 6900 (RDNA 2)
    "gfx1031": 96 * 2**20,
    "gfx1032": 32 * 2**20,
    "gfx1100": 96 * 2**20,  # RX 7900 (RDNA 3)
    "gfx1101": 64 * 2**20,
    "gfx1102": 32 * 2**20,
    "gfx1200": 32 * 2**20,  # RX 9060 (RDNA 4)
    "gfx1201": 64 * 2**20,  # RX 9070
}


def flush_bytes(l2_bytes: int, arch: str = "") -> int:
    """How much the L2 flush zeroes: twice the last-level cache (the L2, plus the Infinity
    Cache of the AMD architectures that have one: ``gfx942:sramecc+:xnack-`` counts as
    ``gfx942``), and at least :data:`FLUSH_MIN_BYTES`."""
    base = arch.split(":", 1)[0].strip().lower()
    return max(FLUSH_MIN_BYTES, 2 * (max(l2_bytes, 0) + INFINITY_CACHE_BYTES.get(base, 0)))


#: Shortest and longest device-side pad before a start event (see :class:`EventTimer`).
PAD_MIN_S = 50e-6
PAD_MAX_S = 20e-3
#: A whole-device sync after the end event that waits longer than this (and 2% of the span)
#: means work on another stream outlasted the timed one. On an H100 the first device-wide sync
#: after an idle stream took 10-48 us on the host (26 us median after an autograd backward), so
#: 50 us flagged single-stream benchmarks.
FOREIGN_MIN_S = 250e-6


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

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """This device current for the body (a GPU of several): the benchmark's calls, the L2
        flush, the memory meter, the calibration and the clock all run inside it."""
        yield

    @property
    def xp(self) -> Any:
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

    def peak_memory(self, call: Callable[[], Any]) -> int | None:
        call()
        return None

    def precision(self) -> dict[str, Any]:
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


def graph_unsupported(device: Any) -> str | None:
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


def nvml_fields(pci: str | None) -> dict[str, Any]:
    """Max clocks, power limit and driver of an NVIDIA GPU from NVML (the ``nvml`` extra), or {}."""

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
    """Limit BLAS/OpenMP pools (threadpoolctl), torch's intra-op pool and, where numba is
    imported, numba's parallel pool to ``n`` threads."""
    if n == 0:
        yield
        return
    from threadpoolctl import threadpool_limits

    old = int(torch.get_num_threads()) if torch is not None else None
    with threadpool_limits(limits=n), _numba_threads(n):
        if torch is not None:
            torch.set_num_threads(n)
        try:
            yield
        finally:
            if torch is not None and old is not None:
                torch.set_num_threads(old)


@contextlib.contextmanager
def _numba_threads(n: int) -> Iterator[None]:
    """numba's parallel threads limited to ``n`` (thread-local in numba: this thread's calls),
    where numba is already imported; nothing is imported here."""
    numba = sys.modules.get("numba")
    old: int | None = None
    if numba is not None:
        try:
            old = int(numba.get_num_threads())
            numba.set_num_threads(max(1, min(n, int(numba.config.NUMBA_NUM_THREADS))))
        except Exception:
            old = None
    try:
        yield
    finally:
        if numba is not None and old is not None:
            with contextlib.suppress(Exception):
                numba.set_num_threads(old)


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


#: Words of the errors after which a GPU context is not to be trusted again in this process: an
#: asynchronous CUDA/HIP fault (an illegal address, a device-side assert, a launch failure) is
#: sticky and surfaces in whichever call syncs next, so every later benchmark would fail too.
DEVICE_ERROR_WORDS = (
    "cuda error",
    "cudaerror",
    "cuda_error",
    "hip error",
    "hiperror",
    "device-side assert",
    "illegal memory access",
    "illegal address",
    "illegal instruction",
    "misaligned address",
    "unspecified launch failure",
    "launch timed out",
    "cudaruntimeerror",
    "cudadrivererror",
    "acceleratorerror",
)


def device_error(exc: BaseException) -> str | None:
    """The one-line text of ``exc`` when it is a GPU fault that poisons the device for the
    rest of the process (``DEVICE_ERROR_WORDS``), else None; out-of-memory is not one."""
    text = f"{type(exc).__name__}: {exc}".strip()
    low = text.lower()
    if "out of memory" in low or isinstance(exc, GraphCaptureError):
        return None  # a failed capture is ended and leaves the device usable
    if any(w in low for w in DEVICE_ERROR_WORDS):
        return " ".join(text.split())[:300]
    return None


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
