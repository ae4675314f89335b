"""The verdict from counts (``--perf-measure counts|both``): a benchmark's counted calls judged
against its counts baseline or, in a same-session comparison, against the other environment's
counts; with ``both``, the time verdict beside it and a note where the two disagree."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import pytest

from pytest_burnperf.core import measures
from pytest_burnperf.core.clocks import Sample
from pytest_burnperf.core.counting import counted_calls, counts
from pytest_burnperf.core.counting.counts import Counted
from pytest_burnperf.core.counting.counts_left_to_clock import left_to_clock
from pytest_burnperf.core.judging.verdict import (
    IMPROVED,
    INCOMPARABLE,
    INCONCLUSIVE,
    NO_BASELINE,
    REGRESSED,
    UNCHANGED,
    Policy,
    Verdict,
    failure_message,
    format_ratio,
)
from pytest_burnperf.core.options import command_args
from pytest_burnperf.core.text import escape_strings, redact
from pytest_burnperf.instruments import instruction_counts
from pytest_burnperf.instruments.counts_run import Counting
from pytest_burnperf.plugin.measuring import side_processes
from pytest_burnperf.plugin.measuring.counts import counting, recounting
from pytest_burnperf.plugin.measuring.result_record import Benchmarked, make_result, settle
from pytest_burnperf.plugin.session.perf_state import PerfState
from pytest_burnperf.storage.baselines import BaselineError

if TYPE_CHECKING:
    from pytest_burnperf.core.options.settings import Settings
    from pytest_burnperf.core.records.results import Result


def judge(
    perf: Benchmarked,
    timed: Result | None,
    profile: Callable[[Result], Result] | None = None,
) -> Result:
    """The counts verdict of ``perf``'s benchmark (``timed``: its time result under
    --perf-measure both), built by result_record.make_result, kept and settled by
    result_record.settle (the session's results, JUnit properties, core/judging/outcome's rule): a
    counts regression fails the test, and so, where the counted process did not count it, does
    a time regression. ``profile`` adds --perf-profile's profile to the result
    (measuring/profile_rerun.profiled)."""
    __tracebackhide__ = True

    state = perf.state
    c = state.counts()
    node = perf.item.nodeid
    run = c.run
    got = None if run is None else run.counts.get(node)
    if got is None:
        why = "the counted process did not run" if run is None else run.missing.get(node, "")
        if timed is None:
            pytest.fail(
                f"{node}: not judged: not counted ({why or 'no counts'}); see the run's notes",
                pytrace=False,
            )
        return _judged_by_time(perf, timed, f"counts: not counted ({why}); time judged")
    key = {**c.key_base(), **(run.keys.get(node, {}) if run is not None else {})}
    problem = None
    try:
        entry = c.store().baseline(perf.module, perf.key)
    except BaselineError as exc:
        problem = exc
    if problem is not None:
        pytest.fail(
            f"{node}: {problem}. The file was left untouched; fix it, or delete it and record "
            "new counts baselines with --perf-update",
            pytrace=False,
        )
    s = perf.settings
    policy = Policy(alpha=s.alpha, threshold=s.threshold, comparisons=state.findings.comparisons)
    values = [float(v) for v in got.values()]
    verdict = instruction_counts.against_baseline(
        got,
        entry,
        key,
        alpha_each=policy.alpha_each,
        device=perf.device.fingerprint(),
        threshold=s.chosen_threshold,
    )
    base_values = instruction_counts.baseline_counts(entry)
    beside = counting.time_beside(state, perf.device.kind, node)
    # --perf-measure both: where counts cannot tell a change of the threshold's size apart,
    # the time from its full rounds judges
    full_rounds = timed is not None and timed.verdict.ratio is not None and not beside
    if full_rounds and timed is not None and counts.undecidable(verdict):
        note = f"counts not judged: {counts.undecided_text(verdict)}; judged by time"
        seen = left_to_clock(got, verdict, key)
        return _judged_by_time(perf, replace(timed, counts_not_judged=seen), note)
    verdict = time_moved_more(verdict, timed, beside=beside)
    verdict = replace(
        verdict, notes=(*verdict.notes, *disagreement_notes(verdict, timed, beside=beside))
    )
    sample = Sample(
        values=tuple(values),
        loops=1,
        warmup_calls=1 + counted_calls.WARM_CALLS,
        timer=counts.COUNTS_TIMER,
    )
    result = make_result(
        perf,
        fingerprint=escape_strings(perf.device.fingerprint()),
        sample=sample,
        verdict=verdict,
        runs=[values],
        baseline=entry,
        baseline_runs=() if base_values is None else (tuple(base_values),),
        host=() if timed is None else timed.host,
        measure=measures.COUNTS.name,
        counted=got,
        counts_key=key,
        time=timed,
    )
    if profile is not None:
        result = profile(result)
    settle(
        state,
        perf.item,
        perf.key,
        result,
        lambda: counts.counts_failure(perf.key, result.verdict),
    )
    return result


def _judged_by_time(perf: Benchmarked, timed: Result, note: str) -> Result:
    """The time result judges a benchmark counts did not judge (``note`` says why), settled
    as any timed one: its regression fails the test."""
    __tracebackhide__ = True
    state = perf.state
    result = replace(timed, verdict=replace(timed.verdict, notes=(*timed.verdict.notes, note)))
    policy = Policy(
        alpha=perf.settings.alpha,
        threshold=perf.settings.threshold,
        comparisons=state.findings.comparisons,
    )
    verdict = result.verdict
    settle(state, perf.item, perf.key, result, lambda: failure_message(perf.key, verdict, policy))
    return result


def leave_to_the_clock(
    state: PerfState, items: list[pytest.Item], *, same_session: bool
) -> list[str]:
    """--perf-measure auto, after the counted pass: the benchmarks among ``items`` whose counts
    baseline was counted under another key (another Python, C library, library version or
    simulated CPU) cannot be judged by it, so the clock judges them instead
    (Counting.incomparable): compared in the session (``same_session``), or against their time
    baseline. Those whose key showed the difference before counting were not counted
    (counting._other_key); the rest are found here from their counts. So is one the counted
    process could not count (it failed or was skipped there): the clock judges it too, with why
    (CountedRun.timed_instead). One without a time baseline stays judged by counts
    (``incomparable``, or failed as not counted, with the advice). So is one whose counts
    cannot tell a change of the threshold's size apart (counts.undecidable: a call that small,
    or that spread; Counting.undecided): against its time baseline where it has one, or in the
    session. Returns the benchmarks of another key judged by the clock so."""
    c: Counting | None = state.counting
    if c is None or not c.measure.per_benchmark:
        return []
    for item in items if c.run is not None else ():
        node = item.nodeid
        if not same_session and node not in c.time_baselines:
            continue
        if c.run is not None and node in c.run.missing:
            c.run.timed_instead[node] = c.run.missing.pop(node)
            continue
        got = c.run.counts.get(node) if c.run is not None else None
        # the status only: incomparable, or undecidable at its threshold
        verdict = None if got is None else recounting.stored_verdict(state, item, got, 0.05)
        if verdict is None:
            continue
        if verdict.status == INCOMPARABLE:
            why = verdict.reason.removesuffix(instruction_counts.RECORD_AGAIN)
            c.incomparable[node] = why or "its counts baseline was counted otherwise"
        elif counts.undecidable(verdict) and got is not None:
            c.undecided[node] = counts.undecided_text(verdict)
            key = {**c.key_base(), **(c.run.keys.get(node, {}) if c.run is not None else {})}
            c.undecided_counts[node] = left_to_clock(got, verdict, key)
    moved = [item.nodeid for item in items if item.nodeid in c.incomparable]
    if moved and not same_session:  # in the session they are counted in each side first
        state.notes.append(another_key_note(state, moved, same_session=False))
    small = [item.nodeid for item in items if item.nodeid in c.undecided]
    if small:
        against = "in this session" if same_session else "against their time baselines"
        state.notes.append(
            f"{len(small)} counted CPU benchmark(s) judged by time {against}: their counts "
            "cannot tell a change of the threshold's size apart (each one's note says why; the "
            f"first: {c.undecided[small[0]]})"
        )
    return moved


def another_key_note(state: PerfState, moved: list[str], *, same_session: bool) -> str:
    """The summary's line on the benchmarks judged by time because their counts baselines were
    counted under another key: how many, the first difference, and both ways back to counts
    (a run that matches the key, or counts baselines recorded for this one), the command
    runnable as printed (the run's selection, without what it compared with)."""
    c = state.counting
    assert c is not None
    against = "in this session" if same_session else "against their time baselines"
    args = [redact(a) for a in command_args.recording_args(state.run.invocation)]
    record = shlex.join(["pytest", "--perf", "--perf-update", *args])
    return (
        f"{len(moved)} CPU benchmark(s) with counts baselines judged by time {against}: their "
        f"counts baselines were counted under another key ({c.incomparable[moved[0]]}); counts "
        "judge them again in an environment that matches that key, or, where this environment "
        f"is the one to keep, after `{record}` records them again (for every machine that "
        "reads these baselines)"
    )


def time_moved_more(verdict: Verdict, timed: Result | None, *, beside: bool) -> Verdict:
    """A counts ``unchanged`` whose reason says its change lay within its own minimum effect,
    with the time's change added where the clock moved more than that effect and than the
    counts: what the counts could not see is said in the line a reader sees."""
    t = None if timed is None else timed.verdict
    if (
        verdict.status != UNCHANGED
        or not verdict.reason
        or verdict.ratio is None
        or t is None
        or t.ratio is None
        or abs(t.ratio - 1) <= max(abs(verdict.ratio - 1), verdict.effect or 0.0)
    ):
        return verdict
    how = "one round beside, not judged" if beside else f"{t.status}"
    return replace(verdict, reason=f"{verdict.reason}; time {format_ratio(t)} ({how}) moved more")


def disagreement_notes(
    verdict: Verdict, timed: Result | None, *, beside: bool = False
) -> list[str]:
    """Which measure judged and why, and where the clock and the counts disagree. ``beside``:
    the time is one round in this process (--perf-measure auto), shown beside, never judged, so
    its own advice (rounds, samples) is left out."""
    if timed is None:
        return []
    t = timed.verdict
    if beside and t.status == NO_BASELINE:  # timed for its rates alone (time_for_rates)
        return []
    if beside and t.ratio is None:
        return [f"judged by counts; time beside: {t.status}"]
    if t.ratio is None:
        return [f"judged by counts; time {t.status} ({t.reason or 'no comparison'})"]
    if beside:
        time_text = f"time {format_ratio(t)} (one round beside, not judged)"
    else:
        time_text = f"time {format_ratio(t)} {t.status}"
    counts_text = (
        "-" if verdict.ratio is None else f"{100 * (verdict.ratio - 1):+.2f}% {verdict.status}"
    )
    if t.status == REGRESSED and verdict.status == UNCHANGED:
        return [
            f"{time_text} but counts unchanged ({counts_text}): the same work took longer "
            "(threads, memory, waiting on sleeps, I/O or locks, or the host); counts judged"
        ]
    if t.status == REGRESSED and verdict.status == IMPROVED:
        return [
            f"{time_text} but counts improved ({counts_text}): less work that took longer "
            "(less of it in parallel, memory, waiting, or the host); counts judged"
        ]
    if verdict.status == REGRESSED and t.status == IMPROVED:
        return [
            f"counts {counts_text} but {time_text}: more work that finished sooner (more of "
            "it in parallel, or the host); counts judged"
        ]
    if verdict.status == REGRESSED and t.status in (UNCHANGED, INCONCLUSIVE):
        if verdict.ratio is not None and t.ratio >= verdict.ratio:
            return [  # the clock moved as far or further, and could not judge it
                f"counts {counts_text}; {time_text}: the clock moved as much or more, within "
                "its noise floor; counts judged"
            ]
        return [
            f"counts {counts_text} but {time_text}: more work that the clock does not show "
            "(within its noise, or hidden by other threads)"
        ]
    if beside:
        return [f"judged by counts; {time_text}"]
    why = "the host cannot disturb them" if t.status != INCONCLUSIVE else f"time: {t.reason}"
    return [f"judged by counts ({why}); {time_text}"]


def judge_pair(perf: Benchmarked, timed: Result | None) -> Result:
    """The counts verdict of a same-session comparison (the ComparePerf fixture): the
    candidate environment's counts against the reference's, both counted in this run."""
    __tracebackhide__ = True
    state = perf.state
    plan = state.run.plan
    assert plan is not None
    c = state.counts()
    node = perf.item.nodeid
    ref_run, cur_run = c.sides.get(plan.reference), c.sides.get(plan.candidate)
    ref = None if ref_run is None else ref_run.counts.get(node)
    cur = None if cur_run is None else cur_run.counts.get(node)
    if ref is None or cur is None:
        why = "; ".join(
            f"{label}: {r.missing.get(node) or 'not counted'}"
            for label, r in ((plan.reference, ref_run), (plan.candidate, cur_run))
            if r is not None and node not in r.counts
        )
        pytest.fail(f"{node}: counts not compared with {plan.reference}: {why}", pytrace=False)
    verdict = _pair_verdict(state, perf.settings, ref, cur)
    base = [float(v) for v in ref.values()]
    values = [float(v) for v in cur.values()]
    cycles = counts.cycles_note(
        [float(v) for v in ref.cycles], [float(v) for v in cur.cycles], verdict
    )
    notes = [*([cycles] if cycles else []), *disagreement_notes(verdict, timed)]
    verdict = replace(verdict, notes=(*verdict.notes, *notes))
    result = make_result(
        perf,
        fingerprint=escape_strings(perf.device.fingerprint()),
        sample=Sample(
            values=tuple(values),
            loops=1,
            warmup_calls=1 + counted_calls.WARM_CALLS,
            timer=counts.COUNTS_TIMER,
        ),
        verdict=verdict,
        runs=[values],
        baseline_runs=(tuple(base),),
        host=() if timed is None else timed.host,
        versions=() if timed is None else timed.versions,
        reference=plan.reference,
        candidate=plan.candidate,
        measure=measures.COUNTS.name,
        counted=cur,
        counts_key={**c.key_base(), **(cur_run.keys.get(node, {}) if cur_run else {})},
        time=timed,
    )
    result = side_processes.attach(state, result)
    result = side_processes.attach_tracked(state, result, perf.settings.chosen_threshold)
    labels = (plan.reference, plan.candidate)
    settle(
        state,
        perf.item,
        perf.key,
        result,
        lambda: counts.counts_failure(perf.key, verdict, labels=labels),
    )
    return result


def counts_pair_verdict(state: PerfState, settings: Settings, node: str) -> Verdict | None:
    """The counts verdict of ``node`` in a same-session comparison (both environments
    counted), or None where one of them has no counts of it."""
    plan = state.run.plan
    assert plan is not None
    c = state.counts()
    ref_run, cur_run = c.sides.get(plan.reference), c.sides.get(plan.candidate)
    ref = None if ref_run is None else ref_run.counts.get(node)
    cur = None if cur_run is None else cur_run.counts.get(node)
    if ref is None or cur is None:
        return None
    return _pair_verdict(state, settings, ref, cur)


def keep_pair_left_to_clock(state: PerfState, node: str, pair: Verdict) -> None:
    """Keep what the candidate's counts of ``node`` measured where their ``pair`` verdict
    could not decide and the session's time judges instead (counts_not_judged)."""
    plan, c = state.run.plan, state.counts()
    cur_run = None if plan is None else c.sides.get(plan.candidate)
    cur = None if cur_run is None else cur_run.counts.get(node)
    if cur is not None:
        c.undecided_counts[node] = left_to_clock(cur, pair, None)


def _pair_verdict(state: PerfState, settings: Settings, ref: Counted, cur: Counted) -> Verdict:
    policy = Policy(
        alpha=settings.alpha, threshold=settings.threshold, comparisons=state.findings.comparisons
    )
    return instruction_counts.between(
        ref, cur, alpha_each=policy.alpha_each, threshold=settings.chosen_threshold
    )
