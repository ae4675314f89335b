"""Which ``perf`` object a benchmark gets: :class:`~.perf_base.SmokePerf` without ``--perf``,
:class:`~.same_session_perf.ComparePerf` in the parent of a same-session comparison, and
:class:`~.timed_perf.Perf` (measure, judge, record) with its stored baseline otherwise; and the
baseline file and key a test's results belong to."""

from __future__ import annotations

import pytest

from pytest_burnperf.plugin.measuring.perf_base import PerfBase, SmokePerf
from pytest_burnperf.plugin.measuring.result_record import keep_renamed
from pytest_burnperf.plugin.measuring.same_session_perf import ComparePerf
from pytest_burnperf.plugin.measuring.timed_perf import Perf
from pytest_burnperf.plugin.session.cases import Case
from pytest_burnperf.plugin.session.perf_state import STATE, module_and_key
from pytest_burnperf.report.pytest_benchmark import legacy_keys
from pytest_burnperf.storage.baselines import BaselineError


def make_perf(request: pytest.FixtureRequest, case: Case) -> PerfBase:
    """The ``perf`` object of one benchmark: timing and judging under ``--perf``, a single untimed
    call in smoke mode. Its baseline is loaded here; a bad baseline file fails this test only."""

    state = request.config.stash[STATE]
    assert case.entry is not None and case.entry.device is not None
    module, key = module_and_key(request.node, state.run.rootpath)
    if not state.run.mode.measures:
        case.entry.device.reseed(0)
        return SmokePerf(state, request.node, case, module, key)
    if state.run.mode.compares:  # same-session comparison: no baseline is read
        case.entry.device.reseed(0)
        return ComparePerf(state, request.node, case, module, key)
    legacy = False
    problem: BaselineError | None = None
    try:
        baseline = state.store.baseline(module, key)
        if baseline is None and case.benchmark_style:  # recorded when `[cpu]` was in its id
            for old in legacy_keys(key):
                baseline = state.store.baseline(module, old)
                if baseline is not None:
                    keep_renamed(state, module, key, old)
                    break
        if baseline is None and state.legacy_store is not None:
            baseline = state.legacy_store.baseline(module, key)
            legacy = baseline is not None
    except BaselineError as exc:
        problem = exc
    if problem is not None:  # failed outside the except block: no chained exception shown
        pytest.fail(
            f"{request.node.nodeid}: {problem}. The file was left untouched; fix it, or delete it "
            "and record new baselines with --perf-update",
            pytrace=False,
        )
    case.entry.device.reseed(0)
    return Perf(state, request.node, case, module, key, baseline, legacy)
