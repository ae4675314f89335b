"""A suite written for pytest-benchmark runs unchanged under --perf: recorded, gated, re-run."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from ._helpers import FAST, use_virtual_clock

#: These projects are pytest-benchmark's suites: they load it, as every installed plugin.
pytestmark = pytest.mark.installed_plugins

#: On the virtual clock (_helpers.use_virtual_clock), so a planted slowdown is exact.
SUITE = """
import os

import pytest

import virtual_clock


def spin(seconds):
    virtual_clock.spin(seconds)
    return seconds


def test_plain(benchmark):
    seconds = 200e-6 * float(os.environ.get("BURNPERF_TEST_WORK", "1.0"))
    assert benchmark(spin, seconds) == seconds


TORN = []


@pytest.mark.benchmark(group="io", min_rounds=5, warmup=False)
def test_pedantic(benchmark):
    def setup():
        return (200e-6,), {}

    def teardown(seconds):
        TORN.append(seconds)

    benchmark.extra_info["size"] = 3
    result = benchmark.pedantic(spin, setup=setup, teardown=teardown, rounds=15)
    assert result == 200e-6 and TORN  # each round is torn down (once in smoke mode)
"""

#: The suite doing real work (a busy-wait), where pytest-benchmark's own clock must see it.
REAL_SUITE = SUITE.replace("import virtual_clock\n", "import time\n").replace(
    "    virtual_clock.spin(seconds)\n",
    "    end = time.perf_counter() + seconds\n    while time.perf_counter() < end:\n        pass\n",
)


def test_a_pytest_benchmark_suite_runs_unchanged(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_virtual_clock(pytester)
    pytester.makepyfile(test_suite=SUITE)
    rec = pytester.runpytest("--perf", "--perf-update", "--perf-rounds", "1", *FAST)
    rec.assert_outcomes(passed=2)
    (path,) = sorted((pytester.path / "baselines").rglob("test_suite.json"))
    assert set(json.loads(path.read_text())["benchmarks"]) == {"test_plain", "test_pedantic"}

    again = pytester.runpytest("--perf", "--perf-json", "r.json", *FAST)
    again.assert_outcomes(passed=2)
    doc = json.loads(Path(pytester.path, "r.json").read_text())
    by_test = {r["name"]: r for r in doc["results"]}
    assert by_test["test_pedantic"]["group"] == "io"
    assert by_test["test_pedantic"]["extra_info"] == {"size": 3}
    assert len(by_test["test_pedantic"]["samples"]) == 15

    monkeypatch.setenv("BURNPERF_TEST_WORK", "1.6")  # far above the 1-vs-1 noise floor
    slow = pytester.runpytest("--perf", *FAST)
    slow.assert_outcomes(passed=1, failed=1)
    slow.stdout.fnmatch_lines(["test_plain: * (+*%*) exceeds *"])


def test_without_perf_the_body_runs_once(pytester: pytest.Pytester) -> None:
    use_virtual_clock(pytester)
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest("-p", "no:benchmark")
    result.assert_outcomes(passed=2)


def test_pedantic_with_one_round_is_timed_not_judged(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_one="""
        def test_once(benchmark):
            benchmark.pedantic(sum, args=(range(10),), rounds=1)
        """
    )
    pytester.runpytest("--perf", "--perf-update", "--perf-rounds", "1", *FAST).assert_outcomes(
        passed=1
    )
    result = pytester.runpytest("--perf", *FAST)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_once *inconclusive*"])


def test_bad_benchmark_marker_is_an_error_of_that_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_bad="""
        import pytest

        @pytest.mark.benchmark(rounds=5)
        def test_x(benchmark):
            benchmark(sum, range(3))
        """
    )
    result = pytester.runpytest("--perf", *FAST)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*test_bad.py::test_x: @pytest.mark.benchmark got unknown keyword 'rounds'*"]
    )


def test_with_pytest_benchmark_installed_it_keeps_its_fixture_without_perf(
    pytester: pytest.Pytester,
) -> None:
    pytest.importorskip("pytest_benchmark")
    use_virtual_clock(pytester)
    pytester.makepyfile(test_suite=SUITE)
    theirs = pytester.runpytest("-p", "benchmark")
    theirs.assert_outcomes(passed=2)
    theirs.stdout.fnmatch_lines(["*- benchmark: 1 tests -*"])  # pytest-benchmark's own tables
    ours = pytester.runpytest("-p", "benchmark", "--perf", *FAST)
    ours.assert_outcomes(passed=2)
    ours.stdout.fnmatch_lines(
        [
            "2 pytest-benchmark test(s) run by pytest-burnperf, not by pytest-benchmark (its "
            "hooks are off under --perf)"
        ]
    )
    ours.stdout.no_fnmatch_line("*- benchmark: 1 tests -*")
    # its marker stays known to --strict-markers although its hooks are off
    strict = pytester.runpytest("-p", "benchmark", "--perf", "--strict-markers", *FAST)
    strict.assert_outcomes(passed=2)
    # none of them selected: nothing is said about them
    deselected = pytester.runpytest("-p", "benchmark", "--perf", "-k", "nothing_here", *FAST)
    deselected.stdout.no_fnmatch_line("*pytest-benchmark test(s) timed*")
    # without a test using the fixture, nothing is said about it
    pytester.makepyfile(test_suite="def test_x():\n    pass\n")
    quiet = pytester.runpytest("-p", "benchmark", "--perf", *FAST)
    quiet.stdout.no_fnmatch_line("*pytest-benchmark test(s) timed*")


def test_marker_known_without_pytest_benchmark(pytester: pytest.Pytester) -> None:
    use_virtual_clock(pytester)
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest("-p", "no:benchmark", "--strict-markers", "--perf", *FAST)
    result.assert_outcomes(passed=2)


@pytest.mark.slow
def test_pytest_benchmark_json_export_and_import(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil
    import subprocess
    import sys

    from pytest_burnperf.cli import main

    pytest.importorskip("pytest_benchmark")
    # real work: pytest-benchmark's timings and this plugin's must be of the same thing
    assert "virtual_clock" not in REAL_SUITE
    pytester.makepyfile(test_suite=REAL_SUITE)
    # a run saved by pytest-benchmark itself (this plugin off), with its raw data
    saved = pytester.runpytest(
        "-p",
        "no:burnperf",
        "-p",
        "benchmark",
        "--benchmark-json",
        "saved.json",
        "--benchmark-save-data",
        "--benchmark-max-time",
        "0.05",
    )
    saved.assert_outcomes(passed=2)
    monkeypatch.chdir(pytester.path)
    assert main(["import-pytest-benchmark", "saved.json"]) == 0
    (path,) = sorted((pytester.path / "baselines").rglob("test_suite.json"))
    assert set(json.loads(path.read_text())["benchmarks"]) == {"test_plain", "test_pedantic"}
    judged = pytester.runpytest("--perf", "--perf-threshold", "1000%", *FAST)
    judged.assert_outcomes(passed=2)
    judged.stdout.no_fnmatch_line("*no-baseline*")
    judged.stdout.no_fnmatch_line("*incomparable*")

    # without raw data: refused, with the reason
    doc = json.loads((pytester.path / "saved.json").read_text())
    for b in doc["benchmarks"]:
        del b["stats"]["data"]
    (pytester.path / "summary.json").write_text(json.dumps(doc))
    assert main(["import-pytest-benchmark", "summary.json"]) == 2

    # export: pytest-benchmark's format, read by pytest-benchmark's own compare command (real
    # timing: a 1000% threshold keeps the outcome off the host, whatever verdict it prints; a
    # busy machine timed the 200 us call at 596 us, +197%, and failed it at the default 5%)
    out = pytester.runpytest(
        "--perf", "--perf-json-format", "pytest-benchmark", "--perf-json", "pb.json",
        "--perf-threshold", "1000%", *FAST,
    )  # fmt: skip
    out.assert_outcomes(passed=2)
    pb = json.loads((pytester.path / "pb.json").read_text())
    names = {b["name"]: b for b in pb["benchmarks"]}
    assert set(names) == {"test_plain", "test_pedantic"}
    assert (
        names["test_pedantic"]["group"] == "io"
        and names["test_pedantic"]["extra_info"]["size"] == 3
    )
    assert names["test_plain"]["extra_info"]["burnperf"]["verdict"] in (
        "unchanged",
        "inconclusive",
        "improved",
        "regressed",
    )
    assert len(names["test_pedantic"]["stats"]["data"]) == 15
    tool = shutil.which("pytest-benchmark", path=str(Path(sys.executable).parent))
    if tool:
        shown = subprocess.run(
            [tool, "compare", "pb.json"], capture_output=True, text=True, cwd=pytester.path
        )
        assert shown.returncode == 0, shown.stderr
        assert "test_plain" in shown.stdout


def test_benchmark_json_is_written_under_perf(pytester: pytest.Pytester) -> None:
    """pytest-benchmark's own --benchmark-json is honoured when this plugin times its tests
    (pytest-benchmark's hooks are off then, and it would write nothing)."""
    pytest.importorskip("pytest_benchmark")
    use_virtual_clock(pytester)
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest("--perf", "--benchmark-json", "out.json", *FAST)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*pytest-benchmark's JSON of this run written to *out.json*"])
    doc = json.loads((pytester.path / "out.json").read_text())
    names = {b["name"]: b for b in doc["benchmarks"]}
    assert set(names) == {"test_plain", "test_pedantic"}
    assert names["test_pedantic"]["group"] == "io"
    assert names["test_plain"]["stats"]["rounds"] > 0


PARAMETRISED = """
import pytest

import virtual_clock


@pytest.mark.parametrize("n", [10, 20])
def test_sized(benchmark, n):
    benchmark(virtual_clock.spin, n * 1e-5)


@pytest.mark.parametrize("shape", ["square", (2, 3)])
@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_native(perf, device, dtype, shape):
    perf(virtual_clock.spin, 1e-4)
"""


def test_pytest_benchmark_json_names_each_tests_parameters(pytester: pytest.Pytester) -> None:
    """``params`` and ``param`` as pytest-benchmark fills them: a test written for it keeps its
    own parameters (not this plugin's ``cpu`` case); a perf test has its device, dtype and own
    parameters, a value JSON cannot hold by its repr."""
    use_virtual_clock(pytester)
    pytester.makepyfile(test_suite=PARAMETRISED)
    out = pytester.runpytest(
        "--perf", "--perf-json-format", "pytest-benchmark", "--perf-json", "pb.json", *FAST
    )
    out.assert_outcomes(passed=4)
    pb = json.loads((pytester.path / "pb.json").read_text())
    got = {b["name"]: (b["params"], b["param"]) for b in pb["benchmarks"]}
    assert got == {
        "test_sized[10]": ({"n": 10}, "10"),
        "test_sized[20]": ({"n": 20}, "20"),
        "test_native[numpy-cpu-f64-square]": (
            {"device": "numpy-cpu", "dtype": "f64", "shape": "square"},
            "numpy-cpu-f64-square",
        ),
        "test_native[numpy-cpu-f64-shape1]": (
            {"device": "numpy-cpu", "dtype": "f64", "shape": "(2, 3)"},
            "numpy-cpu-f64-shape1",
        ),
    }


#: A pytest-benchmark suite whose ids come from parametrize and from a parametrised fixture.
KERNELS = """
import pytest

import virtual_clock


@pytest.fixture(params=["mylib", "theirs"])
def lib(request):
    return request.param


@pytest.mark.parametrize("shape", [(3,)], ids=["shape0"])
@pytest.mark.parametrize("op", ["nansum", "nanmax"])
def test_kernels(benchmark, op, shape, lib):
    benchmark(virtual_clock.spin, 100e-6)
"""


def test_a_pytest_benchmark_tests_id_is_the_same_with_and_without_perf(
    pytester: pytest.Pytester,
) -> None:
    # issue 41: `[nansum-shape0-mylib]` became `[nansum-shape0-cpu-mylib]` under --perf, so the
    # project's own -k selected nothing
    use_virtual_clock(pytester)
    pytester.makepyfile(test_pb_ids=KERNELS)  # not test_kernels: perf_tests has one
    plain = pytester.runpytest("-p", "no:benchmark", "--collect-only", "-q")
    perf = pytester.runpytest("--perf", "--collect-only", "-q", *FAST)
    ids = [line for line in plain.outlines if "::" in line]
    assert "test_pb_ids.py::test_kernels[mylib-nansum-shape0]" in ids
    assert ids == [line for line in perf.outlines if "::" in line]
    picked = pytester.runpytest("--perf", "-k", "mylib-nansum-shape0", *FAST)
    picked.assert_outcomes(passed=1)
    picked.stdout.fnmatch_lines(["*test_kernels[[]mylib-nansum-shape0[]]*no-baseline*"])


@pytest.mark.slow
def test_baselines_recorded_with_cpu_in_the_id_are_found_and_renamed(
    pytester: pytest.Pytester,
) -> None:
    use_virtual_clock(pytester)
    pytester.makepyfile(test_suite=SUITE)
    pytester.runpytest("--perf", "--perf-update", "--perf-rounds", "1", *FAST).assert_outcomes(
        passed=2
    )
    (path,) = sorted((pytester.path / "baselines").rglob("test_suite.json"))
    doc = json.loads(path.read_text())
    # as an earlier release wrote them: the case in the id
    doc["benchmarks"] = {f"{k}[cpu]": v for k, v in doc["benchmarks"].items()}
    path.write_text(json.dumps(doc))
    judged = pytester.runpytest("--perf", "--perf-threshold", "1000%", *FAST)
    judged.assert_outcomes(passed=2)
    judged.stdout.no_fnmatch_line("*no-baseline*")
    # recorded again: under the test's own id, the old name gone
    again = pytester.runpytest("--perf", "--perf-update", "-k", "test_plain", *FAST)
    again.assert_outcomes(passed=1)
    assert set(json.loads(path.read_text())["benchmarks"]) == {"test_plain", "test_pedantic[cpu]"}


#: pytest-benchmark's pedantic as projects write it: no rounds= (its default times one cold
#: call), fresh inputs from a setup each round; ROUNDS pins them where the variable says so.
PEDANTIC_SUITE = """
import os

import pytest

import virtual_clock

ROUNDS = {"rounds": int(os.environ["PINNED_ROUNDS"])} if os.environ.get("PINNED_ROUNDS") else {}


def work(seconds):
    virtual_clock.spin(seconds * float(os.environ.get("BURNPERF_TEST_WORK", "1.0")))
    return seconds


@pytest.mark.parametrize("size", [1, 2, 3])
def test_pedantic(benchmark, size):
    def setup():
        return (100e-6 * size,), {}

    assert benchmark.pedantic(work, setup=setup, **ROUNDS) == 100e-6 * size
"""


@pytest.mark.slow
def test_pedantic_without_rounds_is_sampled_judged_and_said_once(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without rounds= each benchmark gets a warm-up round and the benchmark's samples each
    process round (not one cold call), the run says so once, and a planted +15% is caught."""
    use_virtual_clock(pytester)
    pytester.makepyfile(test_suite=PEDANTIC_SUITE)
    rec = pytester.runpytest("--perf", "--perf-update", *FAST)
    rec.assert_outcomes(passed=3)
    rec.stdout.fnmatch_lines(["*pedantic without rounds=: 3 benchmark(s) sampled here, 1 warm-up*"])
    (path,) = sorted((pytester.path / "baselines").rglob("test_suite.json"))
    entries = json.loads(path.read_text())["benchmarks"].values()
    assert all(
        e["pedantic"] == {"rounds": None, "iterations": 1, "warmup_rounds": 1, "setup": True}
        for e in entries
    )
    same = pytester.runpytest("--perf", "--perf-json", "r.json", *FAST)
    same.assert_outcomes(passed=3)
    results = json.loads(Path(pytester.path, "r.json").read_text())["results"]
    # one process round: the between-run prior alone bounds the change, so not "unchanged"
    assert "regressed" not in {r["verdict"]["status"] for r in results}
    assert all(len(r["samples"]) == 15 and r["warmup_calls"] == 1 for r in results)
    monkeypatch.setenv("BURNPERF_TEST_WORK", "1.15")
    slower = pytester.runpytest("--perf", *FAST)
    slower.assert_outcomes(failed=3)


@pytest.mark.slow
def test_a_baseline_sampled_with_other_pedantic_settings_is_not_compared(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recorded with rounds=20, run as written without rounds= (or with rounds=1): the
    setting is named and nothing is judged against the other kind of sample."""
    use_virtual_clock(pytester)
    pytester.makepyfile(test_suite=PEDANTIC_SUITE)
    monkeypatch.setenv("PINNED_ROUNDS", "20")
    pytester.runpytest("--perf", "--perf-update", *FAST).assert_outcomes(passed=3)
    monkeypatch.setenv("PINNED_ROUNDS", "1")
    result = pytester.runpytest("--perf", "--perf-json", "r.json", *FAST)
    result.assert_outcomes(passed=3)
    results = json.loads(Path(pytester.path, "r.json").read_text())["results"]
    assert {r["verdict"]["status"] for r in results} == {"incomparable"}
    reason = results[0]["verdict"]["reason"]
    assert "baseline sampled with pedantic rounds=20" in reason and "rounds differ" in reason
    result.stdout.fnmatch_lines(
        ["*pedantic with rounds=: 3 benchmark(s) timed as written; 3 with*"]
    )
    monkeypatch.delenv("PINNED_ROUNDS")
    unpinned = pytester.runpytest("--perf", "--perf-json", "r.json", *FAST)
    unpinned.assert_outcomes(passed=3)
    results = json.loads(Path(pytester.path, "r.json").read_text())["results"]
    assert {r["verdict"]["status"] for r in results} == {"incomparable"}
    assert "rounds not given (sampled)" in results[0]["verdict"]["reason"]


def test_a_pytest_benchmark_test_runs_on_the_host_cpu_not_numpy(pytester: pytest.Pytester) -> None:
    """Shown and kept as python-cpu with no dtype: a pure-Python project is not labelled numpy,
    its baselines hold no numpy or BLAS version; one recorded on numpy-cpu by an older release
    is still compared, with a note."""
    use_virtual_clock(pytester)
    pytester.makepyfile(test_suite=SUITE)
    rec = pytester.runpytest(
        "--perf", "--perf-update", "--perf-rounds", "1", "-k", "test_plain", *FAST
    )
    rec.assert_outcomes(passed=1)
    rec.stdout.fnmatch_lines(["test_plain * python * - *"])
    rec.stdout.no_fnmatch_line("*numpy*f64*")
    (path,) = sorted((pytester.path / "baselines").rglob("test_suite.json"))
    doc = json.loads(path.read_text())
    entry = doc["benchmarks"]["test_plain"]
    assert entry["device"]["library"] == "python" and entry["dtype"] == "-"
    assert set(entry["device"]["versions"]) == {"python"} and "blas" not in entry["device"]
    # as an earlier release recorded it: on numpy's CPU device
    entry["device"] = {
        **entry["device"],
        "id": "numpy-cpu",
        "library": "numpy",
        "threads": 1,
        "versions": {"numpy": "1.0.0"},
        "blas": "openblas",
        "dispatch": {"numpy": "SOMETHING", "blas": "Haswell"},
    }
    path.write_text(json.dumps(doc))
    judged = pytester.runpytest(
        "--perf", "--perf-threshold", "1000%", "--perf-json", "r.json", "-k", "test_plain", *FAST
    )
    judged.assert_outcomes(passed=1)
    (res,) = json.loads(Path(pytester.path, "r.json").read_text())["results"]
    assert res["backend"] == "python" and res["dtype"] == "-"
    assert res["verdict"]["status"] not in ("incomparable", "no-baseline")
    assert any("baseline recorded as numpy-cpu" in n for n in res["verdict"]["notes"])


@pytest.mark.slow
def test_a_pytest_benchmark_suites_extra_rounds_fork_like_numpys(
    pytester: pytest.Pytester,
) -> None:
    """python-cpu is a CPU device that survives a fork: its extra rounds are forked from one round
    server on Linux (a fresh interpreter a round cost such a suite about 1.5 s a round)."""
    use_virtual_clock(pytester)
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest("--perf", "--perf-rounds", "2", "-k", "test_plain", *FAST)
    result.assert_outcomes(passed=1)
    how = "forked" if sys.platform.startswith("linux") and hasattr(os, "fork") else "fresh"
    result.stdout.fnmatch_lines([f"burnperf: round 1/2: 1 benchmarks in a {how} process (*"])


#: A tensor library's own pytest-benchmark suite: its device and dtype are its own fixtures.
TORCH_SUITE = """
import numpy as np
import pytest
import torch


@pytest.fixture
def device():
    return "cpu"


@pytest.fixture(params=[torch.float32, torch.float64], ids=["f32", "f64"])
def dtype(request):
    return request.param


def scale(x):
    return x * 2


def test_scale(benchmark, device, dtype):
    x = torch.ones(256, device=device, dtype=dtype)
    out = benchmark(scale, x)
    assert out.dtype == dtype


def test_closure(benchmark):
    x = torch.ones(256, dtype=torch.float32)
    benchmark(lambda: x + 1)


def test_numpy(benchmark):
    benchmark(np.sum, np.ones(64))


def test_python(benchmark):
    benchmark(sorted, [3, 1, 2])


def test_setup_alone(benchmark):
    # the arrays come from the setup alone, a fresh one each round
    def setup():
        return (torch.ones(256, dtype=torch.float64),), {}

    benchmark.pedantic(scale, setup=setup, rounds=3)
"""


def test_a_pytest_benchmark_test_runs_on_the_device_and_dtype_of_its_arrays(
    pytester: pytest.Pytester,
) -> None:
    """Called with torch float32 tensors, a test written for pytest-benchmark is a torch-cpu f32
    benchmark, keyed by torch's version; numpy's arrays make it numpy-cpu; a pure-Python call
    stays python-cpu. The project's own fixtures and parametrisation are left as written. A
    baseline recorded as python-cpu by an earlier release is still compared, with a note. A
    pedantic call whose arrays only its setup makes runs where they live."""
    pytester.makepyfile(test_suite=TORCH_SUITE)
    rec = pytester.runpytest(
        "--perf",
        "--perf-update",
        "--perf-measure",
        "time",
        "--perf-rounds",
        "1",
        "--perf-json",
        "rec.json",
        *FAST,
    )
    rec.assert_outcomes(passed=6)
    got = {
        r["name"]: (r["device_id"], r["dtype"])
        for r in json.loads(Path(pytester.path, "rec.json").read_text())["results"]
    }
    assert got == {
        "test_scale[f32]": ("torch-cpu", "f32"),
        "test_scale[f64]": ("torch-cpu", "f64"),
        "test_closure": ("torch-cpu", "f32"),
        "test_numpy": ("numpy-cpu", "f64"),
        "test_python": ("python-cpu", "-"),
        "test_setup_alone": ("torch-cpu", "f64"),  # its setup called once more to see
    }, got
    (path,) = sorted((pytester.path / "baselines").rglob("test_suite.json"))
    doc = json.loads(path.read_text())
    entry = doc["benchmarks"]["test_scale[f32]"]
    assert entry["device"]["library"] == "torch" and entry["dtype"] == "f32"
    assert "torch" in entry["device"]["versions"]
    # as an earlier release recorded it: on python-cpu, with no dtype
    entry["device"] = {**doc["benchmarks"]["test_python"]["device"]}
    entry["dtype"] = "-"
    path.write_text(json.dumps(doc))
    judged = pytester.runpytest(
        "--perf",
        "--perf-measure",
        "time",
        "--perf-threshold",
        "1000%",
        "--perf-json",
        "r.json",
        "-k",
        "test_scale and f32",
        *FAST,
    )
    judged.assert_outcomes(passed=1)
    (res,) = json.loads(Path(pytester.path, "r.json").read_text())["results"]
    assert (res["device_id"], res["dtype"]) == ("torch-cpu", "f32")
    assert res["verdict"]["status"] not in ("incomparable", "no-baseline"), res["verdict"]
    assert any("baseline recorded as python-cpu" in n for n in res["verdict"]["notes"])


#: A GPU as pytest-burnperf's torch backend would find it, and a tensor on it: the fake stands
#: in for torch.cuda where CI has no GPU (a lent GPU runs the real one, validation/).
FAKE_GPU_CONFTEST = """
import time

import pytest_burnperf.devices as devices

SYNCS = []


class EventTimer:
    name = "device"

    def start(self):
        self.t0 = time.perf_counter()

    def stop(self):
        SYNCS.append("event")
        return time.perf_counter() - self.t0


class FakeCuda(devices.DeviceBase):
    id, kind, library, name = "torch-cuda0", "cuda", "torch", "Fake GPU 80GB"

    def sync(self):
        SYNCS.append("sync")

    def timer(self):
        return EventTimer()

    def fingerprint(self):
        return {"id": self.id, "kind": self.kind, "library": self.library, "name": self.name,
                "versions": {"torch": "2.13.0"}}


devices.PROBES["torch"] = lambda: devices.Probe("torch", devices=[FakeCuda()])


class device:
    type, index = "cuda", 0


class Tensor:
    device = device()
    dtype = "torch.float16"


Tensor.__module__ = "torch"


def pytest_sessionfinish(session):
    assert "sync" in SYNCS and "event" in SYNCS, SYNCS
"""


#: A pytest-benchmark test called with the fake GPU's tensor, and a pure-Python one.
GPU_TEST = """
from conftest import Tensor


def test_gemm(benchmark):
    x = Tensor()
    assert benchmark(lambda t: t, x) is x
"""
PY_TEST = """

def test_py(benchmark):
    benchmark(sorted, [3, 2, 1])
"""


def test_a_pytest_benchmark_test_called_with_gpu_tensors_is_timed_on_the_gpus_events(
    pytester: pytest.Pytester,
) -> None:
    """Called with a tensor on cuda:0, such a test is a torch-cuda0 f16 benchmark: synchronised
    and timed on the device's own clock, as the plugin's own GPU benchmarks are."""
    pytester.makeconftest(FAKE_GPU_CONFTEST)
    pytester.makepyfile(test_gpu=GPU_TEST)
    rec = pytester.runpytest_subprocess(
        "--perf", "--perf-update", "--perf-rounds", "1", "--perf-json", "r.json", *FAST
    )
    rec.assert_outcomes(passed=1)
    (res,) = json.loads(Path(pytester.path, "r.json").read_text())["results"]
    assert (res["device_id"], res["kind"], res["dtype"]) == ("torch-cuda0", "cuda", "f16")
    assert res["timer"] == "device", res  # its events, synchronised (the conftest checks)


@pytest.mark.slow
def test_under_the_counted_default_a_gpu_call_is_timed_not_counted(
    pytester: pytest.Pytester,
) -> None:
    """The counted process reads the GPU tensor too and leaves that test to the clock (no GPU
    call under valgrind's simulated CPU); the pure-Python one beside it is counted."""
    pytester.makeconftest(FAKE_GPU_CONFTEST)
    pytester.makepyfile(test_gpu=GPU_TEST + PY_TEST)
    rec = pytester.runpytest_subprocess(
        "--perf",
        "--perf-update",
        "--perf-rounds",
        "1",
        "--perf-json",
        "r.json",
        *FAST,
        "--perf-measure",
        "auto",
    )
    rec.assert_outcomes(passed=2)
    got = {
        r["name"]: r["device_id"]
        for r in json.loads(Path(pytester.path, "r.json").read_text())["results"]
    }
    assert got == {"test_gemm": "torch-cuda0", "test_py": "python-cpu"}
    (counted,) = (pytester.path / "baselines").glob("counts-*/test_gpu.json")
    assert set(json.loads(counted.read_text())["benchmarks"]) == {"test_py"}
