"""Each test's outcome as pytest reports it, watched in every measuring mode: which benchmarks
passed their call (the only ones whose baselines may change), which failed after they were timed
(an assert after ``perf()``, a teardown: their result is marked failed), and an interrupt."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pytest_burnperf.core.outcome import fails
from pytest_burnperf.core.verdict import FAILED
from pytest_burnperf.plugin.session.perf_state import PerfState


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
            ):
                # timed, then failed (an assert after perf(), a teardown): counted as failed
                reason = f"the test failed in {report.when} after it was timed (see its failure)"
                results[report.nodeid] = replace(
                    r, verdict=replace(r.verdict, status=FAILED, reason=reason)
                )

    def pytest_keyboard_interrupt(self) -> None:
        self.state.findings.interrupted = True
