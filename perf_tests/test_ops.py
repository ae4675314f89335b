"""Starter backend-comparison benchmarks: written once against ``device.xp`` and run on every CPU
device (numpy, and torch when installed) in f32 and f64.

Inputs are built outside the timed region; each benchmark also checks its result against numpy.
"""

from __future__ import annotations

import numpy as np
import pytest

BACKENDS = ["cpu"]
DTYPES = ["f32", "f64"]


@pytest.mark.perf(backends=BACKENDS, dtypes=DTYPES)
def test_matmul(perf, device, dtype):
    """Square matrix product, 256 x 256 (BLAS-bound)."""
    a = device.random((256, 256), dtype)
    b = device.random((256, 256), dtype)
    out = perf(device.xp.matmul, a, b)
    expected = device.to_host(a).astype(np.float64) @ device.to_host(b).astype(np.float64)
    np.testing.assert_allclose(device.to_host(out), expected, rtol=1e-3, atol=1e-3)


def _elementwise_chain(xp, x, y):
    # the kind of chain a fusion compiler merges into one kernel
    return xp.tanh(x * y + 5.0) - xp.abs(x) / (1.0 + y * y)


@pytest.mark.perf(backends=BACKENDS, dtypes=DTYPES)
def test_elementwise_chain(perf, device, dtype):
    """tanh(x*y + 5) - |x| / (1 + y*y) over 256 x 256 elements (temporaries stay in cache)."""
    x = device.random((256, 256), dtype)
    y = device.random((256, 256), dtype)
    out = perf(_elementwise_chain, device.xp, x, y)
    hx, hy = device.to_host(x).astype(np.float64), device.to_host(y).astype(np.float64)
    np.testing.assert_allclose(
        device.to_host(out), _elementwise_chain(np, hx, hy), rtol=1e-4, atol=1e-4
    )


@pytest.mark.perf(backends=BACKENDS, dtypes=DTYPES)
def test_sum_axis0(perf, device, dtype):
    """Sum over the first axis of a 1024 x 1024 array (reduction)."""
    x = device.random((1024, 1024), dtype)
    out = perf(device.xp.sum, x, axis=0)
    expected = device.to_host(x).astype(np.float64).sum(axis=0)
    np.testing.assert_allclose(device.to_host(out), expected, rtol=1e-3, atol=1e-2)
