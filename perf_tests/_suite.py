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
        "tf32": {"rtol": 5e-3, "atol": 5e-3},
    }.get(dtype, {"rtol": 2e-2, "atol": 2e-2})


#: Where f32 products may run in TF32 (a 10-bit mantissa): the precision modes that allow it.
TF32_MODES = {
    "cuda.matmul.allow_tf32": True,
    "cudnn.allow_tf32": True,  # torch's default: cuDNN convolutions in f32 run as TF32
    "float32_matmul_precision": "high",
    "CUPY_TF32": "1",
}


def tf32(device: Any) -> bool:
    """Whether ``device`` may compute f32 products in TF32 (a GPU with TF32 allowed)."""
    if getattr(device, "kind", "cpu") not in ("cuda", "rocm"):
        return False
    modes = getattr(device, "precision", dict)()
    return any(modes.get(name) == value for name, value in TF32_MODES.items()) or (
        modes.get("float32_matmul_precision") == "medium"
    )


def check(device: Any, dtype: str, got: Any, expected: np.ndarray, scale: float = 1.0) -> None:
    """Assert that ``got`` matches the float64 reference at ``dtype``'s precision (f32 at TF32's
    where the device may use it: torch runs f32 convolutions on NVIDIA GPUs as TF32 by default)."""
    tol = tolerance("tf32" if dtype == "f32" and tf32(device) else dtype)
    np.testing.assert_allclose(
        host64(device, got), expected, rtol=tol["rtol"] * scale, atol=tol["atol"] * scale
    )
