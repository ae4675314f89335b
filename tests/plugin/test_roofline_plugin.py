"""Roofline columns as a user meets them: perf.work, measured peaks, the cache, bad counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ._helpers import FAST

MODULE = """
import numpy as np
import pytest

from pytest_burnperf.roofline import matmul_work


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_mm(perf, device, dtype):
    a = device.random((64, 64), dtype)
    perf.work(matmul_work(64, 64, 64, dtype))
    perf(np.matmul, a, a)


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_plain(perf):
    perf(sum, range(100))


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_bad_count(perf):
    perf.work(flops=-5)
"""


def test_work_gives_rates_and_percent_of_the_measured_peak(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BURNPERF_CACHE_DIR", str(tmp_path / "cache"))
    pytester.makepyfile(test_bench=MODULE)
    result = pytester.runpytest("--perf", "--perf-json", "r.json", *FAST)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_bad_count*: perf.work: flops must be a finite number >= 0 per call, got -5",
            "*benchmark*shape*median*peak mem*arith*mem*verdict",
            "test_mm *64x64 @ 64x64 *numpy*cpu*f64* GF/s *% * GB/s *% *no-baseline",
            "test_plain *numpy* - *- *no-baseline",
        ]
    )
    doc = json.loads(Path(pytester.path, "r.json").read_text())
    by_name = {r["benchmark"]: r for r in doc["results"]}
    roof = by_name["test_mm"]["roofline"]
    assert roof["flops"] == 2 * 64**3 and roof["bytes"] == 3 * 64 * 64 * 8
    median = by_name["test_mm"]["stats"]["median"]
    assert roof["gflops"] == pytest.approx(roof["flops"] / median / 1e9)
    peaks = roof["peaks"]
    assert peaks["gflops"] > 0 and peaks["gbps"] > 0
    assert roof["arith_pct"] == pytest.approx(100 * roof["gflops"] / peaks["gflops"])
    assert by_name["test_plain"]["roofline"] is None

    # The peaks were measured once and cached.
    cached = json.loads((tmp_path / "cache" / "peaks.json").read_text())
    (key,) = cached["peaks"]
    assert "|numpy-cpu|" in key and key.endswith("|f64|threads=1")
