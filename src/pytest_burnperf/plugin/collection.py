"""Collection: each ``@pytest.mark.perf`` test parametrised over the devices present and its
dtypes (a skip with its reason for what is absent), pytest-benchmark-style tests given their one
CPU case, bad markers reported on their own test, and the selection narrowed by
``--perf-backends``, ``--perf-dtypes`` and the project's ``benches``."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_burnperf.core.options import settings
from pytest_burnperf.core.options.settings import SettingsError
from pytest_burnperf.devices import matches
from pytest_burnperf.devices.backends.python_backend import NO_DTYPE
from pytest_burnperf.devices.base import graph_unsupported
from pytest_burnperf.plugin.configuration.options import WITHOUT_PERF
from pytest_burnperf.plugin.measuring import compat
from pytest_burnperf.plugin.session.cases import Case
from pytest_burnperf.plugin.session.perf_state import STATE, PerfState, case_of
from pytest_burnperf.report.pytest_benchmark import CASE_ID


def parametrize_first(metafunc: pytest.Metafunc) -> None:
    """Before pytest applies the fixtures' own params: a perf test whose ``device`` or
    ``dtype`` is also a parametrised fixture of the project is parametrised here, through a
    ``parametrize`` mark, which pytest gives precedence over the fixture's params (else the
    two collided: "duplicate parametrization of 'dtype'", and the module failed to collect).
    Every other test is left to :func:`parametrize`, after the fixtures' params, so that its
    id keeps the order it always had."""
    if metafunc.definition.get_closest_marker("perf") is None or not _shadowing_params(metafunc):
        return
    parametrize(metafunc, as_mark=True)


def _shadowing_params(metafunc: pytest.Metafunc) -> bool:
    """Whether a project fixture named ``device`` or ``dtype`` that this test uses has params."""
    defs = metafunc._arg2fixturedefs
    return any(
        getattr(fixturedef, "params", None) is not None
        for name in ("device", "dtype")
        if name in metafunc.fixturenames
        for fixturedef in defs.get(name, ())
        if getattr(getattr(fixturedef, "func", None), "__module__", "") != PLUGIN_MODULE
    )


def _already_parametrized(metafunc: pytest.Metafunc) -> bool:
    return any(
        "_burnperf_case" in str(mark.args[0] if mark.args else "")
        for mark in metafunc.definition.iter_markers("parametrize")
    )


def _apply(
    metafunc: pytest.Metafunc, argnames: list[str], params: list[Any], as_mark: bool
) -> None:
    if as_mark:
        metafunc.definition.add_marker(pytest.mark.parametrize(argnames, params))
    else:
        metafunc.parametrize(argnames, params)


def parametrize(metafunc: pytest.Metafunc, *, as_mark: bool = False) -> None:
    if _already_parametrized(metafunc):  # parametrize_first did
        return
    marker = metafunc.definition.get_closest_marker("perf")
    if marker is None:
        if "benchmark" in metafunc.fixturenames:
            _generate_benchmark_compat(metafunc)
        return
    test = metafunc.definition.nodeid
    stacked = list(metafunc.definition.iter_markers("perf"))
    if len(stacked) > 1:
        _invalid(
            metafunc,
            as_mark,
            f"{test}: {len(stacked)} @pytest.mark.perf markers apply to this test (on the function, "
            "its class or its module); only one is allowed, since their keywords would otherwise "
            "be silently merged or dropped: keep one and put every keyword in it",
        )
        return
    try:
        spec = settings.parse_marker(test, marker.args, marker.kwargs)
    except SettingsError as exc:
        _invalid(metafunc, as_mark, str(exc))
        return
    if "perf" not in metafunc.fixturenames:
        _invalid(
            metafunc,
            as_mark,
            f"{test}: is marked @pytest.mark.perf but does not use the `perf` fixture; "
            "add a `perf` argument and call perf(fn, *args)",
        )
        return
    shadowed = _shadowed(metafunc)
    state = metafunc.config.stash[STATE]
    cases: list[Case] = []
    if not state.run.mode.runs_benchmarks:
        for name in spec.backends:
            for dtype in spec.dtypes:
                cases.append(Case(None, name, dtype, spec, skip_reason=WITHOUT_PERF))
    else:
        graph = state.run.settings_for(spec).timer == "graph"
        for entry in state.registry.resolve_all(spec.backends):
            for dtype in spec.dtypes:
                reason = entry.reason
                if reason is None and entry.device is not None:
                    reason = entry.device.unsupported(dtype)
                if reason is None and entry.device is not None and graph:
                    reason = graph_unsupported(entry.device)
                cases.append(Case(entry, entry.id, dtype, spec, skip_reason=reason))
    for case in cases:
        case.shadowed = shadowed  # one list: said once, by the first of them that runs
    argnames = ["_burnperf_case"] + [n for n in ("device", "dtype") if n in metafunc.fixturenames]
    params = []
    for case in cases:
        values: list[Any] = [case]
        if "device" in argnames:
            values.append(case.entry.device if case.entry is not None else None)
        if "dtype" in argnames:
            values.append(case.dtype)
        marks = [pytest.mark.skip(reason=case.skip_reason)] if case.skip_reason else []
        params.append(pytest.param(*values, id=f"{case.label}-{case.dtype}", marks=marks))
    _apply(metafunc, argnames, params, as_mark)


def _generate_benchmark_compat(metafunc: pytest.Metafunc) -> None:
    """A test written for pytest-benchmark: one case, the host CPU (numpy's device), kept by the
    test function rather than parametrised, so that the test's id (and the ``-k`` expressions a
    project already runs) stay as they are without ``--perf``."""

    if not compat.active(metafunc.config):
        return
    state = metafunc.config.stash[STATE]
    test = metafunc.definition.nodeid
    bench = metafunc.definition.get_closest_marker("benchmark")
    try:
        overrides, _group = compat.marker_overrides(test, bench.kwargs if bench else {})
    except SettingsError as exc:
        # its device and dtype, if it has them, are the project's own fixtures: left alone
        _invalid(metafunc, False, str(exc), names=())
        return
    entry = state.registry.python()
    spec = settings.PerfSpec(backends=(entry.id,), dtypes=(NO_DTYPE,), overrides=overrides)
    reason = entry.reason
    if (
        reason is None
        and entry.device is not None
        and state.run.settings_for(spec).timer == "graph"
    ):
        reason = graph_unsupported(entry.device)
    case = Case(entry, CASE_ID, NO_DTYPE, spec, skip_reason=reason, benchmark_style=True)
    state.findings.benchmark_cases[metafunc.definition.nodeid] = case


#: The module that defines the plugin's own ``device`` and ``dtype`` fixtures.
PLUGIN_MODULE = "pytest_burnperf.plugin.hooks"


class PerfFixtureShadowWarning(pytest.PytestWarning):
    """A project fixture named ``device`` or ``dtype`` that perf tests do not see."""


def _shadowed(metafunc: pytest.Metafunc) -> list[str]:
    """What to say when the project defines its own ``device``/``dtype`` fixture: in a perf
    test the plugin parametrises that name with the benchmark's device, so the project's is not
    used. Said as a PerfFixtureShadowWarning when such a test runs (hooks.py), not at
    collection: a run that deselects it says nothing."""
    info = getattr(metafunc.definition, "_fixtureinfo", None)
    defs = getattr(info, "name2fixturedefs", {}) or {}
    out: list[str] = []
    for name in ("device", "dtype"):
        if name not in metafunc.fixturenames:
            continue
        for fixturedef in defs.get(name, ()):
            func = getattr(fixturedef, "func", None)
            module = getattr(func, "__module__", "")
            if module and module != PLUGIN_MODULE:
                where = f"{module}.{getattr(func, '__qualname__', name)}"
                out.append(
                    f"{metafunc.definition.nodeid}: the project's own `{name}` fixture "
                    f"({where}) is not used in this @pytest.mark.perf test: pytest-burnperf "
                    f"parametrises `{name}` with the benchmark's {name}; rename your fixture "
                    "to use both"
                )
                break
    return out


def warn_shadowed(item: pytest.Item, case: Case) -> None:
    """Say, once per test function, that the project's ``device``/``dtype`` fixture is not
    used in it (:func:`_shadowed`)."""
    while case.shadowed:
        item.warn(PerfFixtureShadowWarning(case.shadowed.pop(0)))


def _invalid(
    metafunc: pytest.Metafunc,
    as_mark: bool,
    message: str,
    names: Sequence[str] = ("device", "dtype"),
) -> None:
    """One parameter that errors at setup with ``message``: each bad marker is reported on its
    own test, all of them, and the rest of the module still runs. ``names``: the plugin's
    fixtures this test's parameter sets besides its case."""
    argnames = ["_burnperf_case"] + [n for n in names if n in metafunc.fixturenames]
    case = Case(None, "invalid", "", settings.PerfSpec(), error=message)
    values = [case] + [None] * (len(argnames) - 1)
    _apply(metafunc, argnames, [pytest.param(*values, id="invalid-perf-marker")], as_mark)


def _function_name(item: pytest.Item) -> str:
    return str(getattr(item, "originalname", item.name))


def is_runnable(item: pytest.Item) -> bool:
    case = case_of(item)
    return case is not None and case.skip_reason is None and case.error is None


def select(config: pytest.Config, items: list[pytest.Item]) -> None:
    state = config.stash[STATE]
    if state.run.mode.runs_benchmarks:
        _filter_items(config, state, items)
    if state.run.mode.measures and state.run.shard is not None:
        _keep_shard(config, state, items)
    if state.run.round_only is not None:  # an adaptive round: the undecided benchmarks only
        keep = [i for i in items if i.nodeid in state.run.round_only]
        if len(keep) < len(items):
            config.hook.pytest_deselected(items=[i for i in items if i not in keep])
            items[:] = keep


#: Files a round process collects whatever its node ids: they configure the directory they are in.
_ALWAYS_COLLECTED = frozenset({"conftest.py", "__init__.py"})


def outside_round(config: pytest.Config, path: Path) -> bool | None:
    """In a round process given its node ids (``--perf-round-process-only``): ``True`` for a
    file that holds none of them, so that it is not imported. A counted process runs under
    valgrind, where importing a test module the parent's paths hold but no wanted benchmark
    lives in (one that imports torch, say) cost tens of seconds. Directories are walked as
    pytest walks them (their conftest.py files load as in the parent); ``None`` leaves the
    rest to pytest."""
    state = config.stash.get(STATE, None)
    if state is None or state.run.round_only is None or path.name in _ALWAYS_COLLECTED:
        return None
    if path.is_dir() or os.path.realpath(path) in _round_files(config, state.run.round_only):
        return None
    return True


def _round_files(config: pytest.Config, nodeids: frozenset[str]) -> frozenset[str]:
    files = config.stash.get(_ROUND_FILES, None)
    if files is None:
        files = round_files(config.rootpath, nodeids)
        config.stash[_ROUND_FILES] = files
    return files


_ROUND_FILES = pytest.StashKey[frozenset[str]]()


def round_files(root: Path, nodeids: Iterable[str]) -> frozenset[str]:
    """The files (real absolute paths: a root given through a symbolic link names the files
    pytest walks to by another path) that hold the tests ``nodeids`` name: a node id's part
    before its first ``::``, relative to the run's root directory."""
    return frozenset(os.path.realpath(root / nodeid.split("::", 1)[0]) for nodeid in nodeids)


def _filter_items(config: pytest.Config, state: PerfState, items: list[pytest.Item]) -> None:
    if state.run.benches is not None:  # the configuration file's `benches`
        collected = {_function_name(i) for i in items if case_of(i) is not None}
        unknown = [b for b in state.run.benches if b not in collected]
        if unknown:
            state.notes.append(
                f"{state.run.config_file}: benches: {', '.join(unknown)} matched no collected "
                "benchmark (a typo, or a test outside the paths given)"
            )
        chosen = [i for i in items if case_of(i) is None or _function_name(i) in state.run.benches]
        if len(chosen) < len(items):
            config.hook.pytest_deselected(items=[i for i in items if i not in chosen])
            items[:] = chosen
    if state.run.backends_filter is None and state.run.dtypes_filter is None:
        return

    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        case = case_of(item)
        if case is None:
            keep.append(item)
            continue
        ok = True
        if state.run.backends_filter is not None:
            ok = case.entry is not None and any(
                matches(name, case.entry) for name in state.run.backends_filter
            )
        if ok and state.run.dtypes_filter is not None and not case.benchmark_style:
            ok = case.dtype in state.run.dtypes_filter  # a pytest-benchmark test has none
        (keep if ok else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def _keep_shard(config: pytest.Config, state: PerfState, items: list[pytest.Item]) -> None:
    """--perf-shard K/N: keep shard K of the selection (core/options/shards.py), whole benchmarks dealt
    out by their recorded durations; tests that are not benchmarks stay in shard 1. The whole
    selection's comparisons are counted first: every shard judges at the same family-wise alpha."""
    from pytest_burnperf.core.options.shards import expected_seconds, selection_id, split
    from pytest_burnperf.plugin.session.perf_state import module_and_key
    from pytest_burnperf.storage.baselines import BaselineError

    assert state.run.shard is not None
    index, count = state.run.shard
    runnable = [i for i in items if is_runnable(i)]
    weights: dict[str, float | None] = {}
    for item in items:
        case = case_of(item)
        if case is None:
            continue
        group = f"{item.path.name}::{_function_name(item)}"
        seconds: float | None = None
        if is_runnable(item):
            module, key = module_and_key(item, state.run.rootpath)
            try:
                entry = state.store.get(module, key)
            except BaselineError:  # the test itself reports it
                entry = None
            seconds = expected_seconds(entry, state.run.settings_for(case.spec).warmup)
        known = weights.get(group)
        weights[group] = (
            seconds if known is None else (known if seconds is None else known + seconds)
        )
    plan = split(weights, count)

    def mine(item: pytest.Item) -> bool:
        if case_of(item) is None:
            return index == 1
        return plan.shard_of[f"{item.path.name}::{_function_name(item)}"] == index

    keep = [i for i in items if mine(i)]
    state.findings.comparisons = max(1, len(runnable))
    state.findings.shard_info = {
        "index": index,
        "count": count,
        "selection": selection_id(i.nodeid for i in runnable),
        "comparisons": len(runnable),
        "benchmarks": sum(1 for i in keep if is_runnable(i)),
        "expected_s": [round(x, 3) for x in plan.seconds],
        "unknown_durations": plan.guessed,
    }
    if not state.run.mode.in_round:
        total = sum(plan.seconds)
        state.announce(
            f"pytest-burnperf: shard {index}/{count}: {state.findings.shard_info['benchmarks']} of "
            f"{len(runnable)} benchmarks, about {plan.seconds[index - 1]:.0f} s of {total:.0f} s "
            f"per round by the recorded durations (shards: "
            f"{', '.join(f'{x:.0f}' for x in plan.seconds)} s"
            + (f"; {plan.guessed} without one, counted at the median" if plan.guessed else "")
            + ")"
        )
    if len(keep) < len(items):
        config.hook.pytest_deselected(items=[i for i in items if i not in keep])
        items[:] = keep


def deselected(items: Sequence[pytest.Item]) -> None:
    """Remember the benchmarks -k and the other deselections left out, to say why a -k that
    selected none of them did so."""
    if not items:
        return
    state = items[0].config.stash[STATE]
    state.findings.deselected_benchmarks.extend(
        i.nodeid for i in items if (case := case_of(i)) is not None and not case.benchmark_style
    )


def settle_selection(session: pytest.Session) -> list[pytest.Item]:
    """After -k and every other deselection: what the run measures (returned), how many
    comparisons it makes (for the family-wise correction; a shard keeps its whole selection's),
    how many pytest-benchmark tests it times, and a -k that selected no benchmark said."""
    state = session.config.stash[STATE]
    runnable = [item for item in session.items if is_runnable(item)]
    keyword = session.config.option.keyword
    if keyword and state.findings.deselected_benchmarks and not session.items:
        example = state.findings.deselected_benchmarks[0].split("::")[-1]
        state.notes.append(
            f"-k {keyword!r} selected none of the {len(state.findings.deselected_benchmarks)} "
            "@pytest.mark.perf benchmark(s): under --perf their ids end in the device and dtype "
            f"(e.g. {example}); `pytest --perf --collect-only -q` lists them"
        )
    state.findings.benchmark_fixture_tests = sum(
        1 for item in runnable if (case := case_of(item)) is not None and case.benchmark_style
    )
    if (
        state.took_over_benchmark
        and state.findings.benchmark_fixture_tests
        and not session.config.option.collectonly
    ):
        state.notes.append(
            f"{state.findings.benchmark_fixture_tests} pytest-benchmark test(s) run by "
            "pytest-burnperf, not by pytest-benchmark (its hooks are off under --perf)"
        )
    # a shard judges at the alpha of the whole selection, counted before it kept its share
    state.findings.comparisons = (
        max(1, len(runnable)) if state.findings.shard_info is None else state.findings.comparisons
    )
    return runnable
