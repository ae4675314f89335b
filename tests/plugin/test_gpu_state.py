"""NVML's view of a GPU as a user meets it, on a fake CUDA device (CI has no GPU): the header
says what the GPU ran at, the JSON keeps it per benchmark, and another process computing on the
GPU is treated like a busy host: a slowdown it could explain is not blamed on the code.
NVML itself is tested against nvidia-ml-py's API in tests/unit/host/test_nvml.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_burnperf.host import activity

from ._helpers import FAST, use_virtual_clock
from .test_host_and_class import FakeHost, _fake_probe

#: The project's conftest: numpy's device dressed as cupy-cuda0 with an NVML watch whose
#: readings the test sets through the environment, in this process and in every round process.
GPU_CONFTEST = """
import os

from pytest_burnperf import devices

_real = devices.PROBES["cupy"]

QUIET = {
    "gpu_sm_mhz": 1980.0,
    "gpu_max_sm_mhz": 1980.0,
    "gpu_sm_clock_share": 1.0,
    "gpu_power_w": 312.0,
    "gpu_power_limit_w": 700.0,
    "gpu_temperature_c": 45.0,
    "gpu_reasons": "power cap",
    "gpu_others_sm": 0.0,
}


class Watch:
    track_others = True

    def mark(self):
        pass

    def fields(self):
        share = float(os.environ.get("BURNPERF_TEST_GPU_OTHERS", "0"))
        who = f"pid 4242 up to {100 * share:.0f}% of the SMs" if share else None
        return {**QUIET, "gpu_others_sm": share, "gpu_others": who}


class Gpu:
    id, kind, library, name = "cupy-cuda0", "cuda", "cupy", "Fake GPU"

    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def timer(self):  # the host clock, which the virtual clock drives
        return None

    def gpu_watch(self):
        return Watch()

    def gpu_slowdown(self):
        return None

    def fingerprint(self):
        fp = {k: v for k, v in self._inner.fingerprint().items() if k not in ("cpu", "dispatch")}
        fp.update(id=self.id, kind=self.kind, library=self.library, name=self.name)
        return fp


def _probe():
    numpy_cpu = devices.PROBES["numpy"]().devices[0]
    return devices.Probe("cupy", [Gpu(numpy_cpu)], absent={"rocm": "cupy is built for CUDA"})


devices.PROBES["cupy"] = _probe


def pytest_unconfigure(config):
    devices.PROBES["cupy"] = _real
"""

BENCH = """
import os

import pytest

from virtual_clock import spin


@pytest.mark.perf(backends=["cupy-cuda0"], dtypes=["f32"])
def test_on_gpu(perf):
    perf(spin, 200e-6 * float(os.environ.get("BURNPERF_TEST_WORK", "1.0")))
"""


def test_another_process_on_the_gpu_makes_the_verdict_say_so(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the host rules on, from a quiet fake CPU host and a probe that never moves (the tests'
    # conftest trusts the host), so that only the GPU's watch can decide them
    monkeypatch.delenv("BURNPERF_TRUST_HOST", raising=False)
    monkeypatch.setattr(activity, "CPU_SHARE_MIN", 0.0)
    monkeypatch.setattr(activity, "snapshot", FakeHost(0.02))
    _fake_probe(monkeypatch, 1.0)
    use_virtual_clock(pytester, GPU_CONFTEST)
    pytester.makepyfile(test_gpu=BENCH)
    record = ("--perf", "--perf-update", "--perf-rounds", "1", *FAST)
    pytester.runpytest(*record).assert_outcomes(passed=1)
    gate = ("--perf-threshold=20%", *FAST)  # far above the virtual clock's 1% wobble
    quiet = pytester.runpytest("--perf", "--perf-json=q.json", *gate)
    quiet.assert_outcomes(passed=1)
    quiet.stdout.fnmatch_lines(
        [
            "host quiet*",
            "device cupy-cuda0: Fake GPU",
            "gpu cupy-cuda0 during the samples: SM clock 1980 of 1980 MHz; power up to 312 of "
            "700 W; up to 45 C; clock-event reasons: power cap; no other process computed on it",
        ]
    )
    (r,) = json.loads(Path(pytester.path, "q.json").read_text())["results"]
    assert r["verdict"]["status"] == "unchanged"
    assert all(w["gpu_sm_mhz"] == 1980.0 and w["gpu_others_sm"] == 0.0 for w in r["host"])

    monkeypatch.setenv("BURNPERF_TEST_WORK", "1.6")  # beyond the 1-vs-1 noise floor ...
    pytester.runpytest("--perf", *gate).assert_outcomes(failed=1)  # ... on a quiet GPU: caught
    monkeypatch.setenv("BURNPERF_TEST_GPU_OTHERS", "0.87")  # ... beside another process
    busy = pytester.runpytest("--perf", "--perf-json=b.json", *gate)
    busy.assert_outcomes(passed=1)  # not blamed on the code, and not passed silently either
    busy.stdout.fnmatch_lines(
        [
            "host BUSY during 1 of 1 benchmark(s) (worst: other processes computed on the GPU "
            "(pid 4242 up to 87% of the SMs))*",
            "gpu cupy-cuda0 during the samples: *other processes computed on it during 1 of 1*",
            "test_on_gpu[[]cupy-cuda0-f32[]]: inconclusive: host busy while it ran: other "
            "processes computed on the GPU (pid 4242 up to 87% of the SMs)*not failed*",
            "*NOT judged: 1 (1 host busy)*",
        ]
    )
    (r,) = json.loads(Path(pytester.path, "b.json").read_text())["results"]
    assert r["verdict"]["status"] == "inconclusive"
    assert r["host"][0]["gpu_others_sm"] == 0.87


def test_another_process_on_the_gpu_excuses_only_what_it_can_explain(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 72: another process's kernels on the SMs 20% of the time can explain a slowdown up
    to 1.5 / 0.8 = +88% (the CPU's rule): one inside it is inconclusive with that bound, one
    beyond it fails, naming the other process."""
    monkeypatch.delenv("BURNPERF_TRUST_HOST", raising=False)
    monkeypatch.setattr(activity, "CPU_SHARE_MIN", 0.0)
    monkeypatch.setattr(activity, "snapshot", FakeHost(0.02))
    _fake_probe(monkeypatch, 1.0)
    use_virtual_clock(pytester, GPU_CONFTEST)
    pytester.makepyfile(test_gpu=BENCH)
    pytester.runpytest("--perf", "--perf-update", "--perf-rounds", "1", *FAST).assert_outcomes(
        passed=1
    )
    gate = ("--perf-threshold=20%", *FAST)
    monkeypatch.setenv("BURNPERF_TEST_GPU_OTHERS", "0.2")
    monkeypatch.setenv("BURNPERF_TEST_WORK", "1.6")
    inside = pytester.runpytest("--perf", *gate)
    inside.assert_outcomes(passed=1)
    inside.stdout.fnmatch_lines(
        [
            "test_on_gpu[[]cupy-cuda0-f32[]]: inconclusive: host busy while it ran: other "
            "processes computed on the GPU (pid 4242 up to 20% of the SMs) (it can explain up to "
            "+88%); the +*% * change may be the host's, not the code's: not failed*",
        ]
    )
    monkeypatch.setenv("BURNPERF_TEST_WORK", "4.0")
    beyond = pytester.runpytest("--perf", *gate)
    beyond.assert_outcomes(failed=1)
    beyond.stdout.fnmatch_lines(
        [
            "*other processes computed on the GPU (pid 4242 up to 20% of the SMs); a host this "
            "busy can explain up to +88%, not the +*% [[]+*%, +*%[]] measured: failed all the same*",
        ]
    )
