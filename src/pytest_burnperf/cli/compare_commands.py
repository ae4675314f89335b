"""``burnperf compare`` (two ``--perf-json`` files) and ``burnperf compare-history`` (a results
file against the last N stored runs): the plugin's gate on files, exit 1 on a regression of
time, counts or memory per call (core/judging/outcome's rule)."""

from __future__ import annotations

import argparse
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
from pytest_burnperf.core.memory.allocations import AllocationsError
from pytest_burnperf.core.memory.memory_side import MEMORY
from pytest_burnperf.core.memory.memory_verdict import MemoryVerdict, memory_summary
from pytest_burnperf.core.memory.recorded_memory import RecordedMemory, judge_recorded
from pytest_burnperf.report.results_json import (
    CountsRecord,
    read_counts,
    read_memory,
    read_results,
    result_timers,
)
from pytest_burnperf.storage.history import redact
from pytest_burnperf.storage.history.query import against_history, memory_before
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


def _load_memory(path: Path) -> dict[str, RecordedMemory]:

    try:
        return read_memory(path)
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
    return counted.judge_counts(
        base,
        values,
        alpha_each=args.alpha,
        interpreter=max(shares, default=0.0),
        threshold=args.threshold,
    )


def _memory_said(test: str, verdict: MemoryVerdict) -> bool:
    """Print what a benchmark's memory verdict has to say (a failure, an improvement) under its
    line; whether it fails."""
    if side_fails(MEMORY.field, verdict):
        print(f"  {test}: {verdict.line()}")
        return True
    if verdict.status == "improved":
        print(f"  {verdict.line()}")
    return False


def cmd_compare(args: argparse.Namespace) -> int:

    old = _load_results(args.old)
    new = _load_results(args.new)
    old_memory, new_memory = _load_memory(args.old), _load_memory(args.new)
    timers = result_timers(args.new)
    policy = Policy(alpha=args.alpha, threshold=time_threshold(args))
    regressed = 0
    memory: list[str] = []
    old_counts, new_counts = _load_counts(args.old), _load_counts(args.new)
    old_timers = result_timers(args.old)
    for test in sorted(new):
        timer = timers.get(test, "host")  # a counted result's values are instructions
        shown = measures.of_field(timer)
        is_counted = shown.counted
        if is_counted:  # judged by the counts rule, as the run judged it
            v = _counts_verdict(
                old.get(test),
                new[test],
                old_counts.get(test),
                new_counts.get(test),
                measures.of_field(old_timers.get(test, "host")).counted,
                args,
            )
        elif test in old and measures.of_field(old_timers.get(test, "host")).counted:
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
        base = "-" if v.baseline_median is None else shown.format(v.baseline_median)
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
        if test in new_memory:
            mv = judge_recorded(
                new_memory[test],
                old_memory.get(test),
                threshold=args.threshold,
                before_name=str(args.old),
            )
            memory.append(mv.status)
            failed = _memory_said(test, mv) or failed
        regressed += failed
    summary = memory_summary(memory)
    if summary:
        print(summary)
    return EXIT_REGRESSED if regressed else EXIT_OK


def cmd_compare_history(args: argparse.Namespace) -> int:

    doc = results_doc(args.new)
    now_memory = _load_memory(args.new)
    with open_store(args) as store:
        points = store.points(last=args.last, branch=args.branch, with_runs=True, with_memory=True)
        try:
            before = memory_before(doc, points)
        except AllocationsError as exc:
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
    memory: list[str] = []
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
        if test in now_memory:
            was, name = before.get(test, (None, f"{where} of the same hardware class"))
            mv = judge_recorded(now_memory[test], was, threshold=args.threshold, before_name=name)
            memory.append(mv.status)
            failed = _memory_said(test, mv) or failed
        regressed += failed
    print(f"judged against {where} of the same hardware class")
    summary = memory_summary(memory)
    if summary:
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
