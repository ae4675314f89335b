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
    if "cupy-cuda-f32" not in reasons:  # a machine with a CUDA GPU: its cases ran
        result.stdout.fnmatch_lines(["*::test_mm[[]cupy-cuda0-f32] PASSED*"])
    elif importlib.util.find_spec("cupy") is None:
        assert reasons["cupy-cuda-f32"].startswith(
            "cupy not installed (pip install pytest-burnperf[cupy-cuda12] or [cupy-cuda13]"
        )
    else:  # installed without a GPU: the CUDA runtime's own words
        assert reasons["cupy-cuda-f32"].startswith("cupy ")
        assert "no CUDA device" in reasons["cupy-cuda-f32"]
    if HAS_TORCH:
        result.stdout.fnmatch_lines(
            ["*::test_mm[[]torch-cpu-f32] PASSED*", "*::test_mm[[]torch-cpu-bf16] PASSED*"]
        )
        if "torch-cuda-f32" in reasons:
            assert "CUDA" in reasons["torch-cuda-f32"]
        else:  # a machine with a CUDA GPU
            result.stdout.fnmatch_lines(["*::test_mm[[]torch-cuda0-f32] PASSED*"])
    else:
        assert reasons["torch-cpu-f32"].startswith("torch not installed")
    assert result.ret == 0


def test_without_perf_and_smoke_off_benchmarks_skip(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(MODULE)
    result = pytester.runpytest("-rs", "--no-perf-smoke")
    result.assert_outcomes(passed=1, skipped=6)
    result.stdout.fnmatch_lines(["*SKIPPED [[]6[]]*perf benchmark: run with --perf*"])
    result.stdout.no_fnmatch_line("*pytest-burnperf*")
    pytester.makeini("[pytest]\nperf_smoke = false\n")
    pytester.runpytest().assert_outcomes(passed=1, skipped=6)


SMOKE = """
import pytest

CALLS = []

@pytest.mark.perf(backends=["numpy"], dtypes=["f32", "f64"])
def test_checked(perf, device, dtype, perf_size):
    assert perf_size == "tiny"
    n = {"tiny": 8, "small": 256}[perf_size]
    a = device.random((n, n), dtype)
    perf.work(flops=2 * n**3)
    out = perf(device.xp.matmul, a, a)
    CALLS.append(1)
    assert out.shape == (n, n) and len(CALLS) in (1, 2)

@pytest.mark.perf(backends=["numpy"])
def test_wrong(perf, device):
    out = perf(lambda: 41)
    assert out == 42, "benchmark computes the wrong thing"

@pytest.mark.perf(backends=["numpy"])
def test_pedantic(perf):
    seen = []
    perf.pedantic(seen.append, setup=lambda: ((len(seen),), {}), rounds=50)
    assert seen == [0]

@pytest.mark.perf(backends=["numpy"])
def test_forgot(perf):
    pass
"""


def test_smoke_mode_runs_each_body_once_untimed_at_the_tiny_size(
    pytester: pytest.Pytester,
) -> None:
    """Without --perf the benchmarks' own checks run (once, untimed): a wrong result fails in an
    ordinary test run, and a benchmark that never calls perf is caught there too."""
    pytester.makepyfile(test_smoke=SMOKE)
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=3, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*::test_checked[[]numpy-cpu-f32[]] PASSED*",
            "*::test_checked[[]numpy-cpu-f64[]] PASSED*",
            "*::test_wrong[[]numpy-cpu-f32[]] FAILED*",
            "*::test_pedantic[[]numpy-cpu-f32[]] PASSED*",
            "*benchmark computes the wrong thing*",
            "*test_forgot*never called perf(fn, ...)*",
        ]
    )
    result.stdout.no_fnmatch_line("*pytest-burnperf ===*")  # nothing timed, no table
    assert not (pytester.path / "baselines").exists()


def test_k_selects_by_backend_and_dtype(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(MODULE)
    result = pytester.runpytest("--perf", "-v", "-rs", "-k", "numpy and f32", *FAST)
    result.assert_outcomes(passed=1, deselected=10)
    result.stdout.fnmatch_lines(["*test_mm[[]numpy-cpu-f32] PASSED*"])


def test_a_k_that_selects_no_benchmark_says_how_their_ids_read(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(MODULE)
    result = pytester.runpytest("--perf", "-k", "test_mm[f32]", *FAST)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(
        [
            "-k 'test_mm[[]f32]' selected none of the * @pytest.mark.perf benchmark(s): under "
            "--perf their ids end in the device and dtype (e.g. test_mm[[]numpy-cpu-f32]); "
            "`pytest --perf --collect-only -q` lists them"
        ]
    )
    # a -k that selects an ordinary test (and so runs something) says nothing about them
    other = pytester.runpytest("--perf", "-k", "ordinary", *FAST)
    other.assert_outcomes(passed=1, deselected=10)
    other.stdout.no_fnmatch_line("*selected none of the*")


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
    result = pytester.runpytest("--perf", "-v", "-k", "numpy and f32", *FAST)  # -v: all columns
    result.stdout.fnmatch_lines(
        [
            "*pytest-burnperf*",
            "baselines in baselines/*",
            "benchmark  shape  backend  device  dtype  clock  *median  IQR %  baseline  "
            "change [[]95% CI[]]  p  detects  peak mem  *memory/call  arith  mem  verdict",
            "test_mm    -      numpy    cpu     f32    host  * -  *-  -  *-  * KiB  * (no base)  * -    -  "
            "no-baseline",
            "perf: 1 no-baseline",
            "perf: judged 0 of 1 benchmarks (0%); NOT judged: 1 (1 no reference)",
            "  1 not judged, no baseline for this hardware class * with "
            "`pytest --perf --perf-against auto -k 'numpy and f32' --perf-samples 15 *",
        ]
    )
    flat = " ".join(result.stdout.str().split())
    assert (
        "record baselines on this machine with "
        "`pytest --perf --perf-update -k 'numpy and f32' --perf-samples 15 " in flat
    )


def test_table_fits_the_terminal_and_takes_columns_sort_and_groups(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    pytester.makepyfile(MODULE)
    sel = ("-k", "f32 and (numpy or torch)")
    result = pytester.runpytest("--perf", *sel, *FAST)
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if " pytest-burnperf " in line)
    end = next(i for i, line in enumerate(lines) if line.startswith("perf: "))
    assert all(len(line) <= 80 for line in lines[start:end]), lines[start:end]
    result.stdout.fnmatch_lines(["benchmark * dtype * median * change [[]95% CI[]] * verdict"])
    chosen = pytester.runpytest(
        "--perf",
        *sel,
        "--perf-columns",
        "verdict,device,benchmark",
        "--perf-sort",
        "device",
        "--perf-group-by",
        "dtype",
        *FAST,
    )
    chosen.stdout.fnmatch_lines(
        ["dtype f32:", "verdict  *device  benchmark", "no-baseline  cpu  *test_mm"]
    )
    bad = pytester.runpytest("--perf", "--perf-columns", "speed")
    bad.stderr.fnmatch_lines(["*--perf-columns: unknown column 'speed'; allowed: all, benchmark*"])


@pytest.mark.slow
def test_perf_require_fails_a_run_whose_device_is_absent(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A GPU CI job that lost its GPU must not go green by skipping. ROCm is made absent, so a
    machine that has one sees the same."""
    gone = "no ROCm device (made absent by this test)"
    monkeypatch.setitem(
        devices.PROBES, "cupy", lambda: devices.Probe("cupy", absent={"cuda": gone, "rocm": gone})
    )
    real_torch = devices.PROBES["torch"]

    def torch_without_rocm() -> devices.Probe:
        probe = real_torch()
        probe.devices = [d for d in probe.devices if d.kind != "rocm"]
        probe.absent["rocm"] = gone
        return probe

    monkeypatch.setitem(devices.PROBES, "torch", torch_without_rocm)
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.perf(backends=["cpu", "cuda"])
        def test_a(perf, device):
            perf(sum, range(10))
        """
    )
    fast = ("--perf-samples", "5", "--perf-max-samples", "5", "--perf-warmup", "0")
    result = pytester.runpytest("--perf", "--perf-require", "rocm", *fast)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --perf-require: no device for rocm (*made absent*); this run would only skip *"]
    )
    ok = pytester.runpytest("--perf", "--perf-require", "numpy,cpu", *fast)
    assert ok.ret == pytest.ExitCode.OK
    pytester.makeini("[pytest]\nperf_require = metal\n")
    ini = pytester.runpytest("--perf", *fast)
    assert ini.ret == pytest.ExitCode.USAGE_ERROR
    bad = pytester.runpytest("--perf", "--perf-require", "gpu", *fast)
    bad.stderr.fnmatch_lines(["*argument --perf-require: *'gpu'*"])


def test_a_projects_own_device_fixture_is_named_not_silently_replaced(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(
        """
        import pytest

        @pytest.fixture
        def device():
            return "the project's device"
        """
    )
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.perf(backends=["numpy"])
        def test_bench(perf, device):
            assert device.id == "numpy-cpu"  # the benchmark's device, as documented
            perf(sum, [1])

        def test_ordinary(device):
            assert device == "the project's device"
        """
    )
    result = pytester.runpytest("-W", "default")
    result.assert_outcomes(passed=2, warnings=1)
    result.stdout.fnmatch_lines(
        [
            "*PerfFixtureShadowWarning: test_*::test_bench: the project's own `device` fixture "
            "(conftest.device) is not used in this @pytest.mark.perf test*"
        ]
    )


class _FakeGpu:
    """numpy's device dressed as a CUDA GPU of cupy (for the bookkeeping of GPU faults)."""

    id, kind, library, name = "cupy-cuda0", "cuda", "cupy", "Fake GPU"

    def __init__(self, inner: object) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)


@pytest.mark.slow
def test_a_gpu_fault_skips_the_rest_of_that_gpus_benchmarks(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An illegal address is sticky: every later call on that GPU would fail too, so its later
    benchmarks are skipped with the fault named, and the CPU's still run."""
    cpu = devices.PROBES["numpy"]().devices[0]
    monkeypatch.setitem(devices.PROBES, "cupy", lambda: devices.Probe("cupy", [_FakeGpu(cpu)]))
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.perf(backends=["numpy", "cupy"], dtypes=["f32"])
        def test_a_faults(perf, device):
            if device.kind == "cuda":
                raise RuntimeError("CUDA error: an illegal memory access was encountered")
            perf(sum, range(10))

        @pytest.mark.perf(backends=["numpy", "cupy"], dtypes=["f32"])
        def test_b_after(perf, device):
            perf(sum, range(10))
        """
    )
    fast = ("--perf-samples", "5", "--perf-max-samples", "5", "--perf-warmup", "0")
    result = pytester.runpytest("--perf", "-p", "no:randomly", "-rs", *fast)
    result.assert_outcomes(passed=2, failed=1, skipped=3)  # and cupy-rocm twice: absent
    result.stdout.fnmatch_lines(
        [
            "cupy-cuda0 faulted in *test_a_faults* its later benchmarks in this process were "
            "skipped*",
            "SKIPPED*cupy-cuda0 faulted earlier in this process (*test_a_faults*"
            "CUDA error: an illegal memory access*",
        ]
    )


@pytest.mark.slow
def test_everything_a_sample_does_runs_inside_the_devices_context(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """cupy-cuda1 must time GPU 1's work: the calls, the clock, the flush and the meter run
    inside ``device.active()`` (``with cupy.cuda.Device(1)``)."""
    import contextlib

    cpu = devices.PROBES["numpy"]().devices[0]
    inside: list[bool] = [False]

    class Gpu(_FakeGpu):
        id = "cupy-cuda1"

        @contextlib.contextmanager
        def active(self):  # type: ignore[no-untyped-def]
            inside[0] = True
            try:
                yield
            finally:
                inside[0] = False

        def peak_memory(self, call):  # type: ignore[no-untyped-def]
            assert inside[0], "metered outside the device's context"
            call()
            return 64

    monkeypatch.setitem(devices.PROBES, "cupy", lambda: devices.Probe("cupy", [Gpu(cpu)]))
    monkeypatch.setattr("tests.plugin.test_collection.INSIDE", inside, raising=False)
    pytester.makepyfile(
        """
        import pytest
        from tests.plugin.test_collection import INSIDE

        def work():
            assert INSIDE[0], "called outside the device's context"
            return sum(range(10))

        @pytest.mark.perf(backends=["cupy-cuda1"], dtypes=["f32"])
        def test_on_gpu1(perf):
            perf(work)
        """
    )
    fast = ("--perf-samples", "5", "--perf-max-samples", "5", "--perf-warmup", "0")
    result = pytester.runpytest("--perf", "-p", "no:randomly", *fast)
    result.assert_outcomes(passed=1)
    assert inside == [False]  # and left afterwards


def test_a_benchmark_that_fails_before_perf_is_counted_as_not_measured(
    pytester: pytest.Pytester,
) -> None:
    """A benchmark not judged is a miss: one whose test failed before it left a result (here an
    error before perf(); under counts, a counting process that died) is in "judged N of M"."""
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.perf(backends=["numpy"])
        def test_ok(perf, device):
            perf(lambda: sum(range(100)))

        @pytest.mark.perf(backends=["numpy"])
        def test_broken(perf, device):
            raise RuntimeError("broken before it was measured")
        """
    )
    result = pytester.runpytest("--perf", *FAST)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "perf: judged 0 of 2 benchmarks (0%); NOT judged: 2 (1 not measured, 1 no reference)",
            "  1 not judged, their test failed before they were measured*",
        ]
    )


def test_a_projects_parametrised_dtype_fixture_beside_a_perf_test(
    pytester: pytest.Pytester,
) -> None:
    """A tensor library's conftest parametrises its own `dtype` fixture: a perf test beside it
    is parametrised by its marker alone (it failed to collect: "duplicate parametrization of
    'dtype'"; before that, the project's ids were laid on top), the project's benchmark-style
    tests keep the project's parametrisation, and the warning comes from the perf test when it
    runs, not from a run that deselects it (issue 76)."""
    pytester.makeconftest(
        """
        import pytest

        @pytest.fixture(params=["float32", "float64"], ids=["f32p", "f64p"])
        def dtype(request):
            return request.param
        """
    )
    pytester.makepyfile(
        test_mixed="""
        import pytest

        @pytest.mark.perf(backends=["numpy"], dtypes=["f32"])
        def test_mine(perf, dtype):
            assert dtype == "f32"
            perf(sum, [1])

        def test_theirs(benchmark, dtype):
            assert dtype in ("float32", "float64")
            benchmark(sum, [1])
        """
    )
    listed = pytester.runpytest("--collect-only", "-q", "-p", "no:benchmark")
    listed.stdout.fnmatch_lines(
        [
            "test_mixed.py::test_mine[numpy-cpu-f32]",
            "test_mixed.py::test_theirs[f32p]",
            "test_mixed.py::test_theirs[f64p]",
        ]
    )
    assert "test_mine[" not in listed.stdout.str().replace("test_mine[numpy-cpu-f32]", "")
    ran = pytester.runpytest("-W", "default", "-p", "no:benchmark")
    ran.assert_outcomes(passed=3, warnings=1)
    ran.stdout.fnmatch_lines(
        ["*PerfFixtureShadowWarning: test_mixed.py::test_mine: the project's*"]
    )
    deselected = pytester.runpytest("-W", "default", "-p", "no:benchmark", "-k", "theirs")
    deselected.assert_outcomes(passed=2)
    assert "PerfFixtureShadowWarning" not in deselected.stdout.str()
