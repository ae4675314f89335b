"""Every instrument, in the order they are asked whether they measure a benchmark
(:func:`choose`): a tracking process tracks what the instruments beside measure, a profiled
process profiles, a counted process counts, counts alone judge where ``--perf-measure counts``
says so, else the benchmark's clock; and those that measure beside it (:data:`BESIDE`:
memory). A new measure is one module of this folder and one line here (one judged beside: and
its side's module, with one line of core/sides/side_registry.py)."""

from __future__ import annotations

from pytest_burnperf.instruments.cuda_graphs import GRAPH_REPLAYS
from pytest_burnperf.instruments.device_events import DEVICE_EVENTS
from pytest_burnperf.instruments.host_clock import HOST_CLOCK
from pytest_burnperf.instruments.instruction_counts import COUNTS_HERE, COUNTS_JUDGE
from pytest_burnperf.instruments.instrument import Beside, Instrument, Situation
from pytest_burnperf.instruments.memory_tracking import MEMORY_TRACKING
from pytest_burnperf.instruments.profiler import PROFILE_HERE
from pytest_burnperf.instruments.tracked_here import TRACKED_HERE

#: The instruments, first asked first.
INSTRUMENTS: tuple[Instrument, ...] = (
    TRACKED_HERE,
    PROFILE_HERE,
    COUNTS_HERE,
    COUNTS_JUDGE,
    HOST_CLOCK,
    DEVICE_EVENTS,
    GRAPH_REPLAYS,
)

#: Instruments that measure beside the one :func:`choose` picks, where they apply, and in a
#: tracking process (:data:`TRACKED_HERE`): memory per call (its own verdict beside the time
#: or counts verdict, its side core/memory/memory_side.MEMORY).
BESIDE: tuple[Beside, ...] = (MEMORY_TRACKING,)


#: Modules of this folder that hold what an instrument keeps over a run, not an instrument:
#: ``counts_run.py``, the counts instruments' (the counted processes, what they left to the clock).
RUN_STATE_MODULES = ("counts_run",)


class NoInstrument(LookupError):
    """No instrument measures a benchmark in this situation (a timer setting none knows)."""


def choose(situation: Situation) -> Instrument:
    """The instrument that measures a benchmark's calls in ``situation``."""
    for instrument in INSTRUMENTS:
        if instrument.applies(situation):
            return instrument
    known = ", ".join(repr(i.name) for i in INSTRUMENTS)
    raise NoInstrument(f"no instrument measures {situation} (instruments: {known})")


def named(name: str) -> Instrument:
    """The instrument called ``name``."""
    for instrument in INSTRUMENTS:
        if instrument.name == name:
            return instrument
    raise NoInstrument(f"no instrument is called {name!r}")
