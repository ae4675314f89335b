"""The plugin's side of process rounds: starts the rounds of a stored-baseline run or of a
same-session comparison (runs/) with this session's settings, and decides, benchmark by
benchmark, whether another round would help."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_burnperf.core.judging.assess import (
    baseline_runs,
    busy_round_costs_another,
    busy_rounds,
    leave_out_busy,
)
from pytest_burnperf.core.judging.more_rounds import needs_more_rounds
from pytest_burnperf.core.judging.verdict import REGRESSED, Policy
from pytest_burnperf.core.text import clock
from pytest_burnperf.host.activity import Window
from pytest_burnperf.plugin.measuring import side_processes
from pytest_burnperf.plugin.measuring.counts import counting, counts_judging, session_counts
from pytest_burnperf.plugin.measuring.same_session_perf import time_verdict
from pytest_burnperf.plugin.rounds.report_back import RoundProcess
from pytest_burnperf.plugin.session.perf_state import (
    STATE,
    PerfState,
    case_of,
    devices_of,
    line_writer,
    module_and_key,
)
from pytest_burnperf.runs import scheduler
from pytest_burnperf.runs.comparison.environments import CURRENT, EnvError, resolve
from pytest_burnperf.runs.comparison.same_session import side_of
from pytest_burnperf.runs.forkserver import can_fork, run_items, serve
from pytest_burnperf.runs.round_launcher import (
    backends_option,
    budget_text,
    round_args,
)
from pytest_burnperf.runs.scheduler import Measured
from pytest_burnperf.runs.turns import Seat, Side
from pytest_burnperf.storage.baselines import BaselineError

if TYPE_CHECKING:
    pass


def run_rounds(
    session: pytest.Session,
    state: PerfState,
    wanted: Sequence[str],
    more: Callable[[str, Measured], bool],
    *,
    fork: bool = False,
) -> None:
    """Rounds 1..N-1 in other processes, one after another; then, up to ``state.schedule.max_rounds``,
    adaptive rounds of the benchmarks still undecided (``more``), by the one round scheduler
    (runs/scheduler.py). This process measures the last round of every benchmark. With
    ``fork``, each round is a child forked from one round server (forkserver.py), else a fresh
    interpreter. ``wanted`` are the node ids this session will time."""
    config = session.config
    args = round_args(state.run.invocation, state.run.child_plugins_off)
    # the rounds probe only the devices they time on
    args += backends_option(devices_of(session.items, set(wanted)), wanted)
    # every round samples as the pooled session's rounds do (stats.round_samples)
    args.append(f"--perf-round-process-rounds={state.schedule.rounds}")
    write = line_writer(config)
    t0 = time.monotonic()
    got = scheduler.run(
        [scheduler.Side(CURRENT, sys.executable, None, "this interpreter")],
        scheduler.Schedule(
            fixed=state.schedule.rounds - 1,
            most=state.schedule.max_rounds - 1,
            start="resident"
            if state.schedule.round_start == "resident"
            else "fork"
            if fork
            else "fresh",
            budget_s=state.schedule.round_budget,
            failure_ends_all=False,
            own_rounds=1,
        ),
        args=args,
        cwd=config.invocation_params.dir,
        wanted=wanted,
        more=more,
        write=write,
    )
    state.notes.extend(got.problems)
    if got.budget_stopped:
        state.notes.append(
            budget_text(state.schedule.round_budget, got.budget_stopped, len(wanted))
        )
    state.findings.round_runs = got.runs.get(CURRENT, {})
    state.findings.round_host = got.host.get(CURRENT, {})
    state.findings.round_probes = got.probes.get(CURRENT, {})
    total = max(state.schedule.rounds, got.rounds + 1)
    write(
        f"burnperf: round {total}/{total} in this process "
        f"({clock(time.monotonic() - t0)} elapsed) ..."
    )


def run_same_session(
    session: pytest.Session,
    state: PerfState,
    items: list[pytest.Item],
    *,
    alternate: bool = False,
) -> None:
    """Build (or find) the environments of --perf-against / --perf-versions, then measure every
    benchmark in each, interleaved (versions.run_env_rounds; ``alternate``: pair by pair from
    one round server per environment)."""

    plan = state.run.plan
    assert plan is not None
    config = session.config
    write = line_writer(config)

    # --perf-measure auto: what has counts baselines is counted here only and judged by them
    # (counts or both: every environment counted, below); with nothing left to time, no
    # environment is built
    stored_counts = state.counting is not None and state.counting.measure.per_benchmark
    moved: list[str] = []
    always: list[str] = []  # of those moved: counted whatever the count limit
    if stored_counts and state.counts().named_reference:  # every CPU benchmark
        moved, always = session_counts.every_countable(state, items)
    elif stored_counts:
        counting.count_pass(session, state, items)
        moved = always = counts_judging.leave_to_the_clock(state, items, same_session=True)
        items = _to_time(state, items)
        if not items:
            state.findings.measured = Measured()
            return
    envs = {}
    for ref in plan.refs:
        try:
            envs[ref] = resolve(ref, repo=config.invocation_params.dir, say=write)
        except EnvError as exc:
            state.findings.aborted = True
            raise pytest.UsageError(f"{plan.option} {exc}") from None
    by_id = {item.nodeid: item for item in items}

    def more(nodeid: str, got: Measured) -> bool:
        case = case_of(by_id[nodeid])
        if case is None:
            return False
        s = state.run.settings_for(case.spec)
        policy = Policy(
            alpha=s.alpha,
            threshold=s.threshold,
            threshold_given=s.threshold_given,
            comparisons=state.findings.comparisons,
            paired=True,
        ).for_noise(got.noise((plan.reference, plan.candidate), nodeid))
        if state.run.trust_host:
            ref, cur = got.of(plan.reference, nodeid), got.of(plan.candidate, nodeid)
        else:  # a round on a busy host does not count, so another is run in its place
            busy = got.busy_rounds((plan.reference, plan.candidate), nodeid)
            pairs = min(len(got.of(plan.reference, nodeid)), len(got.of(plan.candidate, nodeid)))
            if busy_round_costs_another(pairs, pairs - len(busy)):
                return True  # too few clean pairs to leave the busy ones out: buy another
            ref, cur, _ = got.clean_pairs(plan.reference, plan.candidate, nodeid)
        return needs_more_rounds(ref, cur, policy)

    sides = [side_of(label, envs[label]) for label in plan.refs]
    if moved:  # counted in each environment, judged so
        again = [item for item in items if item.nodeid in set(moved)]
        counting.count_pass(session, state, again, sides, always=always)
        chosen = {
            item.nodeid: state.run.settings_for(case.spec).chosen_threshold
            for item in again
            if (case := case_of(item)) is not None
        }
        session_counts.counted_in_session(state, moved, chosen)
        items = _to_time(state, items)
    if not stored_counts:
        counting.count_pass(session, state, items, sides)
        items = _to_time(state, items)
    if not items:  # everything was counted: no rounds to time
        state.findings.measured = Measured()
    else:
        state.findings.measured = scheduler.run(
            sides,
            scheduler.Schedule(
                fixed=state.schedule.rounds,
                most=state.schedule.max_rounds,
                start="turns"
                if alternate
                else "resident"
                if state.schedule.round_start == "resident"
                else "fresh",
                budget_s=state.schedule.round_budget,
            ),
            args=round_args(state.run.invocation, state.run.child_plugins_off),
            cwd=config.invocation_params.dir,
            wanted=[item.nodeid for item in items],
            more=more,
            write=write,
        )
    state.findings.measured.envs = dict(envs)
    everything = [item.nodeid for item in by_id.values() if case_of(item) is not None]
    side_processes.profile_sides(session, state, everything, sides, _regressed(state, by_id))
    side_processes.track_sides(session, state, _compared_here(state, by_id), sides)
    if state.findings.measured.budget_stopped:
        state.notes.append(
            budget_text(
                state.schedule.round_budget, state.findings.measured.budget_stopped, len(items)
            )
        )


def _compared_here(state: PerfState, by_id: Mapping[str, pytest.Item]) -> list[str]:
    """The benchmarks the session compares between its environments: not those counted here
    and judged by their stored counts baselines (whose memory is judged by those baselines')."""
    return [
        nodeid
        for nodeid, item in by_id.items()
        if (case := case_of(item)) is not None
        and case.entry is not None
        and not counting.judged_by_stored_counts(state, case.entry.kind, nodeid)
    ]


def _to_time(state: PerfState, items: list[pytest.Item]) -> list[pytest.Item]:
    """The benchmarks among ``items`` that the run's rounds time: what was counted is timed in
    no round (--perf-measure counts, or auto where it has no time baseline) or in the run's own
    process only (auto, for the time change beside)."""
    return [
        item
        for item in items
        if (case := case_of(item)) is None
        or case.entry is None
        or counting.in_time_rounds(state, case.entry.kind, item.nodeid)
    ]


def _regressed(state: PerfState, by_id: Mapping[str, pytest.Item]) -> Callable[[str], bool]:
    """Whether a benchmark of a same-session comparison regressed by what judges it (counts or
    time), from its rounds: which benchmarks --perf-profile=regressed profiles."""

    def regressed(nodeid: str) -> bool:
        case = case_of(by_id[nodeid])
        if case is None or case.entry is None:
            return False
        settings = state.run.settings_for(case.spec)
        if counting.by_counts(state, case.entry.kind, nodeid):
            verdict = counts_judging.counts_pair_verdict(state, settings, nodeid)
        else:
            paired = time_verdict(state, settings, nodeid)
            verdict = None if paired is None else paired[0]
        return verdict is not None and verdict.status == REGRESSED

    return regressed


def round_judge(state: PerfState, items: list[pytest.Item]) -> Callable[[str, Measured], bool]:
    """``(node id, its runs so far) -> would another round help?`` for the adaptive rounds, with
    each benchmark's own baseline, threshold and alpha (more_rounds.needs_more_rounds)."""

    by_id = {item.nodeid: item for item in items}

    def more(nodeid: str, got: Measured) -> bool:
        runs = got.of(CURRENT, nodeid)
        item = by_id[nodeid]
        case = case_of(item)
        if case is None:
            return False
        s = state.run.settings_for(case.spec)
        policy = Policy(
            alpha=s.alpha,
            threshold=s.threshold,
            threshold_given=s.threshold_given,
            comparisons=state.findings.comparisons,
        ).for_noise(got.noise((CURRENT,), nodeid))
        if state.run.mode.records:
            if counting.counted_after_recording(state, item, runs):
                return False  # its counts judge it: the fixed rounds time it beside them
            return needs_more_rounds(None, runs, policy, recording=True)
        try:
            entry = state.store.baseline(*module_and_key(item, state.run.rootpath))
        except BaselineError:  # the test itself reports the unreadable file
            return False
        if entry is None:
            return False
        windows = got.host.get(CURRENT, {}).get(nodeid, [])
        clean = clean_runs(runs, windows, trust_host=state.run.trust_host)
        if clean is None:
            return True  # a busy round costs another round, not the verdict
        return needs_more_rounds(baseline_runs(entry), clean, policy)

    return more


def clean_runs(
    runs: list[list[float]], windows: Sequence[Mapping[str, object]], *, trust_host: bool
) -> list[list[float]] | None:
    """``runs`` (the other processes' rounds so far) as the verdict will judge them, the busy
    rounds left out by the one rule (core.judging.assess.leave_out_busy); None where a busy round
    should first cost another round (too few clean ones yet to leave it out). ``windows``: the
    host window each round recorded; where they do not line up with the rounds, all count."""
    if trust_host or len(windows) != len(runs):
        return runs
    busy = busy_rounds([Window.from_dict(d) for d in windows])
    if busy_round_costs_another(len(runs), len(runs) - len(busy)):
        return None
    left = leave_out_busy(len(runs), busy)
    return [r for i, r in enumerate(runs) if i not in left]


def serve_rounds(session: pytest.Session) -> bool | None:
    """In a round server (--perf-round-process-serve): fork one child per requested round instead of
    running the tests here (forkserver.py)."""
    state = session.config.stash[STATE]
    if not state.run.mode.serves_rounds or session.config.option.collectonly:
        return None

    process = session.config.pluginmanager.get_plugin("burnperf-round-process")
    assert isinstance(process, RoundProcess)

    def one_round(
        out: Path, only: frozenset[str] | None, turns: dict[str, object] | None = None
    ) -> None:
        process.start_round(out)
        # a resident server runs every round in this session: one round's -x stop is not the next's
        session.shouldfail = session.shouldstop = False
        items = [i for i in session.items if only is None or i.nodeid in only]
        if turns is None:
            run_items(session, items)
            process.write_samples()
            return
        # one side of a turn-taking pair: work only while holding the turn (turns.py), sampling
        # on the CPU the other side uses too where the benchmarks are single-threaded

        seat = Seat.from_json(turns)
        cpu = seat.cpu if _single_threaded(state, items) else None
        state.turn_side = side = Side(seat.address, seat.label, cpu)
        try:
            side.wait()
            run_items(session, items)
            process.write_samples()
        finally:
            state.turn_side = None
            side.finish()

    assert state.schedule.serve_dir is not None
    try:
        serve(state.schedule.serve_dir, one_round)
    finally:  # a resident server's own end writes no round's file
        process.start_round(state.schedule.round_out or process.out)
    return True


def _single_threaded(state: PerfState, items: list[pytest.Item]) -> bool:
    """Whether every item is a benchmark on a CPU device with one host thread (binding its
    process to one CPU then takes nothing from it)."""
    for item in items:
        case = case_of(item)
        if case is None or case.entry is None or case.entry.kind != "cpu":
            return False
        if state.run.settings_for(case.spec).threads != 1:
            return False
    return True


def rounds_after_collection(session: pytest.Session, runnable: list[pytest.Item]) -> None:
    """Run the extra rounds of a measuring run over its ``runnable`` benchmarks (what the
    selection settled on: plugin/collection.settle_selection)."""
    state = session.config.stash[STATE]
    if state.run.mode.compares:
        if runnable and not session.config.option.collectonly:
            # turn-taking pairs only when asked for (--perf-round-start fork): they made a
            # single A/A pair far steadier, but in the plugin's own harness run of 2026-11-24
            # they judged no better than whole rounds (docs/validation.md, "How long a turn
            # should be")
            run_same_session(
                session,
                state,
                runnable,
                alternate=state.schedule.round_start == "fork" and _fork_rounds(state, runnable),
            )
        return
    # --perf-measure auto, recording: counted after the timed rounds, whose calls say which
    # are worth counting (counting._too_slow_to_count); every other run counts first
    count_after = (
        state.counting is not None
        and state.counting.measure.per_benchmark
        and state.run.mode.records
    )
    if not count_after:
        counting.count_pass(session, state, runnable)
        counts_judging.leave_to_the_clock(state, runnable, same_session=False)
    timed = _to_time(state, runnable)
    if state.schedule.max_rounds > 1 and timed and not session.config.option.collectonly:
        run_rounds(
            session,
            state,
            [item.nodeid for item in timed],
            round_judge(state, timed),
            fork=_fork_rounds(state, timed),
        )
    if count_after:
        counting.count_pass(session, state, runnable)


def _fork_rounds(state: PerfState, runnable: list[pytest.Item]) -> bool:
    """Whether the extra rounds fork from a round server (--perf-round-start)."""
    if state.schedule.round_start != "auto":
        return state.schedule.round_start == "fork"

    devices = []
    for item in runnable:
        case = case_of(item)
        if case is None or case.entry is None:
            return False
        devices.append((case.entry.library, case.entry.kind))
    return can_fork(devices)
