"""Shared snippets for the plugin tests."""

from __future__ import annotations

#: Quick but still statistically usable settings for runs inside the tests.
FAST = ("--perf-samples", "15", "--perf-warmup", "0.1", "--perf-min-time", "0.01")

#: A benchmark whose work a test controls through an environment variable: the planted slowdown
#: does ``BURNPERF_TEST_WORK`` times the work (real work, not sleeping).
LOOP_MODULE = """
import os
import pytest


def work(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_loop(perf, device, dtype):
    if os.environ.get("BURNPERF_TEST_INTERRUPT"):
        raise KeyboardInterrupt
    n = int(float(os.environ.get("BURNPERF_TEST_WORK", "1.0")) * 20000)
    assert perf(work, n) == work(n)


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_steady(perf):
    perf(work, 20000)
"""


def skip_reasons(result: object) -> dict[str, str]:
    """{test id in brackets: skip reason} from an in-process pytester run."""
    out: dict[str, str] = {}
    for rep in result.reprec.getreports("pytest_runtest_logreport"):  # type: ignore[attr-defined]
        if rep.skipped and rep.when == "setup":
            reason = rep.longrepr[2].removeprefix("Skipped: ")
            out[rep.nodeid.split("[", 1)[1].rstrip("]")] = reason
    return out
