"""Whether a baseline may be compared with this run at all: the one place that decides it.

A baseline is compared only when it was measured on the same class of hardware, driven the same
way, with the same clock and cache regime. Everything else about it is *noted*. The rules:

* **Identity version.** Device fingerprints carry ``identity`` (``hardware.IDENTITY_VERSION``).
  A baseline from before the hardware identity existed cannot tell an AVX-512 CPU from an AVX2
  one behind the same model name, so it is reported as such and never compared.
* **Device identity** (``IDENTITY_KEYS``): kind, library, model name, vendor, platform, memory,
  compute units, capability, CPU count, threads.
* **CPU identity** (``hardware.CPU_MUST_MATCH``): vendor, family, model and x86-64 level (or Arm
  vector extension). Stepping, microcode, SIMD features beyond the level, caches, cores, SMT and
  the hypervisor are noted.
* **Dispatch** (``dispatch``): the code path each library picked at run time (numpy's SIMD target,
  torch's CPU capability, OpenBLAS's core type) must match.
* **Regime**: the clock (device events vs host wall time), the L2 flush and the precision modes
  (TF32, cudnn.benchmark, deterministic algorithms...: ``precision.py``) must match, and so must
  what one sample of a ``pedantic`` benchmark means (rounds given or not, iterations, warm-up
  rounds, setup: ``PEDANTIC_KEYS``).
* **Software** (driver, runtime, BLAS, library versions) is noted: a version change is what a
  regression test is for.
"""

from __future__ import annotations

from collections.abc import Mapping

from pytest_burnperf.core.judging.abstention import Cause
from pytest_burnperf.core.judging.precision import difference
from pytest_burnperf.core.options.pedantic_shape import PedanticShape
from pytest_burnperf.core.records.stored_baseline import StoredBaseline
from pytest_burnperf.host.hardware import CPU_MUST_MATCH, CPU_NOTED

#: Fingerprint keys that identify the hardware (and how it is driven). A baseline whose value for
#: one of these differs from this run's was measured on something else and is never compared.
IDENTITY_KEYS: tuple[str, ...] = (
    "kind",
    "library",
    "name",
    "vendor",
    "platform",
    "memory_bytes",
    "compute_units",
    "capability",
    "cpus",
    "threads",
    # NVIDIA GPUs, from NVML where the nvml extra is installed: a power-capped or down-clocked GPU
    # of the same model is another class
    "max_sm_clock_mhz",
    "max_mem_clock_mhz",
    "power_limit_w",
)

#: Fingerprint keys for software around the device: a difference is compared and noted.
SOFTWARE_KEYS: tuple[str, ...] = ("driver", "nvml_driver", "runtime", "blas")

#: Start of the reason given for a baseline recorded before the hardware identity existed.
LEGACY = "baseline recorded without the hardware identity"


def _label(fp: Mapping[str, object]) -> str:
    name = fp.get("name") or fp.get("id") or "an unnamed device"
    return f"{name} ({fp['id']})" if fp.get("id") and fp.get("id") != name else str(name)


def _identity_version(fp: Mapping[str, object]) -> int:
    v = fp.get("identity")
    return v if isinstance(v, int) and not isinstance(v, bool) else 1


def legacy_reason() -> str:
    return (
        f"{LEGACY} (an older pytest-burnperf could not tell an AVX-512 CPU from an AVX2 one "
        "behind the same name): not compared; re-record it on this machine with "
        "--perf-update"
    )


def _cpu_differences(old: Mapping[str, object], new: Mapping[str, object]) -> list[str]:
    diffs: list[str] = []
    for key in CPU_MUST_MATCH:
        if key in old and key in new and old[key] != new[key]:
            diffs.append(f"CPU {key} {old[key]!r} -> {new[key]!r}")
    return diffs


def _cpu_notes(old: Mapping[str, object], new: Mapping[str, object]) -> list[str]:
    notes: list[str] = []
    for key in CPU_NOTED:
        a, b = old.get(key), new.get(key)
        if a is None or b is None or a == b:
            continue
        if key == "features" and isinstance(a, list) and isinstance(b, list):
            gone, added = sorted(set(a) - set(b)), sorted(set(b) - set(a))
            text = ", ".join([*(f"-{f}" for f in gone), *(f"+{f}" for f in added)])
            notes.append(f"CPU features {text} since the baseline")
        else:
            notes.append(f"CPU {key} {a} -> {b} since the baseline")
    return notes


def _dispatch_differences(old: Mapping[str, object], new: Mapping[str, object]) -> list[str]:
    return [
        f"baseline CPU dispatches {lib} {old[lib]}, this CPU {new[lib]}"
        for lib in sorted(set(old) & set(new))
        if old[lib] is not None and new[lib] is not None and old[lib] != new[lib]
    ]


#: What a test written for pytest-benchmark's device (``python-cpu``) shares with numpy's CPU
#: device, which such tests were given before they had their own: the host CPU.
HOST_CPU_KEYS: tuple[str, ...] = ("kind", "name", "cpus", "cpu", "identity")

#: The note on a verdict against a baseline recorded on numpy's CPU device for such a test.
RECORDED_AS_NUMPY = (
    "baseline recorded as numpy-cpu (before tests written for pytest-benchmark ran on a device "
    "of their own, python-cpu): compared as the same host CPU; --perf-update records it again"
)


def recorded_as_numpy(
    baseline_fp: Mapping[str, object] | None, current_fp: Mapping[str, object]
) -> bool:
    """A python-cpu run against a baseline its test recorded on numpy-cpu (an older release)."""
    return (
        isinstance(baseline_fp, Mapping)
        and baseline_fp.get("library") == "numpy"
        and current_fp.get("library") == "python"
    )


#: The note on a verdict against a baseline recorded on python-cpu for a test now called with
#: arrays of a CPU library (plugin/measuring/perf_base.py reads the device from them).
RECORDED_AS_PYTHON = (
    "baseline recorded as python-cpu (before a pytest-benchmark test's device was read from the "
    "arrays it is called with): compared as the same host CPU; --perf-update records it again"
)


def recorded_as_python(
    baseline_fp: Mapping[str, object] | None, current_fp: Mapping[str, object]
) -> bool:
    """A run on a CPU library's device against a baseline its test recorded on python-cpu."""
    return (
        isinstance(baseline_fp, Mapping)
        and baseline_fp.get("library") == "python"
        and current_fp.get("library") not in (None, "python")
        and current_fp.get("kind") == "cpu"
    )


def recorded_on_another_host_device(
    baseline_fp: Mapping[str, object] | None, current_fp: Mapping[str, object]
) -> str | None:
    """The one rule of a pytest-benchmark test whose baseline an earlier release recorded on
    another device of this host than the one it runs on now (numpy-cpu before such tests had
    python-cpu; python-cpu before their arrays chose a CPU library's device): the note its
    verdict carries (:data:`RECORDED_AS_NUMPY`, :data:`RECORDED_AS_PYTHON`), compared by the
    host CPU alone; None for any other baseline."""
    if recorded_as_numpy(baseline_fp, current_fp):
        return RECORDED_AS_NUMPY
    if recorded_as_python(baseline_fp, current_fp):
        return RECORDED_AS_PYTHON
    return None


def comparability(
    baseline_fp: Mapping[str, object] | None, current_fp: Mapping[str, object]
) -> tuple[str | None, tuple[str, ...]]:
    """``(why not comparable or None, notes)`` for a baseline's device fingerprint and this run's.

    Keys present on only one side are not held against the baseline (a device that cannot tell its
    memory, say); only values known on both sides that differ count, except the identity version.
    A pytest-benchmark test's baseline recorded on numpy-cpu, or on python-cpu for a test now
    called with a CPU library's arrays, is compared by the host CPU alone.
    """
    if not isinstance(baseline_fp, Mapping):
        return None, ()
    host_only = recorded_on_another_host_device(baseline_fp, current_fp)
    if host_only is not None:
        host_cpu = {k: v for k, v in baseline_fp.items() if k in HOST_CPU_KEYS}
        mine = {k: v for k, v in current_fp.items() if k in HOST_CPU_KEYS}
        why, noted = comparability(host_cpu, mine)
        return why, (host_only, *noted)
    if _identity_version(baseline_fp) < _identity_version(current_fp):
        return legacy_reason(), ()
    diffs = [
        f"{key} {baseline_fp[key]!r} -> {current_fp[key]!r}"
        for key in IDENTITY_KEYS
        if key in baseline_fp and key in current_fp and baseline_fp[key] != current_fp[key]
    ]
    old_cpu, new_cpu = baseline_fp.get("cpu"), current_fp.get("cpu")
    cpu_ok = isinstance(old_cpu, Mapping) and isinstance(new_cpu, Mapping)
    if cpu_ok:
        assert isinstance(old_cpu, Mapping) and isinstance(new_cpu, Mapping)
        diffs += _cpu_differences(old_cpu, new_cpu)
    old_d, new_d = baseline_fp.get("dispatch"), current_fp.get("dispatch")
    if isinstance(old_d, Mapping) and isinstance(new_d, Mapping):
        diffs += _dispatch_differences(old_d, new_d)
    if diffs:
        return (
            f"baseline from {_label(baseline_fp)}, this run is on {_label(current_fp)} "
            f"({'; '.join(diffs)}): not compared; record a baseline for this hardware with "
            "--perf-update",
            (),
        )
    notes: list[str] = []
    if cpu_ok:
        assert isinstance(old_cpu, Mapping) and isinstance(new_cpu, Mapping)
        notes += _cpu_notes(old_cpu, new_cpu)
    for key in SOFTWARE_KEYS:
        old, new = baseline_fp.get(key), current_fp.get(key)
        if old is not None and new is not None and old != new:
            notes.append(f"{key} {old} -> {new} since the baseline")
    old_v, new_v = baseline_fp.get("versions"), current_fp.get("versions")
    if isinstance(old_v, Mapping) and isinstance(new_v, Mapping):
        for lib in sorted(set(old_v) & set(new_v)):
            if old_v[lib] != new_v[lib]:
                notes.append(f"{lib} {old_v[lib]} -> {new_v[lib]} since the baseline")
    return None, tuple(notes)


#: The clocks of ``clocks.SAMPLE_TIMERS``, in words.
CLOCKS = {
    "host": "the host clock",
    "device": "the device clock",
    "graph": "the device clock around CUDA-graph replays",
}


def regime_difference(baseline: StoredBaseline, timer: str, l2_flush: bool) -> str | None:
    """Why a baseline measured with another clock or cache regime cannot be compared, or None."""
    old_timer = baseline.timer
    if old_timer != timer:
        return (
            f"baseline timed with {CLOCKS.get(old_timer, old_timer)}, this run with "
            f"{CLOCKS.get(timer, timer)}: "
            "not compared; record a new baseline with --perf-update, or set timer="
            f"{old_timer!r} on the marker (or --perf-timer {old_timer})"
        )
    old_flush = baseline.l2_flush
    if old_flush != l2_flush:
        state = {True: "with", False: "without"}
        return (
            f"baseline measured {state[old_flush]} an L2 flush before each sample, this run "
            f"{state[l2_flush]}: not compared; record a new baseline with --perf-update"
        )
    return None


#: perf.pedantic's settings that decide what one sample means, in the order a difference is
#: named: ``rounds`` (None: not given, sampled by pytest-burnperf), ``iterations`` (calls a
#: sample), ``warmup_rounds`` (untimed rounds first: without them the first sample is a cold
#: call, and with ``rounds=1`` every sample is), ``setup`` (fresh inputs each round).
PEDANTIC_KEYS: tuple[str, ...] = ("rounds", "iterations", "warmup_rounds", "setup")


def pedantic_difference(baseline: StoredBaseline, pedantic: PedanticShape | None) -> str | None:
    """Why a baseline sampled with other pedantic settings cannot be compared, or None. A
    baseline that does not say how it was sampled (recorded before this rule, or by
    ``perf(fn)`` where this run is pedantic) is compared, as before."""
    old = baseline.pedantic
    if old is None or pedantic is None:
        return None
    before, now = old.as_json(), pedantic.as_json()
    differ = [k for k in PEDANTIC_KEYS if before[k] != now[k]]
    if not differ:
        return None
    return (
        f"baseline sampled with pedantic {old.text()}, this run with "
        f"{pedantic.text()} ({', '.join(differ)} differ): a sample means something "
        "else, not compared; record a new baseline with --perf-update"
    )


def blocker(
    baseline: StoredBaseline,
    fingerprint: Mapping[str, object],
    timer: str,
    l2_flush: bool,
    pedantic: PedanticShape | None = None,
) -> tuple[str | None, Cause | None, tuple[str, ...]]:
    """Everything above for one baseline entry: ``(why not comparable, its cause, notes)``
    (another machine, device, precision or regime, or other pedantic settings; None and None
    where comparable)."""

    device = baseline.device
    why, notes = comparability(device, fingerprint)
    modes = None if device is None else device.get("precision")
    why = (
        why
        or difference(modes, fingerprint.get("precision"))
        or regime_difference(baseline, timer, l2_flush)
    )
    if why is not None:
        return why, Cause.OTHER_MACHINE, notes
    why = pedantic_difference(baseline, pedantic)
    return why, None if why is None else Cause.SAMPLED_OTHERWISE, notes
