"""``burnperf compare`` (two ``--perf-json`` files) and ``burnperf compare-history`` (a results
file against the last N stored runs): the plugin's gate on files, exit 1 on a regression of
time, counts or memory per call (core/judging/outcome's rule)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_burnperf.cli.arguments import (
    EXIT_OK,
    EXIT_REGRESSED,
    InputError,
    judging_args,
    open_store,
    positive,
    results_doc,
    store_arg,
    time_threshold,
)
from pytest_burnperf.core import measures
from pytest_burnperf.core.counting import counts as counted
from pytest_burnperf.core.counting import paired_counts
from pytest_burnperf.core.counting.counts_key import key_difference
from pytest_burnperf.core.judging.abstention import Cause
from pytest_burnperf.core.judging.outcome import side_fails
from pytest_burnperf.core.judging.verdict import (
    INCOMPARABLE,
    REGRESSED,
    Policy,
    Verdict,
    failure_message,
    judge,
    not_comparable,
)
from pytest_burnperf.core.sides.side_registry import SIDES
from pytest_burnperf.report.results_json import (
    CountsRecord,
    read_counts,
    read_results,
    read_sides,
    result_timers,
)
from pytest_burnperf.storage.history import redact
from pytest_burnperf.storage.history.query import against_history, recorded_before
from pytest_burnperf.storage.history.stored_rows import run_key
from pytest_burnperf.storage.jsonfile import FileFormatError


def _load_results(path: Path) -> dict[str, list[list[float]]]:

    try:
        return read_results(path)
    except FileFormatError as exc:
        raise InputError(str(exc)) from None


def _load_counts(path: Path) -> dict[str, CountsRecord]:

    try:
        return read_counts(path)
    except FileFormatError as exc:
        raise InputError(str(exc)) from None


def _load_sides(path: Path) -> dict[str, dict[str, object]]:

    try:
        return read_sides(path)
    except FileFormatError as exc:
        raise InputError(str(exc)) from None


def _counts_verdict(
    old: list[list[float]] | None,
    new: list[list[float]],
    old_counts: CountsRecord | None,
    new_counts: CountsRecord | None,
    old_counted: bool,
    args: argparse.Namespace,
) -> Verdict:
    """A counted benchmark judged as the plugin judges counts (core/counting/counts.judge_counts:
    its minimum effect, the interpreter's share), where both files counted it under one key (a
    file without the counts' record, one made by hand, is compared without its key)."""
    values = [v for run in new for v in run]
    if old is None:
        return counted.judge_counts(None, values, alpha_each=args.alpha)
    base = [v for run in old for v in run]
    if not old_counted:
        return not_comparable(
            values, base, f"{args.old} timed it, {args.new} counted it", Cause.COUNTS_KEY
        )
    if old_counts is not None and new_counts is not None:
        diff = key_difference(old_counts.key, new_counts.key)
        if diff:
            return not_comparable(values, base, diff, Cause.COUNTS_KEY)
    shares = [c.interpreter for c in (old_counts, new_counts) if c is not None]
    # each call against the other file's call at the same place, where both say the places
    return paired_counts.judge_counted(
        _counted(base, old_counts),
        _counted(values, new_counts),
        alpha_each=args.alpha,
        interpreter=max(shares, default=0.0),
        threshold=args.threshold,
    )


def _counted(values: list[float], record: CountsRecord | None) -> counted.Counted:
    """One file's counted calls, with their places where the file gives one for each."""
    places = () if record is None or len(record.positions) != len(values) else record.positions
    return counted.Counted(tuple(round(v) for v in values), (), positions=places)


class _Beside:
    """The verdicts judged beside (core/sides/side_registry.SIDES) of one comparison: each
    benchmark's judged against the other run's record, their statuses kept for the summary."""

    def __init__(self, now: dict[str, dict[str, object]], threshold: float | None) -> None:
        self.now, self.threshold = now, threshold
        self.statuses: dict[str, list[str]] = {side.field: [] for side in SIDES}

    def judge(self, test: str, before: Mapping[str, tuple[object | None, str]], name: str) -> bool:
        """Judge ``test``'s record of each side against ``before[side.field]`` (the other run's
        record, or None, and that run's name; where missing: none, in the run ``name``); print
        what a verdict has to say (a failure, a change worth showing) under the benchmark's
        line; whether one fails."""
        failed = False
        for side in SIDES:
            now = self.now.get(side.field, {}).get(test)
            if now is None:
                continue
            was, said = before.get(side.field, (None, name))
            verdict = side.rejudge(now, was, self.threshold, said)
            self.statuses[side.field].append(verdict.status)
            if side_fails(side.field, verdict):
                print(f"  {test}: {verdict.line()}")
                failed = True
            elif verdict.status in side.shown:
                print(f"  {verdict.line()}")
        return failed

    def summaries(self) -> list[str]:
        """Each side's line on the comparison, where any benchmark had that side."""
        return [s for side in SIDES if (s := side.summary(self.statuses[side.field]))]


def cmd_compare(args: argparse.Namespace) -> int:

    old = _load_results(args.old)
    new = _load_results(args.new)
    old_sides = _load_sides(args.old)
    beside = _Beside(_load_sides(args.new), args.threshold)
    timers = result_timers(args.new)
    policy = Policy(alpha=args.alpha, threshold=time_threshold(args))
    regressed = 0
    old_counts, new_counts = _load_counts(args.old), _load_counts(args.new)
    old_timers = result_timers(args.old)
    for test in sorted(new):
        timer = timers.get(test, "host")  # a counted result's values are instructions
        shown = measures.of_field(timer)
        # each file's median in its own measure: one may have counted what the other timed
        before = measures.of_field(old_timers.get(test, "host"))
        is_counted = shown.counted
        if is_counted:  # judged by the counts rule, as the run judged it
            v = _counts_verdict(
                old.get(test),
                new[test],
                old_counts.get(test),
                new_counts.get(test),
                before.counted,
                args,
            )
        elif test in old and before.counted:
            v = not_comparable(
                [x for run in new[test] for x in run],
                [x for run in old[test] for x in run],
                f"{args.old} counted it, {args.new} timed it",
                Cause.COUNTS_KEY,
            )
        else:
            v = judge(old.get(test), new[test], policy)
        change = "-" if v.change_pct is None else f"{v.change_pct:+.1f}%"
        if is_counted and v.change_pct is not None:
            change = f"{v.change_pct:+.2f}%"
        base = "-" if v.baseline_median is None else before.format(v.baseline_median)
        now = shown.format(v.current_median)
        print(f"{v.status:<12} {change:>8} {base:>10} -> {now:>10}  {test}")
        failed = v.status == REGRESSED
        if v.status == INCOMPARABLE and v.reason:
            print(f"  {v.reason}")  # why the counts do not compare
        if failed:
            said = (
                counted.counts_failure(test, v) if is_counted else failure_message(test, v, policy)
            )
            print(f"  {said}")
        then = {f: (records.get(test), str(args.old)) for f, records in old_sides.items()}
        failed = beside.judge(test, then, str(args.old)) or failed
        regressed += failed
    for summary in beside.summaries():
        print(summary)
    return EXIT_REGRESSED if regressed else EXIT_OK


def _others(points: list[dict[str, object]], own: str, last: int) -> list[dict[str, object]]:
    """``points`` (oldest first) less those of the run whose key is ``own``, the newest
    ``last`` of each test and hardware class."""
    kept: dict[tuple[object, object], list[dict[str, object]]] = {}
    for p in points:
        if p.get("run_key") != own:
            kept.setdefault((p.get("test"), p.get("hardware_class")), []).append(p)
    newest = {id(p) for series in kept.values() for p in series[-last:]}
    return [p for p in points if id(p) in newest]


def cmd_compare_history(args: argparse.Namespace) -> int:

    doc = results_doc(args.new)
    beside = _Beside(_load_sides(args.new), args.threshold)
    with open_store(args) as store:
        # one more than asked: the run judged may be stored itself (--perf-store), and is no
        # baseline of its own (its rounds would count twice, its memory be judged against itself)
        fetched = store.points(
            last=args.last + 1, branch=args.branch, with_runs=True, with_sides=True
        )
        own = run_key(doc)
        points = _others(fetched, own, args.last)
        if any(p.get("run_key") == own for p in fetched):
            print(f"{args.new} is stored itself: judged against the other stored runs")
        try:
            stored = recorded_before(doc, points)
        except ValueError as exc:
            raise InputError(f"{redact(store.url)}: {exc}") from None
    judged = against_history(
        doc,
        points,
        alpha=args.alpha,
        threshold=time_threshold(args),
        threshold_given=args.threshold,
    )
    timers = result_timers(args.new)
    policy = Policy(
        alpha=args.alpha, threshold=time_threshold(args), comparisons=max(1, len(judged))
    )
    regressed = 0
    where = f"the last {args.last} runs" + (f" on {args.branch}" if args.branch else "")
    for test, v, used in judged:
        shown = measures.of_field(timers.get(test, "host"))
        change = "-" if v.change_pct is None else f"{v.change_pct:+.1f}%"
        if shown.counted and v.change_pct is not None:
            change = f"{v.change_pct:+.2f}%"
        base = "-" if v.baseline_median is None else shown.format(v.baseline_median)
        print(
            f"{v.status:<12} {change:>8} {base:>10} -> {shown.format(v.current_median):>10}  "
            f"{test}  ({used} stored runs)"
        )
        failed = v.status == REGRESSED
        if v.status == INCOMPARABLE and v.reason:
            print(f"  {v.reason}")
        if failed:
            said = (
                counted.counts_failure(test, v)
                if shown.counted
                else failure_message(test, v, policy)
            )
            print(f"  {said}")
        then = {f: records[test] for f, records in stored.items() if test in records}
        failed = beside.judge(test, then, f"{where} of the same hardware class") or failed
        regressed += failed
    print(f"judged against {where} of the same hardware class")
    for summary in beside.summaries():
        print(f"{summary} (each against the newest stored run that tracked it)")
    return EXIT_REGRESSED if regressed else EXIT_OK


def register(sub: Any) -> None:
    cmp_ = sub.add_parser("compare", help="judge two --perf-json result files")
    cmp_.add_argument("old", type=Path, help="results recorded before the change")
    cmp_.add_argument("new", type=Path, help="results recorded after the change")
    judging_args(cmp_, "significance level")
    cmp_.set_defaults(func=cmd_compare)
    ch = sub.add_parser(
        "compare-history", help="judge a --perf-json file against the last N stored runs"
    )
    ch.add_argument("new", type=Path, help="the results to judge")
    ch.add_argument("--last", type=positive, default=20, help="stored runs per test. Default: 20")
    ch.add_argument("--branch", default=None, help="stored runs of this branch only (e.g. main)")
    judging_args(ch, "family-wise significance level")
    store_arg(ch)
    ch.set_defaults(func=cmd_compare_history)
