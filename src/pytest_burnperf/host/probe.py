"""The reference probe: a fixed, short workload that tells a slower host from slower code.

Two hosts of one hardware class (same CPU model, level and dispatch) can still differ in speed: a
noisy neighbour on the same physical machine, another memory configuration, a power cap. The probe
is measured once per session and device, stored with every baseline it records, and compared with
the baseline's at the next run. When this host runs the probe slower (or faster) than the baseline's
host beyond the probe's own noise, the report says so in its header, and a verdict within what that
explains is ``inconclusive`` instead of a failure blamed on the code (``assess.py``).

Parts (each the best of ``REPEATS`` timed runs after one untimed run, host clock, about 0.15 s in
all on a 2-core x86-64 machine):

* ``python``: a fixed pure-Python loop (the interpreter: dispatch, integers, branches);
* ``copy``: a 64 MiB memory copy (memory bandwidth past the caches; a byte-buffer copy of 16 MiB
  moved by 10% from process to process here, this one by about 3%);
* ``matmul``: a 192x192 float64 matrix product on the device's array library (SIMD arithmetic;
  on a GPU, the device's own matmul, synchronised).

Devices without an array namespace (OpenCL, Vulkan) get the host parts only; a device may name
the host parts that describe its work (``probe_parts``: python-cpu, the interpreter, takes the
``python`` part alone). Probes compare on the parts both sides have.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

REPEATS = 9
#: A host is called slower or faster than the baseline's when the probe's geometric-mean ratio
#: differs from 1 by more than this. Process to process, the probe's geometric mean moves by a
#: few percent (sd) on the 2-core CI machine (docs/validation.md, "Where users run it"); 10% is
#: well outside that.
TOLERANCE = 0.10
#: Probe results are stored under this key in baseline entries and results.
VERSION = 2


def _median_time(fn: Callable[[], object], sync: Callable[[], object], repeats: int) -> float:
    fn()
    sync()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return float(min(times))  # the best run: the steadiest figure of a short probe


def _python_loop() -> int:
    total = 0
    for i in range(60_000):
        total += i * i & 0xFF
    return total


def host_parts(repeats: int = REPEATS) -> dict[str, float]:
    """The host parts of the probe: pure Python and a memory copy."""
    import numpy as np

    src = np.ones(8 * 2**20)  # 64 MiB of float64: twice the largest L3 of a server CPU's slice
    dst = np.empty_like(src)

    def copy() -> None:
        np.copyto(dst, src)  # into a buffer the untimed first run paged in: no page faults

    return {
        "python": _median_time(_python_loop, lambda: None, repeats),
        "copy": _median_time(copy, lambda: None, repeats),
    }


def device_matmul(device: Any, repeats: int = REPEATS) -> float | None:
    """The device part: a 192x192 float64 (float32 where the device lacks f64) matmul."""
    try:
        xp = device.xp
    except AttributeError:
        return None
    dtype = "f64" if device.unsupported("f64") is None else "f32"
    a = device.random((192, 192), dtype)
    b = device.random((192, 192), dtype)
    return _median_time(lambda: xp.matmul(a, b), device.sync, repeats)


def measure(device: Any, host: Mapping[str, float] | None = None) -> dict[str, object]:
    """The probe for ``device``: ``{"version", "python", "copy", "matmul"}`` (seconds each);
    ``host`` reuses host parts already measured in this process. A device that names its
    ``probe_parts`` gets only those host parts (python-cpu: the interpreter loop)."""
    measured = dict(host) if host else host_parts()
    wanted = getattr(device, "probe_parts", None)
    if wanted is not None:
        measured = {k: v for k, v in measured.items() if k in wanted}
    parts: dict[str, object] = {"version": VERSION, **measured}
    with device.threads(1):
        mm = device_matmul(device)
    if mm is not None:
        parts["matmul"] = mm
    return parts


def _parts(doc: Mapping[str, object] | None) -> dict[str, float]:
    if not isinstance(doc, Mapping) or doc.get("version") != VERSION:
        return {}
    return {
        k: float(v)
        for k, v in doc.items()
        if k != "version"
        and isinstance(v, (int, float))
        and not isinstance(v, bool)
        and math.isfinite(v)
        and v > 0
    }


def pooled(probes: Sequence[Mapping[str, object]]) -> dict[str, object] | None:
    """One probe from several processes' (the median of each part), or None."""
    parts = [_parts(p) for p in probes]
    parts = [p for p in parts if p]
    if not parts:
        return None
    keys = set.intersection(*(set(p) for p in parts))
    return {"version": VERSION, **{k: statistics.median(p[k] for p in parts) for k in keys}}


def host_ratio(
    baseline: Mapping[str, object] | None, current: Mapping[str, object] | None
) -> tuple[float, dict[str, float]] | None:
    """How much slower this host runs the probe than the baseline's host: the geometric mean of
    the parts' ratios (current / baseline) and each part's ratio; None without both probes."""
    old, new = _parts(baseline), _parts(current)
    common = sorted(set(old) & set(new))
    if not common:
        return None
    ratios = {k: new[k] / old[k] for k in common}
    gm = math.exp(statistics.fmean(math.log(r) for r in ratios.values()))
    return gm, ratios


def describe(ratio: float, parts: Mapping[str, float], than: str = "the baseline's host") -> str:
    """``this host runs the reference probe 12% slower than the baseline's host (python +10%,
    ...)``."""
    word = "slower" if ratio >= 1 else "faster"
    each = ", ".join(f"{k} {100 * (v - 1):+.0f}%" for k, v in sorted(parts.items()))
    return f"this host runs the reference probe {100 * abs(ratio - 1):.0f}% {word} than {than} ({each})"


def differs(ratio: float) -> bool:
    return abs(math.log(ratio)) > math.log1p(TOLERANCE)
