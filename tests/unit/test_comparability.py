"""Which baselines may be compared with a run, and what is noted when they are."""

from __future__ import annotations

from typing import Any

from pytest_burnperf.compare import INCOMPARABLE, not_comparable
from pytest_burnperf.comparability import comparability

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
    assert "compute_units 108 -> 132" in reason and "--update-baselines" in reason


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
