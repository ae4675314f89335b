from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path

import numpy  # noqa: F401
import pytest
import scipy.stats  # noqa: F401

# Loaded once here, so that a test that monkeypatches it patches the module its runs use.
import pytest_burnperf.core.records.roofline_figures
import pytest_burnperf.core.timing

from ._helpers import LOOP_MODULE, RUNNING_SLOW, RecordedOnce, use_virtual_clock

# pytester's in-process runs restore sys.modules afterwards, and numpy or torch cannot be imported
# twice in one process; importing them here, before any run, keeps them loaded across runs.
if importlib.util.find_spec("torch") is not None:
    import array_api_compat.torch  # noqa: F401
    import torch  # noqa: F401
# The same holds for the native OpenCL and wgpu bindings (and their submodules the backends use).
if importlib.util.find_spec("pyopencl") is not None:
    import pyopencl
    import pyopencl.array  # noqa: F401
if importlib.util.find_spec("wgpu") is not None:
    import wgpu
    import wgpu.backends.wgpu_native.extras  # noqa: F401
if importlib.util.find_spec("cupy") is not None:
    import cupy  # noqa: F401


@pytest.fixture(autouse=True)
def _peak_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Measured device peaks go to a temporary cache, never the user's; and a wide terminal, so
    report lines are matched whole (tests of the fitted table set COLUMNS themselves), and host
    state that informs but does not change verdicts."""
    monkeypatch.setenv("BURNPERF_CACHE_DIR", str(tmp_path / "burnperf-cache"))
    monkeypatch.setenv("COLUMNS", "400")
    # The gate's statistics are tested with planted busy-waits; a busy CI machine must not turn
    # them inconclusive. tests/plugin/test_host_and_class.py tests the host rules themselves.
    monkeypatch.setenv("BURNPERF_TRUST_HOST", "1")
    # The default measure (auto) records counts where valgrind runs: most of these projects time
    # the virtual clock, which does no work to count, so they are timed unless a test names a
    # measure; the tests of auto's choices unset this (tests/plugin/test_counts.py).
    monkeypatch.setenv("BURNPERF_MEASURE", "time")
    # A developer's machine, also when the suite itself runs in CI (.ci/run sets CI=true): there
    # --perf would default to --perf-against auto and fail runs that judged under 90%. The tests
    # of those CI defaults set these variables themselves (tests/plugin/test_reference.py).
    for name in ("CI", "GITHUB_BASE_REF", *CI_MERGE_REQUEST):
        monkeypatch.delenv(name, raising=False)
    # The suite runs under pytest-xdist (noxfile.py); the projects run here are plain pytest
    # runs, which pytest-benchmark would take for xdist workers (and turn its timing off).
    for name in XDIST_WORKER:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _one_counted_process(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A project's run counts in one process: the suite already runs a test per CPU
    (pytest-xdist), so a second counted process beside the first (the default, one per CPU)
    gains no time and pays valgrind's start-up and the imports again, about 5 s. The tests of
    the dealing over several processes name --perf-count-jobs, which wins over this ini value.
    Set after pytester's own setup, which clears PYTEST_ADDOPTS."""
    if "pytester" not in request.fixturenames:
        return
    request.getfixturevalue("pytester")
    addopts = os.environ.get("PYTEST_ADDOPTS", "")
    monkeypatch.setenv("PYTEST_ADDOPTS", f"{addopts} -o perf_count_jobs=1".strip())


@pytest.fixture(autouse=True)
def _this_plugin_alone(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The projects run here load this plugin alone, not every plugin this test environment has
    installed (hypothesis, pytest-xdist, pytest-benchmark): loading those cost each pytest
    process about 1.3 s of CPU, and a run starts one for each of its rounds (a counted process
    starts pytest under valgrind, where they took about 20 s of a one-benchmark run's 40). A
    test whose projects need them (pytest-benchmark's suites) is marked ``installed_plugins``."""
    if request.node.get_closest_marker("installed_plugins") is None:
        monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
        monkeypatch.setenv("PYTEST_PLUGINS", "pytest_burnperf.plugin.hooks")


@pytest.fixture(autouse=True)
def _tier(request: pytest.FixtureRequest) -> Iterator[None]:
    """Which tier the running test is in, for _helpers.belongs_in_the_slow_tier."""
    RUNNING_SLOW[0] = request.node.get_closest_marker("slow") is not None
    yield
    RUNNING_SLOW[0] = False


@pytest.fixture(autouse=True)
def _real_clock() -> Iterator[None]:
    """The real clock back after every test, should a virtual one (use_virtual_clock) outlive
    its in-process run."""
    timed = (pytest_burnperf.core.timing.measure, pytest_burnperf.core.timing.measure_pedantic)
    clocks = [fn.__kwdefaults__["clock"] for fn in timed]  # type: ignore[index]
    yield
    for fn, clock in zip(timed, clocks, strict=True):
        fn.__kwdefaults__["clock"] = clock  # type: ignore[index]


CI_MERGE_REQUEST = ("CI_MERGE_REQUEST_DIFF_BASE_SHA", "CI_MERGE_REQUEST_TARGET_BRANCH_NAME")
XDIST_WORKER = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


@pytest.fixture
def loop_project(pytester: pytest.Pytester) -> pytest.Pytester:
    use_virtual_clock(pytester)
    pytester.makepyfile(test_bench=LOOP_MODULE)
    return pytester


@pytest.fixture(scope="module")
def recorded_once(tmp_path_factory: pytest.TempPathFactory) -> RecordedOnce:
    """:class:`RecordedOnce` for one test module."""
    return RecordedOnce(tmp_path_factory.mktemp("burnperf-recorded"))


@pytest.fixture(scope="module")
def env_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reference environments of one test module's same-session runs, built once."""
    return tmp_path_factory.mktemp("burnperf-envs")
