"""The shipped suite's reference checks: f32 at TF32's tolerance only where a GPU allows TF32."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "perf_tests"))
from _suite import check, tf32


def device(kind: str, **modes: Any) -> Any:
    return SimpleNamespace(
        kind=kind, precision=lambda: modes, to_host=lambda x: np.asarray(x, dtype=np.float64)
    )


def test_tf32_is_read_from_the_devices_precision_modes() -> None:
    assert not tf32(device("cpu", **{"cudnn.allow_tf32": True}))  # CPUs have no TF32
    assert tf32(device("cuda", **{"cudnn.allow_tf32": True}))  # torch's default on CUDA
    assert tf32(device("cuda", float32_matmul_precision="high"))
    assert tf32(device("cuda", CUPY_TF32="1"))
    assert not tf32(device("cuda", **{"cudnn.allow_tf32": False}, CUPY_TF32="0"))


def test_f32_checks_are_strict_unless_the_gpu_may_use_tf32() -> None:
    expected = np.ones(8)
    got = expected * (1 + 2e-3)  # a TF32-sized error
    check(device("cuda", **{"cudnn.allow_tf32": True}), "f32", got, expected)
    with pytest.raises(AssertionError):
        check(device("cuda", **{"cudnn.allow_tf32": False}), "f32", got, expected)
    with pytest.raises(AssertionError):
        check(device("cpu"), "f32", got, expected)
