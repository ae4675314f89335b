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
import math
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pytest_burnperf.core.settings import DTYPES
from pytest_burnperf.storage.jsonfile import escape

#: Bump when calibration changes so that old cached peaks are measured again.
CALIBRATION_VERSION = 3  # 3: peaks on the device clock where benchmarks use it
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


def _best(
    call: Callable[[], Any], sync: Callable[[], None], repeats: int, timer: Any = None
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


def _device_clock(device: Any) -> Any:
    """The device's own timer, or None (host clock) where it has none or cannot make one."""
    try:
        return device.timer()
    except Exception:  # a driver that cannot make events: the host clock still works
        return None


def calibrate(
    device: Any, dtype: str, *, n: int | None = None, copy_mib: int | None = None, repeats: int = 10
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


def _calibrate_kernels(device: Any, dtype: str, repeats: int) -> Peaks:
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
            from pytest_burnperf.storage.jsonfile import FileFormatError, read_json

            try:
                loaded = read_json(self.path, max_bytes=4 * 1024 * 1024)
            except FileFormatError as exc:
                self.problems.append(f"peak cache {exc}; measured again")
                loaded = None
            if (
                isinstance(loaded, dict)
                and loaded.get("version") == CALIBRATION_VERSION
                and isinstance(loaded.get("peaks"), dict)
            ):
                doc = loaded
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
        rates = [entry.get("gflops"), entry.get("gbps")]
        if not all(
            r is None or (not isinstance(r, bool) and isinstance(r, (int, float)) and 0 < r < 1e12)
            for r in rates
        ):
            self.problems.append(
                f"peak cache {self.path}: peaks[{key!r}]: not rates > 0; measured again"
            )
            return None
        return Peaks(rates[0], rates[1], escape(str(entry.get("how", ""))))

    def put(self, key: str, peaks: Peaks) -> None:
        from pytest_burnperf.storage.jsonfile import atomic_write_text, dumps

        doc = self._load()
        doc["peaks"][key] = peaks.as_dict()
        try:
            atomic_write_text(self.path, dumps(doc, indent=1, sort_keys=True) + "\n")
        except (OSError, ValueError) as exc:
            self.problems.append(f"peak cache {self.path} not written ({exc})")


def format_rate(value: float | None, unit: str, pct: float | None) -> str:
    """``812 GF/s 41%``; ``-`` when unknown."""
    if value is None:
        return "-"
    text = f"{value:.3g} {unit}"
    return text if pct is None else f"{text} {pct:.0f}%"
