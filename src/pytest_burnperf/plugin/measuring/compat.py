"""pytest-benchmark suites, unchanged: the ``benchmark`` fixture and ``@pytest.mark.benchmark``.

With ``--perf``, a test that uses pytest-benchmark's ``benchmark`` fixture (and has no
``@pytest.mark.perf``) is timed and gated by this plugin on the host CPU, like any perf benchmark:
``benchmark(fn, *args, **kwargs)`` is ``perf(fn, *args, **kwargs)``, ``benchmark.pedantic(...)``
is ``perf.pedantic(...)`` with pytest-benchmark's defaults (``rounds=1``, ``teardown``),
``benchmark.extra_info`` lands in the results JSON. Such a test is parametrised with one case,
``[cpu]``, which names its baseline. When pytest-benchmark is installed this plugin takes over the
fixture only under ``--perf`` (and says so in the header); without ``--perf`` pytest-benchmark
runs it as before. Without pytest-benchmark, smoke mode calls the function once.

Marker settings honoured: ``min_rounds`` (samples, at least 2), ``max_time`` (adaptive sampling
budget), ``min_time`` (shortest sample), ``warmup`` (False: no warm-up) and ``group`` (in the
results JSON). ``timer``, ``disable_gc`` (always off while timing here), ``calibration_precision``
and ``warmup_iterations`` are accepted and have no effect; any other keyword is an error of the
test.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

import pytest

from pytest_burnperf.core.options import settings
from pytest_burnperf.plugin.measuring.fixture import make_perf
from pytest_burnperf.plugin.measuring.perf_base import PerfBase
from pytest_burnperf.plugin.session.cases import Case
from pytest_burnperf.plugin.session.perf_state import STATE

T = TypeVar("T")

#: ``@pytest.mark.benchmark`` keywords this plugin maps onto its settings.
MAPPED = ("min_rounds", "max_time", "min_time", "warmup", "group")
#: Keywords of pytest-benchmark's marker that are accepted and have no effect here.
IGNORED = ("timer", "disable_gc", "calibration_precision", "warmup_iterations", "cprofile")


def marker_overrides(
    test: str, kwargs: Mapping[str, object]
) -> tuple[dict[str, object], str | None]:
    """Settings from ``@pytest.mark.benchmark(...)``, and its group; SettingsError on a bad one."""

    where = f"{test}: @pytest.mark.benchmark"
    unknown = sorted(set(kwargs) - set(MAPPED) - set(IGNORED))
    if unknown:
        raise settings.SettingsError(
            f"{where} got unknown keyword {', '.join(repr(u) for u in unknown)}; allowed: "
            f"{', '.join(MAPPED + IGNORED)}"
        )
    out: dict[str, object] = {}
    if "min_rounds" in kwargs:
        n = kwargs["min_rounds"]
        if isinstance(n, int) and not isinstance(n, bool) and n in (0, 1):
            n = 2  # pytest-benchmark allows 1; a verdict needs at least 2 samples
        out["samples"] = settings.parse_samples(n, f"{where}(min_rounds=...)")
    if "max_time" in kwargs:
        out["max_time"] = settings.parse_max_time(kwargs["max_time"], f"{where}(max_time=...)")
    if "min_time" in kwargs:
        out["min_time"] = settings.parse_min_time(kwargs["min_time"], f"{where}(min_time=...)")
    if "warmup" in kwargs and not settings.parse_flag(
        kwargs["warmup"], f"{where}(warmup=...)", "warmup"
    ):
        out["warmup"] = 0.0
    group = kwargs.get("group")
    if group is not None and not isinstance(group, str):
        raise settings.SettingsError(f"{where}(group=...): group must be a string, got {group!r}")
    return out, group


class BenchmarkFixture:
    """pytest-benchmark's ``benchmark`` object, backed by this plugin's ``perf``."""

    def __init__(self, perf: PerfBase, name: str, fullname: str, group: str | None) -> None:
        self._perf = perf
        self.name = name
        self.fullname = fullname
        self.group = group
        self.extra_info: dict[str, object] = {}
        self.disabled = False
        perf.extra_info = self.extra_info  # into the results JSON with the group
        perf.group = group

    def __call__(
        self, function_to_benchmark: Callable[..., T], *args: object, **kwargs: object
    ) -> T:
        __tracebackhide__ = True
        return self._perf(function_to_benchmark, *args, **kwargs)

    def pedantic(
        self,
        target: Callable[..., T],
        args: tuple[object, ...] = (),
        kwargs: dict[str, object] | None = None,
        setup: Callable[[], object] | None = None,
        teardown: Callable[..., object] | None = None,
        rounds: int | None = None,
        warmup_rounds: int | None = None,
        iterations: int = 1,
    ) -> T:
        """pytest-benchmark's ``pedantic``: without ``rounds=`` (its default times one cold call)
        sampled as ``perf.pedantic`` samples (a warm-up round, then the benchmark's samples);
        with ``rounds=`` as written."""
        __tracebackhide__ = True
        return self._perf.pedantic(
            target,
            args,
            kwargs,
            setup=setup,
            teardown=teardown,
            rounds=rounds,
            iterations=iterations,
            warmup_rounds=warmup_rounds,
        )

    def weave(self, *args: object, **kwargs: object) -> None:
        pytest.fail(
            f"{self.fullname}: benchmark.weave is not supported by pytest-burnperf; time one "
            "function with benchmark(fn) instead",
            pytrace=False,
        )


@pytest.fixture
def benchmark(request: pytest.FixtureRequest, _burnperf_case: Case) -> BenchmarkFixture:
    """pytest-benchmark's ``benchmark`` fixture, timed and gated by pytest-burnperf (``--perf``)."""
    marker = request.node.get_closest_marker("benchmark")
    group = marker.kwargs.get("group") if marker is not None else None
    perf = make_perf(request, _burnperf_case)
    name = request.node.name
    return BenchmarkFixture(perf, name, request.node.nodeid, group)


def active(config: pytest.Config) -> bool:
    """Whether this run provides the ``benchmark`` fixture: under ``--perf``, or in smoke mode when
    pytest-benchmark is not there to provide it (not installed, or ``-p no:benchmark``)."""
    state = config.stash[STATE]
    return state.run.mode.measures or (
        state.run.mode.smoke_only and not config.pluginmanager.has_plugin("benchmark")
    )
