"""What the session the user started writes at its end, whole or not at all: the baselines (when
recording), the coverage check and its JUnit properties, the results JSON (also pytest-
benchmark's), the Markdown summary and the run in the results store."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest

from pytest_burnperf import json_fields as jf
from pytest_burnperf.core.judging.abstention import Cause
from pytest_burnperf.core.judging.coverage import advice, coverage, shortfall
from pytest_burnperf.core.options import command_args
from pytest_burnperf.core.text import redact
from pytest_burnperf.host.machine import now_utc
from pytest_burnperf.plugin.output.baseline_writing import write_baselines
from pytest_burnperf.plugin.session.outcome_watch import interrupted
from pytest_burnperf.plugin.session.perf_state import PerfState, rel, session_machine_info
from pytest_burnperf.storage.history import resolve_url
from pytest_burnperf.storage.jsonfile import _why, atomic_write_text, dumps, finite


def write_up(session: pytest.Session, state: PerfState, exitstatus: int) -> None:
    """Everything the run writes at its end, in order: baselines (recording), coverage, results
    JSON, pytest-benchmark's JSON, the store, the Markdown summary; each failure is a message
    and an exit status, never a traceback."""
    _profile_gaps(state)
    profiled = sum(
        1 + (r.profile.against_file is not None)
        for r in state.findings.results.values()
        if r.profile is not None
    )
    if profiled:
        state.notes.append(
            f"--perf-profile: {profiled} profile(s) in "
            f"{rel(state.output.profile_dir, state.run.rootpath)} (.pstats: python -m pstats or "
            "snakeviz; .trace.json: ui.perfetto.dev or chrome://tracing)"
        )
    state.notes.extend(_pedantic_lines(state))
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        interrupted(state)
    info = state.findings.shard_info
    if (
        info is not None
        and not info["benchmarks"]
        and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED
    ):
        # a matrix wider than the suite: this shard's share is empty, which is no failure
        session.exitstatus = pytest.ExitCode.OK
        state.notes.append(
            f"shard {info['index']}/{info['count']} holds none of the selection's "
            f"{info['comparisons']} benchmark(s) (more shards than benchmarks): nothing to run "
            "here, and its results file says so for `burnperf merge`"
        )

    now = now_utc()
    machine = session_machine_info(session.config, state)
    if state.run.mode.records:
        if state.findings.interrupted:
            state.notes.append(
                "baselines NOT updated: the run was interrupted, so no baseline file was written"
            )
        elif not write_baselines(state, now, machine) and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = (
                pytest.ExitCode.INTERRUPTED
                if state.findings.interrupted
                else pytest.ExitCode.TESTS_FAILED
            )
    _judge_coverage(session, state)
    ours = None
    if (
        state.output.json_path is not None
        or state.output.markdown_path is not None
        or state.output.store_value
    ):
        from pytest_burnperf.report.results_json import json_document

        ours = json_document(
            list(state.findings.results.values()),
            machine=machine,
            created=now,
            git=state.git,
            settings={
                "samples": state.run.base.merged(state.run.cmdline).samples,
                "alpha": state.run.base.merged(state.run.cmdline).alpha,
                "threshold": state.run.base.merged(state.run.cmdline).threshold,
                "threshold_given": state.run.base.merged(state.run.cmdline).threshold_given,
                "update_baselines": state.run.mode.records,
                "size": state.run.size,
                "baselines": None
                if state.run.mode.compares
                else rel(state.store.dir, state.run.rootpath),
                "same_session": same_session_json(state),
                "shard": state.findings.shard_info,
                "reference": None
                if state.run.reference is None
                else {
                    "chosen_by": "--perf-against auto",
                    "ref": state.run.reference.ref,
                    "baselines": state.run.reference.baselines,
                    "why": state.run.reference.why,
                    "problem": state.run.reference.problem,
                },
            },
            coverage=state.findings.coverage_json,
        )
        if (
            state.findings.interrupted
        ):  # a partial run: kept, marked, and never stored as a whole one
            ours["interrupted"] = True

    def benchmark_doc() -> dict[str, object]:
        from pytest_burnperf.report import pytest_benchmark as pytest_benchmark_json

        results = list(state.findings.results.values())
        left_out = pytest_benchmark_json.not_timed(results)
        if left_out:
            state.notes.append(
                f"pytest-benchmark's JSON holds times: {len(left_out)} benchmark(s) judged by "
                "instruction counts alone are left out of its benchmarks (named under "
                "burnperf_not_timed); --perf-measure both times them beside their counts"
            )
        return pytest_benchmark_json.document(results, machine=machine, created=now, git=state.git)

    if state.output.json_path is not None:
        doc = benchmark_doc() if state.output.json_format == "pytest-benchmark" else ours
        assert doc is not None
        session.config.hook.pytest_burnperf_update_json(config=session.config, document=doc)
        path = session.config.invocation_params.dir / state.output.json_path
        if _write_json(session, state, path, doc, "--perf-json"):
            state.notes.append(f"results written to {state.output.json_path}")
    target = _benchmark_json(session.config, state)
    if target is not None and _write_json(
        session, state, target, benchmark_doc(), "--benchmark-json"
    ):
        # a pytest-benchmark suite under --perf: its own --benchmark-json too
        state.notes.append(
            f"pytest-benchmark's JSON of this run written to {target} (--benchmark-json)"
        )
    if state.output.store_value and ours is not None and state.findings.results:
        if state.findings.interrupted:
            state.notes.append(
                "--perf-store: this run was NOT recorded: it was interrupted, and history and "
                "change points would read its partial results as a whole run"
            )
        else:
            _record(session, state, finite(ours))
    if state.output.markdown_path is not None:
        assert ours is not None
        from pytest_burnperf.report import markdown

        path = session.config.invocation_params.dir / state.output.markdown_path
        try:
            written = markdown.write(path, markdown.render(finite(ours)))
        except markdown.StepSummaryError as exc:  # the job's summary, not the user's file
            state.notes.append(
                f"Markdown summary written to {state.output.markdown_path}; NOT appended to the job "
                f"summary: {exc}"
            )
        except (OSError, ValueError) as exc:
            state.notes.append(f"--perf-markdown: could not write {path}: {_why(exc)}")
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
        else:
            also = " and appended to $GITHUB_STEP_SUMMARY" if len(written) > 1 else ""
            state.notes.append(f"Markdown summary written to {state.output.markdown_path}{also}")


def _write_json(
    session: pytest.Session, state: PerfState, path: Path, doc: Any, option: str
) -> bool:
    """``doc`` written whole to ``path`` or not at all; a failure is the run's message, naming
    ``option``, and an internal-error exit."""
    try:
        atomic_write_text(path, dumps(finite(doc), indent=1, sort_keys=True) + "\n")
    except (OSError, ValueError) as exc:
        state.notes.append(f"{option}: could not write {path}: {_why(exc)}")
        session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
        return False
    return True


def _benchmark_json(config: pytest.Config, state: PerfState) -> Path | None:
    """Where pytest-benchmark's ``--benchmark-json`` asks for its JSON, in a run where this
    plugin timed the ``benchmark`` fixture's tests (their plugin is off then, so it would write
    nothing); None elsewhere."""
    if not state.took_over_benchmark or not state.findings.benchmark_fixture_tests:
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
    """How many benchmarks got a verdict (core/judging/coverage.py): kept for the summary and the documents;
    below --perf-min-judged the run fails."""

    results = list(state.findings.results.values())
    unmeasured = [n for n in state.findings.unmeasured if n not in state.findings.results]
    cov = coverage(
        [
            *((r.nodeid, r.verdict.status, r.verdict.cause) for r in results),
            *((n, "not measured", Cause.NOT_MEASURED) for n in unmeasured),
        ]
    )
    lines = advice(
        cov,
        same_session=state.run.mode.compares,
        command=shlex.join(rest_args(state.run.invocation)),
        plain=shlex.join(rest_args(state.run.invocation, recording=True)),
        hardware_class=state.store.machine_id,
        auto_problem=None if state.run.reference is None else state.run.reference.problem,
        rounds=state.schedule.rounds,
        max_rounds=state.schedule.max_rounds,
    )
    state.findings.coverage = cov
    state.findings.coverage_advice = lines
    state.findings.coverage_json = cov.as_json(state.output.min_judged or None, lines)
    if state.run.mode.records or state.findings.interrupted:
        return
    state.findings.shortfall = shortfall(cov, state.output.min_judged)
    if state.findings.shortfall and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    _junit_properties(session.config, state)


def _junit_properties(config: pytest.Config, state: PerfState) -> None:
    """The run's coverage as <testsuite> properties of --junitxml (each benchmark's own
    verdict is already a property of its test case)."""
    cov = state.findings.coverage
    if cov is None:
        return
    props: list[tuple[str, object]] = [
        ("burnperf_judged", cov.judged + cov.failed),
        ("burnperf_not_judged", cov.not_judged),
        ("burnperf_total", cov.total),
        ("burnperf_min_judged", state.output.min_judged),
        *(
            (f"burnperf_not_judged_{w.value.replace(' ', '_')}", len(n))
            for w, n in cov.missed.items()
        ),
    ]
    if state.findings.shortfall:
        props.append(("burnperf_failed", state.findings.shortfall))
    for plugin in config.pluginmanager.get_plugins():
        add = getattr(plugin, "add_global_property", None)
        if callable(add):  # junitxml's LogXML, registered only with --junitxml
            for name, value in props:
                add(name, value)


def rest_args(invocation: tuple[str, ...], *, recording: bool = False) -> list[str]:
    """The run's arguments a command its summary suggests repeats (core/options/command_args.suggested_args:
    what selects and configures benchmarks, not what only this run printed or wrote), with no
    password of a URL in them. ``recording``: for a command that records baselines, without
    what the run compared with (command_args.recording_args: --perf-update goes with none of it)."""
    args = (
        command_args.recording_args(invocation)
        if recording
        else command_args.suggested_args(invocation)
    )
    return [redact(a) for a in args]


def _record(session: pytest.Session, state: PerfState, doc: dict[str, object]) -> None:
    """--perf-store: this run into the results store (history/store.py)."""
    import time

    url = resolve_url(state.output.store_value, state.run.rootpath)
    t0 = time.perf_counter()
    try:
        from pytest_burnperf.storage.history.store import Store, StoreError
    except ImportError as exc:
        state.notes.append(
            f"--perf-store: the results store needs SQLAlchemy ({exc}); pip install "
            "'pytest-burnperf[history]'. This run was NOT recorded"
        )
        session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
        return
    try:
        with Store(url) as store:
            added = store.record(doc)
    except StoreError as exc:
        state.notes.append(f"--perf-store: this run was NOT recorded: {exc}")
        session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
        return
    what = "recorded in" if added else "already in"
    state.notes.append(
        f"run {what} the results store {redact(url)} ({len(jf.sequence(doc.get('results')))} results, "
        f"{time.perf_counter() - t0:.2f} s); `burnperf history` shows the series"
    )


def same_session_json(state: PerfState) -> dict[str, object] | None:
    plan, got = state.run.plan, state.findings.measured
    if plan is None:
        return None
    return {
        "option": plan.option,
        "versions": list(plan.refs),
        "reference": plan.reference,
        "candidate": plan.candidate,
        "environments": [] if got is None else [e.as_json() for e in got.envs.values()],
        "round_orders": [] if got is None else got.orders,
        # how each side's rounds started (--perf-round-start): resident rounds are one
        # process's per side, fresh ones a process each
        "round_start": state.schedule.round_start,
        "failures": {} if got is None else dict(got.failures),
    }


def _pedantic_lines(state: PerfState) -> list[str]:
    """Once a run: how its pedantic benchmarks were sampled, those without ``rounds=`` (sampled
    here) and those that pin it (timed as written)."""
    shapes = [
        (r.key, r.pedantic)
        for r in state.findings.results.values()
        if r.pedantic is not None and not r.judged_by.counted
    ]
    sampled = [p for _, p in shapes if p is not None and p.rounds is None]
    pinned = [(k, p) for k, p in shapes if p is not None and p.rounds is not None]
    lines = []
    if sampled:
        warm = sorted({p.warmup_rounds for p in sampled})
        lines.append(
            f"pedantic without rounds=: {len(sampled)} benchmark(s) sampled here, "
            f"{'/'.join(map(str, warm))} warm-up round(s), then at least the benchmark's "
            "samples each process round (more for short calls, up to max_samples), its setup "
            "before every round (pytest-benchmark alone times one cold call); give rounds= to "
            "time them as written"
        )
    if pinned:
        one = [k for k, p in pinned if p.rounds == 1 and p.warmup_rounds == 0]
        lines.append(
            f"pedantic with rounds=: {len(pinned)} benchmark(s) timed as written"
            + (
                f"; {len(one)} with rounds=1 and no warm-up time one cold call a process round "
                f"(e.g. {one[0]}), which a clock judges only over many rounds: leave rounds= "
                "out to let pytest-burnperf sample them"
                if one
                else ""
            )
        )
    return lines


def _profile_gaps(state: PerfState) -> None:
    """What --perf-profile asked for but could not profile in an environment of a same-session
    comparison, said rather than left out silently (a stored-baseline run says it in the
    benchmark's own messages)."""
    got = state.findings.measured
    if state.output.profile == "off" or got is None:
        return
    for label, gaps in sorted(got.profile_gaps.items()):
        if gaps:
            node, why = min(gaps.items())
            more = f" and {len(gaps) - 1} more" if len(gaps) > 1 else ""
            state.notes.append(f"--perf-profile: not profiled in {label}: {node}{more} ({why})")
