"""The hook implementations of the pytest plugin (the ``pytest11`` entry point) and its fixtures:
each hook hands its work to the module that does it.

- ``configuration/configure.py``: the run's settings, built once (command line, project file,
  ini keys)
- ``collection.py``: parametrisation over device x dtype, and the selection
- ``rounds/round_control.py``: the extra process rounds, same-session comparisons, the round
  server
- ``configuration/modes.py``: the plugin objects of the run's mode (core/options/run_mode.py):
  ``output/reporter.py`` (what the session the user started prints and writes),
  ``rounds/report_back.py`` (a round process), ``session/outcome_watch.py`` (every test's
  outcome)
- ``measuring/fixture.py``: the ``perf`` fixture that measures and judges, with the instrument
  instruments/registry.py chooses

Loading it imports no array library, scipy or device runtime; those load inside a ``--perf``
run.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_burnperf.host import memory_layout
from pytest_burnperf.host.interrupts import forget_caught_interrupt, raise_if_arrived, release
from pytest_burnperf.plugin import collection
from pytest_burnperf.plugin import hookspecs as hooks
from pytest_burnperf.plugin.configuration import configure, modes, random_start
from pytest_burnperf.plugin.configuration.options import add_options, add_update_alias
from pytest_burnperf.plugin.measuring.fixture import make_perf
from pytest_burnperf.plugin.measuring.perf_base import PerfBase
from pytest_burnperf.plugin.rounds import round_control
from pytest_burnperf.plugin.session import outcome_watch
from pytest_burnperf.plugin.session.cases import Case
from pytest_burnperf.plugin.session.perf_state import STATE, case_of
from pytest_burnperf.runs.comparison.overlay import install as install_overlay

# In a round's process of an installed reference ($BURNPERF_OVERLAY), its overlay goes first,
# before anything imports the project (runs/comparison/overlay.py); elsewhere this does nothing.
install_overlay()
# In a counted process, its memory layout drawn before any test module is imported
# (host/memory_layout.py); elsewhere this does nothing.
memory_layout.draw_if_asked()


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hooks)


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser, args: list[str]
) -> Generator[None, None, None]:
    """Once the project's conftest.py files have added their options: --update-baselines as the
    alias of --perf-update, where none of them defines it."""
    result = yield
    add_update_alias(parser)
    return result


def pytest_cmdline_main(config: pytest.Config) -> None:
    """Before any plugin is configured: under --perf, pytest-randomly's seed fixed where none
    was given (plugin/configuration/random_start.py)."""
    random_start.fix_randomly_seed(config)


#: The pytest runs of this process not yet ended (a pytester run inside a test is one inside
#: another): only the outermost one's end is the process's.
_RUNS: set[int] = set()


def pytest_configure(config: pytest.Config) -> None:
    if not _RUNS:  # a new outermost run in a process whose earlier run kept holding its signals
        release()
    _RUNS.add(id(config))
    configure.configure(config)
    modes.register(config, config.stash[STATE])


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """The run is over. Signals held since its write-up stay held until the process exits when
    this is its outermost run (a Ctrl-C in pytest's own cleanup is said in one line, not a
    traceback); a run inside another (pytester) gives them back to the one around it."""
    _RUNS.discard(id(config))
    if not _RUNS:  # pytest has dealt with its interrupts: its exit status says so, not SIGINT
        forget_caught_interrupt()
    release(until_exit=not _RUNS)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    collection.parametrize(metafunc)


@pytest.hookimpl(tryfirst=True, specname="pytest_generate_tests")
def pytest_generate_tests_before_fixture_params(metafunc: pytest.Metafunc) -> None:
    """Only perf tests whose device or dtype a project fixture parametrises, before pytest
    applies the fixtures' params (collection.parametrize_first)."""
    collection.parametrize_first(metafunc)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A round process imports only the test files its node ids are in."""
    return collection.outside_round(config, collection_path)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    collection.select(config, items)


def pytest_deselected(items: Sequence[pytest.Item]) -> None:
    """Remember the benchmarks left out, to say why a -k that selected none of them did so."""
    collection.deselected(items)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Count the comparisons (after -k and every other deselection) and run the extra rounds."""
    if session.config.stash[STATE].run.mode.measures:
        round_control.rounds_after_collection(session, collection.settle_selection(session))


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> bool | None:
    """In a round server (--perf-round-process-serve): fork one child per requested round instead of
    running the tests here (runs/forkserver.py)."""
    return round_control.serve_rounds(session)


def pytest_runtest_setup(item: pytest.Item) -> None:
    case = case_of(item)
    if case is not None and case.error is not None:
        pytest.fail(case.error, pytrace=False)
    if case is not None and case.skip_reason is not None:  # a pytest-benchmark test's CPU case
        pytest.skip(case.skip_reason)
    bad = item.config.stash[STATE].findings.bad_devices
    if case is not None and case.entry is not None and case.entry.id in bad:
        pytest.skip(
            f"{case.entry.id} faulted earlier in this process ({bad[case.entry.id]}); a GPU "
            "fault is sticky, so its remaining benchmarks are skipped"
        )
    if case is not None:
        random_start.seed_benchmark(item.config)


def pytest_sessionstart(session: pytest.Session) -> None:
    state = session.config.stash[STATE]
    if state.run.mode.measures:
        # Imported before any signal is turned into an interrupt: these modules define
        # dataclasses, whose generated __init__ has no line numbers, and a Ctrl-C or SIGTERM
        # landing in it while a test imported them lazily crashed pytest's own traceback printer
        # (a traceback instead of "interrupted").
        from pytest_burnperf.core import timing  # noqa: F401
        from pytest_burnperf.devices import base  # noqa: F401
        from pytest_burnperf.host.interrupts import signals_as_interrupts

        state.restore_signals = signals_as_interrupts()
        configure.check_required(state)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    # a Ctrl-C or SIGTERM that landed in an import or a C extension can surface as another
    # error (ImportError: initialization failed): the run is interrupted, the test not failed
    raise_if_arrived()
    outcome_watch.watch_report(item, call, report)
    return report


# --------------------------------------------------------------------------------------------
# fixtures


@pytest.fixture
def _burnperf_case(request: pytest.FixtureRequest) -> Case:
    case = case_of(request.node)  # a test written for pytest-benchmark: its one CPU case
    if case is not None:
        return case
    pytest.fail(
        f"{request.node.nodeid}: the perf, device and dtype fixtures need the test to be marked "
        "@pytest.mark.perf(backends=[...], dtypes=[...])",
        pytrace=False,
    )


@pytest.fixture
def device(_burnperf_case: Case) -> Any:
    """The device this benchmark runs on (see pytest_burnperf.devices.Device)."""
    return _burnperf_case.entry.device if _burnperf_case.entry else None


@pytest.fixture
def perf_size(request: pytest.FixtureRequest) -> str:
    """The run's size preset (``--perf-size``): ``tiny``, ``small``, ``medium`` or ``full``."""
    return request.config.stash[STATE].run.size


@pytest.fixture
def dtype(_burnperf_case: Case) -> str:
    """The dtype name of this benchmark, such as ``"f32"``."""
    return _burnperf_case.dtype


@pytest.fixture
def perf(request: pytest.FixtureRequest, _burnperf_case: Case) -> PerfBase:
    """Time a function on this benchmark's device and judge it against the baseline.

    ``perf(fn, *args, **kwargs)`` warms up, calibrates, samples, and returns ``fn``'s result;
    ``perf.pedantic(fn, setup=..., rounds=..., iterations=..., warmup_rounds=...)`` gives each
    round fresh inputs.
    """
    collection.warn_shadowed(request.node, _burnperf_case)
    return make_perf(request, _burnperf_case)
