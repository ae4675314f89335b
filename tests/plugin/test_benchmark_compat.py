"""A suite written for pytest-benchmark runs unchanged under --perf: recorded, gated, re-run."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from ._helpers import FAST, use_virtual_clock

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

    # export: pytest-benchmark's format, read by pytest-benchmark's own compare command
    out = pytester.runpytest(
        "--perf", "--perf-json-format", "pytest-benchmark", "--perf-json", "pb.json", *FAST
    )
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
