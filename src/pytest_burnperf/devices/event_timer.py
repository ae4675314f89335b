"""Timing a GPU's work on its own clock: an event pair around each sample behind a spin-kernel pad
that keeps the launch latency out of the span (:class:`EventTimer`), the host-side pad for
devices without such a kernel (:class:`SleepPad`), and what the timer saw that the report should
say."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass


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


#: Shortest and longest device-side pad before a start event (see :class:`EventTimer`).
PAD_MIN_S = 50e-6


PAD_MAX_S = 20e-3


#: A whole-device sync after the end event that waits longer than this (and 2% of the span)
#: means work on another stream outlasted the timed one. On an H100 the first device-wide sync
#: after an idle stream took 10-48 us on the host (26 us median after an autograd backward), so
#: 50 us flagged single-stream benchmarks.
FOREIGN_MIN_S = 250e-6
