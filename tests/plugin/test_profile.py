"""--perf-profile: a benchmark rerun under a profiler after its samples, its profile's summary
kept beside the baseline it records, and the note of what grew when it regressed. The verdicts
come from the virtual clock; the profiles are real (cProfile), of a planted function that does
real work only in the slower version, so what grew does not depend on how busy the machine is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ._helpers import FAST, use_virtual_clock

PROFILED = """
import os

import pytest

from virtual_clock import spin


def planted_extra_pass():
    total = 0  # its own time: a new entry of the profile, whatever else a busy host slows
    for i in range(20_000):
        total += i * i
    return total


def body():
    if os.environ.get("BURNPERF_TEST_PLANT"):
        planted_extra_pass()
        return spin(400e-6)
    return spin(200e-6)


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_profiled(perf):
    perf(body)
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    use_virtual_clock(pytester)
    pytester.makepyfile(test_profiled_bench=PROFILED)
    return pytester


def _baseline(project: pytest.Pytester) -> dict[str, object]:
    (path,) = Path(project.path, "baselines").rglob("test_profiled_bench.json")
    (entry,) = json.loads(path.read_text())["benchmarks"].values()
    return dict(entry)


@pytest.mark.slow
def test_a_regression_names_what_grew_against_the_recorded_profile(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded = project.runpytest("--perf", "--perf-update", "--perf-profile", *FAST)
    recorded.assert_outcomes(passed=1)
    summary = _baseline(project)["profile"]
    assert isinstance(summary, dict) and summary["tool"] == "cProfile"
    assert not any("planted" in e[0] for e in summary["entries"])

    monkeypatch.setenv("BURNPERF_TEST_PLANT", "1")
    result = project.runpytest(
        "--perf",
        "--perf-profile=regressed",
        "--perf-json",
        "r.json",
        "--perf-markdown",
        "summary.md",
        *FAST,
    )
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "what grew (baseline -> this run, per call):" in out
    assert "planted_extra_pass (test_profiled_bench.py) new:" in out
    (r,) = json.loads(Path(project.path, "r.json").read_text())["results"]
    assert r["profile"]["against"] == "baseline"
    assert "planted_extra_pass" in r["profile"]["note"]
    assert Path(project.path, r["profile"]["file"]).is_file()
    assert r["profile"]["file"].startswith("perf-profiles/")
    summary_md = Path(project.path, "summary.md").read_text()
    assert "**Where it grew**" in summary_md and "planted\\_extra\\_pass" in summary_md

    pytest.importorskip("plotly")
    from pytest_burnperf.cli import main

    monkeypatch.chdir(project.path)
    assert main(["report", "r.json", "-o", "report.html"]) == 0
    page = Path(project.path, "report.html").read_text()
    assert "Profiles: what grew" in page and f'href="{r["profile"]["file"]}"' in page


@pytest.mark.slow
def test_profiling_only_what_regressed_costs_nothing_where_nothing_did(
    project: pytest.Pytester,
) -> None:
    project.runpytest("--perf", "--perf-update", *FAST).assert_outcomes(passed=1)
    result = project.runpytest("--perf", "--perf-profile=regressed", *FAST)
    result.assert_outcomes(passed=1)
    assert not Path(project.path, "perf-profiles").exists()
    assert "profile(s) in" not in result.stdout.str()


@pytest.mark.slow
def test_a_regression_without_a_recorded_profile_says_how_to_get_one(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.runpytest("--perf", "--perf-update", *FAST).assert_outcomes(passed=1)
    monkeypatch.setenv("BURNPERF_TEST_PLANT", "1")
    result = project.runpytest("--perf", "--perf-profile", *FAST)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*the baseline has no profile to compare with (record it with --perf-update "
            "--perf-profile)*"
        ]
    )


def test_a_bad_profile_setting_names_the_option_and_what_is_allowed(
    project: pytest.Pytester,
) -> None:
    result = project.runpytest("--perf", "--perf-profile=sometimes", *FAST)
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*--perf-profile*must be one of off, all, regressed*"])


@pytest.mark.slow
def test_a_corrupt_profile_beside_a_baseline_names_the_file_and_field(
    project: pytest.Pytester,
) -> None:
    project.runpytest("--perf", "--perf-update", "--perf-profile", *FAST).assert_outcomes(passed=1)
    (path,) = Path(project.path, "baselines").rglob("test_profiled_bench.json")
    doc = json.loads(path.read_text())
    for entry in doc["benchmarks"].values():
        entry["profile"]["calls"] = 0
    path.write_text(json.dumps(doc))
    before = path.read_bytes()
    result = project.runpytest("--perf", *FAST)
    result.assert_outcomes(errors=1)  # at setup, where the baseline is read
    result.stdout.fnmatch_lines([f"*{path.name}*profile.calls*must be a whole number >= 1*"])
    assert path.read_bytes() == before  # reported, left untouched


@pytest.mark.slow
def test_a_profile_folder_with_other_files_is_refused_before_anything_runs(
    project: pytest.Pytester,
) -> None:
    mine = Path(project.path, "notes")
    mine.mkdir()
    (mine / "todo.txt").write_text("mine\n")
    result = project.runpytest("--perf", "--perf-profile", "--perf-profile-dir", "notes", *FAST)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--perf-profile-dir notes: is a folder that holds other files*"])
    assert sorted(p.name for p in mine.iterdir()) == ["todo.txt"]  # nothing written there
    # a folder this plugin wrote is written again; an empty one is taken
    project.runpytest("--perf", "--perf-update", "--perf-profile", *FAST).assert_outcomes(passed=1)
    again = project.runpytest("--perf", "--perf-profile", *FAST)
    again.assert_outcomes(passed=1)
    assert Path(project.path, "perf-profiles", ".burnperf-profiles").is_file()


PUNCTUATED = """
import pytest

from virtual_clock import spin

LONG = "x" * 200


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
@pytest.mark.parametrize("name", ["a/b", "a b", "a$b", "a_b", LONG + "1", LONG + "2"])
def test_named(perf, name):
    perf(lambda: spin(100e-6))
"""


def test_ids_that_differ_only_in_punctuation_or_late_get_profiles_of_their_own(
    pytester: pytest.Pytester,
) -> None:
    """Six benchmarks whose ids differ only in characters a file name cannot hold, or after
    character 180: six profiles reported, six files, none shared."""
    use_virtual_clock(pytester)
    pytester.makepyfile(test_punctuated=PUNCTUATED)
    result = pytester.runpytest("--perf", "--perf-profile", "--perf-json", "r.json", *FAST)
    result.assert_outcomes(passed=6)
    results = json.loads(Path(pytester.path, "r.json").read_text())["results"]
    files = [r["profile"]["file"] for r in results]
    assert len(files) == 6 and len(set(files)) == 6
    written = sorted(Path(pytester.path, "perf-profiles").glob("*.pstats"))
    assert len(written) == 6
    assert all(Path(pytester.path, f).is_file() for f in files)
