"""NVIDIA GPU facts and clock state through NVML (the optional ``nvml`` extra: nvidia-ml-py).

What the CUDA runtime does not tell but decides a GPU's speed: its maximum SM and memory clocks and
its power limit (a 700 W and a 500 W H100 are different hardware classes), and, while a benchmark
runs, whether the GPU is slowing itself down (thermal or hardware slowdown, power brake), at
what clocks, power and temperature it ran, and whether other processes computed on it
(:class:`Watch`, read at the start and end of each benchmark's samples).

Without nvidia-ml-py, or where NVML has no device, every function returns None and nothing else
changes. A GPU is found by its PCI address, which CUDA and NVML share (their indices may differ).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pytest_burnperf import json_fields as jf

#: Clock-event reasons that mean the GPU is slowing itself down against the workload's will.
#: (The power cap, idle, sync boost and application/user clocks are normal operation.)
_SLOWDOWN_REASONS = (
    ("nvmlClocksEventReasonSwThermalSlowdown", "thermal slowdown (software)"),
    ("nvmlClocksEventReasonHwThermalSlowdown", "thermal slowdown (hardware)"),
    ("nvmlClocksEventReasonHwSlowdown", "hardware slowdown"),
    ("nvmlClocksEventReasonHwPowerBrakeSlowdown", "power brake"),
)


#: Every clock-event reason, in words (the normal ones too), for the header and the JSON.
_ALL_REASONS = (
    *_SLOWDOWN_REASONS,
    ("nvmlClocksEventReasonGpuIdle", "idle"),
    ("nvmlClocksEventReasonApplicationsClocksSetting", "application clocks"),
    ("nvmlClocksEventReasonSwPowerCap", "power cap"),
    ("nvmlClocksEventReasonSyncBoost", "sync boost"),
    ("nvmlClocksEventReasonDisplayClockSetting", "display clocks"),
)
_SLOWDOWN_WORDS = frozenset(text for _, text in _SLOWDOWN_REASONS)

#: nvbench's default throttle threshold: a sample taken while the SM clock was under this share
#: of its default clock is discarded there. Here a benchmark whose SM clock, read at the start and
#: end of its samples (not idle, not at its power cap), was under this share of its maximum ran on
#: a slowed GPU (application or user-defined clocks, or a slowdown NVML gives no reason for).
SM_CLOCK_MIN_SHARE = 0.75
#: Another process counts as computing on the GPU when NVML saw it use at least this share of
#: the SMs during a benchmark's samples.
OTHERS_SM_MIN = 0.05


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


def _collect(calls: Sequence[tuple[str, Callable[[], object]]]) -> dict[str, object]:
    """Each call's value by its key, leaving out what this GPU or driver does not report."""
    out: dict[str, object] = {}
    for key, call in calls:
        try:
            out[key] = call()
        except Exception:  # a figure this GPU or driver does not report
            continue
    return out


def facts(pci: str | None) -> dict[str, object] | None:
    """Max SM and memory clocks (MHz), power limit (W) and driver of the GPU at ``pci``."""
    found = _open(pci)
    if found is None:
        return None
    nvml, handle = found
    calls: tuple[tuple[str, Callable[[], object]], ...] = (
        ("max_sm_clock_mhz", lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM)),
        ("max_mem_clock_mhz", lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_MEM)),
        ("power_limit_w", lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0),
    )
    out = _collect(calls)
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


def read(pci: str | None) -> dict[str, object] | None:
    """One reading of the GPU at ``pci``: current and maximum SM and memory clocks (MHz), power
    and its limit (W), temperature (C) and the active clock-event reasons in words; None
    without NVML. A figure the GPU does not report is left out."""
    found = _open(pci)
    if found is None:
        return None
    nvml, handle = found
    calls: tuple[tuple[str, Callable[[], object]], ...] = (
        ("sm_mhz", lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)),
        ("max_sm_mhz", lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM)),
        ("mem_mhz", lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM)),
        ("max_mem_mhz", lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_MEM)),
        ("power_w", lambda: nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0),
        ("power_limit_w", lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0),
        (
            "temperature_c",
            lambda: nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU),
        ),
    )
    out: dict[str, object] = {
        k: f for k, v in _collect(calls).items() if (f := jf.number(v)) is not None
    }
    try:
        bits = int(nvml.nvmlDeviceGetCurrentClocksEventReasons(handle))
    except Exception:
        bits = 0
    out["reasons"] = [text for name, text in _ALL_REASONS if bits & int(getattr(nvml, name, 0))]
    return out


def others(pci: str | None, since_us: int, own: int | None = None) -> tuple[float, str] | None:
    """The share of the time other processes' kernels ran on the SMs of the GPU at ``pci``
    since ``since_us`` (NVML's per-process utilisation samples, microseconds since the epoch):
    each process's largest sample, added up over the processes (at most 1), and who: ``(0.0,
    "")`` when none did; None where NVML cannot tell (no NVML, no per-process samples, or
    process ids from another pid namespace, as in a container, where this process is not among
    the GPU's compute processes)."""
    found = _open(pci)
    if found is None:
        return None
    nvml, handle = found
    me = os.getpid() if own is None else own
    try:
        running = {int(p.pid) for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle)}
    except Exception:
        return None
    if me not in running:
        return None
    try:
        samples = nvml.nvmlDeviceGetProcessUtilization(handle, int(since_us))
    except Exception as exc:  # NVML_ERROR_NOT_FOUND: no process used the GPU since then
        if getattr(exc, "value", None) == getattr(nvml, "NVML_ERROR_NOT_FOUND", None):
            return 0.0, ""
        return None
    top: dict[int, float] = {}
    for s in samples:
        pid = int(s.pid)
        if pid != me and int(s.timeStamp) >= since_us:
            top[pid] = max(top.get(pid, 0.0), float(s.smUtil) / 100.0)
    busy = sorted(((share, pid) for pid, share in top.items() if share > 0), reverse=True)
    if not busy:
        return 0.0, ""
    shown = ", ".join(f"pid {pid} up to {100 * share:.0f}% of the SMs" for share, pid in busy[:3])
    total = min(1.0, sum(share for share, _ in busy))
    return total, shown + (f" and {len(busy) - 3} more" if len(busy) > 3 else "")


class Watch:
    """NVML's view of one GPU during a benchmark's samples: :meth:`mark` at their start and end
    (the plugin's ``watch`` hook), then :meth:`fields` for the host-state window."""

    def __init__(self, pci: str | None, clock: Callable[[], int] = time.time_ns) -> None:
        self.pci = pci
        self.clock = clock
        #: Look for other processes on the GPU (off for a side of a turn-taking pair, whose
        #: partner computes on the same GPU between this side's windows).
        self.track_others = True
        self.readings: list[dict[str, object]] = []
        self.since_us: int | None = None

    def mark(self) -> None:
        if self.since_us is None:
            self.since_us = self.clock() // 1000
        reading = read(self.pci)
        if reading is not None:
            self.readings.append(reading)

    def fields(self) -> dict[str, object]:
        """The window's GPU fields (``host.activity.Window``); {} where NVML saw nothing."""
        out = window_fields(self.readings)
        if self.readings and self.since_us is not None and self.track_others:
            seen = others(self.pci, self.since_us)
            if seen is not None:
                out["gpu_others_sm"] = seen[0]
                out["gpu_others"] = seen[1] or None
        return out


def window_fields(readings: Sequence[Mapping[str, object]]) -> dict[str, object]:
    """Readings of one benchmark's samples as window fields: the lowest SM and memory clocks
    and the SM clock's share of its maximum (readings while idle left out), the highest power
    and temperature, every clock-event reason seen, and the slowdowns among them."""
    if not readings:
        return {}
    out: dict[str, object] = {}
    busy = [r for r in readings if "idle" not in jf.sequence(r.get("reasons"))]
    for key, top, share in (
        ("sm_mhz", "max_sm_mhz", "gpu_sm_clock_share"),
        ("mem_mhz", "max_mem_mhz", "gpu_mem_clock_share"),
    ):
        pairs = [
            (low, high)
            for r in busy
            if (low := jf.number(r.get(key))) and (high := jf.number(r.get(top)))
        ]
        if pairs:
            low, high = min(pairs)
            out[f"gpu_{key}"] = low
            out[f"gpu_{top}"] = high
            out[share] = min(1.0, low / high)
    for key in ("power_w", "temperature_c"):
        values = [v for r in readings if (v := jf.number(r.get(key))) is not None]
        if values:
            out[f"gpu_{key}"] = max(values)
    limits = [v for r in readings if (v := jf.number(r.get("power_limit_w")))]
    if limits:
        out["gpu_power_limit_w"] = min(limits)
    reasons = sorted(
        {t for r in readings for t in jf.sequence(r.get("reasons")) if isinstance(t, str)}
    )
    out["gpu_reasons"] = ", ".join(reasons) or None
    slowing = [t for t in reasons if t in _SLOWDOWN_WORDS]
    if slowing:
        clocks = (
            f" (SM clock {out['gpu_sm_mhz']:.0f}/{out['gpu_max_sm_mhz']:.0f} MHz)"
            if "gpu_sm_mhz" in out
            else ""
        )
        out["gpu_slowdown"] = f"the GPU was in {', '.join(slowing)}{clocks}"
    return out
