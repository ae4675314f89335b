"""One benchmark rerun under a profiler, outside its measurement (``--perf-profile``).

Which profiler, by what the benchmark runs on:

* torch (CPU, CUDA, ROCm): ``torch.profiler`` - operators and, on a GPU, kernels with their
  device time; the file is a Chrome/Perfetto trace (``chrome://tracing``, ui.perfetto.dev).
* cupy on CUDA: NVIDIA's CUPTI (``cupti-python``), its activity records of every kernel, copy
  and memset the calls ran, each with its device start and end: the kernels' device time, by
  kernel name (cupy has no launch hook of its own, and ``cupyx.profiler`` times whole calls, not
  kernels); the file is a Chrome/Perfetto trace of the device work. cupy on ROCm has no such
  binding installed with pip: its host side is profiled with cProfile, like:
* everything else (numpy, plain Python, OpenCL and Vulkan dispatch):
  ``cProfile``, the standard library's deterministic profiler - every Python function and every
  call into a compiled library (``numpy.ufunc`` methods, BLAS entry points) with its own time;
  the file is a ``.pstats`` (``python -m pstats``, snakeviz, gprof2dot). Deterministic rather
  than sampling: a benchmark call is short, and a sampler (py-spy) would see too few stacks of
  it; both sides are profiled the same way, so its overhead cancels in what grew.

The calls run back to back for at least :data:`MIN_TIME_S` (so short calls are seen more than
once), after the measurement: nothing here touches a sample.
"""

from __future__ import annotations

import cProfile
import hashlib
import json
import math
import os
import pstats
import re
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pytest_burnperf.core.records.profiles import ProfileSummary, summarize
from pytest_burnperf.storage.paths import folder_problem

#: Profiled calls run for at least this long (and at most :data:`MAX_CALLS` calls).
MIN_TIME_S = 0.05
MAX_CALLS = 1000


#: The file that marks a folder as one --perf-profile wrote (whose profiles a later run replaces).
MARK = ".burnperf-profiles"


class ProfileError(Exception):
    """Why a benchmark has no profile (no profiler, a refused folder, a file not written)."""


class ProfileFolderError(Exception):
    """The profile folder holds files pytest-burnperf did not write; ``str()`` names it."""


class ProfilerMissing(Exception):
    """The profiler a benchmark's library needs is not installed; ``str()`` says what to
    install."""


def calls_for(per_call_s: float, min_time_s: float = MIN_TIME_S) -> int:
    """Calls to profile so that they last about ``min_time_s``: 1 to :data:`MAX_CALLS`."""
    if not per_call_s > 0 or not math.isfinite(per_call_s):
        return 1
    return max(1, min(MAX_CALLS, math.ceil(min_time_s / per_call_s)))


def file_stem(nodeid: str, side: str) -> str:
    """The file name (without extension) of ``nodeid``'s profile on ``side``: a readable prefix
    (the test's id, letters, digits, ``.``, ``-`` and ``_`` only, at most 80 characters), a
    digest of the whole node id and side, and the side (``test_x_numpy-cpu-f32_-1f0c...
    .current``). Never a path, never shared: ids that differ only in punctuation, in their
    module, or after the prefix's length get files of their own, and so do the two sides of a
    comparison; the same benchmark and side get the same name in every run."""
    digest = hashlib.sha256(f"{nodeid}\0{side}".encode("utf-8", "surrogatepass")).hexdigest()
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", nodeid.split("::")[-1])[:80].strip("._")
    label = re.sub(r"[^A-Za-z0-9_-]+", "_", side)[:40].strip("_") or "side"
    return f"{readable or 'benchmark'}-{digest[:12]}.{label}"


def profiler_for(library: str, kind: str = "cpu") -> str:
    """The profiler used for a benchmark of ``library`` on a device of ``kind``
    (core/records/profiles.TOOLS)."""
    if library == "torch":
        return "torch.profiler"
    if library == "cupy" and kind == "cuda":
        return "cupti"
    return "cProfile"


def profile(
    call: Callable[[], object],
    sync: Callable[[], object],
    *,
    library: str,
    kind: str,
    calls: int,
    out_dir: Path,
    stem: str,
) -> tuple[ProfileSummary, Path]:
    """Run ``call`` ``calls`` times under the library's profiler, write the profile under
    ``out_dir`` and return its summary and file. :class:`ProfilerMissing` where the profiler is
    not installed; the benchmark's own errors pass through."""
    _folder(out_dir)
    tool = profiler_for(library, kind)
    if tool == "torch.profiler":
        return _torch(call, sync, kind=kind, calls=calls, path=out_dir / f"{stem}.trace.json")
    if tool == "cupti":
        return _cupti(call, sync, calls=calls, path=out_dir / f"{stem}.trace.json")
    return _cprofile(call, sync, calls=calls, path=out_dir / f"{stem}.pstats")


#: What makes one round of a pedantic benchmark: its call (after the round's setup) and what
#: runs after it (the teardown), neither setup nor teardown profiled.
Round = Callable[[], "tuple[Callable[[], object], Callable[[], object] | None]"]


def profile_rounds(
    rounds: Round,
    sync: Callable[[], object],
    *,
    library: str,
    kind: str,
    calls: int,
    out_dir: Path,
    stem: str,
) -> tuple[ProfileSummary, Path]:
    """:func:`profile` of ``calls`` rounds of a pedantic benchmark, each made fresh by
    ``rounds()`` (its setup) with only the call profiled: one cold call alone is a figure no one
    can compare. The device profilers (torch.profiler, CUPTI) profile one round."""
    if profiler_for(library, kind) != "cProfile":
        call, after = rounds()
        try:
            return profile(
                call, sync, library=library, kind=kind, calls=1, out_dir=out_dir, stem=stem
            )
        finally:
            if after is not None:
                after()
    _folder(out_dir)
    return _cprofile(None, sync, calls=calls, path=out_dir / f"{stem}.pstats", rounds=rounds)


def _folder(out_dir: Path) -> None:
    """The profiles' folder, made and marked as this plugin's (ProfileFolderError: not ours)."""
    problem = folder_problem(out_dir, MARK, "profiles of --perf-profile")
    if problem:
        raise ProfileFolderError(f"{out_dir}: {problem}")
    out_dir.mkdir(parents=True, exist_ok=True)
    mark = out_dir / MARK
    if not mark.is_file():
        mark.write_text("written by pytest-burnperf --perf-profile; its profiles are replaced\n")


def _cprofile(
    call: Callable[[], object] | None,
    sync: Callable[[], object],
    *,
    calls: int,
    path: Path,
    rounds: Round | None = None,
) -> tuple[ProfileSummary, Path]:
    profiler = cProfile.Profile()
    if rounds is None:
        assert call is not None
        profiler.enable()
        try:
            for _ in range(calls):
                call()
            sync()
        finally:
            profiler.disable()
    else:
        for _ in range(calls):
            one, after = rounds()
            profiler.enable()
            try:
                one()
                sync()
            finally:
                profiler.disable()
            if after is not None:
                after()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    profiler.dump_stats(str(tmp))
    os.replace(tmp, path)
    rows = []
    stats: dict[Any, Any] = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]
    for (filename, line, func), (_cc, nc, tt, ct, _callers) in stats.items():
        if "_lsprof" in func or "cProfile" in filename:
            continue  # the profiler's own enable/disable
        rows.append((_function_name(filename, line, func), float(tt), float(nc), float(ct)))
    return summarize("cProfile", calls, rows), path


def _function_name(filename: str, line: int, func: str) -> str:
    """``sum (chain.py)`` for Python code (no line: a change above it must not rename it), the
    built-in's own name for compiled code."""
    if filename == "~" or not filename:
        return func  # "<built-in method numpy...>", "<method 'reduce' of 'numpy.ufunc' objects>"
    return f"{func} ({os.path.basename(filename)})"


#: The start of torch.profiler's notice that a profile keeps only its last cycle's events.
TORCH_CYCLE_NOTICE = r".*Profiler clears events at the end of each cycle"


def _torch(
    call: Callable[[], object], sync: Callable[[], object], *, kind: str, calls: int, path: Path
) -> tuple[ProfileSummary, Path]:
    try:
        from torch import profiler as tp
    except ImportError as exc:  # a torch build without its profiler
        raise ProfilerMissing(
            f"torch.profiler cannot be imported ({exc}): install a full torch build "
            "(pip install 'pytest-burnperf[torch]'), or run without --perf-profile"
        ) from None
    activities = [tp.ProfilerActivity.CPU]
    on_gpu = kind in ("cuda", "rocm")
    if on_gpu:
        activities.append(tp.ProfilerActivity.CUDA)
    with warnings.catch_warnings():
        # torch 2.11 on CUDA tells every profile that it "clears events at the end of each
        # cycle": one profile is one cycle here, so nothing is lost, and under a suite's
        # `filterwarnings = error` the notice would fail the benchmark (seen on an H100)
        warnings.filterwarnings("ignore", TORCH_CYCLE_NOTICE, UserWarning)
        with tp.profile(activities=activities) as prof:
            for _ in range(calls):
                call()
            sync()
        averages = prof.key_averages()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.json")
    prof.export_chrome_trace(str(tmp))
    os.replace(tmp, path)
    rows = []
    for avg in averages:
        device_us = float(getattr(avg, "self_device_time_total", 0.0) or 0.0)
        cpu_us = float(getattr(avg, "self_cpu_time_total", 0.0) or 0.0)
        gpu = on_gpu and device_us > 0
        own = device_us if gpu else cpu_us
        total = getattr(avg, "device_time_total" if gpu else "cpu_time_total", 0.0) or 0.0
        rows.append((str(avg.key), own * 1e-6, float(avg.count), float(total) * 1e-6))
    return summarize("torch.profiler", calls, rows), path


#: The extras that install CUPTI's Python binding, by the CUDA major version of cupy's wheel.
CUPTI_EXTRAS = "pytest-burnperf[cupti-cuda12]' or '[cupti-cuda13]"
#: Bytes of each activity buffer handed to CUPTI (it asks again when one is full).
CUPTI_BUFFER = 8 << 20


def _cupti(
    call: Callable[[], object], sync: Callable[[], object], *, calls: int, path: Path
) -> tuple[ProfileSummary, Path]:
    """The device work of ``calls`` calls, from CUPTI's activity records: every kernel (by
    name), copy and memset, with its device time."""
    try:
        from cupti import cupti
    except ImportError as exc:
        raise ProfilerMissing(
            f"cupy's kernels are profiled with NVIDIA's CUPTI, whose Python binding cannot be "
            f"imported ({exc}): pip install '{CUPTI_EXTRAS}' (cupti-python, for the CUDA "
            "major version of your cupy wheel), or run without --perf-profile"
        ) from None
    kinds = cupti.ActivityKind
    wanted = [kinds.CONCURRENT_KERNEL, kinds.MEMCPY, kinds.MEMSET]
    records: list[Any] = []

    def requested() -> tuple[int, int]:
        return CUPTI_BUFFER, 0

    def completed(activities: Any) -> None:
        records.extend(activities)

    sync()  # what ran before is not in the window
    enabled: list[Any] = []
    try:
        try:
            cupti.activity_register_callbacks(requested, completed)
            for kind in wanted:
                cupti.activity_enable(kind)
                enabled.append(kind)
        except Exception as exc:  # CUPTI refused (another profiler holds it, an old driver)
            raise ProfileError(f"CUPTI could not start recording: {exc}") from None
        for _ in range(calls):
            call()
        sync()
        cupti.activity_flush_all(1)
    finally:
        for kind in enabled:
            cupti.activity_disable(kind)
    events, rows = device_activities(records, kinds)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.json")
    tmp.write_text(json.dumps({"traceEvents": events, "displayTimeUnit": "ns"}))
    os.replace(tmp, path)
    return summarize("cupti", calls, rows), path


#: CUPTI's copy kinds (CUpti_ActivityMemcpyKind) as a profile names them.
COPY_KINDS = {
    1: "HtoD",
    2: "DtoH",
    3: "HtoA",
    4: "AtoH",
    5: "AtoA",
    6: "AtoD",
    7: "DtoA",
    8: "DtoD",
    9: "HtoH",
    10: "PtoP",
}


def device_activities(
    records: Sequence[Any], kinds: Any
) -> tuple[list[dict[str, object]], list[tuple[str, float, float, float]]]:
    """CUPTI activity records as Chrome trace events (one track per stream) and profile rows
    (name, device seconds, 1, device seconds): a kernel by its name, a copy by its direction
    (``[memcpy DtoH]``), a memset as ``[memset]``. Records of other kinds are left out."""
    kernel, memcpy, memset = (int(kinds.CONCURRENT_KERNEL), int(kinds.MEMCPY), int(kinds.MEMSET))
    events: list[dict[str, object]] = []
    rows: list[tuple[str, float, float, float]] = []
    for r in records:
        kind = int(getattr(r, "kind", -1))
        if kind == kernel:
            name = str(getattr(r, "name", "") or "kernel")
        elif kind == memcpy:
            name = f"[memcpy {COPY_KINDS.get(int(getattr(r, 'copy_kind', 0)), 'other')}]"
        elif kind == memset:
            name = "[memset]"
        else:
            continue
        start, end = int(getattr(r, "start", 0)), int(getattr(r, "end", 0))
        seconds = max(0, end - start) * 1e-9
        rows.append((name, seconds, 1.0, seconds))
        events.append(
            {
                "name": name,
                "ph": "X",
                "ts": start / 1000.0,
                "dur": max(0, end - start) / 1000.0,
                "pid": f"GPU {int(getattr(r, 'device_id', 0))}",
                "tid": f"stream {int(getattr(r, 'stream_id', 0))}",
                "args": {"bytes": int(getattr(r, "bytes", 0))} if kind != kernel else {},
            }
        )
    return events, rows


def timed(fn: Callable[[], object]) -> float:
    """Seconds ``fn`` took (for the run's note of what profiling cost)."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0
