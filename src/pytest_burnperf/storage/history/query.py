"""Reading the history: each benchmark's series per hardware class (one per test id, which holds
the device and dtype), its change points, and a results file judged against the last runs of a
branch. No pytest here."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_burnperf import json_fields as jf
from pytest_burnperf.core import measures
from pytest_burnperf.core.counting import counts as counted
from pytest_burnperf.core.counting import paired_counts
from pytest_burnperf.core.counting.counts_key import key_difference
from pytest_burnperf.core.judging.abstention import Cause
from pytest_burnperf.core.judging.verdict import Policy, Verdict, judge, not_comparable
from pytest_burnperf.core.sides.side_registry import SIDES
from pytest_burnperf.storage.history.changepoints import ChangePoint, find


@dataclass
class Series:
    hardware_class: str
    test: str
    name: str
    device: str
    dtype: str
    #: What its medians are: seconds per call, or instructions per call (``counts``).
    measure: measures.Judged = measures.TIME
    points: list[dict[str, object]] = field(default_factory=list)
    changes: list[ChangePoint] = field(default_factory=list)

    def as_json(self) -> dict[str, object]:
        return {
            "hardware_class": self.hardware_class,
            "test": self.test,
            "name": self.name,
            "device": self.device,
            "dtype": self.dtype,
            "measure": self.measure.name,
            "unit": self.measure.unit,
            "points": [
                {
                    k: p.get(k)
                    for k in (
                        "created",
                        "commit",
                        "branch",
                        "median",
                        "low",
                        "high",
                        "status",
                        *(c for side in SIDES for c in side.figure_columns),
                    )
                }
                for p in self.points
            ],
            "change_points": [
                {
                    "index": c.index,
                    "ratio": c.ratio,
                    "commit": self.points[c.index].get("commit"),
                    "created": self.points[c.index].get("created"),
                }
                for c in self.changes
            ],
        }


def series(
    points: Sequence[Mapping[str, object]],
    *,
    keep: Callable[[str], bool] = lambda _t: True,
    device: str | None = None,
) -> list[Series]:
    """Group ``points`` (oldest first) by hardware class, test and measure (a benchmark timed
    in some runs and counted in others has a series of each: seconds and instructions are never
    one line, nor a shift between them); find each one's change points. ``device`` keeps the
    series whose backend, kind or ``backend-kind`` equals it."""
    out: dict[tuple[str, str, str], Series] = {}
    for p in points:
        test = str(p["test"])
        if not keep(test):
            continue
        backend, kind = str(p.get("backend") or ""), str(p.get("kind") or "")
        if device is not None and device not in (backend, kind, f"{backend}-{kind}"):
            continue
        measure = measures.of_field(p.get("measure"))
        key = (str(p["hardware_class"]), test, measure.name)
        s = out.get(key)
        if s is None:
            s = out[key] = Series(
                key[0],
                test,
                str(p.get("name") or test),
                f"{backend} {kind}".strip(),
                str(p.get("dtype") or ""),
                measure,
            )
        s.points.append(dict(p))
    for s in out.values():
        s.changes = find([jf.number(p.get("median")) or 0.0 for p in s.points])
    return sorted(out.values(), key=lambda s: (s.hardware_class, s.test, s.measure.name))


def text(all_series: Sequence[Series], *, width: int = 100) -> list[str]:
    """The terminal view: per series a header, one line per run, the change points."""

    lines: list[str] = []
    for s in all_series:
        counted = ", instructions counted" if s.measure.counted else ""
        lines.append(f"{s.name}  [{s.device} {s.dtype}, class {s.hardware_class}{counted}]")
        starts = {c.index: c for c in s.changes}
        for i, p in enumerate(s.points):
            low, high = jf.number(p.get("low")), jf.number(p.get("high"))
            interval = (
                ""
                if low is None or high is None
                else f" [{s.measure.format(low)}, {s.measure.format(high)}]"
            )
            commit = str(p.get("commit") or "-")[:10] + ("+dirty" if p.get("dirty") else "")
            mark = ""
            if i in starts:
                mark = f"  <- shift {100 * (starts[i].ratio - 1):+.1f}% begins here"
            median = s.measure.format(jf.number(p.get("median")) or 0.0)
            beside = "".join(side.history.line(p) for side in SIDES)
            line = (
                f"  {str(p.get('created') or '')[:16]:<16}  {commit:<16} "
                f"{p.get('branch') or '-':<12} {median:>10}{interval}{beside}{mark}"
            )
            lines.append(line[: max(width, 60)] if not mark else line)
        if not s.changes:
            lines.append(f"  no shift found in {len(s.points)} runs")
        lines.append("")
    return lines


def against_history(
    doc: Mapping[str, object],
    points: Sequence[Mapping[str, object]],
    *,
    alpha: float,
    threshold: float,
    threshold_given: float | None = None,
) -> list[tuple[str, Any, int]]:
    """Each result of ``doc`` judged against the stored runs in ``points`` (same hardware class
    and test, fetched ``with_runs``): a timed result by the time rule (every process round of
    every stored run counts as one baseline run), a counted one by the counts rule
    (core/counting/counts.judge_counts) against the stored runs that counted it under the same
    key, with ``threshold_given`` (the user's, or None) as the plugin judges counts:
    ``[(test, verdict, stored runs used)]``."""

    machine = doc.get("machine") if isinstance(doc.get("machine"), Mapping) else {}
    assert isinstance(machine, Mapping)
    hw = machine.get("hardware_class")
    stored: dict[str, list[Mapping[str, object]]] = {}
    for p in points:
        if p.get("hardware_class") == hw:
            stored.setdefault(str(p["test"]), []).append(p)
    tests = jf.mappings(doc.get("results"))
    policy = Policy(alpha=alpha, threshold=threshold, comparisons=max(1, len(tests)))
    out = []
    for r in tests:
        test = str(r.get("test"))
        current = [x for x in jf.rounds(r.get("runs")) if x] or [jf.floats(r.get("samples"))]
        runs = stored.get(test, [])
        if measures.of_field(r.get("timer")).counted:
            verdict, used = _counted_against(
                r, current, runs, alpha_each=policy.alpha_each, threshold=threshold_given
            )
            out.append((test, verdict, used))
            continue
        timed = [p for p in runs if p.get("counts") is None]
        base = [x for p in timed for x in jf.rounds(p.get("runs")) if x]
        if len(timed) < len(runs) and not timed:
            verdict = not_comparable(
                [v for run in current for v in run],
                [],
                "the stored runs counted it; this run timed it",
                Cause.COUNTS_KEY,
            )
            out.append((test, verdict, 0))
            continue
        out.append((test, judge(base or None, current, policy), len(timed)))
    return out


def _counted_against(
    r: Mapping[str, object],
    current: Sequence[Sequence[float]],
    runs: Sequence[Mapping[str, object]],
    *,
    alpha_each: float,
    threshold: float | None,
) -> tuple[Verdict, int]:
    """A counted result against the stored runs that counted it under its key."""
    values = [float(v) for run in current for v in run]
    counts = jf.mapping(r.get("counts"))
    key = jf.mapping(counts.get("key"))
    share = jf.number(counts.get("interpreter")) or 0.0
    same: list[Mapping[str, object]] = []
    other = ""
    for p in runs:
        record = jf.mapping(p.get("counts"))
        if not record:
            other = other or "the stored runs timed it (or were stored before counts were kept)"
            continue
        diff = key_difference(jf.mapping(record.get("key")), key)
        if diff:
            other = f"{diff} (newest stored run of another key)"
            continue
        same.append(p)
    if not same:
        if not runs:
            return counted.judge_counts(None, values, alpha_each=alpha_each), 0
        return not_comparable(values, [], other, Cause.COUNTS_KEY), 0
    shares = [jf.number(jf.mapping(p.get("counts")).get("interpreter")) or 0.0 for p in same]
    # each call against the stored runs' calls at the same place, where every side says them
    stored = [_counted([v for run in jf.rounds(p.get("runs")) for v in run], p) for p in same]
    base = counted.Counted(
        tuple(v for c in stored for v in c.instructions),
        (),
        positions=tuple(v for c in stored for v in c.positions)
        if all(c.positions for c in stored)
        else (),
    )
    verdict = paired_counts.judge_counted(
        base,
        _counted(values, r),
        alpha_each=alpha_each,
        interpreter=max([share, *shares]),
        threshold=threshold,
    )
    return verdict, len(same)


def _counted(values: Sequence[float], r: Mapping[str, object]) -> counted.Counted:
    """One result's counted calls, with their places where its counts record gives a whole
    number from 1 for each (a run stored before places were kept gives none; anything else is
    not read as places, so the calls are judged as a whole)."""
    given = jf.mapping(r.get("counts")).get("positions")
    places = given if isinstance(given, list) else []
    whole = tuple(round(v) for v in values)
    usable = len(places) == len(whole) and all(
        isinstance(p, int) and not isinstance(p, bool) and p >= 1 for p in places
    )
    return counted.Counted(whole, (), positions=tuple(places) if usable else ())


def recorded_before(
    doc: Mapping[str, object], points: Sequence[Mapping[str, object]]
) -> dict[str, dict[str, tuple[object, str]]]:
    """Per verdict judged beside (core/sides/: by its field), for each test of ``doc``: the
    record of the newest run in ``points`` (oldest first, fetched ``with_sides``) of the same
    hardware class that kept one, read back by its side, and which run that was (``the stored
    run of 0123abcd (2026-11-28T10:00)``). Raises ValueError naming the stored run whose record
    is not one."""
    machine = jf.mapping(doc.get("machine"))
    hw = machine.get("hardware_class")
    out: dict[str, dict[str, tuple[object, str]]] = {side.field: {} for side in SIDES}
    for p in points:
        if p.get("hardware_class") != hw:
            continue
        commit = str(p.get("commit") or "no commit")[:10]
        name = f"the stored run of {commit} ({str(p.get('created') or '')[:16]})"
        for side in SIDES:
            kept = p.get(side.field)
            if kept is not None:
                where = f"stored run {p.get('run')}: {side.field}"
                out[side.field][str(p["test"])] = (side.read_recorded(kept, where), name)
    return out
