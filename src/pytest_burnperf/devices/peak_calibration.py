"""The device's measured peaks, for roofline figures: a large matmul for compute and a large copy
for memory bandwidth, on the clock the device's benchmarks are timed on (hand-written kernels
for OpenCL and Vulkan, which have no array namespace). Array work happens only here."""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from typing import Any

from pytest_burnperf.core.records.roofline_figures import FLOAT_DTYPES, Peaks, itemsize
from pytest_burnperf.devices.base import Device


def _best(
    call: Callable[[], object], sync: Callable[[], None], repeats: int, timer: Any = None
) -> float:
    """The fastest of ``repeats`` calls after one untimed call: on ``timer`` (the device clock
    the benchmarks of this device are timed on, so % of peak compares like with like), else the
    host clock around ``sync``."""
    call()
    sync()
    best = math.inf
    for _ in range(repeats):
        if timer is not None:
            timer.start()
            call()
            best = min(best, max(float(timer.stop()), 1e-9))
            continue
        t0 = time.perf_counter()
        call()
        sync()
        best = min(best, time.perf_counter() - t0)
    return best


def _device_clock(device: Device) -> Any:
    """The device's own timer, or None (host clock) where it has none or cannot make one."""
    try:
        return device.timer()
    except Exception:  # a driver that cannot make events: the host clock still works
        return None


def calibrate(
    device: Device,
    dtype: str,
    *,
    n: int | None = None,
    copy_mib: int | None = None,
    repeats: int = 10,
) -> Peaks:
    """Measure compute (the best of n/2 x n/2 and n x n matmuls) and memory bandwidth (a copy of
    ``copy_mib`` MiB: read and written, so 2x the bytes) on ``device`` in ``dtype``, the best of
    ``repeats`` runs each. Defaults: n=1024 and 64 MiB on the CPU, n=8192 and 1 GiB elsewhere.
    Devices without an array-API namespace (OpenCL, Vulkan) and non-float compute are not
    measured (None)."""
    kind = getattr(device, "kind", "cpu")
    if kind in ("opencl", "vulkan"):
        return _calibrate_kernels(device, dtype, repeats)
    xp = getattr(device, "xp", None)
    if xp is None:
        return Peaks(None, None, f"no peak calibration for {device.id} (no array namespace)")
    gpu = kind != "cpu"
    clock = _device_clock(device) if gpu else None
    n = n or (8192 if gpu else 1024)
    copy_mib = copy_mib or (1024 if gpu else 64)
    gflops = None
    how = []
    if dtype in FLOAT_DTYPES and device.unsupported(dtype) is None:
        rates = []
        for size in (n // 2, n):
            a = device.random((size, size), dtype)
            b = device.random((size, size), dtype)
            t = _best(functools.partial(xp.matmul, a, b), device.sync, repeats, clock)
            rates.append(2.0 * size**3 / t / 1e9)
            del a, b
        gflops = max(rates)
        how.append(f"matmul {n // 2}x{n // 2} and {n}x{n}")
    elements = copy_mib * 2**20 // itemsize(dtype)
    src = device.random((elements,), dtype)
    dst = device.zeros((elements,), dtype)

    def copy() -> None:
        dst[...] = src

    t = _best(copy, device.sync, repeats, clock)
    gbps = 2.0 * elements * itemsize(dtype) / t / 1e9
    how.append(f"copy {copy_mib} MiB")
    how.append("device clock" if clock is not None else "host clock")
    return Peaks(gflops, gbps, f"best of {repeats}: " + ", ".join(how))


# OpenCL and Vulkan: hand-written kernels, since these devices have no array namespace.
_FMA_CHAINS = 8


_FMA_ITERS = 256


_CL_COPY = """
__kernel void copy(__global const T* src, __global T* dst) {
    size_t i = get_global_id(0);
    dst[i] = src[i];
}
"""


_CL_FMA = """
__kernel void fma_peak(__global T* out) {
    size_t g = get_global_id(0);
    T x0 = (T)g * (T)1e-6, x1 = x0 + (T)1, x2 = x0 + (T)2, x3 = x0 + (T)3;
    T x4 = x0 + (T)4, x5 = x0 + (T)5, x6 = x0 + (T)6, x7 = x0 + (T)7;
    for (int i = 0; i < ITERS; i++) {
        x0 = fma(x0, (T)0.999, (T)0.001); x1 = fma(x1, (T)0.999, (T)0.001);
        x2 = fma(x2, (T)0.999, (T)0.001); x3 = fma(x3, (T)0.999, (T)0.001);
        x4 = fma(x4, (T)0.999, (T)0.001); x5 = fma(x5, (T)0.999, (T)0.001);
        x6 = fma(x6, (T)0.999, (T)0.001); x7 = fma(x7, (T)0.999, (T)0.001);
    }
    out[g] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
}
"""


_WGSL_COPY = """
@group(0) @binding(0) var<storage, read> src: array<T>;
@group(0) @binding(1) var<storage, read_write> dst: array<T>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let n = arrayLength(&dst);
    let stride = groups.x * 256u;
    var i = gid.x;
    loop {
        if (i >= n) { break; }
        dst[i] = src[i];
        i += stride;
    }
}
"""


_WGSL_FMA = """
@group(0) @binding(0) var<storage, read_write> out: array<T>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let x = T(gid.x) * T(1e-6);
    var x0 = x; var x1 = x + T(1); var x2 = x + T(2); var x3 = x + T(3);
    var x4 = x + T(4); var x5 = x + T(5); var x6 = x + T(6); var x7 = x + T(7);
    for (var i = 0u; i < ITERSu; i++) {
        x0 = fma(x0, T(0.999), T(0.001)); x1 = fma(x1, T(0.999), T(0.001));
        x2 = fma(x2, T(0.999), T(0.001)); x3 = fma(x3, T(0.999), T(0.001));
        x4 = fma(x4, T(0.999), T(0.001)); x5 = fma(x5, T(0.999), T(0.001));
        x6 = fma(x6, T(0.999), T(0.001)); x7 = fma(x7, T(0.999), T(0.001));
    }
    out[gid.x] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
}
"""


_CL_TYPES = {"f16": "half", "f32": "float", "f64": "double"}


_WGSL_TYPES = {"f16": "f16", "f32": "f32"}


def _calibrate_kernels(device: Any, dtype: str, repeats: int) -> Peaks:  # a kernel device
    """Peaks of an OpenCL or Vulkan device from two small kernels of this module: eight
    independent FMA chains per work item (compute) and a copy (bandwidth)."""
    if device.unsupported(dtype) is not None:
        return Peaks(None, None, f"{device.id} does not run {dtype}")
    gpu = "gpu" in device.id or device.fingerprint().get("device_type", "").upper() == "GPU"
    groups = 16384 if gpu else 64
    items = groups * 256
    copy_elements = (64 * 2**20) // itemsize(dtype)
    size = itemsize(dtype)
    if device.kind == "opencl":
        ctype = _CL_TYPES.get(dtype)
        if ctype is None:
            return Peaks(None, None, f"no OpenCL calibration kernel for {dtype}")
        pragma = {
            "f64": "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n",
            "f16": "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n",
        }.get(dtype, "")
        prelude = f"{pragma}typedef {ctype} T;\n#define ITERS {_FMA_ITERS}\n"
        fma = device.kernel(prelude + _CL_FMA, "fma_peak")
        copy = device.kernel(prelude + _CL_COPY, "copy")
        out = device.empty((items,), dtype)
        src = device.random((copy_elements,), dtype)
        dst = device.empty((copy_elements,), dtype)
        queue = device.queue

        def run_fma() -> None:
            fma(queue, (items,), (256,), out.data)

        def run_copy() -> None:
            copy(queue, (copy_elements,), None, src.data, dst.data)

    else:
        wtype = _WGSL_TYPES.get(dtype)
        if wtype is None:
            return Peaks(None, None, f"no WGSL calibration kernel for {dtype}")
        prelude = ("enable f16;\n" if dtype == "f16" else "") + f"alias T = {wtype};\n"
        fma_v = device.kernel(prelude + _WGSL_FMA.replace("ITERS", str(_FMA_ITERS)))
        copy_v = device.kernel(prelude + _WGSL_COPY)
        out = device.zeros((items,), dtype)
        src = device.random((copy_elements,), dtype)
        dst = device.zeros((copy_elements,), dtype)

        def run_fma() -> None:
            fma_v(out, workgroups=groups)

        def run_copy() -> None:
            copy_v(src, dst, workgroups=min(4096, copy_elements // 256))

    clock = _device_clock(device)
    t_fma = _best(run_fma, device.sync, repeats, clock)
    t_copy = _best(run_copy, device.sync, repeats, clock)
    gflops = 2.0 * _FMA_CHAINS * _FMA_ITERS * items / t_fma / 1e9
    gbps = 2.0 * copy_elements * size / t_copy / 1e9
    how = (
        f"best of {repeats}: {items} work items x {_FMA_CHAINS} FMA chains x {_FMA_ITERS}, "
        f"copy 64 MiB ({'host clock' if clock is None else 'device clock'})"
    )
    return Peaks(gflops, gbps, how)
