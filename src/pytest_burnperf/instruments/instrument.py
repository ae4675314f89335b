"""What an instrument is: what measures a benchmark's calls in a run, with what it needs, its
unit, what it records and what it cannot see, and what it does with the calls
(:meth:`Instrument.measure`, through the :class:`Measurement` the plugin hands every instrument
alike). Each measure is one module of this folder (``host_clock.py``, ``device_events.py``,
``cuda_graphs.py``, ``instruction_counts.py``, ``profiler.py``); ``registry.py`` lists them in
the order they are asked which one measures a benchmark (:class:`Situation`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from pytest_burnperf.core.options.settings import Settings
from pytest_burnperf.core.sides.side_kind import Side, SideVerdict
from pytest_burnperf.devices.base import Device, MakeCall

#: The instruments' names, as reports, results and baselines call them.
InstrumentName = Literal[
    "counts", "counted", "profile", "host", "device", "graph", "memory", "tracked-side"
]


@dataclass(frozen=True)
class Situation:
    """What decides which instrument measures a benchmark's calls in this process."""

    #: The process profiles one side of a same-session comparison (runs/profiled.py,
    #: ``Mode.PROFILE``).
    profiling_round: bool = False
    #: The process is a counted round under callgrind (``Mode.COUNT``).
    counting_round: bool = False
    #: Counts alone judge this benchmark here (``--perf-measure counts``, a CPU benchmark the
    #: counted process counted): no clock runs.
    counts_judge: bool = False
    #: The benchmark's ``timer`` setting: ``host``, ``device`` or ``graph``.
    timer: str = "host"
    #: The process is an extra timing round for its parent (``Mode.ROUND``).
    timing_round: bool = False
    #: The process tracks what the instruments beside measure (memory per call) for one
    #: environment of a same-session comparison (runs/tracked_sides.py, ``Mode.TRACK``).
    tracking_round: bool = False


class Measurement(Protocol):
    """What the plugin does with one benchmark's calls when an instrument asks
    (plugin/measuring/timed_perf.py implements it for the ``perf`` fixture): each step runs the
    benchmark's own call (``perf(fn, ...)`` or a pedantic round) and returns what the test gets
    back, the call's result. An instrument's :meth:`Instrument.measure` says which steps, in
    what order; the plugin calls every instrument the same way."""

    def call_once(self) -> object:
        """One call, untimed, the device synchronised after it (its teardown after that)."""
        ...

    def time_calls(self, clock: Clock) -> object:
        """Warm-up, calibration and samples on ``clock`` (opened inside the benchmark's
        threads and device context), then the verdict against the baseline."""
        ...

    def count_calls(self) -> object:
        """In a counted process: callgrind counts the calls; the record goes to the parent."""
        ...

    def judge_counts(self) -> None:
        """The verdict from the counted process's counts of this benchmark against its counts
        baseline (the call already made)."""
        ...

    def profile_calls(self) -> object:
        """In a profiled process: the calls run under the library's profiler."""
        ...

    def track_sides(self) -> object:
        """In a tracking process: one call, then each instrument beside measures a few
        (memory per call); the records go to the parent."""
        ...


class Instrument(Protocol):
    """What measures a benchmark's calls. ``applies`` says whether it does in a
    :class:`Situation`; the registry asks the instruments in order and the first one measures,
    by :meth:`measure`."""

    @property
    def name(self) -> InstrumentName: ...

    @property
    def unit(self) -> str:
        """What one value of it is: ``s`` (seconds per call), ``instructions`` (per call)."""
        ...

    @property
    def records(self) -> str:
        """What it keeps of each benchmark (samples, counts, a profile)."""
        ...

    @property
    def blind_to(self) -> str:
        """What it cannot see: the slowdowns it would miss, said in the docs and the tests."""
        ...

    def applies(self, situation: Situation) -> bool: ...

    def measure(self, calls: Measurement) -> object:
        """Measure the benchmark's calls through ``calls``; the call's result."""
        ...


class TrackedBeside(Protocol):
    """What an instrument beside found for a benchmark: its verdict (judged against what the
    baseline kept of it) and the largest peak memory of the calls it tracked, where its
    tracker is the device's peak meter (None: it is not)."""

    @property
    def verdict(self) -> SideVerdict: ...

    @property
    def peak(self) -> int | None: ...


class Beside(Protocol):
    """An instrument that measures beside the one that judges (registry.BESIDE): its own
    verdict, judged beside the time or counts verdict, under its :attr:`side`'s field."""

    side: ClassVar[Side]

    @property
    def name(self) -> InstrumentName: ...

    @property
    def unit(self) -> str: ...

    @property
    def records(self) -> str: ...

    @property
    def blind_to(self) -> str: ...

    def applies(self, situation: Situation) -> bool:
        """Whether it measures beside the judging instrument in ``situation``."""
        ...

    def take(self, device: Device, make_call: MakeCall, *, threads: int | None) -> object:
        """Before the judging instrument calls the benchmark (inside its thread and device
        context): its first calls, made under it at the same place in every run's call
        history; what it took, for :meth:`beside`, or a string saying why it does not measure
        this device."""
        ...

    def beside(
        self,
        taken: object,
        *,
        fingerprint: Mapping[str, object],
        kept: Mapping[str, object] | None,
        settings: Settings,
    ) -> TrackedBeside | str:
        """After the judging instrument measured: what :meth:`take` took judged against what
        the baseline ``kept`` in its side's field (None: no baseline), by the benchmark's
        ``settings`` (the user's threshold, the marker's limits); or why it does not measure
        this device."""
        ...

    def unchecked(self, settings: Settings, why: str) -> str | None:
        """The run's note on a benchmark it did not measure (``why``), where the benchmark
        asked something of it (memory: ``max_memory not checked: ...``); None: nothing to say."""
        ...

    def record(self, device: Device, make_call: MakeCall, *, threads: int | None) -> object:
        """In a tracking process of a same-session comparison (registry.TRACKED_HERE): a few
        calls measured without a baseline, the record the parent judges (the JSON its side's
        ``read_recorded`` reads back), or a string saying why there is none."""
        ...


class Unavailable(Exception):
    """An instrument cannot measure this benchmark here; the message says why (the plugin
    turns it into a skip or a failure with the benchmark's name)."""


#: Makes one call of the benchmark ready: (the call, what to run after it uncounted or None).
Prepare = Callable[[], tuple[Callable[[], object], Callable[[], object] | None]]


@dataclass(frozen=True)
class ClockParts:
    """What a clock instrument opens inside the benchmark's thread and device context: the
    timer (None: the host's), the L2 flush (or None) and the device's graph capture (or None);
    core/timing.py then takes the samples with them."""

    timer: Any
    flush: Callable[[], None] | None
    capture: Any


@runtime_checkable
class Clock(Protocol):
    """An instrument that times calls (host clock, device events, graph replays)."""

    @property
    def name(self) -> InstrumentName: ...

    def open(self, device: Device, *, flush_l2: bool) -> ClockParts:
        """Its timer, flush and capture for ``device``; :class:`Unavailable` where the device
        cannot give them."""
        ...
