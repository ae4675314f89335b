"""What a same-session comparison (``--perf-against``, ``--perf-versions``) runs in each
environment beside its rounds, one process per environment after the rounds (and the counted
pass), and what their findings add to each benchmark's verdict:

- ``--perf-profile``: :func:`profile_sides` starts one profiled process per environment
  (runs/profiled.py) for the benchmarks to profile (with ``regressed`` only those whose verdict
  from the rounds is ``regressed``, with ``all`` every one); each reruns its benchmarks under
  their library's profiler; :func:`attach` puts both profiles and the note of what grew beside
  the verdict.
- Memory per call (``--perf-memory``, on by default): :func:`memory_sides` starts one memory
  process per environment (runs/tracked_sides.py) for the benchmarks compared in the session;
  :func:`track_here` is what each does with a benchmark's calls; :func:`attach_tracked` judges
  the candidate's memory against the reference's beside the verdict, by the rule a run judges
  memory against a baseline (core/memory/recorded_memory.judge_sides)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pytest

from pytest_burnperf.core.records.profiles import ProfileRecord, grew_note, what_grew, where_it_grew
from pytest_burnperf.core.records.results import Result
from pytest_burnperf.core.sides.side_registry import SIDES
from pytest_burnperf.core.text import clock
from pytest_burnperf.instruments import registry
from pytest_burnperf.instruments.instrument import Prepare
from pytest_burnperf.plugin.measuring.result_record import keep_round_record
from pytest_burnperf.plugin.session.perf_state import PerfState, line_writer, rel
from pytest_burnperf.runs import profiled
from pytest_burnperf.runs import tracked_sides as tracked_runs
from pytest_burnperf.runs.round_launcher import SidePass, round_args
from pytest_burnperf.runs.tracked_sides import ERROR_SUFFIX


def _run_compared_sides(
    session: pytest.Session,
    state: PerfState,
    sides: Sequence[Any],
    wanted: Sequence[str],
    *,
    doing: str,
    did: str,
    done: str,
    run: Callable[..., SidePass],
    found: dict[str, dict[str, Any]],
    gaps: dict[str, dict[str, str]],
) -> None:
    """In each of the two environments the verdict compares (--perf-versions may list more):
    ``run`` (profiled.run, tracked_sides.run) over ``wanted``, its progress said (``doing``,
    ``did`` so far, ``done`` at the end); what each side's process found goes to
    ``found[label]``, why the others have none to ``gaps[label]``, its problems to the notes."""
    write = line_writer(session.config)
    plan = state.run.plan
    assert plan is not None
    args = round_args(state.run.invocation, state.run.child_plugins_off)
    for side in [s for s in sides if s.label in (plan.reference, plan.candidate)]:
        t0 = time.monotonic()
        write(f"burnperf: {doing} {len(wanted)} benchmark(s) in {side.label} ...")

        def say(n: int, t0: float = t0, label: str = side.label) -> None:
            write(
                f"burnperf: {did} {n}/{len(wanted)} in {label} "
                f"({clock(time.monotonic() - t0)} elapsed) ..."
            )

        got = run(
            python=side.python,
            args=args,
            label=side.label,
            wanted=list(wanted),
            cwd=session.config.invocation_params.dir,
            say=say,
            env=side.environ,
        )
        found[side.label] = dict(got.found)
        gaps[side.label] = dict(got.missing)
        state.notes.extend(f"{side.label}: {p}" for p in got.problems)
        write(
            f"burnperf: {done} {len(got.found)}/{len(wanted)} "
            f"benchmark(s) in {side.label} in {clock(got.seconds)}"
        )


def profile_sides(
    session: pytest.Session,
    state: PerfState,
    nodes: Sequence[str],
    sides: Sequence[Any],
    regressed: Callable[[str], bool],
) -> None:
    """Profile ``nodes`` (those ``regressed`` says regressed, with ``--perf-profile=regressed``)
    in every environment of ``sides`` (the scheduler's), one process each; what they wrote goes
    to ``state.findings.measured.profiles``."""
    when = state.output.profile
    got = state.findings.measured
    if when == "off" or got is None or session.config.option.collectonly:
        return
    wanted = [n for n in nodes if when == "all" or regressed(n)]
    if not wanted:
        return
    _run_compared_sides(
        session, state, sides, wanted, doing="profiling", did="profiled", done="profiled",
        run=profiled.run,
        found=got.profiles, gaps=got.profile_gaps,
    )  # fmt: skip


def attach(state: PerfState, result: Result) -> Result:
    """``result`` with both environments' profiles and the note of what grew from the
    reference to the candidate, where this run profiled its benchmark."""
    plan, got = state.run.plan, state.findings.measured
    if plan is None or got is None or state.output.profile == "off":
        return result
    node = result.nodeid
    ref = got.profiles.get(plan.reference, {}).get(node)
    cur = got.profiles.get(plan.candidate, {}).get(node)
    if ref is None and cur is None:
        return result
    root = state.run.rootpath
    if ref is None or cur is None:
        have, label, other = (
            (cur, plan.reference, plan.candidate)
            if ref is None
            else (ref, plan.candidate, plan.reference)
        )
        assert have is not None
        why = got.profile_gaps.get(label, {}).get(node) or "not profiled"
        note = f"profile of {other}: {rel(have.path, root)}; {label} has none ({why})"
    else:
        grown = what_grew(ref.summary, cur.summary)
        note = grew_note(
            grown, plan.reference, plan.candidate, where_it_grew(ref.summary, cur.summary)
        )
        note += f" ({rel(ref.path, root)}, {rel(cur.path, root)})"
    mine = cur or ref
    assert mine is not None
    both = ref is not None and cur is not None
    profile = ProfileRecord(
        tool=mine.summary.tool,
        file=rel(mine.path, root),
        summary=mine.summary,
        note=note,
        against=plan.reference if both else None,
        against_file=rel(ref.path, root) if both and ref is not None else None,
        against_summary=ref.summary if both and ref is not None else None,
    )
    verdict = replace(result.verdict, notes=(*result.verdict.notes, note))
    return replace(result, profile=profile, verdict=verdict)


def track_sides(
    session: pytest.Session, state: PerfState, nodes: Sequence[str], sides: Sequence[Any]
) -> None:
    """Track what the instruments beside measure (memory per call) of ``nodes`` (those compared
    in the session) in the two environments the verdict compares, one tracking process each;
    what they found goes to ``state.findings.measured.tracked``."""
    got = state.findings.measured
    if not state.run.memory or got is None or session.config.option.collectonly or not nodes:
        return
    what = " and ".join(i.side.field for i in registry.BESIDE)  # memory
    _run_compared_sides(
        session, state, sides, nodes, doing=f"tracking {what} of", did="tracked",
        done=f"tracked {what} of", run=tracked_runs.run, found=got.tracked, gaps=got.tracked_gaps,
    )  # fmt: skip


def track_here(
    state: PerfState, device: Any, nodeid: str, prepare: Prepare, *, threads: int
) -> object:
    """In a tracking process (runs/tracked_sides.py): each instrument beside (registry.BESIDE)
    measures the benchmark's first calls, as in the process that judges; what each found, or
    why it found nothing, goes to the process's file for the parent under its side's field.
    Then one more call, whose result it returns (the test's own checks see it)."""
    __tracebackhide__ = True
    found: dict[str, object] = {}
    for instrument in registry.BESIDE:
        with device.threads(threads), getattr(device, "active", contextlib.nullcontext)():
            record = instrument.record(device, prepare, threads=threads)
        name = instrument.side.field
        found[name + ERROR_SUFFIX if isinstance(record, str) else name] = record
    keep_round_record(state, nodeid, found)
    call, after = prepare()
    with device.threads(threads), getattr(device, "active", contextlib.nullcontext)():
        last = call()
        device.sync()
    if after is not None:
        after()
    return last


def attach_tracked(state: PerfState, result: Result, threshold: float | None) -> Result:
    """``result`` with each side's verdict of the candidate's record against the reference's
    (core/sides/side_kind.Side.between: memory per call's, the marker's ``max_memory`` holding
    for the candidate), where this run tracked the candidate's (``threshold``: the user's, or
    None); where the candidate's tracking found none, why, in ``result.not_measured`` (the
    run's side line counts it: ``1 not measured (why)``)."""
    plan, got = state.run.plan, state.findings.measured
    if plan is None or got is None or not state.run.memory:
        return result
    node = result.nodeid
    cur = got.tracked.get(plan.candidate, {}).get(node)
    ref = got.tracked.get(plan.reference, {}).get(node)
    cur_gap = got.tracked_gaps.get(plan.candidate, {}).get(node)
    if cur is None:
        if cur_gap is None:
            return result  # not one the tracking processes were asked for
        # its process failed or left it out: the notes quote the process
        return replace(
            result,
            not_measured={**result.not_measured, **{s.field: cur_gap for s in SIDES}},
        )
    whole_gap = got.tracked_gaps.get(plan.reference, {}).get(node, "")
    sides = dict(result.sides)
    missing = dict(result.not_measured)
    for side in SIDES:
        now = cur.records.get(side.field)
        if now is None:
            if side.field in cur.gaps:
                missing[side.field] = cur.gaps[side.field]
            continue
        before = None if ref is None else ref.records.get(side.field)
        gap = (ref.gaps.get(side.field, "") if ref is not None else "") or whole_gap
        sides[side.field] = side.between(
            now, before, threshold, plan.reference, gap, result.settings
        )
    return replace(result, sides=sides, not_measured=missing)
