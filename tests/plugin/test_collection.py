"""Parametrisation, ids, skips and selection, as a user sees them."""

from __future__ import annotations

import importlib.util

import pytest

from pytest_burnperf import devices

from ._helpers import FAST, skip_reasons

HAS_TORCH = importlib.util.find_spec("torch") is not None

MODULE = """
import pytest

@pytest.mark.perf(backends=["cpu", "cuda", "opencl"], dtypes=["f32", "bf16"])
def test_mm(perf, device, dtype):
    a = device.random((16, 16), dtype)
    perf(device.xp.matmul, a, a)

def test_ordinary():
    assert 1 + 1 == 2
"""


NO_PYOPENCL = "pyopencl not installed (pip install pytest-burnperf[opencl])"


def test_ids_and_skip_reasons_for_absent_devices_and_dtypes(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # OpenCL may be present here (CI installs PoCL): make it absent so this test sees a skip.
    monkeypatch.setitem(
        devices.PROBES, "opencl", lambda: devices.Probe("opencl", absent={"opencl": NO_PYOPENCL})
    )
    pytester.makepyfile(MODULE)
    result = pytester.runpytest("--perf", "-v", *FAST)
    result.stdout.fnmatch_lines(["*::test_mm[[]numpy-cpu-f32] PASSED*", "*::test_ordinary PASSED*"])
    reasons = skip_reasons(result)
    assert reasons["numpy-cpu-bf16"] == "numpy has no bfloat16 dtype"
    assert reasons["opencl-f32"] == NO_PYOPENCL
    if importlib.util.find_spec("cupy") is None:
        assert reasons["cupy-cuda-f32"] == "cupy not installed (pip install pytest-burnperf[cupy])"
    else:  # installed without a GPU: the CUDA runtime's own words
        assert reasons["cupy-cuda-f32"].startswith("cupy ")
        assert "no CUDA device" in reasons["cupy-cuda-f32"]
    if HAS_TORCH:
        result.stdout.fnmatch_lines(
            ["*::test_mm[[]torch-cpu-f32] PASSED*", "*::test_mm[[]torch-cpu-bf16] PASSED*"]
        )
        assert "CUDA" in reasons["torch-cuda-f32"]
    else:
        assert reasons["torch-cpu-f32"].startswith("torch not installed")
    assert result.ret == 0


def test_without_perf_benchmarks_skip_and_ordinary_tests_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(MODULE)
    result = pytester.runpytest("-rs")
    result.assert_outcomes(passed=1, skipped=6)
    result.stdout.fnmatch_lines(["*SKIPPED [[]6[]]*perf benchmark: run with --perf*"])
    result.stdout.no_fnmatch_line("*pytest-burnperf*")


def test_k_selects_by_backend_and_dtype(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(MODULE)
    result = pytester.runpytest("--perf", "-v", "-rs", "-k", "numpy and f32", *FAST)
    result.assert_outcomes(passed=1, deselected=10)
    result.stdout.fnmatch_lines(["*test_mm[[]numpy-cpu-f32] PASSED*"])


def test_backend_and_dtype_filters_deselect(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(MODULE)
    result = pytester.runpytest(
        "--perf", "-v", "--perf-backends", "numpy", "--perf-dtypes", "f32", *FAST
    )
    result.assert_outcomes(passed=2, deselected=9)
    result.stdout.fnmatch_lines(["*test_mm[[]numpy-cpu-f32] PASSED*"])


def test_pedantic_gives_fresh_inputs_each_round(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        calls = []

        @pytest.mark.perf(backends=["numpy"])
        def test_sort(perf, device):
            def setup():
                calls.append(1)
                return (device.random((1000,), "f32"),), {}
            out = perf.pedantic(device.xp.sort, setup=setup, rounds=6, warmup_rounds=2)
            assert len(calls) == 8
            assert (out[1:] >= out[:-1]).all()
        """
    )
    result = pytester.runpytest("--perf", *FAST)
    result.assert_outcomes(passed=1)


def test_summary_table_columns(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(MODULE)
    result = pytester.runpytest("--perf", "-k", "numpy and f32", *FAST)
    result.stdout.fnmatch_lines(
        [
            "*pytest-burnperf*",
            "baselines in baselines/*",
            "benchmark  shape  backend  device  dtype  clock  *median  IQR %  baseline  "
            "change [[]95% CI[]]  p  detects  peak mem  arith  mem  verdict",
            "test_mm    -      numpy    cpu     f32    host  * -  *-  -  *-  * KiB      -    -  "
            "no-baseline",
            "perf: 1 no-baseline",
            "record baselines for this machine with: "
            "pytest --perf --update-baselines -k 'numpy and f32' --perf-samples 15 *",
        ]
    )
