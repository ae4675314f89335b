"""Shared snippets for the plugin tests."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

#: Quick but still statistically usable settings for runs inside the tests. Adaptive sampling is
#: off (--perf-max-samples at --perf-samples), so a test may count samples: with it on, a busy
#: machine takes more. Tests of adaptive sampling give their own --perf-max-samples after FAST.
FAST = (
    "--perf-samples",
    "15",
    "--perf-max-samples",
    "15",
    "--perf-warmup",
    "0.05",
    "--perf-min-time",
    "0.002",
)

#: Benchmarks whose duration a test controls through an environment variable. They busy-wait on
#: ``time.perf_counter`` (the CPU spins; nothing sleeps), so a call lasts a set time whatever the
#: machine's speed of the moment: these tests check the plugin's logic (record, compare, fail the
#: right test) and must not flake on a shared machine, where real CPU work moved by up to 20%
#: between back-to-back runs. How well the gate does on real work belongs to a validation harness,
#: not to unit tests. ``BURNPERF_TEST_WORK`` scales test_loop's duration (1.3 = 30% slower).
LOOP_MODULE = """
import os
import time

import pytest


def spin(seconds):
    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:
        n += 1
    return n


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_loop(perf, device, dtype):
    seconds = 200e-6 * float(os.environ.get("BURNPERF_TEST_WORK", "1.0"))
    assert perf(spin, seconds) > 0


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_steady(perf):
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
