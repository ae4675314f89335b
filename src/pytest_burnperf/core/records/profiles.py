"""A benchmark's profile in brief, and what grew between two of them.

A profile of one side (this run, the baseline, another environment) is summarised as the
functions or kernels that took the most time, each with its own ("self") time and its call
count per benchmark call (:class:`ProfileSummary`). The summary is small enough to keep in a
results file and beside a baseline; the full profile stays in its own file for a viewer.
:func:`what_grew` names the entries whose time per benchmark call grew most from one side to the
other: where a regression went. Plain Python: the profilers themselves run in runs/profiling.py.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pytest_burnperf.core.text import format_time

#: Entries kept in a summary: enough to find what grew, small enough for a baseline file.
TOP = 25
#: Entries named in a note of what grew.
NOTE_TOP = 3
#: An entry must grow by at least this share of the benchmark's profiled time per call to be
#: named: smaller growth is within what two profiled runs of the same code differ by.
MIN_GROWTH_SHARE = 0.02
#: The profilers a summary may come from.
TOOLS = ("cProfile", "torch.profiler", "cupti")


class ProfileFormatError(ValueError):
    """A stored profile summary that cannot be read: the field at fault and what is wrong."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


@dataclass(frozen=True)
class Entry:
    """One function or kernel: its own time, its calls and its time with what it called
    (inclusive), per benchmark call."""

    name: str
    seconds: float
    calls: float
    inclusive: float = 0.0


@dataclass(frozen=True)
class ProfileSummary:
    #: Which profiler made it (:data:`TOOLS`): summaries of different tools do not compare.
    tool: str
    #: Benchmark calls profiled; every figure below is per benchmark call.
    calls: int
    #: Profiled time per benchmark call (the profiler's own overhead included).
    total_s: float
    entries: tuple[Entry, ...]

    def as_json(self) -> dict[str, object]:
        return {
            "tool": self.tool,
            "calls": self.calls,
            "total_s": _round(self.total_s),
            "entries": [
                [e.name, _round(e.seconds), _round(e.calls), _round(e.inclusive)]
                for e in self.entries
            ],
        }

    @classmethod
    def from_json(cls, doc: object, where: str = "profile") -> ProfileSummary:
        """A summary read back strictly: :class:`ProfileFormatError` names what is wrong."""
        if not isinstance(doc, Mapping):
            raise ProfileFormatError(f"{where}", f"must be an object, got {type(doc).__name__}")
        unknown = sorted(set(doc) - {"tool", "calls", "total_s", "entries"})
        if unknown:
            raise ProfileFormatError(f"{where}", f"unknown field(s) {', '.join(unknown)}")
        tool = doc.get("tool")
        if tool not in TOOLS:
            raise ProfileFormatError(f"{where}.tool", f"must be one of {', '.join(TOOLS)}")
        calls = doc.get("calls")
        if isinstance(calls, bool) or not isinstance(calls, int) or calls < 1:
            raise ProfileFormatError(f"{where}.calls", "must be a whole number >= 1")
        total = _seconds(doc.get("total_s"), f"{where}.total_s")
        raw = doc.get("entries")
        if not isinstance(raw, list) or len(raw) > 10 * TOP:
            raise ProfileFormatError(
                f"{where}.entries", "must be a list of [name, seconds, calls, inclusive seconds]"
            )
        entries = []
        for i, item in enumerate(raw):
            here = f"{where}.entries[{i}]"
            if (
                not isinstance(item, list)
                or len(item) not in (3, 4)
                or not isinstance(item[0], str)
            ):
                raise ProfileFormatError(here, "must be [name, seconds, calls, inclusive seconds]")
            own = _seconds(item[1], here + "[1]")
            inclusive = _seconds(item[3], here + "[3]") if len(item) == 4 else own
            entries.append(Entry(item[0], own, _seconds(item[2], here + "[2]"), inclusive))
        return cls(str(tool), calls, total, tuple(entries))


@dataclass(frozen=True)
class ProfileRecord:
    """What --perf-profile kept for one benchmark: its profile (the tool, the file relative to
    the run's directory, the summary), the side it was compared with, and the note of what
    grew; written into the results document as ``profile``."""

    tool: str
    file: str
    summary: ProfileSummary
    note: str
    #: What it was compared with: ``"baseline"``, the reference environment's label, or None.
    against: str | None = None
    against_file: str | None = None
    against_summary: ProfileSummary | None = None

    def as_json(self) -> dict[str, object]:
        return {
            "tool": self.tool,
            "file": self.file,
            "summary": self.summary.as_json(),
            "against": self.against,
            "against_file": self.against_file,
            "against_summary": None
            if self.against_summary is None
            else self.against_summary.as_json(),
            "note": self.note,
        }


def summarize(
    tool: str, calls: int, rows: Sequence[tuple[str, float, float, float]], top: int = TOP
) -> ProfileSummary:
    """A summary of ``rows`` (name, own seconds, calls, inclusive seconds) measured over
    ``calls`` benchmark calls: the ``top`` entries by own time and the ``top`` by inclusive
    time, per benchmark call. Rows of one name are added up."""
    n = max(1, calls)
    merged: dict[str, list[float]] = {}
    for name, seconds, count, inclusive in rows:
        acc = merged.setdefault(name, [0.0, 0.0, 0.0])
        acc[0] += max(0.0, float(seconds))
        acc[1] += max(0.0, float(count))
        acc[2] += max(0.0, float(inclusive))
    total = sum(v[0] for v in merged.values()) / n
    by_own = sorted(merged, key=lambda k: (-merged[k][0], k))[:top]
    by_inclusive = sorted(merged, key=lambda k: (-merged[k][2], k))[:top]
    kept = sorted(set(by_own) | set(by_inclusive), key=lambda k: (-merged[k][0], k))
    return ProfileSummary(
        tool,
        n,
        total,
        tuple(Entry(k, merged[k][0] / n, merged[k][1] / n, merged[k][2] / n) for k in kept),
    )


@dataclass(frozen=True)
class Growth:
    """One entry's time per benchmark call on each side."""

    name: str
    before_s: float
    after_s: float
    before_calls: float
    after_calls: float

    @property
    def grew_s(self) -> float:
        return self.after_s - self.before_s

    def text(self) -> str:
        if self.before_s == 0 and self.before_calls == 0:
            return f"{self.name} new: {format_time(self.after_s)} ({_calls(self.after_calls)})"
        calls = ""
        if not math.isclose(self.before_calls, self.after_calls, rel_tol=0.01):
            calls = f"; {_count(self.before_calls)} -> {_count(self.after_calls)} calls"
        return (
            f"{self.name} {format_time(self.before_s)} -> {format_time(self.after_s)} "
            f"(+{format_time(self.grew_s)}{calls})"
        )


def what_grew(
    before: ProfileSummary,
    after: ProfileSummary,
    top: int = NOTE_TOP,
    min_share: float = MIN_GROWTH_SHARE,
) -> list[Growth]:
    """The entries whose own time per benchmark call grew most from ``before`` to ``after``,
    largest first; none that grew by less than ``min_share`` of ``after``'s profiled time. An
    entry missing from one side's summary counts as no time there. Summaries of different
    profilers do not compare: no entries."""
    if before.tool != after.tool:
        return []
    old = {e.name: e for e in before.entries}
    new = {e.name: e for e in after.entries}
    floor = min_share * max(after.total_s, before.total_s)
    found = []
    for name in set(old) | set(new):
        b, a = old.get(name), new.get(name)
        growth = Growth(
            name,
            b.seconds if b else 0.0,
            a.seconds if a else 0.0,
            b.calls if b else 0.0,
            a.calls if a else 0.0,
        )
        if growth.grew_s > 0 and growth.grew_s >= floor:
            found.append(growth)
    found.sort(key=lambda g: (-g.grew_s, g.name))
    return found[:top]


#: Share of the growth of the profiled time that the function named as where it grew must hold
#: with what it called (:func:`where_it_grew`).
WHERE_SHARE = 0.6


def where_it_grew(before: ProfileSummary, after: ProfileSummary) -> Growth | None:
    """The innermost function that holds most of the growth with what it calls: of the
    functions whose inclusive time grew by at least :data:`WHERE_SHARE` of the growth of the
    whole profiled time, the one with the least inclusive time (the outer frames hold the
    growth too, and more). Built-ins (``<...>``) are left out: they say what ran, not whose
    code changed. None where the profiled time did not grow, the tools differ or the profiles
    are of operators (torch.profiler)."""
    grown = after.total_s - before.total_s
    if before.tool != after.tool or before.tool != "cProfile" or grown <= 0:
        return None  # operators' inclusive times say which ran, not whose code changed
    old = {e.name: e for e in before.entries}
    best: Growth | None = None
    for e in after.entries:
        if e.name.startswith("<"):
            continue
        b = old.get(e.name)
        g = Growth(e.name, b.inclusive if b else 0.0, e.inclusive, b.calls if b else 0.0, e.calls)
        if g.grew_s >= WHERE_SHARE * grown and (best is None or g.after_s < best.after_s):
            best = g
    return best


def grew_note(
    growths: Sequence[Growth], before: str, after: str, where: Growth | None = None
) -> str:
    """The verdict note's line: where and what grew from ``before`` to ``after`` (side names)."""
    if not growths and where is None:
        return f"profiles ({before} vs {after}): no function's own time grew beyond the noise"
    parts = []
    if where is not None:
        parts.append(f"in {where.text()} with what it calls")
        growths = [g for g in growths if g.name != where.name]  # said already
    if growths:
        parts.append("own time: " + "; ".join(g.text() for g in growths))
    return f"what grew ({before} -> {after}, per call): " + "; ".join(parts)


def _seconds(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ProfileFormatError(f"{where}", "must be a number >= 0")
    try:
        number = float(value)
    except OverflowError:  # an integer too large for a float
        number = math.inf
    if not math.isfinite(number):
        raise ProfileFormatError(where, "must be finite")
    return number


def _round(x: float) -> float:
    return float(f"{x:.6g}")


def _count(x: float) -> str:
    return f"{x:.0f}" if abs(x - round(x)) < 0.05 else f"{x:.2g}"


def _calls(x: float) -> str:
    return f"{_count(x)} call" if _count(x) == "1" else f"{_count(x)} calls"
