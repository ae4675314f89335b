"""Record, re-run, planted slowdown and speed-up, interruption: the gate as a user meets it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ._helpers import FAST, use_virtual_clock


def baseline_files(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted((root / "baselines").rglob("*.json"))}


def record(pytester: pytest.Pytester) -> dict[Path, bytes]:
    result = pytester.runpytest("--perf", "--perf-update", *FAST)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["baselines updated: 2 benchmark(s) in 1 file(s) under baselines/*"]
    )
    files = baseline_files(pytester.path)
    assert len(files) == 1
    return files


@pytest.mark.slow
def test_update_then_rerun_slowdown_and_speedup(
    loop_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = record(loop_project)
    (path,) = files
    doc = json.loads(path.read_text())
    entry = doc["benchmarks"]["test_loop[numpy-cpu-f64]"]
    # --perf-update records 3 process rounds by default, each taking its share of FAST's 15
    # samples (at least 10)
    assert [len(r) for r in entry["runs"]] == [10, 10, 10] and len(entry["samples"]) == 30
    assert entry["device"]["id"] == "numpy-cpu"
    assert path.name == "test_bench.json"

    # unchanged code passes at the default 5% threshold
    again = loop_project.runpytest("--perf", *FAST)
    again.assert_outcomes(passed=2)
    again.stdout.no_fnmatch_line("*regressed*")

    # 30% slower fails exactly that benchmark, with one line a person can act on
    monkeypatch.setenv("BURNPERF_TEST_WORK", "1.3")
    slow = loop_project.runpytest("--perf", *FAST)
    slow.assert_outcomes(passed=1, failed=1)
    slow.stdout.fnmatch_lines(
        [
            "test_loop[[]numpy-cpu-f64[]]: * -> * (+*% [[]+*%, +*%[]], p=*, n=30/15, runs=3/1) "
            "exceeds *% noise floor",
        ]
    )
    slow.stdout.fnmatch_lines(["test_loop *numpy *cpu *f64 * +*% * regressed"])
    assert baseline_files(loop_project.path) == files  # judging never writes

    # a speed-up passes and is reported as improved
    monkeypatch.setenv("BURNPERF_TEST_WORK", "0.7")
    fast = loop_project.runpytest("--perf", *FAST)
    fast.assert_outcomes(passed=2)
    fast.stdout.fnmatch_lines(["test_loop *numpy *cpu *f64 * -*% * improved"])


@pytest.mark.slow
def test_update_after_intentional_change_replaces_only_what_ran(
    loop_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    (path,) = record(loop_project)
    before = json.loads(path.read_text())["benchmarks"]
    monkeypatch.setenv("BURNPERF_TEST_WORK", "1.5")
    result = loop_project.runpytest("--perf", "--perf-update", "-k", "test_loop", *FAST)
    result.assert_outcomes(passed=1, deselected=1)  # a regression does not fail while recording
    after = json.loads(path.read_text())["benchmarks"]
    assert after["test_steady[numpy-cpu-f64]"] == before["test_steady[numpy-cpu-f64]"]
    ratio = (
        after["test_loop[numpy-cpu-f64]"]["stats"]["median"]
        / before["test_loop[numpy-cpu-f64]"]["stats"]["median"]
    )
    assert ratio > 1.2
    monkeypatch.setenv("BURNPERF_TEST_WORK", "1.5")
    loop_project.runpytest("--perf", *FAST).assert_outcomes(passed=2)


@pytest.mark.slow
def test_interrupted_update_leaves_baselines_byte_identical(
    loop_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = record(loop_project)
    monkeypatch.setenv("BURNPERF_TEST_WORK", "2.0")
    # the interruption comes last, after both benchmarks of test_bench.py have new results
    loop_project.makepyfile(
        test_zz_interrupt="""
        import pytest

        @pytest.mark.perf(backends=["numpy"])
        def test_ctrl_c(perf):
            perf(sum, range(100))
            raise KeyboardInterrupt
        """
    )
    result = loop_project.runpytest("--perf", "--perf-update", *FAST, no_reraise_ctrlc=True)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*baselines NOT updated: the run was interrupted*"])
    assert baseline_files(loop_project.path) == files


@pytest.mark.slow
def test_a_benchmark_that_fails_after_timing_is_not_recorded(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.perf(backends=["numpy"])
        def test_good(perf):
            perf(sum, range(100))

        @pytest.mark.perf(backends=["numpy"])
        def test_wrong_result(perf):
            assert perf(sum, range(100)) == 0
        """
    )
    result = pytester.runpytest("--perf", "--perf-update", *FAST)
    result.assert_outcomes(passed=1, failed=1)
    (path,) = baseline_files(pytester.path)
    assert list(json.loads(path.read_text())["benchmarks"]) == ["test_good[numpy-cpu-f32]"]


def test_too_few_samples_are_inconclusive(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.perf(backends=["numpy"], samples=3, max_samples=3)
        def test_few(perf):
            perf(sum, range(100))
        """
    )
    record = ("--perf", "--perf-update", "--perf-rounds", "1", "--perf-warmup", "0")
    pytester.runpytest(*record).assert_outcomes(passed=1)
    result = pytester.runpytest("--perf", "--perf-rounds", "1", "--perf-warmup", "0")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["test_few *numpy*inconclusive", "perf: 1 inconclusive"])


@pytest.mark.slow
def test_json_report_has_every_result_with_raw_samples(loop_project: pytest.Pytester) -> None:
    record(loop_project)
    result = loop_project.runpytest("--perf", "--perf-json", "out/results.json", *FAST)
    result.stdout.fnmatch_lines(["results written to out/results.json"])
    doc = json.loads((loop_project.path / "out" / "results.json").read_text())
    assert doc["schema"] == "pytest-burnperf-results" and doc["version"] == 1
    assert doc["machine"]["cpus"] >= 1
    assert doc["settings"]["samples"] == 15
    by_name = {r["name"]: r for r in doc["results"]}
    assert set(by_name) == {"test_loop[numpy-cpu-f64]", "test_steady[numpy-cpu-f64]"}
    r = by_name["test_loop[numpy-cpu-f64]"]
    assert r["test"] == "test_bench.py::test_loop[numpy-cpu-f64]"
    assert (r["backend"], r["kind"], r["dtype"], r["timer"]) == ("numpy", "cpu", "f64", "host")
    assert len(r["samples"]) == 15 and r["stats"]["n"] == 15
    assert r["baseline"]["n"] == 30  # three process rounds of 10 samples recorded
    # a comparison's verdict; which one depends on the machine's noise (with 3 baseline runs and
    # one current run the interval often reaches past 5%: inconclusive)
    assert r["verdict"]["status"] in {"unchanged", "improved", "regressed", "inconclusive"}
    assert set(r["verdict"]) == {
        "status",
        "median",
        "baseline_median",
        "ratio",
        "change_pct",
        "p_slower",
        "p_faster",
        "ratio_ci95",
        "alpha_each",
        "run_spread",
        "run_spread_upper80",
        "spread",
        "spread_dof",
        "spread_source",
        "prior",
        "p_runs_slower",
        "threshold",
        "min_effect",
        "min_detectable_slowdown",
        "runs",
        "runs_set_aside",
        "reason",
        "cause",
        "notes",
    }
    # an abstention names its cause (core/abstention.Cause); a verdict on the code names none
    assert (r["verdict"]["cause"] is None) == (r["verdict"]["status"] != "inconclusive")
    assert r["verdict"]["alpha_each"] == 0.005  # 0.01 family-wise over two comparisons
    assert r["verdict"]["threshold"] == 0.05  # the host clock: the run's threshold
    assert r["runs"] == [r["samples"]]
    assert r["host_samples"] is None and r["l2_flush"] is False
    assert isinstance(r["peak_memory_bytes"], int)


@pytest.mark.slow
def test_ini_settings_and_marker_precedence(pytester: pytest.Pytester) -> None:
    # threshold=10 (+1000%) in the markers: the second run compares real work with the first, and
    # this test is about where settings come from, not about the gate
    pytester.makeini(
        """
        [pytest]
        perf = true
        perf_samples = 4
        perf_warmup = 0
        perf_min_time = 0
        perf_baselines_dir = perf-baselines
        perf_machine = ci-runner-a
        """
    )
    pytester.makepyfile(
        test_ini="""
        import pytest

        @pytest.mark.perf(backends=["numpy"], threshold="1000%")
        def test_ini(perf):
            assert perf.settings.samples == 4
            perf(sum, range(10))

        @pytest.mark.perf(backends=["numpy"], samples=6, threshold="1000%")
        def test_marker(perf):
            assert perf.settings.samples == 6
            perf(sum, range(10))
        """
    )
    result = pytester.runpytest("--perf-update")
    result.assert_outcomes(passed=2)
    assert (pytester.path / "perf-baselines" / "ci-runner-a" / "test_ini.json").is_file()
    # the command line wins over marker and ini
    pytester.makepyfile(
        test_ini="""
        import pytest

        @pytest.mark.perf(backends=["numpy"], samples=6, threshold="1000%")
        def test_marker(perf):
            assert perf.settings.samples == 9
            perf(sum, range(10))
        """
    )
    pytester.runpytest("--perf-samples", "9").assert_outcomes(passed=1)


def test_a_benchmark_that_never_calls_perf_fails(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.perf(backends=["numpy"])
        def test_forgot(perf):
            pass
        """
    )
    result = pytester.runpytest("--perf", *FAST)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*test_forgot[[]numpy-cpu-f32[]]: is marked @pytest.mark.perf but never called perf*"]
    )


def test_hooks_add_machine_facts_and_change_the_json(loop_project: pytest.Pytester) -> None:
    use_virtual_clock(
        loop_project,
        """
        def pytest_burnperf_update_machine_info(config, machine_info):
            machine_info["runner"] = "gpu-runner-7"

        def pytest_burnperf_update_json(config, document):
            for r in document["results"]:
                r.pop("samples")
            document["ci_job"] = 42
        """,
    )
    result = loop_project.runpytest(
        "--perf", "--perf-update", "--perf-rounds", "1", "--perf-json", "r.json", *FAST
    )
    result.assert_outcomes(passed=2)
    doc = json.loads((loop_project.path / "r.json").read_text())
    assert doc["machine"]["runner"] == "gpu-runner-7" and doc["ci_job"] == 42
    assert all("samples" not in r for r in doc["results"])
    (path,) = baseline_files(loop_project.path)
    assert json.loads(path.read_text())["machine"]["runner"] == "gpu-runner-7"


@pytest.mark.slow
def test_rows_are_coloured_by_verdict_where_pytest_colours(
    loop_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A regressed row red and bold, a row not judged yellow, following pytest's --color."""
    record(loop_project)
    monkeypatch.setenv("BURNPERF_TEST_WORK", "1.3")
    coloured = loop_project.runpytest("--perf", "--color=yes", *FAST)
    row = next(ln for ln in coloured.outlines if "regressed" in ln and "test_loop " in ln)
    assert row.startswith("\x1b[31m\x1b[1m") and row.endswith("\x1b[0m")
    for ln in coloured.outlines:
        if "test_steady " in ln and ("inconclusive" in ln or "unchanged" in ln):
            # not judged: yellow; unchanged: plain
            assert ln.startswith("\x1b[33m") == ("inconclusive" in ln), ln
    bare = loop_project.runpytest("--perf", "--color=no", *FAST)
    row = next(ln for ln in bare.outlines if "regressed" in ln and "test_loop " in ln)
    assert "\x1b[" not in row
