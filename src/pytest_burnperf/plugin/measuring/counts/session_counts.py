"""--perf-measure auto in a same-session comparison: which CPU benchmarks are counted in every
environment and judged by counts there, instead of timed beside the reference.

Two cases: ``--perf-against auto`` that chose a session, where the committed counts baselines
of this run's key judge what they hold and those of another key (another numpy, Python...) are
counted in each environment; and a named ``--perf-against REF``, where every CPU benchmark is
counted in each environment: one with a counts baseline (of any key: it was countable when
recorded) whatever the count limit, the others where their calls are under it (their basic
blocks decide, the same in every environment and on every host). The rest, one an
environment could not count, and one whose counts cannot tell a change of the threshold's size
apart (a call that small, or that spread: core/counting/counts.undecidable), are timed in the
session."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from pytest_burnperf.core.counting import counts
from pytest_burnperf.core.counting.counts_left_to_clock import left_to_clock
from pytest_burnperf.instruments import instruction_counts
from pytest_burnperf.plugin.measuring.counts.counts_judging import another_key_note
from pytest_burnperf.plugin.session.perf_state import PerfState, case_of, module_and_key
from pytest_burnperf.runs.counted import CountedRun
from pytest_burnperf.storage.baselines import BaselineError


def every_countable(state: PerfState, items: list[pytest.Item]) -> tuple[list[str], list[str]]:
    """A named --perf-against REF: (the CPU benchmarks among ``items``, counted in each
    environment; those of them with a counts baseline, counted whatever the count limit)."""
    c = state.counting
    assert c is not None
    store = c.store()
    chosen, always = [], []
    for item in items:
        case = case_of(item)
        if case is None or case.entry is None or case.entry.kind != "cpu":
            continue
        chosen.append(item.nodeid)
        module, key = module_and_key(item, state.run.rootpath)
        try:
            if store.baseline(module, key) is not None:
                always.append(item.nodeid)
        except BaselineError:  # the benchmark's own test reports the file
            pass
    return chosen, always


def counted_in_session(
    state: PerfState, moved: list[str], thresholds: Mapping[str, float | None] | None = None
) -> None:
    """After ``moved`` were counted in every environment: those counted in each are judged by
    counts in the session (Counting.in_session, counts_judging.judge_pair), the rest by time
    in the session; the summary says which and why. ``thresholds``: each benchmark's threshold
    where the user set one (Settings.chosen_threshold): counts that can tell it apart judge."""
    c, plan = state.counting, state.run.plan
    assert c is not None and plan is not None
    runs = [c.sides.get(label) for label in plan.refs]
    both = [n for n in moved if all(r is not None and n in r.counts for r in runs)]
    ref, cur = c.sides.get(plan.reference), c.sides.get(plan.candidate)
    if ref is not None and cur is not None:
        for n in both:
            pair = instruction_counts.between(
                ref.counts[n],
                cur.counts[n],
                alpha_each=0.05,
                threshold=(thresholds or {}).get(n),
            )
            if counts.undecidable(pair):  # the status only: alpha does not move it
                c.undecided[n] = counts.undecided_text(pair)
                c.undecided_counts[n] = left_to_clock(cur.counts[n], pair, None)
    undecided = [n for n in both if n in c.undecided]
    both = [n for n in both if n not in c.undecided]
    c.in_session.update(both)
    where = " and ".join(plan.refs)
    if undecided:
        state.notes.append(
            f"{len(undecided)} CPU benchmark(s) counted in {where} judged by time in this "
            "session: their counts cannot tell a change of the threshold's size apart (each "
            f"one's note says why; the first: {c.undecided[undecided[0]]})"
        )
    if both and c.named_reference:
        state.notes.append(
            f"{len(both)} CPU benchmark(s) counted in {where} and judged by counts in this session"
        )
    elif both:
        state.notes.append(
            f"{len(both)} CPU benchmark(s) with counts baselines of another key "
            f"({c.incomparable[both[0]]}) counted in {where} and judged by counts in this session"
        )
    rest = [n for n in moved if n not in c.in_session and n not in c.undecided]
    if not rest:
        return
    if not c.named_reference:
        state.notes.append(another_key_note(state, rest, same_session=True))
        return
    c.left_to_time.update(rest)
    first = rest[0]
    why = next(
        (
            f"{label}: {_not_counted_why(r, first)}"
            for label, r in zip(plan.refs, runs, strict=True)
            if r is None or first not in r.counts
        ),
        "not counted",
    )
    state.notes.append(
        f"{len(rest)} CPU benchmark(s) not counted in every environment "
        f"(first, {first}: {why}): judged by time in this session"
    )


def _not_counted_why(run: CountedRun | None, nodeid: str) -> str:
    """Why an environment's counted process has no counts of ``nodeid`` (none ran: not counted)."""
    if run is None:
        return "not counted"
    return run.missing.get(nodeid) or run.timed_instead.get(nodeid) or "not counted"
