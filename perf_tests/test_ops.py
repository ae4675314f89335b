"""Tensor operations, written once against ``device.xp`` (the array-API namespace) and run on every
device with one: numpy and torch on the CPU, torch and cupy on CUDA/ROCm, torch on Metal.

Shapes come from the size preset (``--perf-size``, the ``perf_size`` fixture). Inputs are built
outside the timed region; each benchmark declares its work (``perf.work``) for the GFLOP/s, GB/s
and %-of-peak columns, and checks its result against a float64 numpy reference after timing.
Transcendental functions (tanh, exp, sin) count as one floating-point operation each.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _suite import ARRAY_BACKENDS, check, host64, pick

from pytest_burnperf import Work, elementwise_work, matmul_work, reduction_work

DTYPES = ["f32", "f64"]


def _side(perf_size):
    """Edge of the square operands: 256 on the 2-core CI machine, 4096 for GPUs."""
    return pick(perf_size, tiny=16, small=256, medium=1024, full=4096)


def _elements(perf_size):
    return pick(perf_size, tiny=64, small=1 << 16, medium=1 << 20, full=1 << 24)


# ---------------------------------------------------------------------------------------------
# elementwise

UNARY = {
    "tanh": (lambda xp: xp.tanh, np.tanh),
    "exp": (lambda xp: xp.exp, np.exp),
    "sin": (lambda xp: xp.sin, np.sin),
}


@pytest.mark.perf(backends=ARRAY_BACKENDS, dtypes=DTYPES)
@pytest.mark.parametrize("op", list(UNARY))
def test_unary(perf, device, dtype, perf_size, op):
    """One transcendental function over a vector (memory-bound on CPUs and GPUs alike)."""
    n = _elements(perf_size)
    x = device.random((n,), dtype)
    fn, ref = UNARY[op]
    perf.work(elementwise_work(n, dtype))
    out = perf(fn(device.xp), x)
    check(device, dtype, out, ref(host64(device, x)))


@pytest.mark.perf(backends=ARRAY_BACKENDS, dtypes=DTYPES)
@pytest.mark.parametrize("rhs", ["tensor", "scalar"])
def test_binary(perf, device, dtype, perf_size, rhs):
    """x * y with y a tensor of the same shape, or a Python scalar."""
    n = _elements(perf_size)
    x = device.random((n,), dtype)
    y = device.random((n,), dtype) if rhs == "tensor" else 1.5
    perf.work(elementwise_work(n, dtype, inputs=2 if rhs == "tensor" else 1))
    out = perf(lambda a, b: a * b, x, y)
    expected = host64(device, x) * (host64(device, y) if rhs == "tensor" else 1.5)
    check(device, dtype, out, expected)


def _elementwise_chain(xp, x, y):
    # the kind of chain a fusion compiler merges into one kernel
    return xp.tanh(x * y + 5.0) - xp.abs(x) / (1.0 + y * y)


@pytest.mark.perf(backends=ARRAY_BACKENDS, dtypes=DTYPES)
def test_elementwise_chain(perf, device, dtype, perf_size):
    """tanh(x*y + 5) - |x| / (1 + y*y): 8 operations per element, each its own kernel in eager
    mode (temporaries stay in cache at the small size)."""
    _time_chain(perf, device, dtype, perf_size)


def _time_chain(perf, device, dtype, perf_size):
    n = _side(perf_size)
    x = device.random((n, n), dtype)
    y = device.random((n, n), dtype)
    perf.work(elementwise_work(n * n, dtype, inputs=2, flops_per_element=8))
    out = perf(_elementwise_chain, device.xp, x, y)
    check(device, dtype, out, _elementwise_chain(np, host64(device, x), host64(device, y)))


@pytest.mark.perf(backends=["cuda", "rocm"], dtypes=["f32"], timer="graph")
def test_elementwise_chain_graph(perf, device, dtype, perf_size):
    """The same chain timed as a CUDA graph replays it (timer="graph"): 8 small kernels per call
    with no host launch between them, against test_elementwise_chain's eager launches. GPUs
    with graphs only (torch on CUDA/ROCm, cupy on CUDA); elsewhere a skip with the reason."""
    _time_chain(perf, device, dtype, perf_size)


# ---------------------------------------------------------------------------------------------
# matmul

#: name -> (a shape, b shape, (m, n, k, batch)) as functions of the edge ``s``.
MATMUL_SHAPES = {
    "square": lambda s: ((s, s), (s, s), (s, s, s, 1)),
    "batched": lambda s: ((8, s // 4, s // 4), (8, s // 4, s // 4), (s // 4, s // 4, s // 4, 8)),
    "matvec": lambda s: ((4 * s, 4 * s), (4 * s,), (4 * s, 1, 4 * s, 1)),
    "vecmat": lambda s: ((4 * s,), (4 * s, 4 * s), (1, 4 * s, 4 * s, 1)),
    "inner": lambda s: ((s * s,), (s * s,), (1, 1, s * s, 1)),
    "outer": lambda s: ((4 * s, 1), (1, 4 * s), (4 * s, 4 * s, 1, 1)),
}


@pytest.mark.perf(backends=ARRAY_BACKENDS, dtypes=DTYPES)
@pytest.mark.parametrize("shape", list(MATMUL_SHAPES))
def test_matmul(perf, device, dtype, perf_size, shape):
    """xp.matmul over square, batched, matrix x vector, vector x matrix, inner and outer product
    shapes: compute-bound (square, batched) to memory-bound (matvec, vecmat, inner, outer)."""
    a_shape, b_shape, (m, n, k, batch) = MATMUL_SHAPES[shape](_side(perf_size))
    a = device.random(a_shape, dtype)
    b = device.random(b_shape, dtype)
    perf.work(matmul_work(m, n, k, dtype, batch=batch))
    out = perf(device.xp.matmul, a, b)
    check(device, dtype, out, host64(device, a) @ host64(device, b), scale=math.sqrt(k))


def _gelu_tanh(xp, x):
    return 0.5 * x * (1.0 + xp.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def _fused_epilogue(xp, a, b, bias, zero):
    return _gelu_tanh(xp, xp.maximum(xp.matmul(a, b), zero) + bias)


@pytest.mark.perf(backends=ARRAY_BACKENDS, dtypes=DTYPES)
def test_fused_epilogue(perf, device, dtype, perf_size):
    """gelu(relu(a @ b) + bias): a matmul followed by the elementwise epilogue that fusing
    compilers fold into it (eager here; see test_nn.py for torch.compile)."""
    s = _side(perf_size)
    a = device.random((s, s), dtype)
    b = device.random((s, s), dtype)
    bias = device.random((s,), dtype)
    zero = device.zeros((1,), dtype)
    mm = matmul_work(s, s, s, dtype)
    epilogue = elementwise_work(s * s, dtype, inputs=1, flops_per_element=10)
    flops = mm.flops + epilogue.flops  # type: ignore[operator]
    perf.work(Work(flops=flops, bytes=mm.bytes, shape=f"{mm.shape} + bias"))
    out = perf(_fused_epilogue, device.xp, a, b, bias, zero)
    ha, hb, hbias = host64(device, a), host64(device, b), host64(device, bias)
    expected = _gelu_tanh(np, np.maximum(ha @ hb, 0.0) + hbias)
    check(device, dtype, out, expected, scale=math.sqrt(s))


# ---------------------------------------------------------------------------------------------
# softmax and reductions


def _softmax(xp, x, axis):
    e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
    return e / xp.sum(e, axis=axis, keepdims=True)


@pytest.mark.perf(backends=ARRAY_BACKENDS, dtypes=DTYPES)
@pytest.mark.parametrize("axis", [0, 1])
def test_softmax(perf, device, dtype, perf_size, axis):
    """Numerically stable softmax over each axis of a square matrix."""
    s = _side(perf_size)
    x = device.random((s, s), dtype)
    perf.work(elementwise_work(s * s, dtype, flops_per_element=5))
    out = perf(_softmax, device.xp, x, axis)
    check(device, dtype, out, _softmax(np, host64(device, x), axis))


REDUCTIONS = ["sum-axis0", "sum-axis1", "sum-all", "argmax-axis0", "argmax-axis1"]


@pytest.mark.perf(backends=ARRAY_BACKENDS, dtypes=DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_reduce(perf, device, dtype, perf_size, reduction):
    """sum and argmax over each axis of a matrix, and the full sum."""
    s = 4 * _side(perf_size)
    x = device.random((s, s), dtype)
    xp = device.xp
    op, _, where = reduction.partition("-")
    axis = None if where == "all" else int(where[-1])
    outputs = 1 if axis is None else s
    perf.work(reduction_work(s * s, dtype, outputs=outputs))
    fn = xp.sum if op == "sum" else xp.argmax
    out = perf(fn, x, axis=axis)
    hx = host64(device, x)
    if op == "sum":
        check(device, dtype, out, hx.sum(axis=axis), scale=s)
    else:  # float64 and the device may break near-ties differently: compare the maxima
        idx = np.asarray(device.to_host(out)).astype(np.int64)
        picked = np.take_along_axis(hx, np.expand_dims(idx, axis=axis), axis=axis)
        np.testing.assert_allclose(picked.squeeze(axis), hx.max(axis=axis), rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# random numbers and transfers


def _normal_fn(device, dtype, n):
    """The device library's own normal generator, seeded, writing a fresh array each call."""
    lib = device.lib
    if device.library == "torch":
        where = device.zeros((1,), dtype).device
        gen = lib.Generator(device=where)
        gen.manual_seed(0)
        dt = device.dtype(dtype)
        return lambda: lib.randn((n,), generator=gen, dtype=dt, device=where)
    rng = lib.random.default_rng(0)  # numpy and cupy
    dt = device.dtype(dtype)
    return lambda: rng.standard_normal((n,), dtype=dt)


@pytest.mark.perf(backends=ARRAY_BACKENDS, dtypes=DTYPES)
def test_random_normal(perf, device, dtype, perf_size):
    """Standard normal numbers from the library's own generator (numpy PCG64, torch Philox or
    mt19937, cupy XORWOW), into a fresh array."""
    n = _elements(perf_size)
    fn = _normal_fn(device, dtype, n)
    written = n * np.dtype(dtype.replace("f", "float")).itemsize
    perf.work(Work(bytes=float(written), shape=f"{n}"))
    out = perf(fn)
    h = host64(device, out)
    assert h.shape == (n,) and np.isfinite(h).all()
    if n >= 4096:
        assert abs(h.mean()) < 0.1 and abs(h.std() - 1.0) < 0.1


def _copy_fns(device, n, dtype):
    """(host -> device, device -> host) copies between preallocated buffers."""
    host = np.random.default_rng(0).standard_normal(n).astype(dtype.replace("f", "float"))
    back = np.empty_like(host)
    dev = device.zeros((n,), dtype)
    lib = device.lib
    if device.library == "torch":
        host_t, back_t = lib.from_numpy(host), lib.from_numpy(back)
        return (lambda: dev.copy_(host_t)), (lambda: back_t.copy_(dev)), host, back, dev
    if device.library == "cupy":
        return (lambda: dev.set(host)), (lambda: dev.get(out=back)), host, back, dev
    return (lambda: np.copyto(dev, host)), (lambda: np.copyto(back, dev)), host, back, dev


@pytest.mark.perf(backends=ARRAY_BACKENDS, dtypes=DTYPES)
@pytest.mark.parametrize("direction", ["to-device", "to-host"])
def test_transfer(perf, device, dtype, perf_size, direction):
    """Host -> device and device -> host copies between preallocated buffers (on CPU devices a
    memory copy; on GPUs the PCIe/NVLink transfer)."""
    n = _elements(perf_size) * 4
    to_dev, to_host, host, back, dev = _copy_fns(device, n, dtype)
    to_dev()
    device.sync()
    itemsize = host.itemsize
    # read on one side, written on the other
    perf.work(Work(bytes=float(2 * n * itemsize), shape=f"{n}"))
    perf(to_dev if direction == "to-device" else to_host)
    device.sync()
    np.testing.assert_array_equal(np.asarray(device.to_host(dev)), host)
    if direction == "to-host":
        np.testing.assert_array_equal(back, host)
