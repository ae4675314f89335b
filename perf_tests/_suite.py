"""Helpers of the shipped suite: shapes per size preset, and reference checks after timing."""

from __future__ import annotations

from typing import Any

import numpy as np

#: Backends of the array-API benchmarks: every device with an array namespace.
ARRAY_BACKENDS = ["cpu", "cuda", "rocm", "metal"]


def pick(size: str, **by_size: Any) -> Any:
    """The value for this run's size preset: ``pick(perf_size, tiny=8, small=256, ...)``.

    ``medium`` falls back to ``small`` and ``full`` to ``medium`` when not given.
    """
    for name in {
        "tiny": ("tiny",),
        "small": ("small",),
        "medium": ("medium", "small"),
        "full": ("full", "medium", "small"),
    }[size]:
        if name in by_size:
            return by_size[name]
    raise KeyError(f"no shape for size {size!r}")


def host64(device: Any, x: Any) -> np.ndarray:
    """``x`` on the host in float64, the precision every reference is computed in."""
    return np.asarray(device.to_host(x)).astype(np.float64)


def tolerance(dtype: str) -> dict[str, float]:
    """Comparison tolerances for results computed in ``dtype`` against a float64 reference."""
    return {
        "f64": {"rtol": 1e-9, "atol": 1e-9},
        "f32": {"rtol": 1e-4, "atol": 1e-4},
    }.get(dtype, {"rtol": 2e-2, "atol": 2e-2})


def check(device: Any, dtype: str, got: Any, expected: np.ndarray, scale: float = 1.0) -> None:
    """Assert that ``got`` matches the float64 reference at ``dtype``'s precision."""
    tol = tolerance(dtype)
    np.testing.assert_allclose(
        host64(device, got), expected, rtol=tol["rtol"] * scale, atol=tol["atol"] * scale
    )
