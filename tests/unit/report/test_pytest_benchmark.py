"""Names, statistics and machine checks of pytest-benchmark's JSON (pytest_benchmark_json.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_burnperf.report.pytest_benchmark import (
    legacy_keys,
    read_saved_run,
    same_simd_class,
    stats,
)
from pytest_burnperf.storage.jsonfile import FileFormatError


@pytest.mark.parametrize(
    ("key", "legacy"),
    [
        ("test_a", ["test_a[cpu]"]),
        ("test_p[10]", ["test_p[cpu-10]", "test_p[10-cpu]"]),
        ("TestK::test_m", ["TestK::test_m[cpu]"]),
        (
            "test_k[nansum-shape0-mylib]",
            [
                "test_k[cpu-nansum-shape0-mylib]",
                "test_k[nansum-cpu-shape0-mylib]",
                "test_k[nansum-shape0-cpu-mylib]",
                "test_k[nansum-shape0-mylib-cpu]",
            ],
        ),
    ],
)
def test_the_names_baselines_had_with_the_cpu_case_in_the_id(key: str, legacy: list[str]) -> None:
    assert legacy_keys(key) == legacy


def test_stats_of_a_sample() -> None:
    st = stats([1.0, 2.0, 3.0, 4.0, 100.0], loops=2)
    assert st["rounds"] == 5 and st["median"] == 3.0 and st["min"] == 1.0 and st["max"] == 100.0
    assert st["iqr_outliers"] == 1 and st["hd15iqr"] == 4.0 and st["total"] == 220.0
    assert st["data"] == [1.0, 2.0, 3.0, 4.0, 100.0] and st["iterations"] == 2
    assert stats([0.5], loops=1)["stddev"] == 0.0


def test_simd_class_check() -> None:
    avx512 = {"cpu": {"flags": ["avx2", "avx512f"]}}
    assert same_simd_class(avx512, "x86-64-v4") is None
    assert "with AVX-512" in str(same_simd_class(avx512, "x86-64-v3"))
    assert "without AVX-512" in str(same_simd_class({"cpu": {"flags": ["avx2"]}}, "x86-64-v4"))
    assert same_simd_class({}, "x86-64-v3") is None  # cannot tell: not held against it


def test_saved_run_checks(tmp_path: Path) -> None:
    run = {
        "machine_info": {},
        "benchmarks": [
            {"fullname": "t.py::test_a", "stats": {"data": [0.1, 0.2], "iterations": 3}}
        ],
    }
    path = tmp_path / "r.json"
    path.write_text(json.dumps(run))
    (b,), _ = read_saved_run(path)
    assert (b.module, b.key, b.samples, b.iterations) == ("t.py", "test_a", (0.1, 0.2), 3)
    run["benchmarks"][0]["stats"] = {"mean": 0.1}  # type: ignore[index]
    path.write_text(json.dumps(run))
    with pytest.raises(FileFormatError, match=r"t\.py::test_a has no raw data"):
        read_saved_run(path)
    path.write_text("{}")
    with pytest.raises(FileFormatError, match="is not a pytest-benchmark JSON file"):
        read_saved_run(path)


def test_its_stats_are_times_and_a_benchmark_counted_alone_is_named_apart() -> None:
    """pytest-benchmark's readers take ``stats`` as seconds: a counted benchmark gives the time
    measured beside its counts; one judged by counts alone is left out and named."""
    from dataclasses import replace

    from pytest_burnperf.core.clocks import Sample
    from pytest_burnperf.core.judging.verdict import UNCHANGED
    from pytest_burnperf.report.pytest_benchmark import document

    from .test_table import result

    timed = result("test_t", "numpy-cpu", "f32", 2e-3, UNCHANGED, 1.0)
    counts = Sample(values=(10_838_669.0,) * 4, loops=1, warmup_calls=1, timer="counts")
    beside = replace(
        result("test_b", "numpy-cpu", "f32", 1e-3, UNCHANGED, 1.0),
        measure="counts",
        sample=counts,
    )
    beside = replace(beside, time=result("test_b", "numpy-cpu", "f32", 1e-3, UNCHANGED, 1.0))
    alone = replace(
        result("test_c", "numpy-cpu", "f32", 1e-3, UNCHANGED, 1.0), measure="counts", sample=counts
    )
    doc = document([timed, beside, alone], machine={"id": "m"}, created="now", git={})
    got = {b["name"]: b for b in doc["benchmarks"]}
    assert sorted(got) == ["test_b[numpy-cpu-f32]", "test_t[numpy-cpu-f32]"]
    b = got["test_b[numpy-cpu-f32]"]
    assert b["stats"]["median"] == pytest.approx(1e-3) and b["options"]["timer"] != "counts"
    assert b["extra_info"]["burnperf"]["measure"] == "counts"
    assert got["test_t[numpy-cpu-f32]"]["extra_info"]["burnperf"]["measure"] == "time"
    assert doc["burnperf_not_timed"] == ["perf_tests/test_ops.py::test_c[numpy-cpu-f32]"]
    both = document([timed], machine={"id": "m"}, created="now", git={})
    assert "burnperf_not_timed" not in both
