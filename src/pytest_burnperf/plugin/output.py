"""What a run writes and prints: the header lines, the baselines, results JSON, Markdown and
store written at the session's end (whole or not at all, also when interrupted), the coverage
check, JUnit properties, and the terminal summary."""

from __future__ import annotations

import itertools
import shlex
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_burnperf.core import settings as _spec
from pytest_burnperf.core.comparability import LEGACY
from pytest_burnperf.core.coverage import advice, coverage, shortfall
from pytest_burnperf.core.results import Result
from pytest_burnperf.core.text import escape, redact, rounds_text
from pytest_burnperf.core.verdict import FAILED, NO_BASELINE, REGRESSED, format_ratio
from pytest_burnperf.host.hardware import cpu_identity, describe
from pytest_burnperf.host.interrupts import held_signals, hold
from pytest_burnperf.host.machine import now_utc
from pytest_burnperf.plugin import counting
from pytest_burnperf.plugin.options import UPDATE_ALIAS_DEST
from pytest_burnperf.plugin.session import (
    STATE,
    PerfState,
    rel,
    session_machine_info,
    write_baselines,
)
from pytest_burnperf.report.run_header import counts_line, header
from pytest_burnperf.report.terminal import (
    VERDICT_MARKUP,
    notes,
    speedups,
    table_rows,
    versions_table,
    wrap,
)
from pytest_burnperf.runs.overlay import installed_from
from pytest_burnperf.runs.same_session import shadowed_modules
from pytest_burnperf.storage.history import resolve_url
from pytest_burnperf.storage.jsonfile import _why, atomic_write_text, dumps, finite

if TYPE_CHECKING:
    pass


class Recorder:
    """Remembers which benchmarks passed their call, the only ones whose baselines may change."""

    def __init__(self, state: PerfState) -> None:
        self.state = state

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:

        results = self.state.results
        if report.when == "call" and report.passed and report.nodeid in results:
            self.state.passed.add(report.nodeid)
        elif report.failed:
            self.state.passed.discard(report.nodeid)
            r = results.get(report.nodeid)
            if r is not None and r.verdict.status not in (REGRESSED, FAILED):
                # timed, then failed (an assert after perf(), a teardown): counted as failed
                reason = f"the test failed in {report.when} after it was timed (see its failure)"
                results[report.nodeid] = replace(
                    r, verdict=replace(r.verdict, status=FAILED, reason=reason)
                )

    def pytest_keyboard_interrupt(self) -> None:
        self.state.interrupted = True


def header_lines(config: pytest.Config) -> list[str] | None:
    state = config.stash[STATE]
    if not state.enabled or state.worker_out is not None:
        return None

    where = (
        f"baselines {rel(state.store.dir, state.rootpath)}"
        if state.plan is None
        else f"same-session comparison ({state.plan.option})"
    )
    lines = [
        f"burnperf: machine {state.machine_id} ({describe(cpu_identity())})",
        f"burnperf: {where}, {rounds_text(state.rounds, state.max_rounds)}, size {state.size}",
    ]
    if state.counting is not None:
        lines[-1] = f"burnperf: {counting.start_text(state)}"
        if state.counting.measure == "both":
            lines.append(f"burnperf: time: {where}, {rounds_text(state.rounds, state.max_rounds)}")
    if state.reference is not None:
        lines.append(f"burnperf: {_reference_text(state)}")
    if state.shard is not None:
        lines.append(f"burnperf: shard {state.shard[0]}/{state.shard[1]} of the selection")
    for option, value in _separate_outside_paths(state.invocation, config.invocation_params.dir):
        lines.append(
            f"burnperf: note: `{option} {escape(value)}` names an existing path outside this "
            f"directory as a separate argument; pytest may take it for a test path when it picks "
            f"the rootdir (here {escape(str(state.rootpath))}), which renames the tests and their "
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
    choice = state.reference
    assert choice is not None
    if choice.problem:
        return f"--perf-against auto found no reference: {choice.problem}"
    if choice.baselines:
        return f"--perf-against auto compares with {choice.why}"
    return f"--perf-against auto compares in this session with {choice.why}"


def finish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash[STATE]
    if not state.enabled:
        return
    state.restore_sigterm()

    # Ctrl-C or SIGTERM from here to pytest_unconfigure is held: every file below is written whole
    # or not at all, and the run ends as interrupted with a message instead of a traceback.
    held = hold()
    _finish(session, state, exitstatus)
    if held:
        state.interrupted = True
        state.messages.append(f"{held.names()} received while the run was being written up")
        session.exitstatus = pytest.ExitCode.INTERRUPTED


def _finish(session: pytest.Session, state: PerfState, exitstatus: int) -> None:

    if state.worker_out is not None:
        atomic_write_text(state.worker_out, dumps(finite(state.worker_samples)))
        note_shadowed(state.worker_out)
        return
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        state.interrupted = True
    info = state.shard_info
    if (
        info is not None
        and not info["benchmarks"]
        and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED
    ):
        # a matrix wider than the suite: this shard's share is empty, which is no failure
        session.exitstatus = pytest.ExitCode.OK
        state.messages.append(
            f"shard {info['index']}/{info['count']} holds none of the selection's "
            f"{info['comparisons']} benchmark(s) (more shards than benchmarks): nothing to run "
            "here, and its results file says so for `burnperf merge`"
        )

    now = now_utc()
    machine = session_machine_info(session.config, state)
    if state.update:
        if state.interrupted:
            state.messages.append(
                "baselines NOT updated: the run was interrupted, so no baseline file was written"
            )
        elif not write_baselines(state, now, machine) and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = (
                pytest.ExitCode.INTERRUPTED if state.interrupted else pytest.ExitCode.TESTS_FAILED
            )
    _judge_coverage(session, state)
    ours = None
    if state.json_path is not None or state.markdown_path is not None or state.store_value:
        from pytest_burnperf.report.results_json import json_document

        ours = json_document(
            list(state.results.values()),
            machine=machine,
            created=now,
            git=state.git,
            settings={
                "samples": state.base.merged(state.cmdline).samples,
                "alpha": state.base.merged(state.cmdline).alpha,
                "threshold": state.base.merged(state.cmdline).threshold,
                "update_baselines": state.update,
                "size": state.size,
                "baselines": None
                if state.plan is not None
                else rel(state.store.dir, state.rootpath),
                "same_session": _same_session_json(state),
                "shard": state.shard_info,
                "reference": None
                if state.reference is None
                else {
                    "chosen_by": "--perf-against auto",
                    "ref": state.reference.ref,
                    "baselines": state.reference.baselines,
                    "why": state.reference.why,
                    "problem": state.reference.problem,
                },
            },
            coverage=state.coverage_json,
        )
        if state.interrupted:  # a partial run: kept, marked, and never stored as a whole one
            ours["interrupted"] = True

    def benchmark_doc() -> dict[str, Any]:
        from pytest_burnperf.report import pytest_benchmark as pytest_benchmark_json

        return pytest_benchmark_json.document(
            list(state.results.values()), machine=machine, created=now, git=state.git
        )

    if state.json_path is not None:
        doc = benchmark_doc() if state.json_format == "pytest-benchmark" else ours
        assert doc is not None
        session.config.hook.pytest_burnperf_update_json(config=session.config, document=doc)
        path = session.config.invocation_params.dir / state.json_path
        if _write_json(session, state, path, doc, "--perf-json"):
            state.messages.append(f"results written to {state.json_path}")
    target = _benchmark_json(session.config, state)
    if target is not None and _write_json(
        session, state, target, benchmark_doc(), "--benchmark-json"
    ):
        # a pytest-benchmark suite under --perf: its own --benchmark-json too
        state.messages.append(
            f"pytest-benchmark's JSON of this run written to {target} (--benchmark-json)"
        )
    if state.store_value and ours is not None and state.results:
        if state.interrupted:
            state.messages.append(
                "--perf-store: this run was NOT recorded: it was interrupted, and history and "
                "change points would read its partial results as a whole run"
            )
        else:
            _record(session, state, finite(ours))
    if state.markdown_path is not None:
        assert ours is not None
        from pytest_burnperf.report import markdown

        path = session.config.invocation_params.dir / state.markdown_path
        try:
            written = markdown.write(path, markdown.render(finite(ours)))
        except markdown.StepSummaryError as exc:  # the job's summary, not the user's file
            state.messages.append(
                f"Markdown summary written to {state.markdown_path}; NOT appended to the job "
                f"summary: {exc}"
            )
        except (OSError, ValueError) as exc:
            state.messages.append(f"--perf-markdown: could not write {path}: {_why(exc)}")
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
        else:
            also = " and appended to $GITHUB_STEP_SUMMARY" if len(written) > 1 else ""
            state.messages.append(f"Markdown summary written to {state.markdown_path}{also}")


def _write_json(
    session: pytest.Session, state: PerfState, path: Path, doc: Any, option: str
) -> bool:
    """``doc`` written whole to ``path`` or not at all; a failure is the run's message, naming
    ``option``, and an internal-error exit."""
    try:
        atomic_write_text(path, dumps(finite(doc), indent=1, sort_keys=True) + "\n")
    except (OSError, ValueError) as exc:
        state.messages.append(f"{option}: could not write {path}: {_why(exc)}")
        session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
        return False
    return True


def _benchmark_json(config: pytest.Config, state: PerfState) -> Path | None:
    """Where pytest-benchmark's ``--benchmark-json`` asks for its JSON, in a run where this
    plugin timed the ``benchmark`` fixture's tests (their plugin is off then, so it would write
    nothing); None elsewhere."""
    if not state.took_over_benchmark or not state.benchmark_fixture_tests:
        return None
    try:
        value = config.getoption("benchmark_json")
    except ValueError:  # pytest-benchmark not installed: no such option
        return None
    if not value:
        return None
    path = Path(getattr(value, "name", value))
    return path if path.is_absolute() else config.invocation_params.dir / path


def _judge_coverage(session: pytest.Session, state: PerfState) -> None:
    """How many benchmarks got a verdict (judged.py): kept for the summary and the documents;
    below --perf-min-judged the run fails."""

    results = list(state.results.values())
    cov = coverage((r.nodeid, r.verdict.status, r.verdict.reason) for r in results)
    lines = advice(
        cov,
        same_session=state.plan is not None,
        command=shlex.join(_rest_args(state.invocation)),
        hardware_class=state.store.machine_id,
        auto_problem=None if state.reference is None else state.reference.problem,
        rounds=state.rounds,
        max_rounds=state.max_rounds,
    )
    state.coverage = cov
    state.coverage_advice = lines
    state.coverage_json = cov.as_json(state.min_judged or None, lines)
    if state.update or state.interrupted:
        return
    state.shortfall = shortfall(cov, state.min_judged)
    if state.shortfall and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    _junit_properties(session.config, state)


def _junit_properties(config: pytest.Config, state: PerfState) -> None:
    """The run's coverage as <testsuite> properties of --junitxml (each benchmark's own
    verdict is already a property of its test case)."""
    cov = state.coverage
    if cov is None:
        return
    props: list[tuple[str, object]] = [
        ("burnperf_judged", cov.judged + cov.failed),
        ("burnperf_not_judged", cov.not_judged),
        ("burnperf_total", cov.total),
        ("burnperf_min_judged", state.min_judged),
        *((f"burnperf_not_judged_{w.replace(' ', '_')}", len(n)) for w, n in cov.missed.items()),
    ]
    if state.shortfall:
        props.append(("burnperf_failed", state.shortfall))
    for plugin in config.pluginmanager.get_plugins():
        add = getattr(plugin, "add_global_property", None)
        if callable(add):  # junitxml's LogXML, registered only with --junitxml
            for name, value in props:
                add(name, value)


def accept_line(state: PerfState, results: list[Result], ours: bool = True) -> str | None:
    """After a regression against stored baselines: how to accept it when it is intended (the
    run's own command, recording only the benchmarks that regressed, by function name: ``-k``
    takes no ``Class::``); None otherwise. ``ours``: --update-baselines is this plugin's option
    (a conftest.py may own that name; then --perf-update is said)."""
    names = sorted({r.benchmark.split("::")[-1] for r in results if r.verdict.status == REGRESSED})
    if not names or state.update or state.plan is not None:
        return None
    rest = [
        a
        for a in _spec.without_options(tuple(_rest_args(state.invocation)), ("-k",), ())
        if not (a.startswith("-k") and not a.startswith("--"))  # -kEXPR
    ]
    update = "--update-baselines" if ours else "--perf-update"
    command = shlex.join(["pytest", "--perf", update, *rest, "-k", " or ".join(names)])
    return f"if the slowdown is intended, record it as the new baseline: {command}"


def _rest_args(invocation: tuple[str, ...]) -> list[str]:
    """The run's arguments without those a command its summary suggests sets itself, and with
    no password of a URL (a --perf-store URL) in them."""
    return [redact(a) for a in _without(invocation)]


def _without(invocation: tuple[str, ...]) -> list[str]:
    return _spec.without_options(
        invocation,
        ("--perf-against", "--perf-min-judged"),
        ("--perf", "--perf-update", "--update-baselines"),
    )


def _record(session: pytest.Session, state: PerfState, doc: dict[str, Any]) -> None:
    """--perf-store: this run into the results store (history/store.py)."""
    import time

    url = resolve_url(state.store_value, state.rootpath)
    t0 = time.perf_counter()
    try:
        from pytest_burnperf.storage.history.store import Store, StoreError
    except ImportError as exc:
        state.messages.append(
            f"--perf-store: the results store needs SQLAlchemy ({exc}); pip install "
            "'pytest-burnperf[history]'. This run was NOT recorded"
        )
        session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
        return
    try:
        with Store(url) as store:
            added = store.record(doc)
    except StoreError as exc:
        state.messages.append(f"--perf-store: this run was NOT recorded: {exc}")
        session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
        return
    what = "recorded in" if added else "already in"
    state.messages.append(
        f"run {what} the results store {redact(url)} ({len(doc.get('results') or [])} results, "
        f"{time.perf_counter() - t0:.2f} s); `burnperf history` shows the series"
    )


def _same_session_text(state: PerfState) -> str | None:
    """``current vs main (git main = 1a2b3c4d5e6f) in this session`` for the header, or None."""
    plan, got = state.plan, state.measured
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
    return text


def _same_session_json(state: PerfState) -> dict[str, Any] | None:
    plan, got = state.plan, state.measured
    if plan is None:
        return None
    return {
        "option": plan.option,
        "versions": list(plan.refs),
        "reference": plan.reference,
        "candidate": plan.candidate,
        "environments": [] if got is None else [e.as_json() for e in got.envs.values()],
        "round_orders": [] if got is None else got.orders,
        "failures": {} if got is None else dict(got.failures),
    }


def _versions_tables(
    write_line: Callable[[str], None], state: PerfState, results: list[Any]
) -> None:

    plan = state.plan
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


def note_shadowed(worker_out: Path) -> None:
    """In a round's process of an installed reference: which of its modules came from elsewhere
    (versions.shadowed_modules), for the parent to refuse the round."""
    overlay = installed_from()
    if overlay:
        bad = shadowed_modules(overlay, sys.modules)
        atomic_write_text(worker_out.with_name(worker_out.name + ".modules"), dumps(bad))


def summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash[STATE]
    if not state.enabled or state.worker_out is not None or state.aborted:
        return

    with held_signals() as held:  # the summary is printed whole; a Ctrl-C now ends nothing early
        before = len(held.received)
        _summary(terminalreporter, config, state)
    if len(held.received) > before:
        terminalreporter.write_line(f"{held.names()} received while the summary was printed")


def _summary(terminalreporter: Any, config: pytest.Config, state: PerfState) -> None:

    def write_line(text: str) -> None:
        # a safety net below the strict reader: no control character reaches the terminal
        for line in text.split("\n"):
            terminalreporter.write_line(escape(redact(line)))

    tr = terminalreporter
    results = list(state.results.values())
    tr.section("pytest-burnperf")
    base = state.base.merged(state.cmdline)
    width = config.get_terminal_writer().fullwidth
    head = header(
        results,
        machine_id=state.machine_id,
        baselines=rel(state.store.dir, state.rootpath),
        size=state.size,
        rounds=state.rounds,
        max_rounds=state.max_rounds,
        rounds_per_result=[len(r.runs) for r in results],
        threshold=base.threshold,
        alpha=base.alpha,
        comparisons=state.comparisons,
        same_session=_same_session_text(state),
        machine_line=False,  # the run's first line named it (header_lines)
        counted=None if state.counting is None else counting.header_text(state),
    )
    if state.reference is not None:
        head.insert(1, _reference_text(state))
    for line in wrap(head, width):
        write_line(line)
    if results:
        for line, status in table_rows(
            results,
            columns=state.columns,
            width=width,
            sort=state.sort,
            group_by=state.group_by,
            verbose=config.get_verbosity() > 0,
        ):
            # colour follows pytest's --color: the writer drops it where the terminal has none
            tr.write_line(escape(line), **VERDICT_MARKUP.get(status or "", {}))
        verbose = config.get_verbosity() > 0
        for line in wrap(notes(results, verbose=verbose, width=width), width):
            write_line(line)
        for line in speedups(results):
            write_line(line)
        if state.plan is not None and state.plan.option == "--perf-versions":
            _versions_tables(write_line, state, results)
    write_line(f"perf: {counts_line(results)}")
    if state.shard_info is not None:
        info = state.shard_info
        write_line(
            f"perf: shard {info['index']}/{info['count']}: {info['benchmarks']} of the "
            f"selection's {info['comparisons']} benchmarks, judged at the alpha of all "
            f"{info['comparisons']}; `burnperf merge` combines the shards' --perf-json files"
        )
    if state.coverage is not None and state.coverage.total and not state.update:
        write_line(f"perf: {state.coverage.line()}")
        for line in wrap([f"  {a}" for a in state.coverage_advice], width):
            write_line(line)
        if state.shortfall:
            write_line(f"FAILED: {state.shortfall}")
    args = [
        redact(a)
        for a in state.invocation
        if a not in ("--perf", "--perf-update", "--update-baselines")
    ]
    record = shlex.join(["pytest", "--perf", "--perf-update", *args])
    legacy = [r for r in results if r.verdict.reason.startswith(LEGACY)]
    if legacy and not state.update:
        write_line(
            f"{len(legacy)} baseline(s) were recorded before pytest-burnperf recorded the hardware "
            "class, so they were not compared; re-record them on this machine with: " + record
        )
    elif (
        any(r.verdict.status == NO_BASELINE for r in results)
        and not state.update
        and state.plan is None
        and not state.coverage_advice
    ):
        write_line("record baselines for this machine with: " + record)
    accept = accept_line(state, results, ours=hasattr(config.option, UPDATE_ALIAS_DEST))
    if accept:
        write_line(accept)
    for line in wrap(state.messages, width):
        write_line(line)
