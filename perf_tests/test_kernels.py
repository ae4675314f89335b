"""Hand-written kernels next to the array libraries: OpenCL C and WGSL compute shaders.

One benchmark, several devices: ``test_vector_add`` runs the same operation through ``device.xp``
on CPU devices, an OpenCL kernel on OpenCL devices and a WGSL shader on Vulkan adapters, and is
judged on each with that device's own clock (OpenCL profiling markers, Vulkan timestamps).
Kernels are built and pipelines created before timing (``device.kernel`` caches them); every
benchmark checks its result against numpy after timing.
"""

from __future__ import annotations

import numpy as np
import pytest
from _suite import pick

from pytest_burnperf import elementwise_work, matmul_work, reduction_work


def _vector(perf_size):
    return pick(perf_size, tiny=1024, small=1 << 20, medium=1 << 22, full=1 << 24)  # 4 MiB f32


def _matmul(perf_size):
    return pick(perf_size, tiny=16, small=128, medium=512, full=1024)  # 16 x 16 tiles


def _reduce(perf_size):
    return pick(perf_size, tiny=4096, small=1 << 20, medium=1 << 22, full=1 << 24)


_CL_TYPES = {"f32": "float", "f64": "double", "i32": "int", "i64": "long"}
_WGSL_TYPES = {"f32": "f32", "f16": "f16", "i32": "i32"}


def _cl_prelude(dtype: str) -> str:
    fp64 = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if dtype == "f64" else ""
    return f"{fp64}typedef {_CL_TYPES[dtype]} T;\n"


def _wgsl_prelude(dtype: str) -> str:
    return ("enable f16;\n" if dtype == "f16" else "") + f"alias T = {_WGSL_TYPES[dtype]};\n"


CL_VECTOR_ADD = """
__kernel void vector_add(__global const T* a, __global const T* b, __global T* c) {
    size_t i = get_global_id(0);
    c[i] = a[i] + b[i];
}
"""

WGSL_VECTOR_ADD = """
@group(0) @binding(0) var<storage, read> a: array<T>;
@group(0) @binding(1) var<storage, read> b: array<T>;
@group(0) @binding(2) var<storage, read_write> c: array<T>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < arrayLength(&c)) {
        c[i] = a[i] + b[i];
    }
}
"""


def _vector_add_fn(device, dtype, a, b, n):
    """``fn(a, b)`` for this device and the preallocated output it writes.

    Every device writes into an output allocated before timing, so the benchmark measures the
    add, not the allocator: a fresh 8 MiB output per call made torch's f64 add swing between
    0.45 and 3.5 ms depending on what ran earlier in the process (page faults on new memory).
    """
    if device.kind == "opencl":
        kernel = device.kernel(_cl_prelude(dtype) + CL_VECTOR_ADD, "vector_add")
        c = device.empty((n,), dtype)

        def add(a, b):
            kernel(device.queue, (n,), None, a.data, b.data, c.data)

        return add, c
    if device.kind == "vulkan":
        kernel = device.kernel(_wgsl_prelude(dtype) + WGSL_VECTOR_ADD)
        c = device.zeros((n,), dtype)

        def add(a, b):
            kernel(a, b, c, workgroups=n // 64)

        return add, c
    c = device.zeros((n,), dtype)
    lib = device.lib  # numpy and torch: add(a, b, out=c)

    def add(a, b):
        lib.add(a, b, out=c)

    return add, c


@pytest.mark.perf(backends=["cpu", "opencl", "vulkan"], dtypes=["f32", "f64"])
def test_vector_add(perf, device, dtype, perf_size):
    """c = a + b over 1M elements (small size): memory-bound, the same on every device kind."""
    n = _vector(perf_size)
    a = device.random((n,), dtype)
    b = device.random((n,), dtype)
    fn, out = _vector_add_fn(device, dtype, a, b, n)
    perf.work(elementwise_work(n, dtype, inputs=2))
    perf(fn, a, b)
    device.sync()
    got = device.to_host(out)
    np.testing.assert_allclose(got, device.to_host(a) + device.to_host(b), rtol=1e-6)


CL_TILED_MATMUL = """
#define TS 16
__kernel void matmul(const int n, __global const T* A, __global const T* B, __global T* C) {
    const int row = get_local_id(1), col = get_local_id(0);
    const int grow = TS * get_group_id(1) + row, gcol = TS * get_group_id(0) + col;
    __local T As[TS][TS];
    __local T Bs[TS][TS];
    T acc = 0;
    for (int t = 0; t < n / TS; t++) {
        As[row][col] = A[grow * n + t * TS + col];
        Bs[row][col] = B[(t * TS + row) * n + gcol];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TS; k++) {
            acc += As[row][k] * Bs[k][col];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    C[grow * n + gcol] = acc;
}
"""


@pytest.mark.perf(backends=["opencl"], dtypes=["f32", "f64"])
def test_tiled_matmul(perf, device, dtype, perf_size):
    """128 x 128 matrix product (small size) with 16 x 16 tiles in local memory (compute-bound)."""
    n = _matmul(perf_size)
    a = device.random((n, n), dtype)
    b = device.random((n, n), dtype)
    c = device.empty((n, n), dtype)
    kernel = device.kernel(_cl_prelude(dtype) + CL_TILED_MATMUL, "matmul")

    def matmul():
        kernel(device.queue, (n, n), (16, 16), np.int32(n), a.data, b.data, c.data)

    perf.work(matmul_work(n, n, n, dtype))
    perf(matmul)
    device.sync()
    expected = device.to_host(a).astype(np.float64) @ device.to_host(b).astype(np.float64)
    np.testing.assert_allclose(device.to_host(c), expected, rtol=1e-4, atol=1e-4)


WGSL_SUM = """
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> partial: array<f32>;

var<workgroup> scratch: array<f32, 256>;

@compute @workgroup_size(256)
fn main(
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let n = arrayLength(&x);
    var acc = 0.0;
    var i = wid.x * 256u + lid.x;
    let stride = groups.x * 256u;
    loop {
        if (i >= n) { break; }
        acc += x[i];
        i += stride;
    }
    scratch[lid.x] = acc;
    workgroupBarrier();
    var s = 128u;
    loop {
        if (s == 0u) { break; }
        if (lid.x < s) { scratch[lid.x] += scratch[lid.x + s]; }
        workgroupBarrier();
        s = s >> 1u;
    }
    if (lid.x == 0u) { partial[wid.x] = scratch[0]; }
}
"""

SUM_GROUPS = 64


@pytest.mark.perf(backends=["cpu", "vulkan"], dtypes=["f32"])
def test_sum(perf, device, dtype, perf_size):
    """Sum of 1M elements (small size): a two-pass workgroup tree reduction in WGSL, xp.sum on the
    CPU."""
    n = _reduce(perf_size)
    x = device.random((n,), dtype)
    perf.work(reduction_work(n, dtype))
    if device.kind == "vulkan":
        kernel = device.kernel(WGSL_SUM)
        partial = device.zeros((SUM_GROUPS,), dtype)
        total = device.zeros((1,), dtype)

        def reduce(x):
            kernel(x, partial, workgroups=SUM_GROUPS)
            kernel(partial, total, workgroups=1)
            return total

        out = perf(reduce, x)
    else:
        out = perf(device.xp.sum, x)
    device.sync()
    got = float(np.asarray(device.to_host(out)).reshape(-1)[0])
    expected = float(device.to_host(x).astype(np.float64).sum())
    assert got == pytest.approx(expected, rel=1e-4, abs=1e-2)
