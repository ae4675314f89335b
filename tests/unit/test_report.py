"""The notes under the table: reasons, version notes, and a device clock that saw no work."""

from __future__ import annotations

from pytest_burnperf.compare import INCOMPARABLE, UNCHANGED, Verdict
from pytest_burnperf.report import format_bytes, notes
from pytest_burnperf.results import Result
from pytest_burnperf.spec import Settings
from pytest_burnperf.timing import Sample


def result(sample: Sample, verdict: Verdict) -> Result:
    return Result(
        nodeid="t.py::test_k[opencl-pocl-cpu0-f32]",
        module="t.py",
        key="test_k[opencl-pocl-cpu0-f32]",
        benchmark="test_k",
        device_id="opencl-pocl-cpu0",
        kind="opencl",
        library="opencl",
        dtype="f32",
        fingerprint={},
        settings=Settings(),
        sample=sample,
        verdict=verdict,
        baseline=None,
    )


def test_device_time_far_below_host_time_asks_whether_work_reached_the_device() -> None:
    # 1 us on the device clock while the host waited 1 ms: the work did not go to device.queue
    s = Sample(values=(1e-6,) * 3, loops=1, warmup_calls=1, timer="device", host_values=(1e-3,) * 3)
    (line,) = notes([result(s, Verdict(UNCHANGED, 1e-6))])
    assert line.startswith("test_k[opencl-pocl-cpu0-f32]: device time (1.00 us) is under 1% of")
    ok = Sample(
        values=(9e-4,) * 3, loops=1, warmup_calls=1, timer="device", host_values=(1e-3,) * 3
    )
    assert notes([result(ok, Verdict(UNCHANGED, 9e-4))]) == []


def test_reasons_and_notes_are_listed() -> None:
    s = Sample(values=(1.0,), loops=1, warmup_calls=1)
    v = Verdict(
        INCOMPARABLE, 1.0, reason="baseline from X", notes=("torch 1 -> 2 since the baseline",)
    )
    assert notes([result(s, v)]) == [
        "test_k[opencl-pocl-cpu0-f32]: incomparable: baseline from X",
        "test_k[opencl-pocl-cpu0-f32]: note: torch 1 -> 2 since the baseline",
    ]
    assert [format_bytes(n) for n in (None, 512, 2048, 3 * 2**20)] == [
        "-",
        "512 B",
        "2.0 KiB",
        "3.0 MiB",
    ]
