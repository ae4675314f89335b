"""``--perf-profile`` in a same-session comparison (``--perf-against``, ``--perf-versions``):
both environments profiled, and the note of what grew from the reference to the candidate.

After the rounds (and the counted pass), :func:`profile_sides` starts one profiled process per
environment (runs/profiled.py) for the benchmarks to profile: with ``regressed`` only those
whose verdict from the rounds is ``regressed`` (nothing more runs where none is), with ``all``
every one. Each process reruns its benchmarks under their library's profiler in its own
environment and writes one file per benchmark and environment. When a benchmark's verdict is
made, :func:`attach` puts both profiles and the note of what grew beside it."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pytest

from pytest_burnperf.core.records.profiles import ProfileRecord, grew_note, what_grew, where_it_grew
from pytest_burnperf.core.records.results import Result
from pytest_burnperf.core.text import clock
from pytest_burnperf.plugin.session.perf_state import PerfState, line_writer, rel
from pytest_burnperf.runs import profiled
from pytest_burnperf.runs.round_launcher import round_args


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
    write = line_writer(session.config)

    plan = state.run.plan
    assert plan is not None
    args = round_args(state.run.invocation)
    # the two the verdict compares (--perf-versions may list more)
    for side in [s for s in sides if s.label in (plan.reference, plan.candidate)]:
        t0 = time.monotonic()
        write(f"burnperf: profiling {len(wanted)} benchmark(s) in {side.label} ...")

        def say(done: int, t0: float = t0, label: str = side.label) -> None:
            write(
                f"burnperf: profiled {done}/{len(wanted)} in {label} "
                f"({clock(time.monotonic() - t0)} elapsed) ..."
            )

        run = profiled.run(
            python=side.python,
            args=args,
            label=side.label,
            wanted=wanted,
            cwd=session.config.invocation_params.dir,
            say=say,
            env=side.environ,
        )
        got.profiles[side.label] = dict(run.profiles)
        got.profile_gaps[side.label] = dict(run.missing)
        state.notes.extend(f"{side.label}: {p}" for p in run.problems)
        write(
            f"burnperf: profiled {len(run.profiles)}/{len(wanted)} benchmark(s) in "
            f"{side.label} in {clock(run.seconds)}"
        )


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
