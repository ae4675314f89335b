"""Whether a run counts, and with which valgrind: ``--perf-measure counts|both`` need valgrind
(a usage error that says why there is none and what to do); ``auto`` counts where valgrind runs
and the run records or has counts baselines (else one line says why not); and the measure
``$BURNPERF_MEASURE`` gives where no option, ini key or project setting names one."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_burnperf.core import measures
from pytest_burnperf.core.options import run_options, settings
from pytest_burnperf.core.options.run_options import Measure

if TYPE_CHECKING:
    from pytest_burnperf.instruments.counts_run import Counting

#: The measure where neither --perf-measure, the ini key perf_measure nor the project's
#: configuration names one: a CI job's or a test suite's choice, e.g. ``time`` on runners
#: where valgrind is installed but counting is not wanted.
MEASURE_ENV = "BURNPERF_MEASURE"


def environ_measure() -> Measure | None:
    """$BURNPERF_MEASURE, checked (a usage error names it and what is allowed), or None."""
    raw = os.environ.get(MEASURE_ENV)
    if not raw:
        return None
    try:
        return run_options.parse_measure(raw, f"${MEASURE_ENV}")
    except settings.SettingsError as exc:
        raise pytest.UsageError(str(exc)) from None


def auto_counting(
    baselines_root: Path, size: str, *, records: bool
) -> tuple[Counting | None, str | None]:
    """--perf-measure auto against stored baselines: counting where valgrind runs and this run
    records (CPU benchmarks are counted and timed, both baselines written) or its counts
    baselines exist (the benchmarks they hold are counted, the rest timed); else none, with a
    line saying why where counts would have been recorded or judged."""
    from pytest_burnperf.host import callgrind
    from pytest_burnperf.instruments.counts_run import Counting, store_name
    from pytest_burnperf.runs.comparison.reference import has_baselines

    name = store_name(size)
    if not records and not has_baselines(baselines_root / name):
        return None, None
    why = callgrind.unsupported_reason()
    valgrind = callgrind.find_valgrind() if why is None else None
    if why is None and valgrind is None:  # not installed, or what $BURNPERF_VALGRIND holds
        why = (
            callgrind.valgrind_problem()
            if os.environ.get(callgrind.VALGRIND_ENV)
            else "valgrind is not installed (Debian and Ubuntu: apt install valgrind)"
        )
    version = None
    if valgrind is not None:
        try:
            version = callgrind.valgrind_version(valgrind)
        except callgrind.CountingUnavailable as exc:
            why = str(exc)
    if valgrind is None or version is None:
        if records:
            return None, (
                f"not counted: {why}; CPU benchmarks recorded by time only (counts baselines, "
                "which no host's load moves and which judge on any machine of this OS and "
                "architecture, are recorded where valgrind runs)"
            )
        return None, (
            f"not counted: counts baselines exist ({name}) but cannot be counted here: {why}; "
            "CPU benchmarks judged by time"
        )
    counting = Counting(
        valgrind=valgrind,
        version=version,
        baselines_root=baselines_root,
        size=size,
        measure=measures.AUTO,
    )
    return counting, None


def counting_for(measure: str, baselines_root: Path, size: str) -> Counting:
    """The valgrind a --perf-measure counts|both run counts with, or a usage error that says
    why there is none here and what to do."""
    from pytest_burnperf.host import callgrind
    from pytest_burnperf.instruments.counts_run import Counting

    reason = callgrind.unsupported_reason()
    if reason is not None:
        raise pytest.UsageError(reason.replace("counts", measure, 1))
    valgrind = callgrind.find_valgrind()
    if valgrind is None:
        raise pytest.UsageError(callgrind.valgrind_problem(measure=measure))
    try:
        version = callgrind.valgrind_version(valgrind)
    except callgrind.CountingUnavailable as exc:
        raise pytest.UsageError(f"--perf-measure {measure}: {exc}") from None
    return Counting(
        valgrind=valgrind,
        version=version,
        baselines_root=baselines_root,
        size=size,
        measure=measures.choice(measure),
    )
