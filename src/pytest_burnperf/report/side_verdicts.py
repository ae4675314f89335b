"""The verdicts judged beside a benchmark's time or counts verdict, as a results document holds
them: which field of a results entry each is in, which of its statuses fail the benchmark's
test, what a summary calls such a failure and the run's one line on each. The reports (the
Markdown summary, a merged run's verdict and JUnit file, the GitHub outputs) read them through
here, so a measure judged beside is one entry of :data:`SIDES`. No pytest here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from pytest_burnperf import json_fields as jf
from pytest_burnperf.core.memory import memory_verdict

#: The statuses of a time or counts verdict that fail the test by themselves.
MAIN_FAILING = frozenset({"regressed", "failed"})


def status_of(side: object) -> str | None:
    """The status in a side's field of a results entry (``entry["memory"]``), or None where
    that is missing or not a verdict."""
    status = jf.mapping(side).get("status")
    return status if isinstance(status, str) else None


@dataclass(frozen=True)
class Side:
    """One verdict judged beside the time or counts verdict."""

    #: The field of a results entry that holds it (its ``status`` among the rest).
    field: str
    #: Its statuses that fail the benchmark's test whatever the time or counts verdict.
    failing: frozenset[str]
    #: What a summary calls a benchmark whose time or counts passed and this failed.
    failed_text: str
    #: The run's one line on it, from its statuses (None where none was judged).
    summary: Callable[[Iterable[str]], str | None]

    def status(self, entry: Mapping[str, object]) -> str | None:
        """Its status in a results entry, or None where the entry has none (not tracked)."""
        return status_of(entry.get(self.field))

    def fails(self, entry: Mapping[str, object]) -> bool:
        return self.status(entry) in self.failing


#: Memory per call (core/memory/memory_verdict.py): regressed, or over the marker's max_memory.
MEMORY = Side("memory", memory_verdict.FAILING, "memory regressed", memory_verdict.memory_summary)

#: Every verdict judged beside, in the order the reports say them.
SIDES: tuple[Side, ...] = (MEMORY,)


def main_failed(entry: Mapping[str, object]) -> bool:
    """Whether the entry's time or counts verdict failed its test by itself."""
    return jf.mapping(entry.get("verdict")).get("status") in MAIN_FAILING


def failed_beside(results: Sequence[Mapping[str, object]]) -> list[tuple[Side, list[int]]]:
    """Per side with any, the places in ``results`` of the benchmarks whose time or counts
    verdict passed and whose verdict of that side failed (each such test failed on it alone)."""
    out = []
    for side in SIDES:
        places = [i for i, r in enumerate(results) if not main_failed(r) and side.fails(r)]
        if places:
            out.append((side, places))
    return out


def failed_beside_text(results: Sequence[Mapping[str, object]]) -> list[str]:
    """``["2 memory regressed"]``: what each side failed alone, for a summary line."""
    return [f"{len(places)} {side.failed_text}" for side, places in failed_beside(results)]


def summaries(results: Sequence[Mapping[str, object]]) -> list[str]:
    """Each side's line on the run (``memory per call: 1 regressed, 3 unchanged``), where any
    benchmark has that side."""
    out = []
    for side in SIDES:
        said = side.summary(s for r in results if (s := side.status(r)) is not None)
        if said:
            out.append(said)
    return out
