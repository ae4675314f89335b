"""What the counts instrument (instruction_counts.py) holds over a run that counts: the valgrind
it counts with, what ``--perf-measure`` chose (core/measures.py), the counted processes
(runs/counted.py) and the benchmarks it left to the clock, each with why. The plugin keeps one
(``PerfState.counting``); plugin/measuring/counts/counting.py fills it. No pytest here."""

from __future__ import annotations

import platform
from dataclasses import dataclass, field
from pathlib import Path

from pytest_burnperf.core import measures
from pytest_burnperf.core.counting import counts_key
from pytest_burnperf.core.options.settings import DEFAULT_SIZE
from pytest_burnperf.host import callgrind
from pytest_burnperf.runs import counted
from pytest_burnperf.storage.baselines import BaselineStore


def store_name(size: str) -> str:
    """The counts baselines' folder under the baselines folder: this OS and architecture, and
    the size where it is not the default (core/counting/counts_key.py)."""
    name = counts_key.store_name(platform.system(), platform.machine())
    return name if size == DEFAULT_SIZE else f"{name}-{size}"


@dataclass
class Counting:
    """A run that judges by counts: the valgrind it counts with and what the counted process
    measured."""

    valgrind: str
    version: str
    #: The run's baselines folder and --perf-size: where the counts baselines are.
    baselines_root: Path
    size: str
    #: --perf-measure: counts alone, both, or auto (per benchmark).
    measure: measures.Choice
    #: --perf-count-cycles: the caches simulated, cycles estimated beside the instructions.
    caches: bool = False
    run: counted.CountedRun | None = None
    #: A same-session comparison: each environment's counted process, by label.
    sides: dict[str, counted.CountedRun] = field(default_factory=dict)
    #: Benchmarks not counted because their stored baseline is timed (selection), with why.
    by_baseline: dict[str, str] = field(default_factory=dict)
    #: --perf-measure auto: the CPU benchmarks with no counts baseline, timed as by default.
    left_to_time: set[str] = field(default_factory=set)
    #: --perf-measure auto: the counted benchmarks with a time baseline, timed beside the counts.
    time_baselines: set[str] = field(default_factory=set)
    #: --perf-measure auto: counted benchmarks without a time baseline that declared their work
    #: (perf.work), timed one round beside the counts for their rates alone (GFLOP/s, GB/s, %
    #: of peak), added at their call (counting.time_for_rates).
    rates_beside: set[str] = field(default_factory=set)
    #: --perf-measure auto: benchmarks whose counts baseline was counted under another key,
    #: seen before counting (_other_key: not counted) or after (counts_judging.
    #: leave_to_the_clock), judged by time instead, with why.
    incomparable: dict[str, str] = field(default_factory=dict)
    #: --perf-measure auto: counted benchmarks whose counts cannot tell a change of the
    #: threshold's size apart (core/counting/counts.undecidable: a call that small, or that spread),
    #: judged by time instead, with why: against their time baseline (counts_judging.
    #: leave_to_the_clock), or in the session (session_counts.counted_in_session).
    undecided: dict[str, str] = field(default_factory=dict)
    #: What counts measured of those (core/counting/counts_left_to_clock.py), kept in their
    #: result beside the time verdict (``counts_not_judged``).
    undecided_counts: dict[str, dict[str, object]] = field(default_factory=dict)
    #: auto in a same-session comparison: counted in every environment, judged by judge_pair.
    in_session: set[str] = field(default_factory=set)
    #: auto, a named --perf-against REF: every CPU benchmark is counted in each side.
    named_reference: bool = False
    #: Benchmarks whose counts baseline file could not be read (truncated, not a count...):
    #: why, naming the file. Their test fails with it under every measure (corrupt_failure).
    corrupt: dict[str, str] = field(default_factory=dict)
    _store: BaselineStore | None = None

    def runs(self) -> list[counted.CountedRun]:
        return [r for r in (self.run, *self.sides.values()) if r is not None]

    def timed_instead(self, nodeid: str) -> str | None:
        """Why the benchmark was not counted but is timed instead (too slow under valgrind),
        else None."""
        if nodeid in self.by_baseline:
            return self.by_baseline[nodeid]
        if nodeid in self.undecided:
            return self.undecided[nodeid]
        if nodeid in self.incomparable and nodeid not in self.in_session:
            return self.incomparable[nodeid]
        for r in self.runs():
            if nodeid in r.timed_instead:
                return r.timed_instead[nodeid]
        return None

    def store(self) -> BaselineStore:
        """The counts baselines: one folder per OS, architecture and valgrind version (and
        size, where not the default)."""
        if self._store is None:
            self._store = BaselineStore(self.baselines_root, store_name(self.size))
        return self._store

    def key_base(self) -> dict[str, object]:
        return {
            "arch": platform.machine(),
            "valgrind": self.version,
            "cache": callgrind.cache_text(self.caches),
        }
