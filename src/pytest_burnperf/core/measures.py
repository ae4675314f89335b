"""The measures by name: what judges a benchmark (its time, or the instructions callgrind
counted), and what each value of ``--perf-measure`` asks a run for. Results, verdicts, baseline
entries and options spell them as strings (``"time"``, ``"counts"``; ``auto``, ``time``,
``counts``, ``both``); everything else asks the objects here what a name means instead of
comparing the strings itself (tests/unit/test_layers.py holds that). No pytest here.

The instruments (instruments/) are what measures a benchmark's calls; a :class:`Judged` is what
their values are once they judge: the unit, how a value and a change of it read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pytest_burnperf.core.text import format_count, format_time

JudgedName = Literal["time", "counts"]


@dataclass(frozen=True)
class Judged:
    """A measure that judges a benchmark: a result's and a verdict's ``measure``, and (for the
    counts) a sample's and a baseline entry's ``timer``."""

    name: JudgedName
    #: What one value is: ``s`` (seconds per call) or ``instructions`` (per call).
    unit: str
    #: The values are counted (instructions under callgrind), not timed: no host moves them,
    #: they travel between machines of one OS and architecture, a change resolves finer.
    counted: bool

    def format(self, value: float) -> str:
        """A value as this measure reads: ``1.23 ms``, or ``1.51 M instr``."""
        if not self.counted:
            return format_time(value)
        text = format_count(value)
        return text if text == "-" else text + " instr"

    def change(self, ratio: float) -> str:
        """A change in percent: to one decimal for a time, two for counts (``+5.02%``)."""
        return f"{100 * (ratio - 1):+.{2 if self.counted else 1}f}%"


TIME = Judged("time", "s", counted=False)
COUNTS = Judged("counts", "instructions", counted=True)
JUDGED: tuple[Judged, ...] = (TIME, COUNTS)


def judged(name: object) -> Judged:
    """The measure a result, verdict or results document names (a document written before the
    field existed names none: the time judged it). A name no measure has is a ValueError."""
    if name is None:
        return TIME
    for measure in JUDGED:
        if measure.name == name:
            return measure
    known = ", ".join(m.name for m in JUDGED)
    raise ValueError(f"measure {name!r} is none of {known}")


def of_field(value: object) -> Judged:
    """What the values of a sample, a baseline entry or a results document's entry are, from
    its ``timer`` or ``measure`` field: counts for ``counts``; a clock's name (``host``,
    ``device``, ``graph``), ``time`` or nothing: seconds. For showing and checking documents,
    where a value no measure has reads as the clock's."""
    return COUNTS if value == COUNTS.name else TIME


ChoiceName = Literal["auto", "time", "counts", "both"]


@dataclass(frozen=True)
class Choice:
    """A value of ``--perf-measure`` (and ``perf_measure``, ``$BURNPERF_MEASURE``): what judges
    the run's CPU benchmarks."""

    name: ChoiceName
    #: Counting is asked for outright: a usage error where valgrind cannot count.
    needs_counts: bool
    #: Decided per benchmark: counts where it has a counts baseline (or this run records) and
    #: valgrind runs, the clock for the rest.
    per_benchmark: bool
    #: Counts alone judge a counted benchmark; no clock runs for it.
    counts_alone: bool
    #: Counts judge and the time is measured and judged beside them.
    time_too: bool
    #: What the option's help and errors say of it.
    says: str


AUTO = Choice(
    "auto",
    needs_counts=False,
    per_benchmark=True,
    counts_alone=False,
    time_too=False,
    says="counts where a benchmark has a counts baseline and valgrind runs, else the clock",
)
TIME_ONLY = Choice(
    "time",
    needs_counts=False,
    per_benchmark=False,
    counts_alone=False,
    time_too=False,
    says="the clock",
)
COUNTS_ONLY = Choice(
    "counts",
    needs_counts=True,
    per_benchmark=False,
    counts_alone=True,
    time_too=False,
    says="instructions and estimated cycles under valgrind",
)
BOTH = Choice(
    "both",
    needs_counts=True,
    per_benchmark=False,
    counts_alone=False,
    time_too=True,
    says="counts and time, each judged",
)
CHOICES: tuple[Choice, ...] = (AUTO, TIME_ONLY, COUNTS_ONLY, BOTH)
CHOICE_NAMES: tuple[ChoiceName, ...] = tuple(c.name for c in CHOICES)


def choice(name: object) -> Choice:
    """The choice called ``name`` (a parsed option value); anything else is a ValueError."""
    for c in CHOICES:
        if c.name == name:
            return c
    raise ValueError(f"--perf-measure {name!r} is none of {', '.join(CHOICE_NAMES)}")
