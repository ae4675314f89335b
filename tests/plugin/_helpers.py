"""Shared snippets for the plugin tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

#: Quick but still statistically usable settings for runs inside the tests. Adaptive sampling is
#: off (--perf-max-samples at --perf-samples), so a test may count samples: with it on, a busy
#: machine takes more. Tests of adaptive sampling give their own --perf-max-samples after FAST.
#: --perf-quick: one process round when checking, 3 when recording or comparing in one session,
#: no adaptive rounds (unless the test's own --perf-rounds says otherwise); the tests of the
#: default rounds and of adaptive rounds use FAST_ADAPTIVE.
FAST = (
    "--perf-samples",
    "15",
    "--perf-max-samples",
    "15",
    "--perf-warmup",
    "0.05",
    "--perf-min-time",
    "0.002",
    "--perf-quick",
)
#: FAST without --perf-quick: the default 3 process rounds and adaptive rounds up to 8, or what
#: the test's own --perf-rounds / --perf-max-rounds say.
FAST_ADAPTIVE = tuple(a for a in FAST if a != "--perf-quick")

#: The plugin tests' clock, a module written into a test project (``virtual_clock``). Its
#: ``spin(seconds)`` does no work: it moves the clock the plugin times with forward by
#: ``seconds``, give or take a fixed pattern of up to 1% (a sample never has all values equal).
#: So a benchmark lasts what the test says on a quiet machine and beside busy processes alike,
#: in every round process (each loads the project's conftest.py, which installs the clock) and
#: in this one (pytest_unconfigure puts the real clock back). These tests check the plugin's
#: logic (record, compare, fail the right test); how well the gate does on real work belongs to
#: the validation harness (validation/), not to the test suite.
VIRTUAL_CLOCK = """
import pytest_burnperf.core.timing as timing

_now = 0
_calls = 0
_real = {}


def now_ns():
    global _now
    _now += 50  # reading a clock takes time too
    return _now


def spin(seconds):
    global _now, _calls
    _calls += 1
    wobble = ((_calls * 80) % 201 - 100) / 10000  # a fixed pattern in [-1%, +1%]
    _now += int(seconds * 1e9 * (1.0 + wobble))
    return 1


def install():
    for fn in (timing.measure, timing.measure_pedantic):
        _real.setdefault(fn, fn.__kwdefaults__["clock"])
        fn.__kwdefaults__["clock"] = now_ns


def uninstall():
    for fn, clock in _real.items():
        fn.__kwdefaults__["clock"] = clock
    _real.clear()
"""

VIRTUAL_CLOCK_CONFTEST = """
import virtual_clock


def pytest_configure(config):
    virtual_clock.install()


def pytest_unconfigure(config):
    virtual_clock.uninstall()
"""


def use_virtual_clock(project: Any, conftest: str = "") -> None:
    """Time ``project``'s benchmarks on the virtual clock (:data:`VIRTUAL_CLOCK`); they call
    ``virtual_clock.spin(seconds)`` for their work. ``conftest``: more of the project's
    conftest.py."""
    project.makepyfile(virtual_clock=VIRTUAL_CLOCK)
    project.makeconftest(VIRTUAL_CLOCK_CONFTEST + textwrap.dedent(conftest))


#: Benchmarks whose duration a test controls through an environment variable, on the virtual
#: clock (use_virtual_clock). ``BURNPERF_TEST_WORK`` scales test_loop's duration (1.3 = 30%
#: slower).
LOOP_MODULE = """
import os

import pytest

from virtual_clock import spin


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_loop(perf, device, dtype):
    seconds = 200e-6 * float(os.environ.get("BURNPERF_TEST_WORK", "1.0"))
    assert perf(spin, seconds) > 0


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_steady(perf):
    perf(spin, 200e-6)
"""


#: A benchmark that does real work (it busy-waits on ``time.perf_counter``), for the tests of
#: what a real competing process does to the host's counters; never for a verdict's logic.
REAL_SPIN_MODULE = """
import time

import pytest


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_spin(perf):
    def spin(seconds):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass

    perf(spin, 200e-6)
"""


def skip_reasons(result: object) -> dict[str, str]:
    """{test id in brackets: skip reason} from an in-process pytester run."""
    out: dict[str, str] = {}
    for rep in result.reprec.getreports("pytest_runtest_logreport"):  # type: ignore[attr-defined]
        if rep.skipped and rep.when == "setup":
            reason = rep.longrepr[2].removeprefix("Skipped: ")
            out[rep.nodeid.split("[", 1)[1].rstrip("]")] = reason
    return out


#: A fixed author and date: a commit made twice gets the same hash, so the reference
#: environments built from it are found in a shared cache.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    done = subprocess.run(
        ["git", "-C", str(repo), *args], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


#: Whether the test running in this process is marked ``slow`` (set by tests/plugin/conftest.py).
RUNNING_SLOW = [False]


def belongs_in_the_slow_tier(what: str) -> None:
    """Fail a test outside the slow tier that is about to ``what`` (start valgrind): the
    fast tier, the README's test command, starts no real measurement (docs/development.md)."""
    if not RUNNING_SLOW[0]:
        pytest.fail(f"this test is about to {what}: mark it @pytest.mark.slow", pytrace=False)


class RecordedOnce:
    """Baselines that every test of a module records alike (the same benchmarks, the same
    options, on the virtual clock or counted): the first test records them in its project, the
    others get a copy of that ``baselines/`` folder in theirs instead of recording again."""

    def __init__(self, keep: Path) -> None:
        self.keep = keep

    def into(self, project: Path, record: Callable[[], object], key: str = "") -> None:
        kept = self.keep / (key or "baselines")
        if kept.is_dir():
            shutil.copytree(kept, project / "baselines", dirs_exist_ok=True)
            return
        record()
        shutil.copytree(project / "baselines", kept)
