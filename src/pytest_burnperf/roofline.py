"""Roofline figures: what a benchmark computes and moves, what it achieved, and how close that is
to the device's measured peak. Plain Python; array work only inside :func:`calibrate`.

A benchmark declares its work per call with ``perf.work(flops=..., bytes=...)`` (helpers below
count the usual shapes). The report then shows achieved GFLOP/s and GB/s (from the median time)
and their share of the device's peak, measured once per device, dtype and thread count by a short
calibration (a large matmul for compute, a large copy for memory bandwidth) and cached in the
user's cache directory.
"""

from __future__ import annotations

import functools
import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .spec import DTYPES

#: Bump when calibration changes so that old cached peaks are measured again.
CALIBRATION_VERSION = 1
FLOAT_DTYPES = ("f16", "bf16", "f32", "f64")


class WorkError(ValueError):
    """A declared flop or byte count that is not a non-negative finite number."""


@dataclass(frozen=True)
class Work:
    """Floating-point operations and bytes moved to or from memory by one call."""

    flops: float | None = None
    bytes: float | None = None

    def __post_init__(self) -> None:
        for name in ("flops", "bytes"):
            v = getattr(self, name)
            if v is None:
                continue
            if (
                isinstance(v, bool)
                or not isinstance(v, (int, float))
                or not math.isfinite(v)
                or v < 0
            ):
                raise WorkError(f"{name} must be a finite number >= 0 per call, got {v!r}")


def itemsize(dtype: str) -> int:
    return DTYPES[dtype]


def matmul_work(m: int, n: int, k: int, dtype: str, batch: int = 1) -> Work:
    """(m x k) @ (k x n), ``batch`` times: 2mnk flops; reads both inputs, writes the output once."""
    return Work(
        flops=2.0 * m * n * k * batch,
        bytes=float((m * k + k * n + m * n) * batch * itemsize(dtype)),
    )


def elementwise_work(
    elements: int, dtype: str, *, inputs: int = 1, outputs: int = 1, flops_per_element: float = 1.0
) -> Work:
    """An elementwise op over ``elements``: each input read once, each output written once."""
    return Work(
        flops=flops_per_element * elements,
        bytes=float(elements * (inputs + outputs) * itemsize(dtype)),
    )


def reduction_work(elements: int, dtype: str, outputs: int = 1) -> Work:
    """A sum-like reduction: one add per element, the input read once, ``outputs`` written."""
    return Work(flops=float(elements), bytes=float((elements + outputs) * itemsize(dtype)))


@dataclass(frozen=True)
class Peaks:
    """Measured peaks of one device for one dtype and thread count (None: not measured)."""

    gflops: float | None
    gbps: float | None
    how: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Achieved:
    gflops: float | None
    gbps: float | None
    arith_pct: float | None
    mem_pct: float | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _pct(value: float | None, peak: float | None) -> float | None:
    if value is None or peak is None or peak <= 0:
        return None
    return 100.0 * value / peak


def achieved(work: Work, seconds: float, peaks: Peaks | None) -> Achieved:
    """Throughput of one call that took ``seconds`` and its share of the peaks."""
    if seconds <= 0:
        raise ValueError(f"seconds must be > 0, got {seconds!r}")
    gf = None if work.flops is None else work.flops / seconds / 1e9
    gb = None if work.bytes is None else work.bytes / seconds / 1e9
    return Achieved(
        gflops=gf,
        gbps=gb,
        arith_pct=_pct(gf, peaks.gflops if peaks else None),
        mem_pct=_pct(gb, peaks.gbps if peaks else None),
    )


# ---------------------------------------------------------------------------------------------
# calibration


def _best(call: Callable[[], Any], sync: Callable[[], None], repeats: int) -> float:
    call()
    sync()
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        call()
        sync()
        best = min(best, time.perf_counter() - t0)
    return best


def calibrate(
    device: Any, dtype: str, *, n: int | None = None, copy_mib: int | None = None, repeats: int = 10
) -> Peaks:
    """Measure compute (the best of n/2 x n/2 and n x n matmuls) and memory bandwidth (a copy of
    ``copy_mib`` MiB: read and written, so 2x the bytes) on ``device`` in ``dtype``, the best of
    ``repeats`` runs each. Defaults: n=1024 and 64 MiB on the CPU, n=8192 and 1 GiB elsewhere.
    Devices without an array-API namespace (OpenCL, Vulkan) and non-float compute are not
    measured (None)."""
    xp = getattr(device, "xp", None)  # OpenCL and Vulkan devices have none (AttributeError)
    if xp is None:
        return Peaks(None, None, f"no peak calibration for {device.id} (no array namespace)")
    gpu = getattr(device, "kind", "cpu") != "cpu"
    n = n or (8192 if gpu else 1024)
    copy_mib = copy_mib or (1024 if gpu else 64)
    gflops = None
    how = []
    if dtype in FLOAT_DTYPES and device.unsupported(dtype) is None:
        rates = []
        for size in (n // 2, n):
            a = device.random((size, size), dtype)
            b = device.random((size, size), dtype)
            t = _best(functools.partial(xp.matmul, a, b), device.sync, repeats)
            rates.append(2.0 * size**3 / t / 1e9)
            del a, b
        gflops = max(rates)
        how.append(f"matmul {n // 2}x{n // 2} and {n}x{n}")
    elements = copy_mib * 2**20 // itemsize(dtype)
    src = device.random((elements,), dtype)
    dst = device.zeros((elements,), dtype)

    def copy() -> None:
        dst[...] = src

    t = _best(copy, device.sync, repeats)
    gbps = 2.0 * elements * itemsize(dtype) / t / 1e9
    how.append(f"copy {copy_mib} MiB")
    return Peaks(gflops, gbps, f"best of {repeats}: " + ", ".join(how))


def cache_path() -> Path:
    """Where measured peaks are cached: $BURNPERF_CACHE_DIR, else the XDG cache directory."""
    base = os.environ.get("BURNPERF_CACHE_DIR")
    if base:
        return Path(base) / "peaks.json"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "pytest-burnperf" / "peaks.json"


class PeakCache:
    """Peaks per (machine, device, dtype, threads), in one JSON file; a file that cannot be read
    or written only costs a new calibration (the reason is kept in ``problems``)."""

    def __init__(self, path: Path, machine: str) -> None:
        self.path = path
        self.machine = machine
        self.problems: list[str] = []
        self._doc: dict[str, Any] | None = None

    def _load(self) -> dict[str, Any]:
        if self._doc is None:
            doc: dict[str, Any] = {}
            if self.path.exists():
                try:
                    doc = json.loads(self.path.read_text(encoding="utf-8"))
                    if not isinstance(doc, dict) or doc.get("version") != CALIBRATION_VERSION:
                        doc = {}
                except (OSError, ValueError) as exc:
                    self.problems.append(
                        f"peak cache {self.path} unreadable ({exc}); measured again"
                    )
                    doc = {}
            doc.setdefault("version", CALIBRATION_VERSION)
            doc.setdefault("peaks", {})
            self._doc = doc
        return self._doc

    @staticmethod
    def key(machine: str, device_id: str, model: str, dtype: str, threads: int) -> str:
        return f"{machine}|{device_id}|{model}|{dtype}|threads={threads}"

    def get(self, key: str) -> Peaks | None:
        entry = self._load()["peaks"].get(key)
        if not isinstance(entry, dict):
            return None
        try:
            return Peaks(entry.get("gflops"), entry.get("gbps"), str(entry.get("how", "")))
        except TypeError:
            return None

    def put(self, key: str, peaks: Peaks) -> None:
        doc = self._load()
        doc["peaks"][key] = peaks.as_dict()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError as exc:
            self.problems.append(f"peak cache {self.path} not written ({exc})")


def format_rate(value: float | None, unit: str, pct: float | None) -> str:
    """``812 GF/s 41%``; ``-`` when unknown."""
    if value is None:
        return "-"
    text = f"{value:.3g} {unit}"
    return text if pct is None else f"{text} {pct:.0f}%"
