"""Which counted benchmarks are counted again in fresh processes, and what their processes'
counts make together. A benchmark that runs interpreted code may count differently in each
counted process, since CPython's type attribute cache follows the process's memory layout
(core/counting/counts.LAYOUT_SHARE): one process cannot stand for every other. So such a
benchmark is counted in counts.RECORDED_PROCESSES processes when its baseline is recorded
(:func:`to_record_again`), and where one process's counts call a change, in one more before
the change is called (:func:`to_judge_again`, :func:`to_compare_again`): the processes' counts
are pooled (:func:`merge`), so a change must stand beyond how far they moved apart.
counting.count_pass starts the processes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from pytest_burnperf.core.counting import counts, counts_key
from pytest_burnperf.core.counting.counts import Counted
from pytest_burnperf.core.judging.verdict import Policy, Verdict
from pytest_burnperf.instruments import instruction_counts
from pytest_burnperf.plugin.session.perf_state import PerfState, case_of, module_and_key
from pytest_burnperf.runs.counted import CountedRun
from pytest_burnperf.storage.baselines import BaselineError


def stored_verdict(
    state: PerfState, item: pytest.Item, got: Counted, alpha_each: float
) -> Verdict | None:
    """``item``'s counts ``got`` against its stored counts baseline, as its test will judge
    them (its threshold; a pytest-benchmark test under the key of the device its call chose);
    None where it is no benchmark with a device or its baseline file cannot be read (its own
    test reports the file)."""
    c = state.counting
    case = case_of(item)
    if c is None or case is None or case.entry is None or case.entry.device is None:
        return None
    module, key = module_and_key(item, state.run.rootpath)
    try:
        entry = c.store().baseline(module, key)
    except BaselineError:
        return None
    counted_key = c.run.keys.get(item.nodeid, {}) if c.run is not None else {}
    device: Mapping[str, object] = case.entry.device.fingerprint()
    if case.benchmark_style:  # its call chose the device it was counted on (perf_base)
        device = instruction_counts.counted_on(device, counted_key)
    return instruction_counts.against_baseline(
        got,
        entry,
        {**c.key_base(), **counted_key},
        alpha_each=alpha_each,
        device=device,
        threshold=state.run.settings_for(case.spec).chosen_threshold,
    )


def _alpha_each(state: PerfState, item: pytest.Item) -> float:
    """The alpha ``item``'s test judges its counts at."""
    case = case_of(item)
    assert case is not None
    s = state.run.settings_for(case.spec)
    policy = Policy(alpha=s.alpha, threshold=s.threshold, comparisons=state.findings.comparisons)
    return policy.alpha_each


def to_count_again(
    state: PerfState, items: Sequence[pytest.Item], wanted: Sequence[str], in_sides: bool
) -> tuple[list[str], int, str]:
    """After the first counted processes: (the benchmarks among ``wanted`` to count again, in
    how many more processes each, why in a few words). ``in_sides``: a same-session
    comparison, whose environments' runs are in Counting.sides."""
    c, plan = state.counting, state.run.plan
    assert c is not None
    if in_sides:
        ref = None if plan is None else c.sides.get(plan.reference)
        cur = None if plan is None else c.sides.get(plan.candidate)
        if ref is None or cur is None:
            return [], 0, ""
        return to_compare_again(state, items, ref, cur), 1, "their counts differ"
    assert c.run is not None
    if state.run.mode.records:
        return to_record_again(c.run, wanted), counts.RECORDED_PROCESSES - 1, "recording"
    return to_judge_again(state, items, c.run), 1, "their counts changed"


def to_record_again(run: CountedRun, wanted: Sequence[str]) -> list[str]:
    """Recording: those among ``wanted`` whose counts may follow the process's memory layout
    (counts.may_follow_layout), in their order."""
    return [n for n in wanted if (got := run.counts.get(n)) and counts.may_follow_layout(got)]


def to_judge_again(state: PerfState, items: Sequence[pytest.Item], run: CountedRun) -> list[str]:
    """Against stored baselines: those among ``items`` whose one process's counts call a change
    that another process may not show (counts.needs_another_process)."""
    again = []
    for item in items:
        got = run.counts.get(item.nodeid)
        if got is None:
            continue
        verdict = stored_verdict(state, item, got, _alpha_each(state, item))
        if verdict is not None and counts.needs_another_process(verdict, got):
            again.append(item.nodeid)
    return again


def to_compare_again(
    state: PerfState, items: Sequence[pytest.Item], reference: CountedRun, candidate: CountedRun
) -> list[str]:
    """A same-session comparison: those among ``items`` whose two environments' counts, one
    process each, call a change that other processes may not show; both are counted again."""
    again = []
    for item in items:
        ref, cur = reference.counts.get(item.nodeid), candidate.counts.get(item.nodeid)
        case = case_of(item)
        if ref is None or cur is None or case is None:
            continue
        verdict = instruction_counts.between(
            ref,
            cur,
            alpha_each=_alpha_each(state, item),
            threshold=state.run.settings_for(case.spec).chosen_threshold,
        )
        if counts.needs_another_process(verdict, ref) or counts.needs_another_process(verdict, cur):
            again.append(item.nodeid)
    return again


def merge(
    first: CountedRun,
    again: Sequence[CountedRun],
    wanted: Sequence[str],
    base: Mapping[str, object],
) -> list[str]:
    """``first``'s counts of ``wanted`` pooled with those the processes of ``again`` counted
    (counts.pooled); a benchmark another process could not count, or counted under another
    key (``base``, the run's part of every key, with each process's own part), keeps
    ``first``'s counts, with a note of why. Returns the notes."""
    notes: list[str] = []
    for nodeid in wanted:
        got = first.counts.get(nodeid)
        if got is None:
            continue
        parts = [got]
        for run in again:
            other = run.counts.get(nodeid)
            why = run.missing.get(nodeid) or run.timed_instead.get(nodeid) or "not counted"
            # keys compared as a judgement compares them (a library only one of the processes
            # loaded is no difference: processes of other shares load other devices)
            differs = counts_key.key_difference(
                {**base, **first.keys.get(nodeid, {})}, {**base, **run.keys.get(nodeid, {})}
            )
            if other is not None and differs:
                other, why = None, f"its counts key differed: {differs}"
            if other is None:
                notes.append(
                    f"{nodeid}: counted again in a fresh process, which failed to count it "
                    f"({why}): its counts rest on {len(parts)} process(es), whose memory "
                    "layout may move them"
                )
                continue
            parts.append(other)
        first.counts[nodeid] = counts.pooled(parts)
    return [*(p for run in again for p in run.problems), *notes]
