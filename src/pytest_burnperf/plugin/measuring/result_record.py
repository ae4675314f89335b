"""What one benchmark leaves behind: its :class:`~pytest_burnperf.core.records.results.Result` (samples,
verdict, provenance, the test's parameters), the properties it adds to the JUnit report, and
whether its verdict fails its test (:func:`settle`, by core/judging/outcome.py's one rule)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from pytest_burnperf.core.judging.outcome import outcome
from pytest_burnperf.core.options.settings import Settings
from pytest_burnperf.core.records.results import Result
from pytest_burnperf.core.records.stored_baseline import StoredBaseline
from pytest_burnperf.devices.base import Device, DeviceBase
from pytest_burnperf.plugin.session.cases import Case
from pytest_burnperf.plugin.session.perf_state import PerfState
from pytest_burnperf.report.terminal import wrap


@dataclass(frozen=True)
class Benchmarked:
    """One benchmark as its ``perf`` fixture hands it to judging and recording
    (PerfBase._benchmarked), taken when it is judged: its test, case, baseline file and key,
    settings, device (the call's, for a pytest-benchmark test), and pytest-benchmark's
    ``extra_info`` and ``group``."""

    state: PerfState
    item: pytest.Item
    case: Case
    module: str
    key: str
    settings: Settings
    device: Device
    extra_info: Mapping[str, object]
    group: str | None


def make_result(b: Benchmarked, **fields: Any) -> Result:
    """The :class:`Result` of ``b``: its identity from the fixture, the measurement and
    verdict from ``fields`` (``runs`` as lists, ``baseline`` None by default)."""

    case = b.case
    assert case.entry is not None
    runs = fields.pop("runs")
    fields.setdefault("baseline", None)
    params, param = test_params(b.item, case)
    return Result(
        nodeid=b.item.nodeid,
        module=b.module,
        key=b.key,
        benchmark=b.key.split("[", 1)[0],
        device_id=case.entry.id,
        kind=case.entry.kind,
        library=case.entry.library,
        dtype=case.dtype,
        settings=b.settings,
        runs=tuple(tuple(r) for r in runs),
        extra_info=dict(b.extra_info),
        group=b.group,
        sampling_rounds=b.state.schedule.sampling_rounds,
        params=params,
        param=param,
        **fields,
    )


def as_runs(baseline: StoredBaseline | None) -> tuple[tuple[float, ...], ...]:
    return () if baseline is None else baseline.runs


def test_params(item: pytest.Item, case: Case) -> tuple[dict[str, object] | None, str | None]:
    """The test's parameters and parameter id, as pytest-benchmark's JSON gives them: a
    ``@pytest.mark.perf`` test's device (by its id), dtype and own parameters; a test written for
    pytest-benchmark its own parameters only (its ``cpu`` case is this plugin's), None for one
    without. Values JSON cannot hold are given by ``repr``."""
    spec = getattr(item, "callspec", None)
    given = dict(spec.params) if spec is not None else {}
    given.pop("_burnperf_case", None)
    params: dict[str, object] = {}
    if not case.benchmark_style:
        params = {"device": case.label, "dtype": case.dtype}
    for name, value in given.items():
        if isinstance(value, DeviceBase):
            params[name] = value.id
        elif value is None or isinstance(value, (str, int, float, bool)):
            params[name] = value
        else:
            params[name] = repr(value)
    param = spec.id if spec is not None else ""
    if not params:
        return None, None
    return params, param or None


def junit_properties(result: Result) -> list[tuple[str, object]]:
    """The verdict as JUnit XML ``<property>`` elements (what CI systems show per test). The
    medians' names carry their unit: ``perf_median_s`` (seconds) where the time judged,
    ``perf_median_instructions`` where the counts did (``perf_measure`` says which)."""
    v = result.verdict
    unit = result.judged_by.unit
    props: list[tuple[str, object]] = [
        ("perf_verdict", v.status),
        ("perf_measure", result.judged_by.name),
        (f"perf_median_{unit}", f"{v.current_median:.6g}"),
    ]
    if v.baseline_median is not None:
        props.append((f"perf_baseline_median_{unit}", f"{v.baseline_median:.6g}"))
    if v.change_pct is not None:
        props.append(("perf_change_pct", f"{v.change_pct:+.2f}"))
    if v.ratio_low is not None and v.ratio_high is not None:
        low, high = 100 * (v.ratio_low - 1), 100 * (v.ratio_high - 1)
        props.append(("perf_change_ci95_pct", f"{low:+.2f},{high:+.2f}"))
    if v.p_value is not None:
        props.append(("perf_p_value", f"{v.p_value:.3g}"))
    if v.min_detectable is not None:
        props.append(("perf_min_detectable_pct", f"{100 * v.min_detectable:.2f}"))
    if v.reason:
        props.append(("perf_reason", v.reason))
    return props


def settle(
    state: PerfState,
    item: pytest.Item,
    test_id: str,
    result: Result,
    regression: Callable[[], str],
) -> None:
    """Keep ``result`` as ``item``'s (the session's results, its JUnit properties) and fail
    ``test_id``'s test where its verdict fails it (core/judging/outcome: the one rule for every measure
    and mode); ``regression`` builds the measure's line for a regression, and the profile's note
    of what grew follows it. Every measured benchmark's result passes through here, once."""
    __tracebackhide__ = True
    state.findings.results[item.nodeid] = result
    item.user_properties.extend(junit_properties(result))
    decided = outcome(
        result.verdict,
        test_id=test_id,
        strict=state.run.strict,
        records=state.run.mode.records,
        regression=regression,
        why=result.profile.note if result.profile else "",
        sides=result.sides,
    )
    if decided.fails:  # within the terminal's width, as every line of the summary
        shown = item.config.pluginmanager.get_plugin("terminalreporter") is not None
        width = item.config.get_terminal_writer().fullwidth if shown else None
        pytest.fail("\n".join(wrap([decided.message], width)), pytrace=False)


def keep_round_record(state: PerfState, nodeid: str, record: dict[str, object]) -> None:
    """In a round process: what ``nodeid`` measured (samples, counts or a profile), for the
    parent's samples file (rounds/report_back.py writes it)."""
    state.findings.round_records[nodeid] = record


def new_round(state: PerfState) -> None:
    """In a round server's forked child: this round's records start empty."""
    state.findings.round_records = {}


def keep_smoked(state: PerfState, nodeid: str) -> None:
    """A smoke run: ``nodeid`` called perf (its body ran once, untimed)."""
    state.findings.smoked.add(nodeid)


def keep_noisy(state: PerfState, nodeid: str, floor: float) -> None:
    """Recording: ``nodeid``'s runs are too noisy for its threshold; ``floor`` is the noise floor
    a comparison with as many rounds would have."""
    state.findings.noisy_records[nodeid] = floor


def keep_single_round(state: PerfState, nodeid: str, floor: float | None) -> None:
    """Recording: ``nodeid`` was timed in one process round only; ``floor`` is what a
    comparison against it would see from the prior alone."""
    state.findings.single_round_records[nodeid] = floor


def keep_renamed(state: PerfState, module: str, key: str, old: str) -> None:
    """A pytest-benchmark test's baseline found under the key it had with ``[cpu]`` in its id:
    --perf-update writes ``key`` and drops ``old``."""
    state.findings.renamed_baselines.setdefault(module, {})[key] = old
