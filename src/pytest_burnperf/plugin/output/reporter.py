"""What the session the user started prints (``Mode.JUDGE``, ``Mode.RECORD``, ``Mode.COMPARE``):
the header lines, the terminal summary (the table, notes, coverage, what to record or accept),
and, at the session's end, the files run_files.py writes. Round processes print none of this
(plugin/rounds/report_back.py); runs without ``--perf`` register nothing here
(plugin/configuration/modes.py)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_burnperf.core.judging.abstention import Cause
from pytest_burnperf.core.judging.verdict import NO_BASELINE, REGRESSED, format_ratio
from pytest_burnperf.core.options import command_args
from pytest_burnperf.core.records.results import Result
from pytest_burnperf.core.sides.side_registry import side
from pytest_burnperf.core.text import command_lines, escape, redact, rounds_text
from pytest_burnperf.host.hardware import cpu_identity, describe
from pytest_burnperf.host.interrupts import held_signals
from pytest_burnperf.plugin.measuring.counts import counting
from pytest_burnperf.plugin.output import counting_text
from pytest_burnperf.plugin.output.run_files import rest_args, write_up
from pytest_burnperf.plugin.output.session_end import held_end
from pytest_burnperf.plugin.session.perf_state import (
    PerfState,
    rel,
)
from pytest_burnperf.report.run_header import counts_line, header, side_lines
from pytest_burnperf.report.terminal import (
    VERDICT_MARKUP,
    notes,
    speedups,
    table_rows,
    versions_table,
    wrap,
)


class Reporter:
    """The pytest plugin object of the session the user started (registered by
    plugin/configuration/modes.py)."""

    def __init__(self, state: PerfState) -> None:
        self.state = state

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        return header_lines(config, self.state)

    @pytest.hookimpl(tryfirst=True)  # before junitxml writes its file: the coverage properties
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        held_end(session, self.state, lambda: write_up(session, self.state, exitstatus))

    def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        if self.state.findings.aborted:
            return
        with held_signals() as held:  # printed whole; a Ctrl-C now ends nothing early
            before = len(held.received)
            _summary(terminalreporter, config, self.state)
        if len(held.received) > before:
            terminalreporter.write_line(f"{held.names()} received while the summary was printed")


def header_lines(config: pytest.Config, state: PerfState) -> list[str]:
    """The run's first lines: the machine, what it judges against, rounds and size."""
    where = (
        f"baselines {rel(state.store.dir, state.run.rootpath)}"
        if state.run.plan is None
        else f"same-session comparison ({state.run.plan.option})"
    )
    lines = [
        f"burnperf: machine {state.run.machine_id} ({describe(cpu_identity())})",
        f"burnperf: {where}, {rounds_text(state.schedule.rounds, state.schedule.max_rounds)}, "
        f"size {state.run.size}",
    ]
    if state.counting is not None and state.counting.measure.per_benchmark:
        lines.append(f"burnperf: {counting_text.auto_text(state)}")
    elif state.counting is not None:
        lines[-1] = f"burnperf: {counting_text.start_text(state)}"
        if state.counting.measure.time_too:
            lines.append(
                f"burnperf: time: {where}, {rounds_text(state.schedule.rounds, state.schedule.max_rounds)}"
            )
    if state.run.reference is not None:
        lines.append(f"burnperf: {_reference_text(state)}")
    if state.run.shard is not None:
        lines.append(f"burnperf: shard {state.run.shard[0]}/{state.run.shard[1]} of the selection")
    for option, value in _separate_outside_paths(
        state.run.invocation, config.invocation_params.dir
    ):
        lines.append(
            f"burnperf: note: `{option} {escape(value)}` names an existing path outside this "
            f"directory as a separate argument; pytest may take it for a test path when it picks "
            f"the rootdir (here {escape(str(state.run.rootpath))}), which renames the tests and their "
            f"baselines: write {option}={escape(value)}"
        )
    return wrap(lines, config.get_terminal_writer().fullwidth)


#: Options whose value is a path: given as ``--opt PATH``, pytest (which picks the rootdir
#: before it knows a plugin's options) may count an existing PATH among the test paths.
PATH_OPTIONS = ("--perf-store", "--perf-json", "--perf-markdown", "--perf-baselines-dir")


def _separate_outside_paths(args: tuple[str, ...], here: Path) -> list[tuple[str, str]]:
    """``(option, value)`` for each path option given as two arguments whose value is an
    existing path outside ``here`` (the invocation directory)."""
    out = []
    for option, value in itertools.pairwise(args):
        if option not in PATH_OPTIONS or value.startswith("-") or "://" in value:
            continue
        path = Path(value).expanduser()
        full = path if path.is_absolute() else here / path
        try:
            outside = full.exists() and not full.resolve().is_relative_to(here.resolve())
        except (OSError, ValueError):
            continue
        if outside:
            out.append((option, value))
    return out


def _reference_text(state: PerfState) -> str:
    """What --perf-against auto chose, and why (or why it found nothing)."""
    choice = state.run.reference
    assert choice is not None
    if choice.problem:
        return f"--perf-against auto found no reference: {choice.problem}"
    if choice.baselines:
        return f"--perf-against auto compares with {choice.why}"
    return f"--perf-against auto compares in this session with {choice.why}"


#: What pytest's ``-k`` reads as one name (its lexer's identifier characters).
_K_NAME = re.compile(r"[\w:+\-.\[\]/]+")


def _selected_as(r: Result) -> str:
    """``r``'s test in a ``-k`` expression: its name with its parameters
    (``test_score[200]``), which selects that one case only; the function's name where the
    parameters hold characters ``-k`` cannot read (a space, ``=``, a parenthesis)."""
    exact = r.key.split("::")[-1]
    return exact if _K_NAME.fullmatch(exact) else r.benchmark.split("::")[-1]


def _users_k(invocation: tuple[str, ...]) -> str | None:
    """The run's own ``-k`` expression (the last one, as pytest reads them), or None."""
    found = None
    for i, a in enumerate(invocation):
        if a == "-k" and i + 1 < len(invocation):
            found = invocation[i + 1]
        elif a.startswith("-k") and not a.startswith("--") and len(a) > 2:
            found = a[2:]
    return found


def accept_line(
    state: PerfState, results: list[Result], ours: bool = True, width: int | None = None
) -> str | None:
    """After a regression against stored baselines: how to accept it when it is intended (the
    run's own command, recording exactly the benchmarks that regressed: each by its name with
    its parameters, ``-k`` taking no ``Class::``, within the run's own ``-k``); None otherwise.
    ``ours``: --update-baselines is this plugin's option (a conftest.py may own that name;
    then --perf-update is said). Within ``width`` the command goes on lines of its own with
    shell continuations (core/text.command_lines), still one command to paste."""
    slower = {_selected_as(r) for r in results if r.verdict.status == REGRESSED}
    # a regression judged beside (memory per call's) is accepted the same way; a call over
    # max_memory is not: recording does not move the ceiling
    bigger = {
        _selected_as(r)
        for r in results
        if any(v.status in side(f).accepted_by_recording for f, v in r.sides.items())
    }
    names = sorted(slower | bigger)
    if not names or not state.run.mode.judges_baselines:
        return None
    rest = [
        a
        for a in command_args.without_options(
            tuple(rest_args(state.run.invocation, recording=True)), ("-k",), ()
        )
        if not (a.startswith("-k") and not a.startswith("--"))  # -kEXPR
    ]
    update = "--update-baselines" if ours else "--perf-update"
    chosen = " or ".join(names)
    users = _users_k(tuple(state.run.invocation))
    if users:
        chosen = f"({users}) and ({chosen})"
    command = ["pytest", "--perf", update, *rest, "-k", chosen]
    what = " or ".join(w for w, some in (("slowdown", slower), ("memory growth", bigger)) if some)
    lead = f"if the {what} is intended, record it as the new baseline:"
    return "\n".join(command_lines(lead, command, width))


def _same_session_text(state: PerfState) -> str | None:
    """``current vs main (git main = 1a2b3c4d5e6f) in this session`` for the header, or None."""
    plan, got = state.run.plan, state.findings.measured
    if plan is None:
        return None
    envs = got.envs if got is not None else {}

    def name(label: str) -> str:
        env = envs.get(label)
        return f"{label} ({env.detail})" if env is not None and env.kind != "current" else label

    others = [name(r) for r in plan.refs if r not in (plan.reference, plan.candidate)]
    text = f"same-session comparison: {name(plan.candidate)} vs {name(plan.reference)}"
    if others:
        text += f", also measured: {', '.join(others)}"
    if got is not None and got.orders:
        text += f"; {len(got.orders)} interleaved rounds, order drawn at random in each"
        if state.schedule.round_start == "resident":
            # measured on lavapipe: one A/A verdict in 36 regressed (+17%) this way
            text += (
                ", each environment's in one resident process: a difference between the two "
                "processes is not sampled and can read as a change (confirm a regression with "
                "--perf-round-start fresh)"
            )
    return text


def _versions_tables(
    write_line: Callable[[str], None], state: PerfState, results: list[Any]
) -> None:

    plan = state.run.plan
    assert plan is not None
    for r in sorted(results, key=lambda r: r.nodeid):
        if not r.versions:
            continue
        v = r.verdict
        line = f"verdict {plan.candidate} vs {plan.reference}: {v.status} {format_ratio(v)}" + (
            f" ({v.reason})" if v.reason else ""
        )
        write_line("")
        for text in versions_table(r.key, r.versions, line):
            write_line(text)


def _summary(terminalreporter: Any, config: pytest.Config, state: PerfState) -> None:

    def write_line(text: str) -> None:
        # a safety net below the strict reader: no control character reaches the terminal
        for line in text.split("\n"):
            terminalreporter.write_line(escape(redact(line)))

    tr = terminalreporter
    results = list(state.findings.results.values())
    tr.section("pytest-burnperf")
    base = state.run.base.merged(state.run.cmdline)
    width = config.get_terminal_writer().fullwidth
    head = header(
        results,
        machine_id=state.run.machine_id,
        baselines=rel(state.store.dir, state.run.rootpath),
        size=state.run.size,
        rounds=state.schedule.rounds,
        max_rounds=state.schedule.max_rounds,
        # the process rounds the clock ran (with --perf-measure both, the time result beside
        # the counts; a counted result's one "run" is its counted calls); auto's one round
        # beside the counts is said apart
        rounds_per_result=[
            len(t.runs) for r in results if (t := r.timed()) is not None and not _beside(state, r)
        ],
        beside=sum(1 for r in results if _beside(state, r)),
        threshold=base.threshold,
        alpha=base.alpha,
        comparisons=state.findings.comparisons,
        same_session=_same_session_text(state),
        machine_line=False,  # the run's first line named it (header_lines)
        counted=counting_text.header_text(state) if counting_text.counted_any(state) else None,
    )
    if state.run.reference is not None:
        head.insert(1, _reference_text(state))
    for line in wrap(head, width):
        write_line(line)
    if results:
        for line, status in table_rows(
            results,
            columns=state.output.columns,
            width=width,
            sort=state.output.sort,
            group_by=state.output.group_by,
            verbose=config.get_verbosity() > 0,
        ):
            # colour follows pytest's --color: the writer drops it where the terminal has none
            tr.write_line(escape(line), **VERDICT_MARKUP.get(status or "", {}))
        verbose = config.get_verbosity() > 0
        for line in wrap(notes(results, verbose=verbose, width=width), width):
            write_line(line)
        for line in speedups(results):
            write_line(line)
        if state.run.plan is not None and state.run.plan.option == "--perf-versions":
            _versions_tables(write_line, state, results)
    write_line(f"perf: {counts_line(results)}")
    for said in side_lines(results):
        write_line(f"perf: {said}")
    if state.findings.shard_info is not None:
        info = state.findings.shard_info
        write_line(
            f"perf: shard {info['index']}/{info['count']}: {info['benchmarks']} of the "
            f"selection's {info['comparisons']} benchmarks, judged at the alpha of all "
            f"{info['comparisons']}; `burnperf merge` combines the shards' --perf-json files"
        )
    if (
        state.findings.coverage is not None
        and state.findings.coverage.total
        and not state.run.mode.records
    ):
        write_line(f"perf: {state.findings.coverage.line()}")
        for line in wrap([f"  {a}" for a in state.findings.coverage_advice], width):
            write_line(line)
        if state.findings.shortfall:
            write_line(f"FAILED: {state.findings.shortfall}")
    record = ["pytest", "--perf", "--perf-update", *rest_args(state.run.invocation, recording=True)]
    legacy = [r for r in results if r.verdict.cause is Cause.LEGACY_BASELINE]
    if legacy and not state.run.mode.records:
        lead = (
            f"{len(legacy)} baseline(s) were recorded before pytest-burnperf recorded the hardware "
            "class, so they were not compared; re-record them on this machine with:"
        )
        for line in command_lines(lead, record, width):
            write_line(line)
    elif (
        any(r.verdict.status == NO_BASELINE for r in results)
        and state.run.mode.judges_baselines
        and not state.findings.coverage_advice
    ):
        for line in command_lines("record baselines for this machine with:", record, width):
            write_line(line)
    accept = accept_line(state, results, ours=state.output.update_alias, width=width)
    if accept:
        write_line(accept)
    for line in wrap(state.notes, width):
        write_line(line)


def _beside(state: PerfState, r: Result) -> bool:
    """Whether ``r`` is judged by counts with its time from one round beside them (auto)."""
    return (
        r.judged_by.counted and r.time is not None and counting.time_beside(state, r.kind, r.nodeid)
    )
