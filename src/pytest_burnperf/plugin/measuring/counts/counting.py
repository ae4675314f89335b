"""The plugin's side of counted CPU cost (``--perf-measure counts|both``): which benchmarks are
counted, the counted process started after collection (runs/counted.py), the counting inside
that process, and the verdict from counts in the run that judges.

Where a round process decides what to print is plugin/rounds/round_control.py; a counted process is a round
process with ``--perf-round-process-count-dir``: it counts instead of timing and writes counts, not samples.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pytest_burnperf.core.counting import counted_calls
from pytest_burnperf.core.judging.verdict import Policy
from pytest_burnperf.core.options import run_options
from pytest_burnperf.core.options.run_options import count_text
from pytest_burnperf.core.options.settings import Settings
from pytest_burnperf.core.records.stored_baseline import StoredBaseline
from pytest_burnperf.core.text import clock, format_count, format_time
from pytest_burnperf.devices.base import Device
from pytest_burnperf.host import hardware
from pytest_burnperf.host.leftovers import mark_owner
from pytest_burnperf.instruments import instruction_counts
from pytest_burnperf.instruments.counts_run import Counting
from pytest_burnperf.instruments.instrument import Unavailable
from pytest_burnperf.plugin.measuring.counts import recounting
from pytest_burnperf.plugin.measuring.result_record import keep_round_record
from pytest_burnperf.plugin.session.perf_state import (
    PerfState,
    case_of,
    devices_of,
    line_writer,
    module_and_key,
)
from pytest_burnperf.runs import counted
from pytest_burnperf.runs.counted import CountedRun
from pytest_burnperf.runs.round_launcher import pooled, round_args
from pytest_burnperf.runs.scheduler import Side
from pytest_burnperf.storage import project_config
from pytest_burnperf.storage.baselines import BaselineError


def by_counts(state: PerfState, kind: str, nodeid: str | None = None) -> bool:
    """Whether counts judge a benchmark on a device of ``kind`` in this run: a CPU benchmark
    under --perf-measure counts or both, unless (``nodeid``) it was too slow to count."""
    if state.counting is None or kind != "cpu":
        return False
    if nodeid is None:
        return True
    return (
        nodeid not in state.counting.left_to_time and state.counting.timed_instead(nodeid) is None
    )


def counts_only(state: PerfState, kind: str, nodeid: str | None = None) -> bool:
    """Whether the clock does not run at all for such a benchmark: --perf-measure counts, or
    auto judging a counted benchmark that has no time baseline to show a time change against
    (recording, auto times every benchmark and writes both baselines)."""
    c: Counting | None = state.counting
    if c is None or not by_counts(state, kind, nodeid):
        return False
    if c.measure.per_benchmark:
        return (
            not state.run.mode.records
            and nodeid not in c.time_baselines
            and nodeid not in c.rates_beside
        )
    return c.measure.counts_alone


def judged_by_stored_counts(state: PerfState, kind: str, nodeid: str) -> bool:
    """In a same-session comparison under --perf-measure auto: whether such a benchmark is
    counted in this process and judged by its stored counts baseline (its memory by that
    baseline's), not compared in the session."""
    c: Counting | None = state.counting
    return (
        c is not None
        and c.measure.per_benchmark
        and counts_only(state, kind, nodeid)
        and nodeid not in c.in_session
    )


def time_for_rates(state: PerfState, kind: str, nodeid: str) -> None:
    """At the call of a benchmark that declares its work (perf.work) and that counts alone
    would judge under --perf-measure auto (no time baseline): time it one round beside its
    counts all the same, so that its GFLOP/s, GB/s and % of peak show (a rate is never made of
    instructions). Its time is shown, not judged; its process rounds were never planned."""
    c: Counting | None = state.counting
    if (
        c is not None
        and c.measure.per_benchmark
        and not state.run.mode.compares
        and counts_only(state, kind, nodeid)
    ):
        c.rates_beside.add(nodeid)


def time_beside(state: PerfState, kind: str, nodeid: str | None = None) -> bool:
    """Whether such a benchmark is timed in this process only, one round without adaptive
    sampling, for the time change shown beside the counts that judge it: --perf-measure auto
    judging a counted benchmark against stored baselines, where it has a time baseline too, or
    where it declared its work, for its rates (time_for_rates)."""
    c: Counting | None = state.counting
    return (
        c is not None
        and c.measure.per_benchmark
        and not state.run.mode.records
        and not state.run.mode.compares
        and (nodeid in c.time_baselines or nodeid in c.rates_beside)
        and by_counts(state, kind, nodeid)
    )


def in_time_rounds(state: PerfState, kind: str, nodeid: str) -> bool:
    """Whether such a benchmark is timed in the run's process rounds too: neither counted alone
    (counts_only) nor timed only beside its counts (time_beside)."""
    return not counts_only(state, kind, nodeid) and not time_beside(state, kind, nodeid)


def fallback_note(state: PerfState, nodeid: str) -> str | None:
    """Why a CPU benchmark of a counting run was timed instead, or None."""
    if state.counting is None:
        return None
    why = state.counting.timed_instead(nodeid)
    if why is None:
        return None
    if nodeid in state.counting.incomparable or nodeid in state.counting.undecided:
        return f"counts not judged: {why}; judged by time"
    return f"not counted: {why}" + ("" if state.run.mode.records else "; judged by time")


def count_jobs(asked: int) -> int:
    """Counted processes side by side: as asked (--perf-count-jobs), or with 0 one per CPU this
    process may use, at most run_options.MAX_AUTO_COUNT_JOBS."""
    if asked > 0:
        return asked
    return max(1, min(hardware.cpu_count(), run_options.MAX_AUTO_COUNT_JOBS))


def calls(state: PerfState, settings: Settings) -> int:
    """How many calls each benchmark gets counted: enough for its alpha (counted_calls.calls_for)."""
    policy = Policy(
        alpha=settings.alpha, threshold=settings.threshold, comparisons=state.findings.comparisons
    )
    return counted_calls.calls_for(policy.alpha_each)


# --------------------------------------------------------------------------------------------
# the run that judges: the counted process, after collection


def count_pass(
    session: pytest.Session,
    state: PerfState,
    items: list[pytest.Item],
    sides: list[Side] | None = None,
    *,
    always: Collection[str] = (),
) -> None:
    """Count every CPU benchmark among ``items`` in one process under callgrind; in a
    same-session comparison (``sides``: the scheduler's environments), one per environment,
    one after the other (counts need no interleaving: the host cannot move them).
    ``always``: those with counts baselines (of any key), each counted whatever
    --perf-count-limit, as against stored baselines; the others meet the limit."""
    if state.counting is None or session.config.option.collectonly:
        return
    wanted = [
        item.nodeid
        for item in items
        if (case := case_of(item)) is not None
        and case.entry is not None
        and by_counts(state, case.entry.kind)
    ]
    if sides is None:  # stored baselines: they decide what is counted, not this host's speed
        wanted, always = _by_baselines(state, [i for i in items if i.nodeid in set(wanted)])
    else:
        always = [n for n in wanted if n in set(always)]
    if not wanted:
        return
    write = line_writer(session.config)

    settings = state.run.base.merged(state.run.cmdline)
    args = [
        *round_args(state.run.invocation, state.run.child_plugins_off),
        f"{COUNT_CALLS}={calls(state, settings)}",
    ]
    # each counted process probes only the devices it counts on (runs/round_launcher.backends_option):
    # probing torch, cupy or an OpenCL driver costs tens of seconds under valgrind
    devices = devices_of(items, set(wanted))
    scratch = None
    if always:
        # a scratch folder like the counted process's own: owned, and swept by the next counted
        # run if this one is killed before its end
        scratch = Path(tempfile.mkdtemp(prefix=counted.SCRATCH_PREFIX))
        mark_owner(scratch)
        (scratch / "always").write_text("\n".join(always), encoding="utf-8")
        args.append(f"{COUNT_ALWAYS}={scratch / 'always'}")
    try:
        _count_sides(session, state, args, items, wanted, devices, sides, write)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def _by_baselines(state: PerfState, items: list[pytest.Item]) -> tuple[list[str], list[str]]:
    """(the benchmarks to count, those among them counted whatever the count limit), by their
    stored baselines (instruction_counts.selection); those left out are timed, with why."""
    assert state.counting is not None
    counts_store, time_store = state.counting.store(), state.store
    wanted, always = [], []
    for item in items:
        module, key = module_and_key(item, state.run.rootpath)
        try:
            stored = counts_store.baseline(module, key)
        except BaselineError as exc:  # its test fails naming the file (corrupt_failure)
            state.counting.corrupt[item.nodeid] = str(exc)
            continue
        has_counts = stored is not None
        try:
            has_time = time_store.get(module, key) is not None
        except BaselineError:  # the benchmark's own test reports the file
            has_time = False
        if _other_key(state, item, stored, has_time):
            continue  # judged by the clock (counts_judging.leave_to_the_clock's note)
        chosen = instruction_counts.selection(
            counts_baseline=has_counts, time_baseline=has_time, records=state.run.mode.records
        )
        if state.counting.measure.per_benchmark and has_time and not state.run.mode.compares:
            state.counting.time_baselines.add(item.nodeid)  # its time change shown beside
        if state.counting.measure.per_benchmark and chosen != instruction_counts.ALWAYS:
            if not state.run.mode.records:
                state.counting.left_to_time.add(item.nodeid)  # no counts baseline: timed
                continue
            skip = _too_slow_to_count(state, item)
            if skip is not None:  # recording: what its timed rounds say it would cost
                state.counting.by_baseline[item.nodeid] = skip
                continue
        if chosen == instruction_counts.BY_TIME:
            state.counting.by_baseline[item.nodeid] = (
                "it has a timed baseline and no counts baseline (recorded by time, or over "
                "--perf-count-limit); `pytest --perf --perf-measure counts --perf-update` records "
                "its counts"
            )
            continue
        wanted.append(item.nodeid)
        if chosen == instruction_counts.ALWAYS:
            always.append(item.nodeid)
    return wanted, always


def _other_key(
    state: PerfState, item: pytest.Item, stored: StoredBaseline | None, has_time: bool
) -> bool:
    """--perf-measure auto judging: whether the benchmark's counts baseline shows before any
    counting that it was counted under another key (another Python, C library or library
    version) and the clock can judge it instead (its time baseline, or the session's
    comparison): then it is not counted at all, and Counting.incomparable says why."""
    c = state.counting
    case = case_of(item)
    if (
        c is None
        or not c.measure.per_benchmark
        or state.run.mode.records
        or not (has_time or state.run.mode.compares)
        or case is None
        or case.entry is None
        or case.entry.device is None
    ):
        return False
    why = instruction_counts.known_before_counting(stored, case.entry.device)
    if why is None:
        return False
    c.incomparable[item.nodeid] = why
    return True


def counted_after_recording(
    state: PerfState, item: pytest.Item, runs: Sequence[Sequence[float]]
) -> bool:
    """--perf-measure auto, recording: whether this CPU benchmark's counts will surely be
    recorded after its timed rounds (``runs`` so far: its calls far under --perf-count-limit,
    instruction_counts.surely_counted), so that its counts judge it and its time baseline,
    kept beside them, needs no adaptive rounds."""
    c = state.counting
    case = case_of(item)
    if c is None or not c.measure.per_benchmark or not state.run.mode.records:
        return False
    if case is None or case.entry is None or not by_counts(state, case.entry.kind):
        return False
    samples = [v for r in runs for v in r]
    if not samples:
        return False
    call_s = statistics.median(samples)
    return instruction_counts.surely_counted(call_s, case.entry.library, state.run.count.limit)


def _too_slow_to_count(state: PerfState, item: pytest.Item) -> str | None:
    """Why --perf-measure auto, recording, does not count this benchmark: its calls in the
    timed rounds so far are surely over --perf-count-limit (instruction_counts.worth_counting);
    None where they may be under (the counted process then decides by the call's basic blocks)
    or it was not timed."""
    case = case_of(item)
    runs = state.findings.round_runs.get(item.nodeid)
    samples = [v for r in runs or () for v in r]
    if case is None or case.entry is None or not samples:
        return None
    call_s = statistics.median(samples)
    library, limit = case.entry.library, state.run.count.limit
    if instruction_counts.worth_counting(call_s, library, limit):
        return None
    expected = instruction_counts.predicted_blocks(call_s, library)
    return (
        f"its calls take {format_time(call_s)} here, so {format_count(expected)} basic blocks or "
        f"more under valgrind, over --perf-count-limit {count_text(limit)}; recorded by time only "
        "(`--perf-count-limit 0` counts it whatever it costs)"
    )


def _count_sides(
    session: pytest.Session,
    state: PerfState,
    args: list[str],
    items: list[pytest.Item],
    wanted: list[str],
    devices: dict[str, str] | None,
    sides: list[Side] | None,
    write: Callable[[str], None],
) -> None:
    """The counted process of each side (one, against stored baselines); then those whose
    counts may follow one process's memory layout counted again (recounting.py)."""
    c = state.counting
    assert c is not None
    each: list[Side | None] = [*sides] if sides else [None]
    for side in each:
        [got] = _count_in(session, state, args, wanted, devices, side, write)
        if side is None:
            c.run = got
        else:
            c.sides[side.label] = got
        state.notes.extend(f"{side.label}: {p}" if side else p for p in got.problems)
    again, passes, why = recounting.to_count_again(state, items, wanted, sides is not None)
    if not again:
        return
    for side in each:
        first = c.run if side is None else c.sides.get(side.label)
        assert first is not None
        more = _count_in(session, state, args, again, devices, side, write, passes=passes, why=why)
        notes = recounting.merge(first, more, again, c.key_base())
        first.seconds += max(m.seconds for m in more)  # side by side: the summary's time
        state.notes.extend(f"{side.label}: {p}" if side else p for p in notes)
    done = "recorded from" if state.run.mode.records else "judged by"
    state.notes.append(
        f"{len(again)} counted CPU benchmark(s) running interpreted code ({why}) counted again "
        f"in {passes} more process(es) each and {done} every process's counts together: "
        "the interpreter's attribute cache follows each process's memory layout, so one "
        "process's counts do not stand for another's (docs/gate.md)"
    )


def _count_in(
    session: pytest.Session,
    state: PerfState,
    args: list[str],
    wanted: list[str],
    devices: dict[str, str] | None,
    side: Side | None,
    write: Callable[[str], None],
    *,
    passes: int = 1,
    why: str = "",
) -> list[CountedRun]:
    """``wanted`` counted ``passes`` times over, each time in fresh processes, side by side
    (the run's count jobs shared between them), in ``side``'s environment (None: this one)."""
    assert state.counting is not None
    jobs = max(1, count_jobs(state.run.count.jobs) // passes)
    n = passes * len(counted.shares(wanted, jobs, devices))
    processes = "one process" if n == 1 else f"{n} processes"
    where = "" if side is None else f" in {side.label}"
    t0 = time.monotonic()
    again = f" again ({why})" if why else ""
    write(  # within 80 columns; the valgrind version is in the first lines and the summary
        f"burnperf: counting {len(wanted)} CPU benchmark(s){where}{again} under callgrind, "
        f"{processes} ..."
    )

    def say(done: int) -> None:
        write(
            f"burnperf: counted {done}/{len(wanted)}{where}{again} "
            f"({clock(time.monotonic() - t0)} elapsed) ..."
        )

    # passes side by side: one line per interval, the benchmarks each pass has counted on
    # average (a whole suite's recount in two passes ran 40 minutes without a line)
    tells = [say] if passes == 1 else pooled(passes, lambda total: say(total // passes))

    def one(index: int) -> CountedRun:
        assert state.counting is not None
        return counted.run(
            valgrind=state.counting.valgrind,
            python=sys.executable if side is None else side.python,
            args=args,
            wanted=wanted,
            cwd=session.config.invocation_params.dir,
            say=tells[index],
            env=None if side is None else side.environ,
            jobs=jobs,
            caches=state.counting.caches,
            devices=devices,
        )

    with ThreadPoolExecutor(max_workers=passes) as pool:
        got = list(pool.map(one, range(passes)))
    slow = sum(len(g.timed_instead) for g in got)
    write(
        f"burnperf: counted {len(got[0].counts)}/{len(wanted)} benchmark(s){where}{again} under "
        f"callgrind in {clock(time.monotonic() - t0)}" + (f"; {slow} timed instead" if slow else "")
    )
    return got


#: The hidden option that tells a counted process how many calls to count.
COUNT_CALLS = "--perf-round-process-count-calls"
#: The hidden option naming the file of benchmarks it counts whatever the count limit.
COUNT_ALWAYS = "--perf-round-process-count-always"


# --------------------------------------------------------------------------------------------
# the counted process


def count_here(
    state: PerfState,
    nodeid: str,
    device: Device,
    settings: Settings,
    make_call: Callable[[], tuple[Callable[[], object], Callable[[], object] | None]],
) -> object:
    """In a counted process: the counts instrument (instruments/instruction_counts.py) counts
    calls of the benchmark; its record goes to the samples file for the run that judges.
    Returns the first call's result."""
    __tracebackhide__ = True
    assert state.run.count.dir is not None
    if device.kind != "cpu":  # a pytest-benchmark test called with a GPU's arrays (perf_base)
        why = f"called with {device.id} arrays, not a CPU benchmark: timed on its device"
        keep_round_record(state, nodeid, {"timed_instead": why})
        pytest.skip(f"{nodeid}: {why}")
    try:
        record, first = instruction_counts.count(
            nodeid,
            device,
            settings.threads,
            make_call,
            count_dir=state.run.count.dir,
            calls=state.run.count.calls or calls(state, settings),
            # a benchmark with a counts baseline is counted whatever the limit
            limit=None if nodeid in state.run.count.always else state.run.count.limit,
            project=project_config.project_name(state.run.rootpath),
        )
    except Unavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    keep_round_record(state, nodeid, record)
    return first


# --------------------------------------------------------------------------------------------
# the run that judges: the verdict from counts


def corrupt_failure(state: PerfState, nodeid: str) -> str | None:
    """Why ``nodeid``'s test fails before it is measured: its counts baseline file cannot be
    read (the same message under every measure: auto timed such a benchmark in silence)."""
    c: Counting | None = state.counting
    problem = None if c is None else c.corrupt.get(nodeid)
    if problem is None:
        return None
    return (
        f"{nodeid}: {problem}. The file was left untouched; fix it, or delete it and record "
        "new counts baselines with --perf-update"
    )
