"""NVIDIA GPU facts and clock state through NVML (the optional ``nvml`` extra: nvidia-ml-py).

What the CUDA runtime does not tell but decides a GPU's speed: its maximum SM and memory clocks and
its power limit (a 700 W and a 500 W H100 are different hardware classes), and, while a benchmark
runs, whether the GPU is slowing itself down (thermal or hardware slowdown, power brake).

Without nvidia-ml-py, or where NVML has no device, every function returns None and nothing else
changes. A GPU is found by its PCI address, which CUDA and NVML share (their indices may differ).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: Clock-event reasons that mean the GPU is slowing itself down against the workload's will.
#: (The power cap, idle, sync boost and application/user clocks are normal operation.)
_SLOWDOWN_REASONS = (
    ("nvmlClocksEventReasonSwThermalSlowdown", "thermal slowdown (software)"),
    ("nvmlClocksEventReasonHwThermalSlowdown", "thermal slowdown (hardware)"),
    ("nvmlClocksEventReasonHwSlowdown", "hardware slowdown"),
    ("nvmlClocksEventReasonHwPowerBrakeSlowdown", "power brake"),
)


def pci_address(domain: int, bus: int, device: int) -> str:
    return f"{domain:08X}:{bus:02X}:{device:02X}.0"


def _module() -> Any:
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # no driver, no library: no NVML here
        return None
    return pynvml


def _open(pci: str | None) -> tuple[Any, Any] | None:
    """NVML and the handle of the GPU at ``pci``, or None."""
    nvml = _module() if pci else None
    if nvml is None:
        return None
    try:
        return nvml, nvml.nvmlDeviceGetHandleByPciBusId(str(pci))
    except Exception:
        return None


def facts(pci: str | None) -> dict[str, Any] | None:
    """Max SM and memory clocks (MHz), power limit (W) and driver of the GPU at ``pci``."""
    found = _open(pci)
    if found is None:
        return None
    nvml, handle = found
    out: dict[str, Any] = {}
    calls: tuple[tuple[str, Callable[[], Any]], ...] = (
        ("max_sm_clock_mhz", lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM)),
        ("max_mem_clock_mhz", lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_MEM)),
        ("power_limit_w", lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0),
    )
    for key, call in calls:
        try:
            out[key] = call()
        except Exception:  # a field this GPU or driver does not report
            continue
    try:
        driver = nvml.nvmlSystemGetDriverVersion()
        out["nvml_driver"] = driver.decode() if isinstance(driver, bytes) else str(driver)
    except Exception:
        pass
    return out or None


def slowdown(pci: str | None) -> str | None:
    """Why the GPU at ``pci`` is slowing itself down right now (with its SM clock), or None."""
    found = _open(pci)
    if found is None:
        return None
    nvml, handle = found
    try:
        reasons = int(nvml.nvmlDeviceGetCurrentClocksEventReasons(handle))
    except Exception:
        return None
    active = [text for name, text in _SLOWDOWN_REASONS if reasons & int(getattr(nvml, name, 0))]
    if not active:
        return None
    try:
        cur = nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)
        top = nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM)
        clocks = f" (SM clock {cur}/{top} MHz)"
    except Exception:
        clocks = ""
    return f"the GPU is in {', '.join(active)}{clocks}"
