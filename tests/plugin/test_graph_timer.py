"""timer='graph' as a user meets it, on a fake CUDA device (CI has no GPU): devices without
graphs skip with the reason, samples are graph replays, a function that cannot be captured
fails its own test only, pedantic rounds refuse it, and baselines of another clock are not
compared. The capture itself is tested against torch's and cupy's APIs in
tests/unit/devices/test_gpu_backends.py, the sizing of the graph in tests/unit/core/test_clocks.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_burnperf import devices
from pytest_burnperf.core.clocks import GraphCaptureError, HostTimer
from pytest_burnperf.devices.base import capture_failure

from ._helpers import FAST


class DeviceClock(HostTimer):
    """A stand-in for CUDA events: host time around a synchronised span, named as a device's."""

    name = "device"


class FakeGraphGpu:
    """numpy's device dressed as a CUDA GPU with graphs: a capture runs the calls once and
    keeps them; a replay runs the kept calls again (on the CPU, as a fake may)."""

    id, kind, library, name = "cupy-cuda0", "cuda", "cupy", "Fake GPU"

    def __init__(self, inner: Any, fail: str | None = None) -> None:
        self._inner = inner
        self.fail = fail
        self.captured: list[str] = []
        self.replays = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def timer(self) -> DeviceClock:
        return DeviceClock()

    def graph_unsupported(self) -> str | None:
        return None

    def graph_capture(self) -> Any:
        def capture(body: Any) -> Any:
            if self.fail:
                err = RuntimeError(self.fail)
                raise GraphCaptureError(capture_failure(err)) from err
            body()
            self.captured.append("graph")

            def replay() -> None:
                self.replays += 1
                body()

            return replay

        return capture

    def fingerprint(self) -> dict[str, Any]:
        fp = dict(self._inner.fingerprint())
        fp.update(id=self.id, kind=self.kind, library=self.library, name=self.name)
        fp.pop("cpu", None)
        fp.pop("dispatch", None)
        return fp


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> FakeGraphGpu:
    fake = FakeGraphGpu(devices.PROBES["numpy"]().devices[0])
    monkeypatch.setitem(
        devices.PROBES,
        "cupy",
        lambda: devices.Probe("cupy", [fake], absent={"rocm": "cupy is built for CUDA"}),
    )
    return fake


BENCH = """
import numpy as np
import pytest

@pytest.mark.perf(backends=["numpy", "cupy"], dtypes=["f32"], timer="graph")
def test_chain(perf, device):
    x = np.ones(256, dtype=np.float32)
    out = perf(lambda: np.sqrt(x + 1.0))
    np.testing.assert_allclose(out, np.sqrt(2.0), rtol=1e-6)
"""


def test_graph_timing_skips_devices_without_graphs_and_times_replays(
    pytester: pytest.Pytester, gpu: FakeGraphGpu
) -> None:
    pytester.makepyfile(test_graph=BENCH)
    result = pytester.runpytest("--perf", "-rs", "--perf-json=r.json", *FAST)
    result.assert_outcomes(passed=1, skipped=2)  # numpy-cpu: no graphs; cupy-rocm: absent
    result.stdout.fnmatch_lines(
        [
            "SKIPPED*numpy-cpu has no device graphs (timer='graph' captures CUDA graphs: "
            "torch on CUDA or ROCm, cupy on CUDA)",
        ]
    )
    (r,) = json.loads(Path(pytester.path, "r.json").read_text())["results"]
    assert r["device"]["id"] == "cupy-cuda0" and r["timer"] == "graph"
    assert gpu.captured and gpu.replays >= len(r["samples"]) == 15
    assert r["host_samples"] is not None and len(r["host_samples"]) == 15


@pytest.mark.slow
def test_a_baseline_of_another_clock_is_not_compared(
    pytester: pytest.Pytester, gpu: FakeGraphGpu
) -> None:
    pytester.makepyfile(test_graph=BENCH)
    pytester.runpytest("--perf", "--perf-update", *FAST).assert_outcomes(passed=1, skipped=2)
    # threshold 1000%: this checks which baselines are compared, never this machine's speed
    loose = ("--perf-threshold=1000%", *FAST)
    eager = pytester.runpytest("--perf", "--perf-timer=device", "--perf-backends=cupy", *loose)
    eager.assert_outcomes(passed=1, skipped=1)
    eager.stdout.fnmatch_lines(
        [
            "test_chain[[]cupy-cuda0-f32[]]: incomparable: baseline timed with the device clock "
            "around CUDA-graph replays, this run with the device clock: not compared*"
            "--perf-timer graph*",
        ]
    )
    again = pytester.runpytest("--perf", "--perf-backends=cupy", "--perf-json=r.json", *loose)
    again.assert_outcomes(passed=1, skipped=1)
    (r,) = json.loads(Path(pytester.path, "r.json").read_text())["results"]
    assert r["verdict"]["status"] != "incomparable"


def test_calls_that_cannot_be_captured_fail_their_own_test_only(
    pytester: pytest.Pytester, gpu: FakeGraphGpu
) -> None:
    gpu.fail = "CUDA error: operation not permitted when stream is capturing"
    pytester.makepyfile(
        test_graph="""
        import pytest

        @pytest.mark.perf(backends=["cupy-cuda0"], dtypes=["f32"], timer="graph")
        def test_a_syncs(perf):
            perf(sum, range(10))

        @pytest.mark.perf(backends=["cupy-cuda0"], dtypes=["f32"])
        def test_b_eager(perf):
            perf(sum, range(10))

        @pytest.mark.perf(backends=["cupy-cuda0"], dtypes=["f32"], timer="graph")
        def test_c_pedantic(perf):
            perf.pedantic(sum, (range(10),), rounds=5)
        """
    )
    result = pytester.runpytest("--perf", "-p", "no:randomly", *FAST)
    # a failed capture is not a GPU fault: test_b still runs on the same device
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*test_a_syncs[[]cupy-cuda0-f32[]] on cupy-cuda0 (timer='graph'): its calls could "
            "not be captured into a CUDA graph (RuntimeError: CUDA error: operation not "
            "permitted when stream is capturing)*timer='device' instead",
            "*test_c_pedantic*perf.pedantic: timer='graph' replays one captured sequence*",
        ]
    )
    assert "faulted" not in result.stdout.str()


@pytest.mark.slow
def test_a_device_bound_kernel_is_judged_with_the_device_prior(
    pytester: pytest.Pytester, gpu: FakeGraphGpu
) -> None:
    """Device events on a device off the host CPU, the device busy for the whole span: the
    device's between-process prior; the same benchmark on numpy keeps the host's."""
    pytester.makepyfile(
        test_eager="""
        import numpy as np
        import pytest

        @pytest.mark.perf(backends=["numpy", "cupy"], dtypes=["f32"])
        def test_kernel(perf, device):
            x = np.ones(256, dtype=np.float32)
            perf(lambda: np.sqrt(x + 1.0))
        """
    )
    pytester.runpytest("--perf", "--perf-update", *FAST).assert_outcomes(passed=2, skipped=1)
    # threshold 1000%: this checks which prior judged, never this machine's speed
    again = pytester.runpytest("--perf", "--perf-json=r.json", "--perf-threshold=1000%", *FAST)
    again.assert_outcomes(passed=2, skipped=1)
    results = json.loads(Path(pytester.path, "r.json").read_text())["results"]
    prior = {r["device"]["id"]: r["verdict"]["prior"] for r in results}
    assert prior["cupy-cuda0"].startswith("measured on device-bound GPU kernels (0.5%, 2 ")
    assert prior["numpy-cpu"].startswith("fitted to the spreads of typical workloads (2.2%, 2 ")
