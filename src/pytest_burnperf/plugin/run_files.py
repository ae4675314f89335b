"""What the session the user started writes at its end, whole or not at all: the baselines (when
recording), the coverage check and its JUnit properties, the results JSON (also pytest-
benchmark's), the Markdown summary and the run in the results store."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest

from pytest_burnperf.core import settings
from pytest_burnperf.core.coverage import advice, coverage, shortfall
from pytest_burnperf.core.text import redact
from pytest_burnperf.host.machine import now_utc
from pytest_burnperf.plugin.session import (
    PerfState,
    rel,
    session_machine_info,
    write_baselines,
)
from pytest_burnperf.storage.history import resolve_url
from pytest_burnperf.storage.jsonfile import _why, atomic_write_text, dumps, finite


def write_up(session: pytest.Session, state: PerfState, exitstatus: int) -> None:
    """Everything the run writes at its end, in order: baselines (recording), coverage, results
    JSON, pytest-benchmark's JSON, the store, the Markdown summary; each failure is a message
    and an exit status, never a traceback."""
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
    if state.mode.records:
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
                "update_baselines": state.mode.records,
                "size": state.size,
                "baselines": None if state.mode.compares else rel(state.store.dir, state.rootpath),
                "same_session": same_session_json(state),
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
        same_session=state.mode.compares,
        command=shlex.join(rest_args(state.invocation)),
        hardware_class=state.store.machine_id,
        auto_problem=None if state.reference is None else state.reference.problem,
        rounds=state.rounds,
        max_rounds=state.max_rounds,
    )
    state.coverage = cov
    state.coverage_advice = lines
    state.coverage_json = cov.as_json(state.min_judged or None, lines)
    if state.mode.records or state.interrupted:
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


def rest_args(invocation: tuple[str, ...]) -> list[str]:
    """The run's arguments without those a command its summary suggests sets itself, and with
    no password of a URL (a --perf-store URL) in them."""
    return [redact(a) for a in _without(invocation)]


def _without(invocation: tuple[str, ...]) -> list[str]:
    return settings.without_options(
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


def same_session_json(state: PerfState) -> dict[str, Any] | None:
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
