"""What a sample is made with: the :class:`Timer` protocol and the host's own timer, the
:class:`Sample` record, the spans that read both clocks, and the warm-up's helpers (settling,
loop calibration, the garbage collector held off). Plain Python: no pytest, no array library."""

from __future__ import annotations

import contextlib
import gc
import math
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pytest_burnperf.core.options.settings import Settings

NS = 1e-9


#: Warm-up never runs more calls than this, however fast the function is.
MAX_WARMUP_CALLS = 1_000_000


#: Adaptive sampling adds samples this many at a time, then checks the precision again.
BATCH = 10


#: Settling warm-up (``measure(settle=True)``, the default warm-up on CPU devices): warm-up may
#: end once this share of its time has passed and the calls have settled (:func:`settled`).
SETTLE_SHARE = 0.25


#: Calls have settled when the median of the last ``SETTLE_CALLS`` timed warm-up calls is no
#: faster than the median of the ``SETTLE_CALLS`` before them by more than ``SETTLE_TOLERANCE``.
SETTLE_CALLS = 5


SETTLE_TOLERANCE = 0.02


#: Why sampling stopped: a fixed count (no adaptive sampling), the precision goal was reached,
#: the sample cap, or the time budget.
STOPS = ("fixed", "precise", "cap", "budget")


#: The clocks a sample can be taken with: the host's wall time, the device's own events, the
#: device's events around the replay of a captured graph, or no clock: estimated cycles counted
#: under callgrind (core/counting/counts.py).
SAMPLE_TIMERS = ("host", "device", "graph", "counts")


#: A graph never holds more calls than this: capture and instantiation time grow with its nodes.
MAX_GRAPH_CALLS = 10_000


@dataclass(frozen=True)
class Sample:
    """Raw timings of one benchmark on one device, immutable and checked on construction."""

    values: tuple[float, ...]
    loops: int
    warmup_calls: int
    timer: str = "host"
    mode: str = "auto"
    meta: tuple[tuple[str, Any], ...] = field(default=())
    #: With a device timer: the host wall time of each sample (same span, includes the sync).
    host_values: tuple[float, ...] | None = None
    #: Each sample was one call after an L2-cache flush.
    l2_flush: bool = False
    #: Peak bytes one call allocated on the device (measured on an untimed warm-up call), if known.
    peak_memory: int | None = None
    #: Why sampling stopped (one of STOPS).
    stopped: str = "fixed"
    #: Per sample: this process's CPU time over the sample's host wall time (with ``cpu_clock``);
    #: under 0.9 for a single-threaded CPU benchmark means it was descheduled (``host.activity``).
    cpu_share: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if len(self.values) < 1:
            raise ValueError("a Sample needs at least one value")
        for series in (self.values, self.host_values or ()):
            for v in series:
                if not isinstance(v, float) or not math.isfinite(v) or v <= 0.0:
                    raise ValueError(f"Sample values must be finite numbers > 0.0, got {v!r}")
        if self.host_values is not None and len(self.host_values) != len(self.values):
            raise ValueError("Sample host_values must have one value per sample")
        if self.loops < 1:
            raise ValueError(f"Sample loops must be >= 1, got {self.loops!r}")
        if self.timer not in SAMPLE_TIMERS:
            raise ValueError(f"Sample timer must be one of {SAMPLE_TIMERS}, got {self.timer!r}")
        if self.stopped not in STOPS:
            raise ValueError(f"Sample stopped must be one of {STOPS}, got {self.stopped!r}")


@runtime_checkable
class Timer(Protocol):
    """Measures the span between ``start()`` and ``stop()`` of the work queued in between."""

    name: str

    def start(self) -> None: ...

    def stop(self) -> float:
        """Wait for the queued work to finish; the elapsed time in seconds (>= 0)."""


class GraphCaptureError(RuntimeError):
    """The benchmarked function could not be captured into a device graph (it waits for the
    device, copies to the host, or calls something graphs do not support)."""


class HostTimer:
    """Host wall time, with ``sync()`` before the start and before the stop."""

    name = "host"

    def __init__(
        self,
        sync: Callable[[], object] | None = None,
        clock: Callable[[], int] = time.perf_counter_ns,
    ) -> None:
        self._sync = sync or _noop
        self._clock = clock
        self._t0 = 0

    def start(self) -> None:
        self._sync()
        self._t0 = self._clock()

    def stop(self) -> float:
        self._sync()
        return (self._clock() - self._t0) * NS


def _noop() -> None:
    return None


@contextlib.contextmanager
def gc_off() -> Iterator[None]:
    """Garbage collector off inside, back to its previous state afterwards, even on error."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def settled(
    times: Sequence[float], calls: int = SETTLE_CALLS, tolerance: float = SETTLE_TOLERANCE
) -> bool:
    """Whether timed warm-up calls have stopped getting faster: the median of the last
    ``calls`` is at least ``1 - tolerance`` times the median of the ``calls`` before them.
    False with fewer than ``2 * calls`` times: too few to tell."""
    if calls < 1 or len(times) < 2 * calls:
        return False
    last = statistics.median(times[-calls:])
    before = statistics.median(times[-2 * calls : -calls])
    return last >= before * (1.0 - tolerance)


def settles(kind: str, warmup: float) -> bool:
    """Whether a benchmark's warm-up may end once its calls have settled: the default warm-up
    on a CPU device. A warm-up that was set (ini, marker, command line) runs its whole time, as
    does a GPU's, whose clocks ramp up over it."""

    return kind == "cpu" and warmup == Settings.warmup


def calibrate_loops(per_call_s: float, min_time_s: float) -> int:
    """Inner loop count so that one sample lasts at least ``min_time_s``."""
    if min_time_s <= 0.0 or per_call_s >= min_time_s:
        return 1
    return max(1, math.ceil(min_time_s / max(per_call_s, 1e-9)))


class _Clocks:
    """Runs one timed span on ``timer``; with a device timer also keeps the host time, and with
    ``cpu_clock`` (process CPU time) the share of a CPU the process got during each span."""

    def __init__(
        self, timer: Timer, clock: Callable[[], int], cpu_clock: Callable[[], int] | None = None
    ) -> None:
        self.timer = timer
        self.clock = clock
        self.cpu_clock = cpu_clock
        self.dual = timer.name != "host"
        #: The timer reports its own host time per span (an EventTimer behind a pad).
        self.padded = hasattr(timer, "host_ns")
        self.shares: list[float] = []

    def span(self, body: Callable[[], object]) -> tuple[float, float]:
        __tracebackhide__ = True  # pytest shows the user's frames, not these
        c0 = self.cpu_clock() if self.cpu_clock is not None else 0
        h0 = self.clock()
        self.timer.start()
        body()
        elapsed = self.timer.stop()
        h1 = self.clock()
        # a device timer reports the host's own time for the span (without its pad's wait)
        wall = max(int(getattr(self.timer, "host_ns", 0) or (h1 - h0)), 1)
        if self.cpu_clock is not None:
            self.shares.append((self.cpu_clock() - c0) / wall)
        return max(elapsed, NS), wall * NS

    def sample_shares(self, first: int) -> tuple[float, ...] | None:
        """CPU shares of the spans from index ``first`` on (the samples), or None."""
        return None if self.cpu_clock is None else tuple(self.shares[first:])
