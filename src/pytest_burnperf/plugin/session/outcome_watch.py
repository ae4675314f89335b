"""Each test's outcome as pytest reports it: which benchmarks passed their call (the only ones
whose baselines may change), which failed after they were timed (an assert after ``perf()``, a
teardown: their result is marked failed), a GPU fault, a benchmark that never called perf or
failed before it left a result (``unmeasured``: a miss in the coverage), each benchmark's wall
time, and the run interrupted (:func:`interrupted`, wherever it is noticed)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pytest_burnperf.core.judging.outcome import fails, sides_fail
from pytest_burnperf.core.judging.verdict import FAILED
from pytest_burnperf.plugin.session.perf_state import STATE, PerfState, case_of


class OutcomeWatch:
    """Remembers which benchmarks passed their call, the only ones whose baselines may change."""

    def __init__(self, state: PerfState) -> None:
        self.state = state

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:

        results = self.state.findings.results
        if report.when == "call" and report.passed and report.nodeid in results:
            self.state.findings.passed.add(report.nodeid)
        elif report.failed:
            self.state.findings.passed.discard(report.nodeid)
            r = results.get(report.nodeid)
            run = self.state.run
            if (
                r is not None
                and r.verdict.status != FAILED
                and not fails(r.verdict.status, strict=run.strict, records=run.mode.records)
                and not sides_fail(r.sides, records=run.mode.records)
            ):
                # timed, then failed (an assert after perf(), a teardown): counted as failed
                reason = f"the test failed in {report.when} after it was timed (see its failure)"
                results[report.nodeid] = replace(
                    r, verdict=replace(r.verdict, status=FAILED, reason=reason)
                )

    def pytest_keyboard_interrupt(self) -> None:
        interrupted(self.state)


def watch_report(item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport) -> None:
    """Every mode's look at a test's report (from ``pytest_runtest_makereport``): a
    benchmark's wall time in this process (for --perf-shard's split), a GPU fault that makes the
    device's later benchmarks skip, and a benchmark that never called perf failed."""
    case = case_of(item)
    if case is not None:  # its wall time in this process, for --perf-shard's split
        state = item.config.stash[STATE]
        state.findings.durations[item.nodeid] = (
            state.findings.durations.get(item.nodeid, 0.0) + report.duration
        )
        if report.failed and state.run.mode.measures and item.nodeid not in state.findings.results:
            # failed before it left a result (an error, the counting process died): a miss
            state.findings.unmeasured.setdefault(item.nodeid, report.when)
    if report.failed and call.excinfo is not None and case is not None and case.entry is not None:
        from pytest_burnperf.devices.device_errors import device_error

        exc = call.excinfo.value
        # a failure the plugin or the test raised on purpose (pytest.fail) is not a GPU fault,
        # even when its text quotes one (a graph capture that failed)
        deliberate = isinstance(exc, pytest.fail.Exception)
        why = device_error(exc) if case.entry.kind != "cpu" and not deliberate else None
        if why is not None:
            state = item.config.stash[STATE]
            if case.entry.id not in state.findings.bad_devices:
                state.findings.bad_devices[case.entry.id] = f"{item.nodeid}: {why}"
                state.notes.append(
                    f"{case.entry.id} faulted in {item.nodeid} ({why}); its later benchmarks "
                    "in this process were skipped"
                )
    if report.when == "call" and report.passed and case is not None:
        state = item.config.stash[STATE]
        timed = any(
            item.nodeid in got
            for got in (
                state.findings.results,
                state.findings.smoked,
                state.findings.round_records,
            )
        )
        if state.run.mode.runs_benchmarks and not timed:
            report.outcome = "failed"
            report.longrepr = (
                f"{item.nodeid}: is marked @pytest.mark.perf but never called perf(fn, ...) "
                "or perf.pedantic(fn, ...), so nothing was timed"
            )


def interrupted(state: PerfState, why: str | None = None) -> None:
    """The run was interrupted (``why``, for the summary, where there is more to say than the
    exit status): its results file says so and no store takes it."""
    state.findings.interrupted = True
    if why:
        state.notes.append(why)
