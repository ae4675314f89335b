"""Roofline figures: what a benchmark computes and moves, what it achieved, and how close that is
to the device's measured peak. Plain Python, no array work: the peaks are measured by
``devices/peak_calibration.py`` and cached by ``storage/peak_cache.py``.

A benchmark declares its work per call with ``perf.work(flops=..., bytes=...)`` (helpers below
count the usual shapes). The report then shows achieved GFLOP/s and GB/s (from the median time)
and their share of the device's peak, measured once per device, dtype and thread count by a short
calibration (a large matmul for compute, a large copy for memory bandwidth) and cached in the
user's cache directory.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from pytest_burnperf.core.options.settings import DTYPES

FLOAT_DTYPES = ("f16", "bf16", "f32", "f64")


class WorkError(ValueError):
    """A declared flop or byte count that is not a non-negative finite number."""


@dataclass(frozen=True)
class Work:
    """Floating-point operations and bytes moved to or from memory by one call."""

    flops: float | None = None
    bytes: float | None = None
    #: What the work runs on, for the table's shape column (``256x256 @ 256x256``).
    shape: str | None = None

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
        shape=(f"{batch}x" if batch > 1 else "") + f"{m}x{k} @ {k}x{n}",
    )


def elementwise_work(
    elements: int, dtype: str, *, inputs: int = 1, outputs: int = 1, flops_per_element: float = 1.0
) -> Work:
    """An elementwise op over ``elements``: each input read once, each output written once."""
    return Work(
        flops=flops_per_element * elements,
        bytes=float(elements * (inputs + outputs) * itemsize(dtype)),
        shape=f"{elements}",
    )


def reduction_work(elements: int, dtype: str, outputs: int = 1) -> Work:
    """A sum-like reduction: one add per element, the input read once, ``outputs`` written."""
    return Work(
        flops=float(elements),
        bytes=float((elements + outputs) * itemsize(dtype)),
        shape=f"{elements} -> {outputs}",
    )


@dataclass(frozen=True)
class Peaks:
    """Measured peaks of one device for one dtype and thread count (None: not measured)."""

    gflops: float | None
    gbps: float | None
    how: str

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class Achieved:
    gflops: float | None
    gbps: float | None
    arith_pct: float | None
    mem_pct: float | None

    def as_dict(self) -> dict[str, object]:
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


def format_rate(value: float | None, unit: str, pct: float | None) -> str:
    """``812 GF/s 41%``; ``-`` when unknown."""
    if value is None:
        return "-"
    text = f"{value:.3g} {unit}"
    return text if pct is None else f"{text} {pct:.0f}%"
