"""The counts instrument (instruments/instruction_counts.py): its key's thread count, and a
process not under valgrind refused with the benchmark's name."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_burnperf.core.counting.counted_calls import calls_for
from pytest_burnperf.core.counting.counts import Counted
from pytest_burnperf.core.counting.counts_key import KEY_FIELDS
from pytest_burnperf.core.judging.abstention import Cause
from pytest_burnperf.core.judging.verdict import INCOMPARABLE, NO_BASELINE, REGRESSED, UNCHANGED
from pytest_burnperf.core.records.stored_baseline import StoredBaseline
from pytest_burnperf.instruments.instruction_counts import (
    ALWAYS,
    BY_TIME,
    UNDER_LIMIT,
    against_baseline,
    baseline_counts,
    between,
    compiled_for,
    count,
    counted_on,
    counted_threads,
    known_before_counting,
    python_build,
    selection,
)
from pytest_burnperf.instruments.instrument import Unavailable


def test_threads_are_kept_and_the_default_names_the_cpus_it_means(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert counted_threads(1) == 1 and counted_threads(4) == 4
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert counted_threads(0) == "the libraries' default on 3 CPUs"
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4, 5}, raising=False)
    assert counted_threads(0) != "the libraries' default on 3 CPUs"  # another pool: another key


def test_a_process_not_under_valgrind_is_refused_with_the_benchmarks_name(
    tmp_path: Path,
) -> None:
    calls: list[int] = []

    def make_call() -> tuple[object, None]:
        return (lambda: calls.append(1)), None

    with pytest.raises(
        Unavailable, match=r"test_x\.py::test_y: (cannot count here|.*does not run under valgrind)"
    ):
        count("test_x.py::test_y", object(), 1, make_call, count_dir=tmp_path, calls=2, limit=1000)
    assert calls == []  # nothing ran


def _counted(n: int) -> Counted:
    calls = calls_for(0.01)  # as many calls as the counted process counts at this alpha
    return Counted(instructions=(n,) * calls, cycles=(2 * n,) * calls)


#: A key with every field the counts are kept under (core/counting/counts_key.py).
KEY: dict[str, object] = {name: f"{name}-here" for name in KEY_FIELDS} | {"libraries": {}}


def _entry(n: int, key: dict[str, object] | None = None) -> StoredBaseline:
    got = _counted(n)
    return StoredBaseline.from_entry({"counts": {**got.as_json(), "key": key or KEY}})


def test_counts_are_judged_against_a_stored_baseline_of_the_same_key() -> None:
    same = against_baseline(_counted(1_000_000), _entry(1_000_000), KEY, alpha_each=0.01)
    assert same.status == UNCHANGED
    slower = against_baseline(_counted(1_100_000), _entry(1_000_000), KEY, alpha_each=0.01)
    assert slower.status == REGRESSED and slower.ratio == pytest.approx(1.1)
    none = against_baseline(_counted(1), None, KEY, alpha_each=0.01)
    assert none.status == NO_BASELINE and none.cause is Cause.NO_COUNTS
    assert baseline_counts(_entry(7)) == [7.0] * calls_for(0.01) and baseline_counts(None) is None


def test_a_baseline_without_counts_or_of_another_key_is_incomparable_and_says_why() -> None:
    timed_only = against_baseline(
        _counted(5), StoredBaseline.from_entry({"runs": [[1e-3]]}), KEY, alpha_each=0.01
    )
    assert timed_only.status == INCOMPARABLE and "holds no counts" in timed_only.reason
    assert timed_only.cause is Cause.COUNTS_KEY
    other = {**KEY, "python": "CPython 3.12.1"}
    moved = against_baseline(_counted(5), _entry(5, other), KEY, alpha_each=0.01)
    assert moved.status == INCOMPARABLE and "python 'CPython 3.12.1'" in moved.reason
    assert moved.cause is Cause.COUNTS_KEY
    assert "--perf-update" in moved.reason


def test_torch_compiles_kernels_are_in_the_key_with_the_cpu_they_were_built_for() -> None:
    """Counts of calls that ran torch.compile's C++ kernels (an object in the counted processes'
    inductor cache) hold the CPU those were built for as a dispatch part of the key: kernels
    built for another CPU (-march=native) are refused with what differs, not compared; a
    benchmark without compiled code is unaffected, and one whose calls ran no kernel when
    recorded is compared with its calls that now run one (kornia's `grayscale_to_rgb` under
    torch.compile: a view that became a compiled copy)."""
    env = {"TORCHINDUCTOR_CACHE_DIR": "/cache/inductor", "TORCHINDUCTOR_CPP_MARCH": "sandybridge"}
    kernel = "/cache/inductor/ab/cxyz.so"
    libs = {"/usr/lib/libc.so.6", "/venv/torch/lib/libtorch_cpu.so"}
    assert compiled_for({*libs, kernel}, env) == "inductor=sandybridge"
    assert compiled_for(libs, env) == ""
    assert compiled_for({kernel}, {"TORCHINDUCTOR_CACHE_DIR": "/cache/inductor"}) == (
        "inductor=native"
    )
    assert compiled_for({"/cache/inductor-other/x.so"}, env) == ""  # another folder
    assert compiled_for({kernel}, {}) == "" and compiled_for(None, env) == ""

    pinned = {**KEY, "simulated_cpu": "torch:default inductor=sandybridge"}
    native = {**KEY, "simulated_cpu": "torch:default inductor=native"}
    refused = against_baseline(_counted(5), _entry(5, native), pinned, alpha_each=0.01)
    assert refused.status == INCOMPARABLE
    # the part that differs, not both whole strings
    assert refused.reason.startswith(
        "counts baseline recorded with simulated_cpu 'inductor=native', this run has "
        "'inductor=sandybridge'"
    ), refused.reason
    same = against_baseline(_counted(5), _entry(5, pinned), pinned, alpha_each=0.01)
    assert same.status == UNCHANGED
    # recorded when its calls ran no compiled kernel: the kernel's CPU decided none of those
    # counts, so the change that made it run one is judged (here 5x the work), either way round
    viewed = {**KEY, "simulated_cpu": "torch:default"}
    copied = against_baseline(_counted(25), _entry(5, viewed), pinned, alpha_each=0.01)
    assert copied.status == REGRESSED, copied.reason
    back = against_baseline(_counted(5), _entry(5, pinned), viewed, alpha_each=0.01)
    assert back.status == UNCHANGED
    # a dispatch part both keys always have still refuses where it differs
    blas = {**KEY, "simulated_cpu": "blas=Haswell inductor=sandybridge"}
    other_blas = {**KEY, "simulated_cpu": "blas=Sandybridge"}
    moved = against_baseline(_counted(5), _entry(5, other_blas), blas, alpha_each=0.01)
    assert moved.status == INCOMPARABLE
    assert "'blas=Sandybridge', this run has 'blas=Haswell'" in moved.reason, moved.reason


class _Device:
    """A device as known_before_counting reads it: its fingerprint."""

    def __init__(self, fingerprint: dict[str, object]) -> None:
        self._fp = fingerprint

    def fingerprint(self) -> dict[str, object]:
        return self._fp


def test_what_the_run_itself_knows_of_the_key_shows_another_key_before_counting() -> None:
    import platform

    here = {
        **KEY,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "python_build": python_build(),
        "libc": " ".join(platform.libc_ver()).strip() or "unknown",
        "libraries": {"numpy": "2.4.6"},
    }
    numpy = _Device({"library": "numpy", "versions": {"numpy": "2.4.6"}})
    assert known_before_counting(_entry(5, here), numpy) is None
    assert known_before_counting(None, numpy) is None
    # what only the counted process knows (valgrind's simulated CPU) is left to it
    assert known_before_counting(_entry(5, {**here, "simulated_cpu": "another"}), numpy) is None
    older = known_before_counting(_entry(5, here), _Device({"versions": {"numpy": "2.3.5"}}))
    assert older is not None and "numpy 2.4.6" in older and "2.3.5" in older
    other = known_before_counting(_entry(5, {**here, "python": "CPython 3.99.0"}), numpy)
    assert other is not None and "python 'CPython 3.99.0'" in other
    # a pytest-benchmark test recorded on numpy-cpu, now python-cpu: its libraries are not held
    recorded = StoredBaseline.from_entry(
        {
            "counts": {**_counted(5).as_json(), "key": here},
            "device": {"id": "numpy-cpu", "library": "numpy", "kind": "cpu"},
        }
    )
    python = _Device({"library": "python", "versions": {"python": "3.11.7"}})
    assert known_before_counting(recorded, python) is None
    # recorded on torch-cpu, the device its call's tensors chose: only the call tells again
    on_torch = StoredBaseline.from_entry(
        {
            "counts": {**_counted(5).as_json(), "key": {**here, "libraries": {"torch": "2.13"}}},
            "device": {"id": "torch-cpu", "library": "torch", "kind": "cpu"},
        }
    )
    assert known_before_counting(on_torch, python) is None


def test_cycles_are_compared_only_where_both_counted_them_with_the_same_caches() -> None:
    n, calls = 1_000_000, calls_for(0.01)
    model = {**KEY, "cache": "I1=32768,8,64 D1=32768,8,64 LL=8388608,16,64"}
    stored = StoredBaseline.from_entry(
        {"counts": {**Counted((n,) * calls, (n,) * calls).as_json(), "key": model}}
    )
    more_misses = Counted((n,) * calls, (2 * n,) * calls)
    same = against_baseline(more_misses, stored, model, alpha_each=0.01)
    assert same.status == UNCHANGED and any("estimated cycles +100.00%" in t for t in same.notes)
    # counted without the cache simulation: the instructions judge, no cycles are compared
    plain = {**KEY, "cache": "none"}
    bare = against_baseline(Counted((n,) * calls, ()), stored, plain, alpha_each=0.01)
    assert bare.status == UNCHANGED and not any("cycles" in t for t in bare.notes)
    # ... nor against other caches' cycles
    other = {**KEY, "cache": "I1=65536,8,64 D1=65536,8,64 LL=8388608,16,64"}
    moved = against_baseline(more_misses, stored, other, alpha_each=0.01)
    assert moved.status == UNCHANGED and not any("cycles" in t for t in moved.notes)


def test_two_environments_counts_are_judged_against_each_other() -> None:
    assert between(_counted(100_000), _counted(100_000), alpha_each=0.01).status == UNCHANGED
    assert between(_counted(100_000), _counted(120_000), alpha_each=0.01).status == REGRESSED


def test_the_stored_baselines_decide_what_is_counted_never_the_hosts_speed() -> None:
    assert selection(counts_baseline=True, time_baseline=True, records=False) == ALWAYS
    assert selection(counts_baseline=True, time_baseline=False, records=True) == ALWAYS
    assert selection(counts_baseline=False, time_baseline=True, records=False) == BY_TIME
    # recording by counts: the limit decides which benchmarks gain a counts baseline
    assert selection(counts_baseline=False, time_baseline=True, records=True) == UNDER_LIMIT
    assert selection(counts_baseline=False, time_baseline=False, records=False) == UNDER_LIMIT


def test_counts_a_pytest_benchmark_test_recorded_on_numpy_cpu_are_compared_as_python_cpu() -> None:
    from pytest_burnperf.core.judging.comparability import RECORDED_AS_NUMPY

    features = "numpy:AVX,AVX2"
    old_key = {**KEY, "simulated_cpu": f"blas=Haswell numpy=X86_V3 {features}"}
    old_key["libraries"] = {"numpy": "2.3.0"}
    new_key = {**KEY, "simulated_cpu": features, "libraries": {"python": "3.12.1"}}
    got = _counted(1_000_000)
    entry = StoredBaseline.from_entry(
        {
            "counts": {**got.as_json(), "key": old_key},
            "device": {"id": "numpy-cpu", "library": "numpy", "kind": "cpu"},
        }
    )
    python = {"id": "python-cpu", "library": "python", "kind": "cpu"}
    same = against_baseline(got, entry, new_key, alpha_each=0.01, device=python)
    assert same.status == UNCHANGED and RECORDED_AS_NUMPY in same.notes
    # without the device that says so, the keys differ as before
    other = against_baseline(got, entry, new_key, alpha_each=0.01)
    assert other.status == INCOMPARABLE and "simulated_cpu" in other.reason
    # and a numpy-cpu run is never let off its numpy version this way
    numpy = {"id": "numpy-cpu", "library": "numpy", "kind": "cpu"}
    assert against_baseline(got, entry, new_key, alpha_each=0.01, device=numpy).status == (
        INCOMPARABLE
    )


def test_counts_recorded_on_python_cpu_compare_on_the_device_of_the_calls_arrays() -> None:
    """A pytest-benchmark test's counts recorded as python-cpu (torch in what its calls ran
    in) compare with the same calls now keyed as torch-cpu (torch a library of the device, its
    dispatch in the simulated CPU); another torch version in the record does not."""
    here = {
        **KEY,
        "libraries": {"torch": "2.13.0"},
        "calls_into": {"scipy": "1.0"},
        "simulated_cpu": "torch=AVX512 cpu-here",
    }
    recorded = {
        **KEY,
        "libraries": {"python": "3.11.7"},
        "calls_into": {"torch": "2.13.0", "scipy": "1.0"},
        "simulated_cpu": "cpu-here",
    }
    python_fp = {"library": "python", "kind": "cpu", "id": "python-cpu"}
    torch_fp = {"library": "torch", "kind": "cpu", "id": "torch-cpu"}
    entry = StoredBaseline.from_entry(
        {"counts": {**_counted(1_000_000).as_json(), "key": recorded}, "device": python_fp}
    )
    same = against_baseline(_counted(1_000_000), entry, here, alpha_each=0.01, device=torch_fp)
    assert same.status == UNCHANGED, same.reason
    assert any("baseline recorded as python-cpu" in n for n in same.notes)
    older = StoredBaseline.from_entry(
        {
            "counts": {
                **_counted(1_000_000).as_json(),
                "key": {**recorded, "calls_into": {"torch": "2.12.0", "scipy": "1.0"}},
            },
            "device": python_fp,
        }
    )
    moved = against_baseline(_counted(1_000_000), older, here, alpha_each=0.01, device=torch_fp)
    assert moved.status == INCOMPARABLE and "2.12.0" in moved.reason


def test_a_pytest_benchmark_tests_counted_device_is_named_by_its_counted_key() -> None:
    """Collected on python-cpu, counted with torch tensors: the key's one library names the
    device its counts are compared as; a pure-Python call's key keeps python-cpu."""
    python_fp = {"library": "python", "kind": "cpu", "id": "python-cpu"}
    on_torch = counted_on(python_fp, {"libraries": {"torch": "2.13.0"}})
    assert on_torch["library"] == "torch" and on_torch["kind"] == "cpu"
    assert counted_on(python_fp, {"libraries": {"python": "3.11.7"}}) == python_fp
    assert counted_on(python_fp, {}) == python_fp
