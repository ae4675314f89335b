"""The verdicts judged beside a benchmark's time or counts verdict, as a results document holds
them: which field of a results entry each is in, which of its statuses fail the benchmark's
test, what a summary calls such a failure, the run's one line on each, and what a table shows
of each (its column, its cell, the verdict cell where it alone fails the test, where a
regression of it grew). The reports (the terminal's, Markdown and HTML tables, the Markdown
summary, a merged run's verdict and JUnit file, the GitHub outputs) read them through here; the
sides are core/sides/side_registry.SIDES, each a core/sides/side_kind.Side. No pytest here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from pytest_burnperf import json_fields as jf
from pytest_burnperf.core.sides.side_kind import Side
from pytest_burnperf.core.sides.side_registry import SIDES

#: The statuses of a time or counts verdict that fail the test by themselves.
MAIN_FAILING = frozenset({"regressed", "failed"})


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
    benchmark has that side or was measured without it (its results entry's ``not_measured``)."""
    out = []
    for side in SIDES:
        said = side.summary(s for r in results if (s := side.status(r)) is not None)
        whys = [jf.mapping(r.get("not_measured")).get(side.field) for r in results]
        said = with_not_measured(side, said, [w for w in whys if isinstance(w, str)])
        if said:
            out.append(said)
    return out


def with_not_measured(side: Side, said: str | None, whys: Sequence[str]) -> str | None:
    """A side's summary line (``said``, None where it judged none) with the benchmarks it did
    not measure counted, with why: ``..., 1 not measured (perf.pedantic(rounds=10) makes no
    calls beyond its rounds)``; several reasons each with its count, the commonest first."""
    missed = Counter(whys)
    if not missed:
        return said
    told = (
        next(iter(missed))
        if len(missed) == 1
        else "; ".join(f"{count}: {why}" for why, count in missed.most_common())
    )
    gap = f"{sum(missed.values())} not measured ({told})"
    return f"{said}, {gap}" if said is not None else f"{side.history.title}: {gap}"


def csv_columns() -> tuple[str, ...]:
    """Every side's columns of the results CSV, in :data:`SIDES` order."""
    return tuple(c for side in SIDES for c in side.csv_columns)


def csv_values(entry: Mapping[str, object]) -> tuple[object, ...]:
    """The values of :func:`csv_columns` for a results entry."""
    return tuple(v for side in SIDES for v in side.csv_values(entry.get(side.field)))


def history_csv_columns() -> tuple[str, ...]:
    """Every side's columns of the history CSV (its figures in a stored series)."""
    return tuple(f.csv_header for side in SIDES for f in side.history.figures)


def history_csv_values(point: Mapping[str, object]) -> tuple[object, ...]:
    """The values of :func:`history_csv_columns` for a stored point."""
    return tuple(point.get(f.column) for side in SIDES for f in side.history.figures)


def cells(entry: Mapping[str, object]) -> dict[str, str]:
    """Each side's cell of a results entry, by its column key."""
    return {side.field: side.cell(entry.get(side.field)) for side in SIDES}


def verdict_text(entry: Mapping[str, object]) -> str:
    """The verdict cell: the time or counts verdict's status, or the words of the first side
    that decides it (``memory regressed`` beside a verdict that passes)."""
    status = str(jf.mapping(entry.get("verdict")).get("status") or "?")
    for side in SIDES:
        words = side.verdict_words(entry.get(side.field), status)
        if words is not None:
            return words
    return status


def tracked(results: Iterable[Mapping[str, object]]) -> tuple[Side, ...]:
    """The sides any of ``results`` has a verdict of: the columns a table of them shows."""
    entries = list(results)
    return tuple(s for s in SIDES if any(s.status(r) is not None for r in entries))


def moved(entry: Mapping[str, object]) -> tuple[Side, ...]:
    """The sides whose status in ``entry`` is worth a column the user did not ask for."""
    return tuple(s for s in SIDES if s.status(entry) in s.shown)


def grew(entry: Mapping[str, object]) -> list[tuple[Side, str]]:
    """Each side's note of where a regression of it grew, where located."""
    return [(s, where) for s in SIDES if (where := s.grew(entry.get(s.field))) is not None]
