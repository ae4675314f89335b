"""Which baselines may be compared with a run, and what is noted when they are."""

from __future__ import annotations

from typing import Any

from pytest_burnperf.core.judging.abstention import Cause
from pytest_burnperf.core.judging.comparability import (
    LEGACY,
    RECORDED_AS_NUMPY,
    RECORDED_AS_PYTHON,
    blocker,
    comparability,
)
from pytest_burnperf.core.judging.verdict import INCOMPARABLE, not_comparable
from pytest_burnperf.core.options.pedantic_shape import PedanticShape
from pytest_burnperf.core.records.stored_baseline import StoredBaseline
from pytest_burnperf.host.hardware import IDENTITY_VERSION

H200: dict[str, Any] = {
    "id": "torch-cuda0",
    "kind": "cuda",
    "library": "torch",
    "name": "NVIDIA H200",
    "memory_bytes": 150_000_000_000,
    "compute_units": 132,
    "capability": "9.0",
    "runtime": "CUDA 12.8",
    "versions": {"torch": "2.12.0"},
}


def test_same_device_and_software_compares_silently() -> None:
    assert comparability(H200, dict(H200)) == (None, ())


def test_other_model_is_never_compared() -> None:
    a100 = {**H200, "name": "NVIDIA A100-SXM4-80GB", "compute_units": 108, "capability": "8.0"}
    reason, notes = comparability(a100, H200)
    assert reason is not None and notes == ()
    assert reason.startswith("baseline from NVIDIA A100-SXM4-80GB (torch-cuda0), this run is on ")
    assert "compute_units 108 -> 132" in reason and "--perf-update" in reason


def test_h100_and_h200_baselines_are_never_compared_either_way() -> None:
    """Same SM count and capability, another model and memory: each direction names both."""
    h100 = {**H200, "name": "NVIDIA H100 80GB HBM3", "memory_bytes": 85_000_000_000}
    for old, new in ((h100, H200), (H200, h100)):
        reason, _ = comparability(old, new)
        assert reason is not None
        assert reason.startswith(f"baseline from {old['name']} (torch-cuda0), this run is on ")
        assert new["name"] in reason
        assert f"memory_bytes {old['memory_bytes']} -> {new['memory_bytes']}" in reason


def test_thread_count_is_part_of_the_identity() -> None:
    cpu = {"id": "torch-cpu", "kind": "cpu", "name": "AMD EPYC", "cpus": 2, "threads": 1}
    reason, _ = comparability(cpu, {**cpu, "threads": 2})
    assert reason is not None and "threads 1 -> 2" in reason


def test_software_differences_are_compared_and_noted() -> None:
    newer = {**H200, "runtime": "CUDA 12.9", "versions": {"torch": "2.13.0", "triton": "3.4"}}
    assert comparability(H200, newer) == (
        None,
        (
            "runtime CUDA 12.8 -> CUDA 12.9 since the baseline",
            "torch 2.12.0 -> 2.13.0 since the baseline",
        ),
    )


def test_keys_missing_on_one_side_are_not_held_against_a_baseline() -> None:
    old = {"id": "torch-cuda0", "kind": "cuda", "library": "torch", "name": "NVIDIA H200"}
    assert comparability(old, H200) == (None, ())
    assert comparability(None, H200) == (None, ())


def test_not_comparable_verdict_keeps_both_medians_and_the_reason() -> None:
    v = not_comparable([2.0, 2.0, 2.0], [1.0, 1.0], "baseline from elsewhere")
    assert (v.status, v.current_median, v.baseline_median, v.ratio) == (
        INCOMPARABLE,
        2.0,
        1.0,
        None,
    )
    assert v.reason == "baseline from elsewhere" and v.n_baseline == 2


def _cpu_fp(level: str, model: str, numpy_dispatch: str, blas: str) -> dict[str, Any]:
    return {
        "id": "numpy-cpu",
        "kind": "cpu",
        "library": "numpy",
        "name": "AMD EPYC",
        "cpus": 2,
        "threads": 1,
        "identity": IDENTITY_VERSION,
        "cpu": {
            "vendor": "AuthenticAMD",
            "family": "25",
            "model": model,
            "level": level,
            "stepping": "1",
            "features": ["avx2"] if level == "x86-64-v3" else ["avx2", "avx512f"],
            "cache": {"l3": 32 * 2**20},
        },
        "dispatch": {"numpy": numpy_dispatch, "blas": blas},
    }


ZEN3 = _cpu_fp("x86-64-v3", "1", "X86_V3", "Haswell")
ZEN4 = _cpu_fp("x86-64-v4", "17", "AVX512_SKX", "SkylakeX")


def test_another_cpu_class_behind_the_same_name_is_never_compared() -> None:
    reason, notes = comparability(ZEN4, ZEN3)
    assert reason is not None and notes == ()
    assert reason.startswith("baseline from AMD EPYC (numpy-cpu), this run is on AMD EPYC")
    assert "CPU level 'x86-64-v4' -> 'x86-64-v3'" in reason
    assert "CPU model '17' -> '1'" in reason
    assert "baseline CPU dispatches numpy AVX512_SKX, this CPU X86_V3" in reason
    assert "baseline CPU dispatches blas SkylakeX, this CPU Haswell" in reason


def test_dispatch_alone_makes_a_difference() -> None:
    """Same CPU, but the library picks another code path (an env var such as
    NPY_DISABLE_CPU_FEATURES, or another build): not compared."""
    other = {**ZEN3, "dispatch": {"numpy": "X86_V2", "blas": "Haswell"}}
    reason, _ = comparability(ZEN3, other)
    assert reason is not None and "dispatches numpy X86_V3, this CPU X86_V2" in reason


def test_cpu_details_that_do_not_change_the_class_are_noted() -> None:
    newer = {**ZEN3, "cpu": {**ZEN3["cpu"], "stepping": "2", "features": ["avx2", "avx_vnni"]}}
    reason, notes = comparability(ZEN3, newer)
    assert reason is None
    assert notes == (
        "CPU stepping 1 -> 2 since the baseline",
        "CPU features +avx_vnni since the baseline",
    )


def test_baselines_from_before_the_hardware_identity_are_never_compared() -> None:
    legacy = {k: v for k, v in ZEN3.items() if k not in ("identity", "cpu", "dispatch")}
    reason, _ = comparability(legacy, ZEN3)
    assert reason is not None and reason.startswith(LEGACY)
    assert "--perf-update" in reason
    # both sides old (a fingerprint of a test double, say): nothing to tell apart
    assert comparability(legacy, dict(legacy)) == (None, ())


def test_regime_and_blocker() -> None:
    entry = {"device": ZEN3, "timer": "host", "l2_flush": False}
    stored = StoredBaseline.from_entry(entry)
    assert blocker(stored, ZEN3, "host", False) == (None, None, ())
    why, _, _ = blocker(stored, ZEN3, "device", False)
    assert why is not None and "host clock, this run with the device clock" in why
    why, _, _ = blocker(stored, ZEN3, "host", True)
    assert why is not None and "without an L2 flush" in why
    why, cause, _ = blocker(
        StoredBaseline.from_entry({**entry, "device": ZEN4}), ZEN3, "host", False
    )
    assert why is not None and "x86-64-v4" in why
    assert cause is Cause.OTHER_MACHINE


def test_a_baseline_sampled_with_other_pedantic_settings_is_named_not_compared() -> None:
    from pytest_burnperf.core.judging.comparability import pedantic_difference

    sampled = {"rounds": None, "iterations": 1, "warmup_rounds": 1, "setup": True}
    pinned = {"rounds": 20, "iterations": 1, "warmup_rounds": 1, "setup": True}

    def stored(entry: dict[str, object]) -> StoredBaseline:
        return StoredBaseline.from_entry(entry)

    assert (
        pedantic_difference(stored({"pedantic": sampled}), PedanticShape(None, 1, 1, True)) is None
    )
    why = pedantic_difference(stored({"pedantic": pinned}), PedanticShape(None, 1, 1, True))
    shape = PedanticShape(None, 1, 1, True)
    assert blocker(stored({"pedantic": pinned}), ZEN3, "host", False, shape)[:2] == (
        why,
        Cause.SAMPLED_OTHERWISE,
    )
    assert why is not None and why.startswith(
        "baseline sampled with pedantic rounds=20, iterations=1, warmup_rounds=1, a setup, "
        "this run with rounds not given (sampled), iterations=1, warmup_rounds=1, a setup "
        "(rounds differ)"
    )
    cold = {"rounds": 1, "iterations": 1, "warmup_rounds": 0, "setup": False}
    assert "(rounds, warmup_rounds, setup differ)" in str(
        pedantic_difference(stored({"pedantic": pinned}), PedanticShape.from_json(cold))
    )
    # a baseline that does not say how it was sampled, or a run of perf(fn): compared
    assert pedantic_difference(stored({}), PedanticShape.from_json(sampled)) is None
    assert pedantic_difference(stored({"pedantic": pinned}), None) is None


def _python_fp(numpy_fp: dict[str, Any]) -> dict[str, Any]:
    """What python-cpu gives on the CPU of a numpy-cpu fingerprint."""
    keep = ("kind", "name", "cpus", "cpu", "identity")
    return {
        **{k: numpy_fp[k] for k in keep},
        "id": "python-cpu",
        "library": "python",
        "versions": {"python": "3.12.1"},
        "dispatch": {},
    }


def test_a_pytest_benchmark_baseline_recorded_on_numpy_cpu_is_compared_by_its_host_cpu() -> None:
    old = {**ZEN3, "versions": {"numpy": "2.3.0"}, "blas": "openblas"}
    why, notes = comparability(old, _python_fp(ZEN3))
    assert why is None and notes[0] == RECORDED_AS_NUMPY
    # the numpy version, BLAS, threads and dispatch it recorded are not held against it...
    assert not any("numpy" in n for n in notes[1:])
    # ...but another CPU class still is
    why, _ = comparability(old, _python_fp(ZEN4))
    assert why is not None and "x86-64-v3" in why and "x86-64-v4" in why
    # and a numpy-cpu run never meets it through the python-cpu rule with another CPU class
    assert comparability(_python_fp(ZEN4), old)[0] is not None


def test_a_python_cpu_baseline_compares_with_the_cpu_device_of_the_calls_arrays() -> None:
    """A pytest-benchmark test recorded as python-cpu and now called with numpy or torch arrays
    on the CPU (plugin/measuring/perf_base.py): compared by the host CPU, with a note; not with
    a GPU's, nor on another CPU class."""
    torch_cpu = {**ZEN3, "id": "torch-cpu", "library": "torch", "versions": {"torch": "2.13.0"}}
    why, notes = comparability(_python_fp(ZEN3), torch_cpu)
    assert why is None and notes[0] == RECORDED_AS_PYTHON
    assert comparability(_python_fp(ZEN4), torch_cpu)[0] is not None
    gpu = {"id": "torch-cuda0", "kind": "cuda", "library": "torch", "name": "H200"}
    assert comparability(_python_fp(ZEN3), gpu)[0] is not None
