"""Roofline columns as a user meets them: perf.work, measured peaks, the cache, bad counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ._helpers import FAST

MODULE = """
import numpy as np
import pytest

from pytest_burnperf import matmul_work


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
    result = pytester.runpytest("--perf", "--perf-json", "r.json", "--perf-columns", "all", *FAST)
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


SIDE = {"tiny": 8, "small": 32}

SIZED = """
import numpy as np
import pytest

SIDE = {"tiny": 8, "small": 32}


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_sized(perf, device, dtype, perf_size):
    a = device.random((SIDE[perf_size], SIDE[perf_size]), dtype)
    perf.work(flops=2.0 * a.shape[0] ** 3, bytes=3.0 * a.nbytes, shape=f"{a.shape[0]}^2")
    perf(np.matmul, a, a)
"""


@pytest.mark.slow
def test_size_presets_pick_shapes_and_keep_their_own_baselines(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bench=SIZED)
    for size in ("tiny", "small"):
        rec = pytester.runpytest(
            "--perf", "--perf-update", "--perf-size", size, "--perf-columns", "all", *FAST
        )
        rec.assert_outcomes(passed=1)
        rec.stdout.fnmatch_lines([f"*size {size}; *", f"test_sized  {SIDE[size]}^2 *"])
    dirs = sorted(p.name for p in (pytester.path / "baselines").iterdir() if p.is_dir())
    assert len(dirs) == 2 and dirs[1] == dirs[0] + "-tiny"
    # each size compares with its own baseline (a tiny one against small would be incomparable)
    # (a 1 us matmul moves a lot between processes: a 1000% threshold keeps this about lookup)
    again = pytester.runpytest(
        "--perf", "--perf-size", "tiny", "--perf-threshold", "1000%", "--perf-columns", "all", *FAST
    )
    again.assert_outcomes(passed=1)
    assert "no-baseline" not in again.stdout.str() and "incomparable" not in again.stdout.str()


@pytest.mark.slow
def test_cached_peaks_are_used_and_recalibrate_replaces_them(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BURNPERF_CACHE_DIR", str(tmp_path))
    pytester.makepyfile(test_bench=SIZED)
    pytester.runpytest("--perf", *FAST).assert_outcomes(passed=1)
    path = tmp_path / "peaks.json"
    doc = json.loads(path.read_text())
    (key,) = doc["peaks"]
    doc["peaks"][key] = {"gflops": 1e-6, "gbps": 1e-6, "how": "planted"}
    path.write_text(json.dumps(doc))
    cached = pytester.runpytest("--perf", "--perf-json", "r.json", "--perf-columns", "all", *FAST)
    cached.assert_outcomes(passed=1)
    roof = json.loads(Path(pytester.path, "r.json").read_text())["results"][0]["roofline"]
    assert roof["peaks"]["how"] == "planted" and roof["arith_pct"] > 1000
    fresh = pytester.runpytest("--perf", "--perf-recalibrate", "--perf-json", "r.json", *FAST)
    fresh.assert_outcomes(passed=1)
    roof = json.loads(Path(pytester.path, "r.json").read_text())["results"][0]["roofline"]
    assert roof["peaks"]["how"].startswith("best of 10") and roof["arith_pct"] < 1000
    assert json.loads(path.read_text())["peaks"][key]["how"] == roof["peaks"]["how"]


def test_a_calibration_that_fails_is_reported_and_not_cached(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_burnperf.core.records.roofline_figures import Peaks
    from pytest_burnperf.devices import peak_calibration as peaks

    def broken(device: object, dtype: str) -> Peaks:
        raise RuntimeError("CL_OUT_OF_RESOURCES")

    monkeypatch.setenv("BURNPERF_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(peaks, "calibrate", broken)
    pytester.makepyfile(test_bench=SIZED)
    result = pytester.runpytest("--perf", "--perf-columns", "all", *FAST)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "test_sized  32^2 * GF/s  * GB/s  no-baseline",
            "*peak calibration of numpy-cpu (f64) failed, so its benchmarks show no % of peak: "
            "RuntimeError: CL_OUT_OF_RESOURCES",
        ]
    )
    assert not (tmp_path / "peaks.json").exists()
