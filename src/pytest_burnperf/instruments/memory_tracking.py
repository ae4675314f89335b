"""Memory per call, beside the clock or the counts: a benchmark's calls made a few more times
under the allocator's tracker (devices/memory_meters.py on the CPU: memray, every library's
``malloc`` and ``mmap``), each call's bytes allocated, number of allocations and peak above its
start, judged exactly against the baseline's (core/memory/memory_verdict.py).

It measures beside the instrument that judges the benchmark's time or counts, in the process
that judges (never in a round, counted or profiled process), and before that instrument calls
the benchmark: :data:`CALLS_BEFORE` untracked calls, then the tracked ones. What a call
allocates can follow how many calls ran before it (torch.compile recompiling as its inputs'
values change, a cache that fills after some calls), and the calls the clock makes follow the
host's speed; tracked at a fixed place in the call history, the same code allocates the same in
every run. Its verdict is its own; a regression fails the test by core/judging/outcome's rule,
what it cannot judge is said. In a same-session comparison, what is compared in the session is
tracked in a tracking process of each environment instead (:meth:`MemoryTracking.record`,
instruments/tracked_here.py, runs/tracked_sides.py), after the same untracked calls, and the
candidate's judged against the reference's (core/memory/memory_side.between)."""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import ClassVar

from pytest_burnperf.core.memory.allocations import memory_key
from pytest_burnperf.core.memory.call_figures import MemoryCalls
from pytest_burnperf.core.memory.memory_side import MEMORY
from pytest_burnperf.core.memory.memory_verdict import (
    MemoryVerdict,
    compiled_during,
    judge,
    located,
)
from pytest_burnperf.core.memory.recorded_memory import RecordedMemory, kept_memory
from pytest_burnperf.core.options.settings import Settings
from pytest_burnperf.core.sides.side_kind import Side
from pytest_burnperf.devices.base import Device, MakeCall
from pytest_burnperf.devices.compilations import compiled_frames
from pytest_burnperf.instruments.instrument import InstrumentName, Situation

#: Untracked calls before the tracked ones, the benchmark's first (a compilation, a cache's
#: first filling, outside the tracker, whose cost grows with what it sees), and what a call
#: takes measured on them. Fixed: the tracked calls are the same calls of the benchmark's
#: history in every run.
CALLS_BEFORE = 2
#: Calls tracked per benchmark: the first may still fill a cache or map an arena, the others
#: must agree (core/memory/memory_verdict.agreed).
TRACKED_CALLS = 3
#: Seconds the tracked calls may take: a benchmark whose calls take longer (the faster of the
#: untracked calls before them) gets two, the first left out and the second judged; the calls
#: judged are the same calls of its history either way.
BUDGET_S = 1.0
#: Untracked calls at most, after tracked calls during which torch.compile compiled, to let it
#: settle: after each that compiles nothing the calls are tracked again, until the judged ones
#: compile nothing (TorchDynamo compiles a frame again at most 8 times by default).
SETTLE_CALLS = 12
#: The rule the calls are tracked by, in the memory key (core/memory/allocations.memory_key):
#: a baseline tracked by another (before it: after the clock's calls, the frame stack's
#: chunks counted) is of another key, said and not compared, until recorded again.
RULE = (
    f"calls tracked after {CALLS_BEFORE} untracked, before the clock's; the interpreter's "
    "arenas and frame-stack chunks left out"
)


@dataclass(frozen=True)
class Taken:
    """A benchmark's tracked calls (what the device's meter gave), the seconds they took with
    the untracked calls before them, and the threads they ran with; judged by
    :meth:`MemoryTracking.judged` once the baseline and the fingerprint are known."""

    got: MemoryCalls
    seconds: float
    threads: int | None
    #: The frames torch.compile compiled during each tracked call (devices/compilations.py).
    compiled: tuple[int, ...] = ()
    #: The calls made before the tracked ones: :data:`CALLS_BEFORE`, or more where the
    #: compiler had to settle first (then in the memory key: the same calls in every run).
    before: int = CALLS_BEFORE


@dataclass(frozen=True)
class Tracked:
    """What tracking a benchmark's memory gave: its verdict, the key it was tracked under and
    the largest peak of the calls judged (a benchmark's peak memory where the device's peak
    meter is the tracker: Device.peak_is_tracked)."""

    verdict: MemoryVerdict
    key: dict[str, object]
    peak: int = 0


@dataclass(frozen=True)
class MemoryTracking:
    #: The verdict it judges beside (core/sides/): a result's and a baseline entry's field.
    side: ClassVar[Side] = MEMORY
    name: InstrumentName = "memory"
    unit: str = "bytes"
    records: str = (
        "bytes allocated, number of allocations and peak above the call's start, per call, "
        "and the key they compare under (meter, Python, platform, library, versions, dispatch)"
    )
    blind_to: str = (
        "Python's small objects (inside its arenas: which call maps one depends on what ran "
        "before), what is freed and reallocated at once inside the peak, a GPU's allocations "
        "outside torch's caching allocator and cupy's pool (cuBLAS workspaces), OpenCL's and "
        "Vulkan's (their APIs do not say), and time: a slower call of the same bytes is the "
        "clock's"
    )

    def applies(self, situation: Situation) -> bool:
        """Beside the judging instrument, in the process that judges."""
        return not (
            situation.profiling_round
            or situation.counting_round
            or situation.timing_round
            or situation.tracking_round
        )

    def take(
        self,
        device: Device,
        make_call: MakeCall,
        *,
        threads: int | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> Taken | str:
        """The benchmark's first calls on ``device`` (run with ``threads`` threads, inside its
        thread and device context): :data:`CALLS_BEFORE` untracked, then the tracked ones; or
        why this device's memory is not tracked. Where torch.compile compiled during the judged
        calls, untracked calls until one compiles nothing, then the tracked ones again, until
        the judged calls compile nothing (at most :data:`SETTLE_CALLS` untracked calls): what
        the compiler does decides how many, not the host, so they are the same calls in every
        run. Called before any other call of the benchmark's
        (:meth:`judged` judges what it took)."""
        __tracebackhide__ = True  # a failing call shows the test's line
        start = clock()
        seconds: list[float] = []
        for _ in range(CALLS_BEFORE):  # no comprehension: its frame would show in a failure
            seconds.append(_untracked(device, make_call, clock))
        calls = 2 if min(seconds, default=0.0) * TRACKED_CALLS > BUDGET_S else TRACKED_CALLS
        got = _tracked(device, make_call, calls)
        if isinstance(got, str):
            return got
        before, made, left = CALLS_BEFORE, CALLS_BEFORE + calls, SETTLE_CALLS
        while sum(got[1][1:] or got[1]) and left:  # the judged calls compiled: let it settle
            while left:
                left -= 1
                compiled = compiled_frames()
                _untracked(device, make_call, clock)
                made += 1
                if compiled_frames() == compiled:  # a call that compiled nothing: track again
                    again = _tracked(device, make_call, calls)
                    if isinstance(again, str):
                        return again
                    got, before = again, made
                    made += calls
                    break
        return Taken(got[0], clock() - start, threads, got[1], before)

    def judged(
        self,
        taken: Taken,
        *,
        fingerprint: Mapping[str, object],
        kept: Mapping[str, object] | None,
        threshold: float | None,
        ceiling: int | None = None,
    ) -> Tracked:
        """The calls ``taken`` judged against what the baseline ``kept`` of its memory (its
        entry's :attr:`side` field: figures, key, sites; None: no baseline) and the marker's
        ``ceiling`` (``max_memory``)."""
        calls = taken.got.calls
        judged = calls[1:] or calls
        compiled = sum(taken.compiled[1:] or taken.compiled)
        key = memory_key(
            fingerprint,
            taken.got.meter,
            interpreter_allocation(),
            taken.threads,
            RULE,
            None if taken.before == CALLS_BEFORE else taken.before,
        )
        before = kept_memory(kept)
        # the first call may still fill a cache or map what later calls reuse: the others judge
        verdict = judge(
            judged,
            None if before is None else before.figures,
            key=key,
            baseline_key=None if before is None else before.key,
            threshold=threshold,
            ceiling=ceiling,
            unsettled=compiled_during(compiled, SETTLE_CALLS),
        )
        sites_before = None if before is None else before.sites
        verdict = located(replace(verdict, tracked_s=taken.seconds), taken.got.sites, sites_before)
        return Tracked(verdict, key, max((c.peak for c in judged), default=0))

    def beside(
        self,
        taken: object,
        *,
        fingerprint: Mapping[str, object],
        kept: Mapping[str, object] | None,
        settings: Settings,
    ) -> Tracked | str:
        """What :meth:`take` took (or why it took nothing) judged by the benchmark's settings:
        the user's threshold, the marker's ``max_memory``."""
        if not isinstance(taken, Taken):
            return str(taken)
        return self.judged(
            taken,
            fingerprint=fingerprint,
            kept=kept,
            threshold=settings.chosen_threshold,
            ceiling=settings.max_memory,
        )

    def unchecked(self, settings: Settings, why: str) -> str | None:
        """``max_memory not checked: why`` where the marker set one; else nothing to say."""
        return None if settings.max_memory is None else f"max_memory not checked: {why}"

    def record(self, device: Device, make_call: MakeCall, *, threads: int | None) -> object:
        """In a tracking process of a same-session comparison: the benchmark's first calls
        taken as in the process that judges (:meth:`take`) with no baseline, what the parent
        judges (:class:`RecordedMemory`'s JSON, the key whole), or why this device's memory
        is not tracked."""
        taken = self.take(device, make_call, threads=threads)
        if isinstance(taken, str):
            return taken
        tracked = self.judged(taken, fingerprint=device.fingerprint(), kept=None, threshold=None)
        v = tracked.verdict
        return RecordedMemory(
            figures=v.figures, key=tracked.key, reason=v.reason, sites=v.sites, ceiling=None
        ).to_json()


MEMORY_TRACKING = MemoryTracking()


def _untracked(device: Device, make_call: MakeCall, clock: Callable[[], float]) -> float:
    """One call of the benchmark's, untracked and synchronised; the seconds it took."""
    __tracebackhide__ = True
    call, after = make_call()
    began = clock()
    call()
    device.sync()
    took = clock() - began
    if after is not None:
        after()
    return took


def _tracked(
    device: Device, make_call: MakeCall, calls: int
) -> tuple[MemoryCalls, tuple[int, ...]] | str:
    """``calls`` calls tracked by the device's meter, and the frames torch.compile compiled
    during each; or why the device's memory is not tracked."""
    __tracebackhide__ = True
    marks: list[int] = []  # the compiler's count as each tracked call is made ready

    def counted() -> tuple[Callable[[], object], Callable[[], object] | None]:
        marks.append(compiled_frames())
        return make_call()

    got = device.memory_per_call(counted, calls)
    if isinstance(got, str):
        return got
    marks.append(compiled_frames())
    compiled = tuple(b - a for a, b in itertools.pairwise(marks))
    if len(compiled) != len(got.calls):  # a meter that made its calls otherwise: all of them
        compiled = (marks[-1] - marks[0],) * len(got.calls)
    return got, compiled


def interpreter_allocation() -> str:
    """The interpreter's settings that decide what the allocator sees: those the counts key
    holds (``-O``, ``-X`` options such as ``-X dev``, the GIL), Python's own allocator
    (``PYTHONMALLOC``) and whether tracemalloc traces; ``default`` where none differs."""
    import sys
    import tracemalloc

    from pytest_burnperf.core.counting.counts_key import INTERPRETER_FLAGS, interpreter_settings

    settings = interpreter_settings(
        {name: getattr(sys.flags, name, None) for name, _ in INTERPRETER_FLAGS}, sys._xoptions
    )
    parts = [] if settings == "default" else [settings]
    allocator = os.environ.get("PYTHONMALLOC", "")
    if allocator:
        parts.append(f"PYTHONMALLOC={allocator}")
    if tracemalloc.is_tracing():
        parts.append("tracemalloc")
    return ", ".join(parts) or "default"
