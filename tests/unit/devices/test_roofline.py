"""Roofline accounting: flop and byte counts, achieved rates, % of peak, the peak cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_burnperf.core.records.roofline_figures import (
    Peaks,
    Work,
    WorkError,
    achieved,
    elementwise_work,
    format_rate,
    matmul_work,
    reduction_work,
)
from pytest_burnperf.devices.peak_calibration import calibrate
from pytest_burnperf.storage.peak_cache import PeakCache


def test_counts_by_hand() -> None:
    # 256^3 multiply-adds = 2 * 16,777,216 flops; three 256x256 f32 matrices = 786,432 bytes
    assert matmul_work(256, 256, 256, "f32") == Work(
        flops=33_554_432.0, bytes=786_432.0, shape="256x256 @ 256x256"
    )
    # batched (8 x 64x32 @ 32x16) in f64: 2*64*16*32*8 flops; (64*32 + 32*16 + 64*16)*8*8 bytes
    assert matmul_work(64, 16, 32, "f64", batch=8) == Work(
        flops=524_288.0, bytes=229_376.0, shape="8x64x32 @ 32x16"
    )
    # c = a + b over 2^20 f32: 1 flop per element, two reads and one write of 4 bytes
    assert elementwise_work(1 << 20, "f32", inputs=2) == Work(
        flops=1_048_576.0, bytes=12_582_912.0, shape="1048576"
    )
    # sum over axis 0 of 1024x1024 f64: 1,048,576 adds, 8 MiB read + 8 KiB written
    assert reduction_work(1024 * 1024, "f64", outputs=1024) == Work(
        flops=1_048_576.0, bytes=8_396_800.0, shape="1048576 -> 1024"
    )


def test_achieved_rates_and_percent_of_peak() -> None:
    a = achieved(Work(flops=2e9, bytes=1e9), 0.5, Peaks(gflops=8.0, gbps=4.0, how="test"))
    assert (a.gflops, a.gbps, a.arith_pct, a.mem_pct) == (4.0, 2.0, 50.0, 50.0)
    b = achieved(Work(bytes=3e6), 1e-3, None)
    assert (b.gflops, b.gbps, b.arith_pct, b.mem_pct) == (None, 3.0, None, None)
    assert format_rate(4.0, "GF/s", 50.0) == "4 GF/s 50%"
    assert format_rate(812.4, "GB/s", None) == "812 GB/s"
    assert format_rate(None, "GB/s", None) == "-"


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), "many", True])
def test_bad_counts_are_refused(bad: object) -> None:
    with pytest.raises(WorkError, match="flops must be a finite number >= 0 per call"):
        Work(flops=bad)  # type: ignore[arg-type]


def test_peak_cache_round_trip_and_a_corrupt_file(tmp_path: Path) -> None:
    path = tmp_path / "peaks.json"
    cache = PeakCache(path, "m")
    key = PeakCache.key("m", "numpy-cpu", "EPYC", "f32", 1)
    assert cache.get(key) is None
    cache.put(key, Peaks(10.0, 5.0, "best of 5"))
    assert PeakCache(path, "m").get(key) == Peaks(10.0, 5.0, "best of 5")

    path.write_text("{not json")
    broken = PeakCache(path, "m")
    assert broken.get(key) is None
    assert "is not valid JSON" in broken.problems[0] and str(path) in broken.problems[0]
    broken.put(key, Peaks(1.0, 2.0, "x"))
    assert json.loads(path.read_text())["peaks"][key]["gbps"] == 2.0


def test_calibrate_on_numpy_measures_both_peaks() -> None:
    from pytest_burnperf.devices.backends.numpy_backend import NumpyDevice

    peaks = calibrate(NumpyDevice(), "f64", n=128, copy_mib=4, repeats=2)
    assert peaks.gflops is not None and peaks.gflops > 0
    assert peaks.gbps is not None and peaks.gbps > 0
    assert "matmul 64x64 and 128x128" in peaks.how and "copy 4 MiB" in peaks.how
    ints = calibrate(NumpyDevice(), "i32", n=64, copy_mib=1, repeats=1)
    assert ints.gflops is None and ints.gbps is not None


def test_peaks_are_timed_on_the_device_clock_where_there_is_one() -> None:
    """The benchmarks of a GPU are timed on its events, so its peaks are too (else a
    memory-bound benchmark could show more than 100% of the peak)."""
    from pytest_burnperf.devices import peak_calibration as roofline

    class Timer:
        name = "device"

        def __init__(self) -> None:
            self.spans = 0

        def start(self) -> None:
            self.spans += 1

        def stop(self) -> float:
            return 2e-3

    timer = Timer()
    calls: list[str] = []
    best = roofline._best(lambda: calls.append("call"), lambda: calls.append("sync"), 3, timer)
    assert best == 2e-3 and timer.spans == 3
    assert calls == ["call", "sync", "call", "call", "call"]  # one untimed call first
    assert roofline._best(lambda: None, lambda: None, 2) < 1.0  # the host clock without one
