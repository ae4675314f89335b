"""NVML facts and slowdowns against a fake built from the real pynvml module (create_autospec):
a call the code makes that nvidia-ml-py does not have, or with other arguments, fails here."""

from __future__ import annotations

import sys
from typing import Any
from unittest import mock

import pytest

from pytest_burnperf.host import nvml
from pytest_burnperf.host.activity import Window

pynvml = pytest.importorskip("pynvml", reason="the nvml extra (nvidia-ml-py) is not installed")

PCI = nvml.pci_address(0, 0x3B, 0)


def fake(reasons: int = 0) -> Any:
    m = mock.create_autospec(pynvml, instance=False)
    m.NVML_CLOCK_SM, m.NVML_CLOCK_MEM = pynvml.NVML_CLOCK_SM, pynvml.NVML_CLOCK_MEM
    for name, _ in nvml._SLOWDOWN_REASONS:
        setattr(m, name, getattr(pynvml, name))
    m.nvmlDeviceGetHandleByPciBusId.return_value = "handle"
    clocks = {pynvml.NVML_CLOCK_SM: 1980, pynvml.NVML_CLOCK_MEM: 2619}
    m.nvmlDeviceGetMaxClockInfo.side_effect = lambda h, kind: clocks[kind]
    m.nvmlDeviceGetClockInfo.side_effect = lambda h, kind: 1410
    m.nvmlDeviceGetEnforcedPowerLimit.return_value = 700_000
    m.nvmlSystemGetDriverVersion.return_value = "580.65.06"
    m.nvmlDeviceGetCurrentClocksEventReasons.return_value = reasons
    for name, _ in nvml._ALL_REASONS:
        setattr(m, name, getattr(pynvml, name))
    m.NVML_TEMPERATURE_GPU = pynvml.NVML_TEMPERATURE_GPU
    m.NVML_ERROR_NOT_FOUND = pynvml.NVML_ERROR_NOT_FOUND
    m.nvmlDeviceGetPowerUsage.return_value = 312_500
    m.nvmlDeviceGetTemperature.return_value = 45
    return m


def test_facts_and_slowdown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake())
    assert PCI == "00000000:3B:00.0"
    assert nvml.facts(PCI) == {
        "max_sm_clock_mhz": 1980,
        "max_mem_clock_mhz": 2619,
        "power_limit_w": 700.0,
        "nvml_driver": "580.65.06",
    }
    assert nvml.slowdown(PCI) is None
    thermal = pynvml.nvmlClocksEventReasonHwThermalSlowdown | pynvml.nvmlClocksEventReasonSwPowerCap
    monkeypatch.setitem(sys.modules, "pynvml", fake(thermal))
    why = nvml.slowdown(PCI)
    assert why == "the GPU is in thermal slowdown (hardware) (SM clock 1410/1980 MHz)"
    w = Window(seconds=1.0, cpus=2, own_cpus=1.0, gpu_slowdown=why)
    assert w.disturbed() == why


def test_without_nvml_nothing_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    # no NVIDIA driver: nvmlInit fails (as the real module says on a machine without one)
    no_driver = fake()
    no_driver.nvmlInit.side_effect = pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    monkeypatch.setitem(sys.modules, "pynvml", no_driver)
    assert nvml.facts(PCI) is None and nvml.slowdown(PCI) is None
    assert nvml.facts(None) is None
    monkeypatch.setitem(sys.modules, "pynvml", None)  # the extra not installed
    assert nvml.facts(PCI) is None
    broken = fake()
    broken.nvmlDeviceGetHandleByPciBusId.side_effect = pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)
    monkeypatch.setitem(sys.modules, "pynvml", broken)
    assert nvml.facts(PCI) is None and nvml.slowdown(PCI) is None


def test_power_limit_makes_another_class() -> None:
    from pytest_burnperf.core.judging.comparability import comparability

    h100 = {"id": "torch-cuda0", "kind": "cuda", "name": "NVIDIA H100", "power_limit_w": 700.0}
    reason, _ = comparability({**h100, "power_limit_w": 500.0}, h100)
    assert reason is not None and "power_limit_w 500.0 -> 700.0" in reason


def sample(pid: int, sm: int, t_us: int) -> Any:
    """One per-process utilisation sample, as nvidia-ml-py returns them."""
    s = pynvml.c_nvmlProcessUtilizationSample_t()
    s.pid, s.smUtil, s.timeStamp = pid, sm, t_us
    return s


def process(pid: int) -> Any:
    return mock.Mock(pid=pid, usedGpuMemory=2**30)


def test_a_reading_has_clocks_power_temperature_and_every_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    capped = pynvml.nvmlClocksEventReasonSwPowerCap | pynvml.nvmlClocksEventReasonGpuIdle
    monkeypatch.setitem(sys.modules, "pynvml", fake(capped))
    assert nvml.read(PCI) == {
        "sm_mhz": 1410.0,
        "max_sm_mhz": 1980.0,
        "mem_mhz": 1410.0,
        "max_mem_mhz": 2619.0,
        "power_w": 312.5,
        "power_limit_w": 700.0,
        "temperature_c": 45.0,
        "reasons": ["idle", "power cap"],
    }
    monkeypatch.setitem(sys.modules, "pynvml", None)
    assert nvml.read(PCI) is None


def test_other_processes_on_the_gpu_and_when_nvml_cannot_tell(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    m = fake()
    monkeypatch.setitem(sys.modules, "pynvml", m)
    m.nvmlDeviceGetComputeRunningProcesses.return_value = [process(100), process(4242)]
    m.nvmlDeviceGetProcessUtilization.return_value = [
        sample(100, 99, 2_000),  # this process
        sample(4242, 87, 2_500),
        sample(4242, 40, 3_000),
        sample(777, 90, 500),  # before the window: not counted
    ]
    assert nvml.others(PCI, 1_000, own=100) == (0.87, "pid 4242 up to 87% of the SMs")
    # two other processes: their shares add up (the GPU time-slices between them), at most 1
    m.nvmlDeviceGetProcessUtilization.return_value = [sample(4242, 30, 2_500), sample(9, 25, 2_600)]
    share, who = nvml.others(PCI, 1_000, own=100)  # type: ignore[misc]
    assert share == pytest.approx(0.55)
    assert who == "pid 4242 up to 30% of the SMs, pid 9 up to 25% of the SMs"
    m.nvmlDeviceGetProcessUtilization.return_value = [sample(4242, 80, 2_500), sample(9, 70, 2_600)]
    assert nvml.others(PCI, 1_000, own=100)[0] == 1.0  # type: ignore[index]
    m.nvmlDeviceGetProcessUtilization.side_effect = pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)
    assert nvml.others(PCI, 1_000, own=100) == (0.0, "")  # no samples: nobody computed
    m.nvmlDeviceGetProcessUtilization.side_effect = pynvml.NVMLError(
        pynvml.NVML_ERROR_NOT_SUPPORTED
    )
    assert nvml.others(PCI, 1_000, own=100) is None
    m.nvmlDeviceGetProcessUtilization.side_effect = None
    # another pid namespace (a container): this process is not among the GPU's processes
    assert nvml.others(PCI, 1_000, own=5) is None


def test_the_watch_turns_readings_into_window_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    m = fake()
    monkeypatch.setitem(sys.modules, "pynvml", m)
    me = __import__("os").getpid()
    m.nvmlDeviceGetComputeRunningProcesses.return_value = [process(me), process(4242)]
    m.nvmlDeviceGetProcessUtilization.return_value = [sample(4242, 60, 5_000)]
    watch = nvml.Watch(PCI, clock=lambda: 4_000_000)  # 4,000 us since the epoch
    watch.mark()
    m.nvmlDeviceGetClockInfo.side_effect = lambda h, kind: 990  # slowed by the end
    watch.mark()
    fields = watch.fields()
    assert m.nvmlDeviceGetProcessUtilization.call_args.args[1] == 4_000
    assert fields["gpu_sm_mhz"] == 990.0 and fields["gpu_sm_clock_share"] == 0.5
    assert fields["gpu_power_w"] == 312.5 and fields["gpu_temperature_c"] == 45.0
    assert (
        fields["gpu_others_sm"] == 0.6 and fields["gpu_others"] == "pid 4242 up to 60% of the SMs"
    )
    w = Window(seconds=1.0, cpus=2, own_cpus=1.0, **fields)
    why = w.disturbed()
    assert why == (
        "the GPU's SM clock fell to 990 of 1980 MHz (under 75% of its maximum); other "
        "processes computed on the GPU (pid 4242 up to 60% of the SMs)"
    )
    back = Window.from_dict(w.as_dict())  # stored and read back as it was (4 digits)
    assert back is not None and back.as_dict() == w.as_dict() and back.disturbed() == why
    assert Window.from_dict({**w.as_dict(), "gpu_others": 3}) is None
    watch.track_others = False  # a side of a turn-taking pair: its partner shares the GPU
    assert "gpu_others_sm" not in watch.fields()


def test_idle_readings_do_not_count_as_a_slow_clock_and_slowdowns_are_named() -> None:
    idle = {"sm_mhz": 345.0, "max_sm_mhz": 1980.0, "reasons": ["idle"]}
    busy = {"sm_mhz": 1980.0, "max_sm_mhz": 1980.0, "reasons": ["power cap"]}
    fields = nvml.window_fields([idle, busy])
    assert fields["gpu_sm_clock_share"] == 1.0 and fields["gpu_reasons"] == "idle, power cap"
    assert "gpu_slowdown" not in fields
    assert Window(seconds=1.0, cpus=2, own_cpus=1.0, **fields).disturbed() is None
    # a heavy kernel at the power cap runs at what the cap allows: its own steady state
    capped = {"sm_mhz": 1400.0, "max_sm_mhz": 1980.0, "reasons": ["power cap"]}
    fields = nvml.window_fields([capped])
    assert fields["gpu_sm_clock_share"] < nvml.SM_CLOCK_MIN_SHARE
    assert Window(seconds=1.0, cpus=2, own_cpus=1.0, **fields).disturbed() is None
    clocks = {**capped, "reasons": ["application clocks"]}  # clocks set low by an admin
    assert "SM clock fell to 1400 of 1980 MHz" in str(
        Window(seconds=1.0, cpus=2, own_cpus=1.0, **nvml.window_fields([clocks])).disturbed()
    )
    hot = {**busy, "reasons": ["thermal slowdown (software)"]}
    assert nvml.window_fields([hot])["gpu_slowdown"] == (
        "the GPU was in thermal slowdown (software) (SM clock 1980/1980 MHz)"
    )
    assert nvml.window_fields([]) == {}


def test_the_header_says_what_the_gpu_ran_at_and_who_else_computed_on_it() -> None:
    from types import SimpleNamespace

    from pytest_burnperf.report.run_header import gpu_state_lines

    def w(sm: float, others: float | None, reasons: str | None = "power cap") -> Window:
        return Window(
            seconds=1.0,
            cpus=2,
            own_cpus=1.0,
            gpu_sm_mhz=sm,
            gpu_max_sm_mhz=1980.0,
            gpu_mem_mhz=2619.0,
            gpu_max_mem_mhz=2619.0,
            gpu_power_w=300.0 + sm / 10,
            gpu_power_limit_w=700.0,
            gpu_temperature_c=40.0 + sm / 100,
            gpu_reasons=reasons,
            gpu_others_sm=others,
            gpu_others=None if not others else "pid 9 up to 50% of the SMs",
        )

    results = [
        SimpleNamespace(device_id="torch-cuda0", host=(w(1980.0, 0.0),)),
        SimpleNamespace(device_id="torch-cuda0", host=(w(1755.0, 0.5, None),)),
        SimpleNamespace(device_id="numpy-cpu", host=(Window(seconds=1.0, cpus=2, own_cpus=1.0),)),
        SimpleNamespace(device_id="cupy-cuda0", host=(w(1980.0, None),)),
    ]
    assert gpu_state_lines(results) == [  # type: ignore[arg-type]
        "gpu cupy-cuda0 during the samples: SM clock 1980 of 1980 MHz; memory clock 2619 of "
        "2619 MHz; power up to 498 of 700 W; up to 60 C; clock-event reasons: power cap; other "
        "processes on it: not measurable here",
        "gpu torch-cuda0 during the samples: SM clock 1755-1980 of 1980 MHz; memory clock 2619 "
        "of 2619 MHz; power up to 498 of 700 W; up to 60 C; clock-event reasons: power cap; "
        "other processes computed on it during 1 of 2 benchmark(s)",
    ]
