"""What a run says about counting: the first line (what counts judge, with what) and the
summary's counts line (the measure that gates, its model, what counting took)."""

from __future__ import annotations

from pytest_burnperf.core.counting import counts
from pytest_burnperf.core.options.run_options import count_text
from pytest_burnperf.core.text import clock
from pytest_burnperf.plugin.session.perf_state import PerfState, rel


def start_text(state: PerfState) -> str:
    """The run's first lines: what counts and where their baselines are."""
    c = state.counts()
    where = (
        f"counts baselines {rel(c.store().dir, state.run.rootpath)}"
        if not state.run.mode.compares
        else "every environment counted in this run"
    )
    return f"CPU benchmarks counted under callgrind (valgrind {c.version}), {where}, size {state.run.size}"


def auto_text(state: PerfState) -> str:
    """--perf-measure auto's first line: which benchmarks counts judge, with what."""
    c = state.counts()
    if state.run.mode.records:
        limit = state.run.count.limit
        where = (
            f"where their calls run under --perf-count-limit {count_text(limit)} basic blocks"
            if limit
            else "every one (--perf-count-limit 0)"
        )
        return (
            f"counts (--perf-measure auto): CPU benchmarks timed, and counted under callgrind "
            f"(valgrind {c.version}) {where}; counts baselines into "
            f"{rel(c.store().dir, state.run.rootpath)}, the time ones beside"
        )
    if c.named_reference and state.run.mode.compares:  # a named --perf-against REF
        limit = state.run.count.limit
        return (
            f"counts (--perf-measure auto): CPU benchmarks counted under callgrind (valgrind "
            f"{c.version}) in every environment and compared by counts (those without a counts "
            f"baseline in {rel(c.store().dir, state.run.rootpath)} where their calls run "
            f"under --perf-count-limit {count_text(limit) if limit else '0: no limit'} basic "
            "blocks); the rest compared in this session by time"
        )
    if state.run.mode.compares:  # auto that chose a session
        return (
            f"counts (--perf-measure auto): CPU benchmarks with a counts baseline in "
            f"{rel(c.store().dir, state.run.rootpath)} counted under callgrind (valgrind "
            f"{c.version}) and judged by those, as on any machine (those counted under another "
            "key: counted in every environment and compared by counts); the rest compared in "
            "this session"
        )
    return (
        f"counts (--perf-measure auto): CPU benchmarks with a counts baseline in "
        f"{rel(c.store().dir, state.run.rootpath)} counted under callgrind (valgrind "
        f"{c.version}) and judged by counts (timed in this process too where a time baseline "
        "shows the time change beside), the rest timed"
    )


def counted_any(state: PerfState) -> bool:
    """Whether the summary speaks of counts: a counting run (counts, both), or auto where it
    counted something (else auto timed everything, as --perf-measure time would)."""
    c = state.counting
    return c is not None and (not c.measure.per_benchmark or any(r.counts for r in c.runs()))


def header_text(state: PerfState) -> str:
    """The summary's line about counts: the measure that gates, the model, what it took."""
    c = state.counts()
    runs = c.runs()
    took = (
        f"; {sum(len(r.counts) for r in runs)} counted in {clock(sum(r.seconds for r in runs))}"
        if runs
        else ""
    )
    stored = f"in {rel(c.store().dir, state.run.rootpath)}"
    where = (
        stored if not state.run.mode.compares or c.measure.per_benchmark else "of both environments"
    )
    if c.in_session:  # auto: counts baselines of another key, compared in the session
        by_stored = c.run is not None and set(c.run.counts) - c.in_session
        where = f"{stored} and of both environments" if by_stored else "of both environments"
    cycles = "; cycles estimated with L1 32 KiB, LL 8 MiB" if c.caches else ""
    chosen = sorted(
        {
            r.verdict.threshold
            for r in state.findings.results.values()
            if r.judged_by.counted and r.verdict.threshold is not None
        }
    )
    set_here = (
        f", or the threshold set ({'/'.join(f'{100 * t:g}%' for t in chosen)}) where larger"
        if chosen
        else ""
    )
    return (
        f"counts: instructions per call on callgrind's simulated CPU (valgrind {c.version}"
        f"{cycles}) {where}; minimum effect "
        f"{100 * counts.COUNTS_FLOOR:g}%, {counts.SPREAD_FACTOR:g}x the counts' spread, or "
        f"{100 * counts.INTERPRETER_FLOOR:g}% x the interpreter's share or "
        f"{counts.INTERPRETER_STATE} instructions a call of interpreted code{set_here}{took}"
    )
