"""Warm-up, loop calibration and sampling. Plain Python: no pytest, no array library.

A sample value is the time of one call of the benchmarked function, in seconds: the elapsed time of
``loops`` back-to-back calls, divided by ``loops``, as measured by a :class:`Timer`:

* :class:`HostTimer`: host wall time bracketed by ``sync()`` on both sides (every device has it);
* a device timer (``device.timer()``): the device's own clock, from events recorded on its queue
  before and after the calls (CUDA/HIP events, OpenCL profiling markers, Vulkan
  timestamp queries). Device timers also report the host wall time of the same span, kept as
  ``Sample.host_values`` so both clocks can be read side by side.

Warm-up runs the function once, untimed and synchronised, then times calls for ``warmup``
seconds (at least one): one-time costs such as kernel compilation, autotuning, pipeline creation,
lazy initialisation and library handles never land in a sample, and never in the per-call
estimate that sizes the loop either, however long the first call takes. With ``flush`` (an
L2-cache flush), every sample is a single call preceded by an untimed flush. With ``meter`` (a
device's peak-memory meter), the second call runs under the meter, untimed. The garbage
collector is off while timing and back to its previous state afterwards.

Graph timing (``timer='graph'``, ``measure(capture=...)``): after the same warm-up, ``loops``
calls are captured once into a device graph (a CUDA graph) and every sample is one replay of
it between device events, divided by ``loops``: the device runs the calls back to back, with no
host launch between them, as ``triton.testing.do_bench_cudagraph`` times them. The loop is
sized twice: from the warm-up's device time, then from a timed replay of that first graph (a
launch-bound function's eager calls overstate what it costs the device); the graph is captured
again when the replay shows more calls are needed, up to :data:`MAX_GRAPH_CALLS`. With
``flush`` every graph holds one call and the flush runs, untimed, before each replay.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from pytest_burnperf.core.clocks import (
    BATCH,
    MAX_GRAPH_CALLS,
    MAX_WARMUP_CALLS,
    NS,
    SETTLE_SHARE,
    HostTimer,
    Sample,
    Timer,
    _Clocks,
    _noop,
    calibrate_loops,
    gc_off,
    settled,
)

#: Runs a call once and returns the peak bytes it allocated (None where it cannot tell).
Meter = Callable[[Callable[[], object]], "int | None"]

#: Captures the calls ``body()`` queues into a device graph and returns what replays it on the
#: current stream (``Device.graph_capture()``); raises :class:`GraphCaptureError` when the calls
#: cannot be captured.
Capture = Callable[[Callable[[], None]], Callable[[], object]]
#: What a pedantic benchmark's ``setup`` gives for one round: its positional and keyword
#: arguments, or None for the benchmark's own (checked in the plugin before it gets here).
Prepared = tuple[Sequence[object], Mapping[str, object]]


def measure(
    fn: Callable[..., object],
    args: Sequence[object] = (),
    kwargs: dict[str, object] | None = None,
    *,
    samples: int,
    warmup: float,
    min_time: float,
    sync: Callable[[], object] = _noop,
    clock: Callable[[], int] = time.perf_counter_ns,
    timer: Timer | None = None,
    flush: Callable[[], object] | None = None,
    meter: Meter | None = None,
    precise: Callable[[Sequence[float]], bool] | None = None,
    max_samples: int = 0,
    max_time: float = 0.0,
    cpu_clock: Callable[[], int] | None = None,
    watch: Callable[[], object] | None = None,
    settle: bool = False,
    turns: TurnTaker | None = None,
    capture: Capture | None = None,
) -> tuple[object, Sample]:
    """Warm ``fn`` up for ``warmup`` seconds (at least one call), calibrate, take ``samples``.

    With ``settle``, warm-up ends early once ``SETTLE_SHARE`` of ``warmup`` has passed and the
    timed warm-up calls have stopped getting faster (:func:`settled`); a function that needs
    the whole time (still speeding up, or slower than ``warmup / (2 * SETTLE_CALLS)`` a call)
    gets it.

    ``timer`` defaults to a :class:`HostTimer` around ``sync``. With ``flush``, each sample is
    one call, after an untimed ``flush(); sync()``. The first call is untimed (then ``sync()``),
    and with ``meter`` the second runs under it; the loop is sized from the timed warm-up calls
    after those (at least one, then until ``warmup`` seconds have passed).

    Adaptive sampling: with ``precise`` (a test of the values so far), sampling goes on in
    batches of :data:`BATCH` while ``precise(values)`` is false, until ``max_samples`` values or
    ``max_time`` seconds since the first sample (host clock). The test must look at the
    precision of the values only, never at how they compare with a baseline: stopping when a
    p-value crosses alpha would inflate false alarms.
    ``cpu_clock`` (``time.process_time_ns``) adds the CPU share of each sample (``cpu_share``).
    ``watch`` is called right before the first sample and right after the last (the host-state
    window covers the samples, not the warm-up, where compilers may run worker processes).

    With ``turns`` (a side of a turn-taking pair, turns.py), this process holds the turn when
    called; warm-up and calibration run in it, and sampling runs in windows: the turn is given
    back before each (``turns.give_back()`` returns the window's length), samples are taken
    until the window has passed, and the rules above (``samples``, ``precise``,
    ``max_samples``, ``max_time`` counted over this side's windows only) are checked after each
    window; the process keeps the turn after the last. ``watch`` is called at the start and end
    of every window, so the host state covers this side's windows, not the other side's.
    With ``capture`` (a device's graph capture, with its device ``timer``), the samples are
    replays of a graph of ``loops`` calls (see the module's docstring); the sample's timer is
    ``"graph"``.
    Returns the result of the last call and the :class:`Sample`.
    """
    __tracebackhide__ = True
    clocks = _Clocks(timer or HostTimer(sync, clock), clock, cpu_clock)
    run = _Run(fn, args, kwargs or {}, sync, clock, clocks, flush)
    peak = run.first_calls(meter)
    best, best_device = run.warm_up(warmup, settle)
    run.size_loop(best, best_device, min_time, capture)
    first_sample = len(clocks.shares)
    if turns is not None:
        stopped = _sample_in_turns(
            run.take,
            run.values,
            turns,
            clock,
            watch,
            samples=samples,
            precise=precise,
            max_samples=max_samples,
            max_time=max_time,
        )
    else:
        stopped = run.sample(samples, precise, max_samples, max_time, watch)
    return run.result, Sample(
        values=tuple(run.values),
        loops=run.loops,
        warmup_calls=run.calls,
        timer="graph" if capture is not None else clocks.timer.name,
        mode="auto",
        host_values=tuple(run.host) if clocks.dual else None,
        l2_flush=flush is not None,
        peak_memory=peak,
        stopped=stopped,
        cpu_share=clocks.sample_shares(first_sample),
    )


class _Run:
    """measure()'s steps, in the order they run: :meth:`first_calls`, :meth:`warm_up`,
    :meth:`size_loop`, then :meth:`sample` (or sampling in turns, :func:`_sample_in_turns`,
    through :meth:`take`). Keeps the function's last result, the calls made and the values."""

    def __init__(
        self,
        fn: Callable[..., object],
        args: Sequence[object],
        kwargs: dict[str, object],
        sync: Callable[[], object],
        clock: Callable[[], int],
        clocks: _Clocks,
        flush: Callable[[], object] | None,
    ) -> None:
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.sync, self.clock, self.clocks, self.flush = sync, clock, clocks, flush
        self.result: object = None
        #: Calls before the first sample (the warm-up's, the untimed ones included).
        self.calls = 0
        self.loops = 1
        self.body: Callable[[], object] = self.call_loops
        self.values: list[float] = []
        self.host: list[float] = []

    def call_once(self) -> None:
        __tracebackhide__ = True  # pytest shows the user's frames, not these
        self.result = self.fn(*self.args, **self.kwargs)

    def call_loops(self) -> None:
        __tracebackhide__ = True  # pytest shows the user's frames, not these
        fn, args, kwargs = self.fn, self.args, self.kwargs
        result = None  # a local inside the timed loop: no attribute store per call
        for _ in range(self.loops):
            result = fn(*args, **kwargs)
        self.result = result

    def before(self) -> None:
        """Before every timed span: the L2 flush, untimed, where the benchmark asks for it."""
        __tracebackhide__ = True  # pytest shows the user's frames, not these
        if self.flush is not None:
            self.flush()
            self.sync()

    def first_calls(self, meter: Meter | None) -> int | None:
        """The first call, untimed and synchronised: one that compiles, autotunes or creates
        library handles can outlast the warm-up, and the per-call estimate must come from the
        calls after it (else ``loops`` became 1, and depended on what ran earlier in the
        process). With a meter, the second call runs under it, also untimed; its peak."""
        __tracebackhide__ = True
        self.before()
        self.call_once()
        self.sync()
        self.calls = 1
        if meter is None:
            return None
        self.before()
        peak = meter(self.call_once)
        self.calls += 1
        return peak

    def warm_up(self, warmup: float, settle: bool) -> tuple[float, float]:
        """Timed calls until ``warmup`` seconds have passed (at least one), or, with
        ``settle``, until they stop getting faster after ``SETTLE_SHARE`` of it; the best span
        per call (behind a pad the larger of the two clocks: a launch-bound call takes longer
        to queue than to run, and a sample must not queue more than the host can in the
        minimum time) and the best device span."""
        __tracebackhide__ = True
        clock, clocks = self.clock, self.clocks
        warm_start = clock()
        deadline = warm_start + int(warmup / NS)
        settle_from = warm_start + int(warmup * SETTLE_SHARE / NS) if settle else None
        warm_times: list[float] = []
        best = best_device = math.inf
        while True:
            self.before()
            elapsed, wall = clocks.span(self.call_once)
            best = min(best, max(elapsed, wall) if clocks.padded else elapsed)
            best_device = min(best_device, elapsed)
            self.calls += 1
            now = clock()
            if now >= deadline or self.calls >= MAX_WARMUP_CALLS:
                break
            if settle_from is not None:
                warm_times.append(elapsed)
                if now >= settle_from and settled(warm_times):
                    break
        return best, best_device

    def size_loop(
        self, best: float, best_device: float, min_time: float, capture: Capture | None
    ) -> None:
        """How many calls one sample times: enough for ``min_time`` (one with a flush); with
        ``capture``, a graph of that many calls replayed per sample."""
        __tracebackhide__ = True
        self.loops = 1 if self.flush is not None else calibrate_loops(best, min_time)
        self.body = self.call_loops
        if capture is not None:
            self.body, self.loops = _graph(
                capture, self.call_once, self.clocks, self.before, best_device, min_time, self.flush
            )

    def take(self, count: int) -> None:
        """``count`` samples: each the time of one span of ``loops`` calls, per call."""
        __tracebackhide__ = True  # pytest shows the user's frames, not these
        for _ in range(count):
            self.before()
            elapsed, wall = self.clocks.span(self.body)
            self.values.append(elapsed / self.loops)
            self.host.append(wall / self.loops)

    def sample(
        self,
        samples: int,
        precise: Callable[[Sequence[float]], bool] | None,
        max_samples: int,
        max_time: float,
        watch: Callable[[], object] | None,
    ) -> str:
        """``samples`` samples with the garbage collector off, then more in batches while
        ``precise`` says the values are not precise enough, up to ``max_samples`` or
        ``max_time``; why sampling stopped (:data:`~.clocks.STOPS`)."""
        __tracebackhide__ = True
        clock, values = self.clock, self.values
        stopped = "fixed"
        if watch is not None:
            watch()
        with gc_off():
            started = clock()
            self.take(samples)
            if precise is not None and max_samples > samples:
                budget_end = started + int(max_time / NS)
                while True:
                    if precise(values):
                        stopped = "precise"
                        break
                    if len(values) >= max_samples:
                        stopped = "cap"
                        break
                    if clock() >= budget_end:
                        stopped = "budget"
                        break
                    self.take(min(BATCH, max_samples - len(values)))
        if watch is not None:
            watch()
        return stopped


def _repeat(call: Callable[[], None], n: int) -> Callable[[], None]:
    def body() -> None:
        __tracebackhide__ = True  # pytest shows the user's frames, not these
        for _ in range(n):
            call()

    return body


def _graph(
    capture: Capture,
    call: Callable[[], None],
    clocks: _Clocks,
    before: Callable[[], None],
    per_call: float,
    min_time: float,
    flush: Callable[[], object] | None,
) -> tuple[Callable[[], object], int]:
    """A graph of calls to replay for each sample, and how many calls it holds (measure()).

    Sized first from ``per_call`` (the warm-up's device time), then from a timed replay of
    that graph; captured again when the replay shows more calls are needed. Each new graph is
    replayed once untimed: its first launch uploads it to the device."""
    __tracebackhide__ = True
    n = 1 if flush is not None else min(calibrate_loops(per_call, min_time), MAX_GRAPH_CALLS)
    replay = capture(_repeat(call, n))
    before()
    clocks.span(replay)  # the first launch uploads the graph
    if flush is not None:
        return replay, 1
    before()
    elapsed, _ = clocks.span(replay)
    want = min(calibrate_loops(elapsed / n, min_time), MAX_GRAPH_CALLS)
    if want > n:
        n = want
        del replay  # the old graph's memory goes before the new one is captured
        replay = capture(_repeat(call, n))
        before()
        clocks.span(replay)
    return replay, n


class TurnTaker(Protocol):
    """A side of a turn-taking pair (turns.Side)."""

    def give_back(self) -> float: ...

    def wants_more(self) -> bool: ...


def _sample_in_turns(
    take: Callable[[int], None],
    values: list[float],
    turns: TurnTaker,
    clock: Callable[[], int],
    watch: Callable[[], object] | None,
    *,
    samples: int,
    precise: Callable[[Sequence[float]], bool] | None,
    max_samples: int,
    max_time: float,
) -> str:
    """measure()'s sampling in windows of a turn-taking pair; returns why it stopped."""
    cap = max(samples, max_samples if precise is not None else samples)
    spent = 0
    while True:
        window = turns.give_back()
        with gc_off():
            if watch is not None:
                watch()
            start = clock()
            end = start + int(window / NS)
            while True:
                take(1)
                now = clock()
                if now >= end or len(values) >= cap:
                    break
            if watch is not None:
                watch()
        spent += now - start
        if len(values) >= samples:
            if precise is None:
                return "fixed"
            if precise(values):
                return "precise"
            if len(values) >= cap:
                return "cap"
            if spent >= int(max_time / NS):
                return "budget"
        if not turns.wants_more():
            return "budget"


def measure_pedantic(
    fn: Callable[..., object],
    args: Sequence[object] = (),
    kwargs: dict[str, object] | None = None,
    *,
    setup: Callable[[], Prepared | None] | None = None,
    teardown: Callable[..., object] | None = None,
    rounds: int,
    iterations: int = 1,
    warmup_rounds: int = 0,
    sync: Callable[[], object] = _noop,
    clock: Callable[[], int] = time.perf_counter_ns,
    timer: Timer | None = None,
    flush: Callable[[], object] | None = None,
    meter: Meter | None = None,
    cpu_clock: Callable[[], int] | None = None,
    watch: Callable[[], object] | None = None,
    sampled: tuple[int, int, float] | None = None,
) -> tuple[object, Sample]:
    """pytest-benchmark's ``pedantic`` shape: fresh inputs from ``setup`` for every round.

    ``sampled`` (``rounds`` not given by the user): ``(fewest, most, seconds)``: the first timed
    round sizes the rest, as many rounds as fill ``seconds``, between ``fewest`` and ``most``
    (a 20 us call gets ``most``, where ``fewest`` single calls are too few for a clock to judge).

    ``setup`` (untimed) may return ``(args, kwargs)``, which then replace ``args``/``kwargs`` for
    that round. Each round times ``iterations`` calls; ``warmup_rounds`` rounds run untimed first.
    ``teardown`` (untimed) runs after each round with that round's arguments.
    ``flush`` (untimed) runs before each round, after ``setup``. ``meter`` measures the last
    warm-up round (so with ``warmup_rounds=0`` there is no peak memory: pedantic never adds calls).
    """
    __tracebackhide__ = True
    clocks = _Clocks(timer or HostTimer(sync, clock), clock, cpu_clock)
    result: object = None

    peak: int | None = None

    def one_round(metered: bool = False) -> tuple[float, float]:
        __tracebackhide__ = True  # pytest shows the user's frames, not these
        nonlocal result, peak
        a, k = tuple(args), dict(kwargs or {})
        if setup is not None:
            prepared = setup()
            if prepared is not None:
                a, k = tuple(prepared[0]), dict(prepared[1])
        if flush is not None:
            flush()
            sync()

        def body() -> None:
            __tracebackhide__ = True  # pytest shows the user's frames, not these
            nonlocal result
            for _ in range(iterations):
                result = fn(*a, **k)

        if metered and meter is not None:
            peak = meter(body)
            if teardown is not None:
                teardown(*a, **k)
            return 0.0, 0.0
        elapsed, wall = clocks.span(body)
        if teardown is not None:
            teardown(*a, **k)
        return elapsed / iterations, wall / iterations

    for i in range(warmup_rounds):
        one_round(metered=i == warmup_rounds - 1)
    first_sample = len(clocks.shares)
    if watch is not None:
        watch()
    with gc_off():
        pairs = [one_round()]
        if sampled is not None:
            fewest, most, seconds = sampled
            per = max(pairs[0][1] * iterations, 1e-9)
            rounds = max(fewest, min(most, math.ceil(seconds / per)))
        pairs += [one_round() for _ in range(rounds - 1)]
    if watch is not None:
        watch()
    return result, Sample(
        values=tuple(p[0] for p in pairs),
        loops=iterations,
        warmup_calls=warmup_rounds,
        timer=clocks.timer.name,
        mode="pedantic",
        host_values=tuple(p[1] for p in pairs) if clocks.dual else None,
        l2_flush=flush is not None,
        peak_memory=peak,
        cpu_share=clocks.sample_shares(first_sample),
    )
