"""NVML facts and slowdowns against a fake built from the real pynvml module (create_autospec):
a call the code makes that nvidia-ml-py does not have, or with other arguments, fails here."""

from __future__ import annotations

import sys
from typing import Any
from unittest import mock

import pytest

from pytest_burnperf.host import nvml
from pytest_burnperf.host.state import Window

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
    from pytest_burnperf.core.comparability import comparability

    h100 = {"id": "torch-cuda0", "kind": "cuda", "name": "NVIDIA H100", "power_limit_w": 700.0}
    reason, _ = comparability({**h100, "power_limit_w": 500.0}, h100)
    assert reason is not None and "power_limit_w 500.0 -> 700.0" in reason
