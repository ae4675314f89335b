"""Counted CPU cost: each call's instructions (and estimated cycles) on callgrind's simulated
CPU, deterministic to hundredths of a percent on compiled code and immune to the host's load.

Two instruments share this measure:

- ``counts``, in a counted process under valgrind (``Mode.COUNT``, started by
  runs/counted.py): :func:`count` counts calls of each CPU benchmark with callgrind's client
  requests (host/callgrind.py, core/counting/counts.py) and returns the record the parent judges.
- ``counted``, in the run that judges (``--perf-measure counts``): the call runs once, untimed
  (the test's own checks see its result), and the counted process's counts are judged
  (plugin/measuring/counts/counts_judging.py) against the counts baselines.

The key a count is kept under (what makes two counts comparable) is :func:`key` here and
core/counting/counts_key.py."""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pytest_burnperf import json_fields as jf
from pytest_burnperf.core.clocks import gc_off
from pytest_burnperf.core.counting import counted_calls, counts, counts_key, paired_counts
from pytest_burnperf.core.judging.abstention import Cause
from pytest_burnperf.core.judging.comparability import (
    RECORDED_AS_NUMPY,
    RECORDED_AS_PYTHON,
    recorded_on_another_host_device,
)
from pytest_burnperf.core.judging.verdict import Verdict, not_comparable
from pytest_burnperf.core.options.run_options import count_text
from pytest_burnperf.core.records.stored_baseline import StoredBaseline
from pytest_burnperf.core.text import format_count, format_time
from pytest_burnperf.devices.base import Device
from pytest_burnperf.devices.compilations import compiled_frames
from pytest_burnperf.host import callgrind, callgrind_dumps, installed_files
from pytest_burnperf.instruments.instrument import (
    InstrumentName,
    Measurement,
    Prepare,
    Situation,
    Unavailable,
)
from pytest_burnperf.runs import counted

_BLIND_TO = (
    "what instructions do not show: memory stalls and cache misses beyond callgrind's "
    "simulated caches, frequency, contention between threads, waiting (sleeps, I/O), and "
    "any device's work; the clock beside it sees those"
)


@dataclass(frozen=True)
class CountsHere:
    """In a counted process: callgrind counts each call."""

    name: InstrumentName = "counts"
    unit: str = "instructions"
    records: str = "instructions and estimated cycles per counted call, and the counts key"
    blind_to: str = _BLIND_TO

    def applies(self, situation: Situation) -> bool:
        return situation.counting_round

    def measure(self, calls: Measurement) -> object:
        __tracebackhide__ = True  # a failing call shows the test's line
        return calls.count_calls()


@dataclass(frozen=True)
class CountsJudge:
    """In the run that judges: the call runs once, untimed, and its counts judge."""

    name: InstrumentName = "counted"
    unit: str = "instructions"
    records: str = "the counted process's counts of this benchmark and its verdict from them"
    blind_to: str = _BLIND_TO

    def applies(self, situation: Situation) -> bool:
        return situation.counts_judge

    def measure(self, calls: Measurement) -> object:
        __tracebackhide__ = True  # a failing call shows the test's line
        result = calls.call_once()  # the test's own checks see its result
        calls.judge_counts()
        return result


COUNTS_HERE = CountsHere()
COUNTS_JUDGE = CountsJudge()

#: What a counted run does with one CPU benchmark (:func:`selection`).
ALWAYS, BY_TIME, UNDER_LIMIT = "always", "time", "limit"


def selection(*, counts_baseline: bool, time_baseline: bool, records: bool) -> str:
    """Whether a CPU benchmark is counted, decided by its stored baselines, never by how fast
    this host runs it: one with a counts baseline is counted whatever the count limit
    (:data:`ALWAYS`), so it is judged by counts on every machine; in a run that judges, one
    with only a timed baseline is timed (:data:`BY_TIME`: recorded over the count limit, it is
    judged by the measure it was recorded with); anything else is counted unless its first
    call is over ``--perf-count-limit`` (:data:`UNDER_LIMIT`: only a recording or a benchmark
    with no baseline at all meets the limit)."""
    if counts_baseline:
        return ALWAYS
    if time_baseline and not records:
        return BY_TIME
    return UNDER_LIMIT


#: Basic blocks a host runs per second of a call, at least, by the benchmark's device library
#: (blocks as valgrind counts them, core/counting/counted_calls.CallSize): what ``--perf-measure auto``
#: expects when it chooses, from a recording's timed rounds, which CPU benchmarks to count
#: (:func:`worth_counting`), so that one whose calls are surely over ``--perf-count-limit`` is
#: not run under valgrind at all. Measured on a 2-core x86-64-v4 Intel host (2026-11-28, raw
#: docs/data/block-cost.json; blocks counted with the portable kernels a counted process runs,
#: runs/counted.py PORTABLE_KERNELS, time natively with the host's): pure-Python loops ran
#: 1.45-3.4 G blocks a second, BLAS matmuls, a LAPACK solve and a sort of 8 M doubles 0.50-0.62
#: G, numpy's ``exp`` 15.7 G; the figures here are lower (slower hosts, memory-bound calls), so
#: that what is over the limit is decided by the call's own blocks under valgrind
#: (core/counting/counted_calls.count_calls), the same on every host.
NATIVE_RATE: Mapping[str, float] = {"python": 1e9}
#: The rate for every other library (numpy, torch: BLAS- and SIMD-dense calls, but also
#: memory-bound copies).
ARRAY_NATIVE_RATE = 0.2e9
#: Where a dump does not say how many blocks ran (host/callgrind_dumps.executed_blocks), its
#: instructions over this: fewer a block than any code measured (pure Python 5, BLAS 47), so a
#: call is taken as no smaller than it is.
FEWEST_PER_BLOCK = 4

#: Seconds a basic block takes under callgrind without the cache simulation, the fastest and the
#: slowest measured on one 2-core host (a pure-Python loop, numpy's ``exp`` loop: 21.6 and 48.4
#: ns; 2026-11-28, docs/validation.md "A limit in basic blocks", raw docs/data/block-cost.json).
BLOCK_SECONDS = (21e-9, 49e-9)


def too_slow_text(exc: counted_calls.TooSlow, limit: int) -> str:
    """Why a benchmark was timed instead of counted, with how to count it anyway."""
    if exc.blocks is not None:
        fast, slow = (exc.blocks * s for s in BLOCK_SECONDS)
        ran = (
            f"{format_count(exc.instructions)} instructions in "
            if exc.instructions is not None
            else ""
        )
        return (
            f"its calls run {ran}{format_count(exc.blocks)} basic blocks under valgrind, over "
            f"--perf-count-limit {count_text(limit)} (each counted call of that size would take "
            f"about {format_time(fast)}-{format_time(slow)} there; --perf-count-limit 0 counts "
            "it anyway)"
        )
    return (
        f"its first calls took {exc.seconds or 0:.1f} s under valgrind uninstrumented, over the "
        f"{counted_calls.COUNT_GUARD_S:g} s counting waits for one (calls run 2-300x slower "
        "there: pure Python ~10x, BLAS 6-22x, numpy's transcendental loops up to ~300x; "
        "--perf-count-limit 0 counts it anyway)"
    )


def predicted_blocks(call_s: float, library: str) -> float:
    """The basic blocks a call of ``call_s`` natively runs under valgrind at least, about."""
    return call_s * NATIVE_RATE.get(library, ARRAY_NATIVE_RATE)


def worth_counting(call_s: float | None, library: str, limit: int | None) -> bool:
    """Whether a benchmark whose calls take ``call_s`` here (None: not timed yet) may run within
    ``limit`` basic blocks a call (None or 0: no limit, everything is counted)."""
    if call_s is None or not limit:
        return True
    return predicted_blocks(call_s, library) <= limit


#: How far above :func:`predicted_blocks` (a lower bound) a call's basic blocks may be, for
#: :func:`surely_counted`: the measured rates ran up to 3.4x the floor's in pure Python and
#: 3.1x in BLAS (numpy's ``exp``, at 78x, is one call, far under any limit at such speed).
SURE_FACTOR = 10.0


def surely_counted(call_s: float, library: str, limit: int | None) -> bool:
    """Whether a benchmark whose calls take ``call_s`` here will surely run within ``limit``
    basic blocks a call, with room for a host :data:`SURE_FACTOR` times slower per block than
    :data:`NATIVE_RATE` says (a recording's timed rounds then need not narrow its time
    baseline's floor: its counts judge it)."""
    if not limit:
        return True
    return predicted_blocks(call_s, library) * SURE_FACTOR <= limit


def count(
    nodeid: str,
    device: Device,
    threads: int,
    make_call: Prepare,
    *,
    count_dir: Path,
    calls: int,
    limit: int | None,
    project: str | None = None,
) -> tuple[dict[str, object], object]:
    """In a counted process: count ``calls`` calls of the benchmark (each from ``make_call``:
    the call and what to run after it, uncounted). Returns the record for the run that judges
    (its counts and key, or why it was timed instead) and the first call's result;
    :class:`Unavailable` where this process cannot count. ``project``: the distribution under
    test, whose version the key leaves out (its code is what is measured)."""
    __tracebackhide__ = True
    requests = callgrind.Requests(count_dir)
    try:
        running = requests.running()
    except callgrind.CountingUnavailable as exc:
        raise Unavailable(f"{nodeid}: cannot count here: {exc}") from None
    if not running:
        raise Unavailable(
            f"{nodeid}: {counted.COUNT_OPTION} is set but this process does not run under "
            "valgrind; the plugin starts counted processes itself (--perf-measure counts)"
        )

    objects: set[str] = set()  # the object files the counted calls ran in

    def read(path: Path) -> dict[str, float]:
        """A call's events less what its threads spent waiting for each other, its allocator
        calls at their fixed cost (host/callgrind_dumps.py)."""
        try:
            return callgrind_dumps.counted_events(path, objects)
        finally:
            path.unlink(missing_ok=True)

    def size(path: Path) -> counted_calls.CallSize:
        """The first instrumented call's instructions and basic blocks, from its dump's header
        and totals (no parse of its functions; the dump stays for ``read``)."""
        total = float(callgrind_dumps.read_dump(path)["Ir"])
        blocks = callgrind_dumps.executed_blocks(path)
        per_block = float(blocks) if blocks is not None else total / FEWEST_PER_BLOCK
        return counted_calls.CallSize(total, per_block)

    def synced() -> tuple[Any, Any]:
        call, after = make_call()

        def body() -> object:
            out = call()
            device.sync()
            return out

        return body, after

    with device.threads(threads), gc_off():
        try:
            got, first = counted_calls.count_calls(
                synced,
                requests,
                read,
                calls=calls,
                label=nodeid,
                limit=limit or None,
                guard_s=counted_calls.COUNT_GUARD_S if limit else None,
                size=size,
                compiled=compiled_frames,
            )
        except counted_calls.TooSlow as exc:
            return {"timed_instead": too_slow_text(exc, limit or 0)}, exc.result
    record: dict[str, object] = {
        "values": [float(c) for c in got.values()],
        "counts": got.as_json(),
        "key": key(device, threads, objects, project),
    }
    return record, first


#: What an incomparable counts verdict's reason ends with: how to make the baseline judge again.
RECORD_AGAIN = "; record counts again with --perf-update"


def key(
    device: Device, threads: int, objects: set[str] | None = None, project: str | None = None
) -> dict[str, object]:
    """What this process's counts are kept under, besides the run's (core/counting/counts_key.py): the
    CPU and what the libraries dispatch on, the interpreter and its build and settings, libc,
    the libraries' versions and the thread count; and ``calls_into``, the versions of the other
    installed libraries whose compiled code the counted calls ran in (``objects``: scipy's for
    a benchmark that calls scipy), less the device's own and the project under test."""
    versions = dict(jf.mapping(device.fingerprint().get("versions")))
    skip = [*versions, *([project] if project else [])]
    return {
        "calls_into": installed_files.called_distributions(objects or (), skip),
        "counting": callgrind_dumps.rule(tuple(sys.version_info[:2])),
        "cpuid": callgrind.cpuid_signature(),
        "simulated_cpu": " ".join(filter(None, (simulated_cpu(device), compiled_for(objects)))),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "python_build": python_build(),
        "interpreter_settings": counts_key.interpreter_settings(
            {name: getattr(sys.flags, name, None) for name, _ in counts_key.INTERPRETER_FLAGS},
            sys._xoptions,
            gil_enabled(),
        ),
        "libc": " ".join(platform.libc_ver()).strip() or "unknown",
        "libraries": versions,
        "threads": counted_threads(threads),
    }


def known_before_counting(entry: StoredBaseline | None, device: Device) -> str | None:
    """Why ``entry``'s counts baseline cannot judge this run's counts, where that shows before
    any counting: the key fields this process knows as the counted process would (the
    interpreter, its build, the C library, the device's libraries), the first that differs
    named as :func:`against_baseline` names it; None where they agree (the counted process's own
    fields, the simulated CPU above all, may still differ)."""
    if entry is None or entry.counts is None or entry.counts_key is None:
        return None
    stored = entry.counts_key
    fingerprint = device.fingerprint()
    here: dict[str, object] = {
        **stored,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "python_build": python_build(),
        "libc": " ".join(platform.libc_ver()).strip() or "unknown",
    }
    recorded_on = None if entry.device is None else entry.device.get("library")
    if recorded_on in (None, fingerprint.get("library")):
        # else the libraries are not held as this device holds them: recorded on numpy-cpu for a
        # python-cpu test, or on the device of the arrays a pytest-benchmark test is called with
        # (torch-cpu), which only its call tells (perf_base); the counted process's key decides
        here["libraries"] = dict(jf.mapping(fingerprint.get("versions")))
    return counts_key.key_difference(stored, here)


def counted_threads(threads: int) -> int | str:
    """The key's thread count: ``threads``, or for 0 (the libraries' default, one per CPU)
    what that is here, since counts of a pool of 2 and of 4 differ."""
    if threads != 0:
        return threads
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"the libraries' default on {cpus} CPUs"


def gil_enabled() -> bool | None:
    """Whether the GIL is on (a free-threaded build can run without it), None before 3.13."""
    probe = getattr(sys, "_is_gil_enabled", None)
    return None if probe is None else bool(probe())


def python_build() -> str:
    """Which build of the interpreter runs: its compiler and build date. The same Python version
    built by another compiler or with other flags (pyenv's build, a distribution's, the
    prebuilt one of actions/setup-python) executes other instructions for the same code."""
    name, date = platform.python_build()
    return f"{platform.python_compiler()}; {name} {date}".strip()


def simulated_cpu(device: Device) -> str:
    """What the libraries dispatch on in this process: the device's dispatch (numpy's SIMD
    level, the BLAS core) and the features numpy and torch detect."""
    dispatch = jf.mapping(device.fingerprint().get("dispatch"))
    parts = [f"{k}={v}" for k, v in sorted(dispatch.items())]
    seen = callgrind.simulated_cpu()
    return " ".join([*parts, seen]).strip()


def compiled_for(objects: set[str] | None, environ: Mapping[str, str] | None = None) -> str:
    """Where the counted calls ran torch.compile's C++ kernels (an object file in the counted
    processes' inductor cache, runs/counted.INDUCTOR_CACHE_ENV): the CPU they were built for
    (``inductor=sandybridge``, runs/counted.COMPILED_MARCH_ENV; ``native`` where the run's
    environment cleared it), a dispatch part of ``simulated_cpu`` that must match, so counts of
    kernels built for another CPU are refused, not compared. Empty where none ran."""
    env = os.environ if environ is None else environ
    cache = env.get(counted.INDUCTOR_CACHE_ENV)
    if not cache or not objects:
        return ""
    roots = {cache.rstrip("/") + "/", os.path.realpath(cache).rstrip("/") + "/"}
    if not any(obj.startswith(root) for obj in objects for root in roots):
        return ""
    return f"inductor={env.get(counted.COMPILED_MARCH_ENV) or 'native'}"


def baseline_counts(entry: StoredBaseline | None) -> list[float] | None:
    """The gating counts a stored baseline holds, one per counted call (None: none)."""
    if entry is None or entry.counts is None:
        return None
    return [float(v) for v in entry.counts.values(counts.GATING)]


def against_baseline(
    got: counts.Counted,
    entry: StoredBaseline | None,
    key: dict[str, object],
    *,
    alpha_each: float,
    device: Mapping[str, object] | None = None,
    threshold: float | None = None,
) -> Verdict:
    """The verdict from ``got`` (this run's counts, kept under ``key``, on the device whose
    fingerprint is ``device``) against a stored baseline ``entry`` (None: no baseline):
    incomparable where the baseline holds no counts or was counted under another key (what
    differs named), else core/counting/counts.judge_counts with the key's notes and the estimated cycles'
    note (where both simulated the same caches). A pytest-benchmark test's counts recorded on
    numpy-cpu are compared under the key its python-cpu device gives, one recorded on
    python-cpu under the key of the arrays' device it is now called with
    (comparability.recorded_on_another_host_device): the same code ran."""
    values = [float(v) for v in got.values()]
    base_values = baseline_counts(entry)
    if entry is not None and base_values is None:
        return not_comparable(values, [], "the stored baseline holds no counts", Cause.COUNTS_KEY)
    stored = None if entry is None else entry.counts
    stored_key = None if entry is None else entry.counts_key
    migrated = (
        None
        if entry is None or stored_key is None or device is None
        else recorded_on_another_host_device(entry.device, device)
    )
    if migrated == RECORDED_AS_NUMPY and stored_key is not None:
        stored_key = as_python_key(stored_key, key)
    elif migrated == RECORDED_AS_PYTHON and stored_key is not None:
        stored_key = as_array_key(stored_key, key)
    if entry is not None and (diff := counts_key.key_difference(stored_key, key)):
        return not_comparable(values, base_values or [], f"{diff}{RECORD_AGAIN}", Cause.COUNTS_KEY)
    verdict = paired_counts.judge_counted(
        stored if base_values else None,
        got,
        alpha_each=alpha_each,
        process_spread=counts.between_processes(got, stored),
        interpreter=max(got.interpreter, 0.0 if stored is None else stored.interpreter),
        threshold=threshold,
    )
    cycles = counts.cycles_note(
        [float(v) for v in stored.cycles]
        if stored is not None and counts_key.same_caches(stored_key, key)
        else [],
        [float(v) for v in got.cycles],
        verdict,
    )
    noted = counts_key.key_notes(stored_key, key)
    if migrated:
        noted = [migrated, *noted]
    return replace(verdict, notes=(*verdict.notes, *noted, *([cycles] if cycles else [])))


def as_python_key(stored: Mapping[str, object], current: Mapping[str, object]) -> dict[str, object]:
    """The counts key a pytest-benchmark test recorded on numpy-cpu, as its python-cpu device
    gives it: without the dispatch numpy's device added to ``simulated_cpu`` (``numpy=...``,
    ``blas=...``) and with this run's ``libraries`` (numpy's device named numpy's version; the
    test's own imports were never in the key)."""
    simulated = " ".join(
        t for t in str(stored.get("simulated_cpu", "")).split() if not t.startswith(_DISPATCH)
    )
    return {**stored, "simulated_cpu": simulated, "libraries": current.get("libraries")}


def counted_on(
    fingerprint: Mapping[str, object], counted_key: Mapping[str, object]
) -> Mapping[str, object]:
    """The device a pytest-benchmark test's calls were counted on, as far as a comparison of
    keys needs it: the python-cpu device it was collected on (``fingerprint``), or, where the
    arrays it was called with chose another (plugin/measuring/perf_base.py), that device's
    library, named by the counted key's ``libraries``."""
    libraries = list(jf.mapping(counted_key.get("libraries")))
    if len(libraries) != 1 or libraries[0] == fingerprint.get("library"):
        return fingerprint
    return {**fingerprint, "library": libraries[0], "kind": "cpu"}


def as_array_key(stored: Mapping[str, object], current: Mapping[str, object]) -> dict[str, object]:
    """The counts key a pytest-benchmark test recorded on python-cpu, as the device of the
    arrays it is now called with gives it (comparability.recorded_on_another_host_device): that
    device's libraries at the versions the recorded calls ran in (its ``calls_into``; one the calls never
    ran in stays absent, and the keys differ), the rest of ``calls_into`` as it was, and this
    run's dispatch parts of those libraries in ``simulated_cpu`` (python-cpu added none)."""
    libraries = jf.mapping(current.get("libraries"))
    called = dict(jf.mapping(stored.get("calls_into")))
    held = {lib: called.pop(lib) for lib in list(called) if lib in libraries}
    dispatch = [
        t
        for t in str(current.get("simulated_cpu", "")).split()
        if any(t.startswith(f"{lib}=") for lib in libraries)
    ]
    simulated = " ".join([*dispatch, str(stored.get("simulated_cpu", ""))]).strip()
    return {**stored, "libraries": held, "calls_into": called, "simulated_cpu": simulated}


_DISPATCH = ("numpy=", "blas=")  # what numpy's CPU device puts into a key's ``simulated_cpu``


def between(
    reference: counts.Counted,
    current: counts.Counted,
    *,
    alpha_each: float,
    threshold: float | None = None,
) -> Verdict:
    """The verdict from two environments' counts of one benchmark (a same-session comparison)."""
    return paired_counts.judge_counted(
        reference,
        current,
        alpha_each=alpha_each,
        process_spread=counts.between_processes(reference, current),
        interpreter=max(reference.interpreter, current.interpreter),
        threshold=threshold,
    )
