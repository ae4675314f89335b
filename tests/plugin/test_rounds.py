"""Process rounds, multi-run baselines, --perf-strict and thread control, as a user meets them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ._helpers import FAST


def _baseline(project: pytest.Pytester) -> dict[str, dict[str, object]]:
    (path,) = sorted((project.path / "baselines").rglob("*.json"))
    return json.loads(path.read_text())["benchmarks"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("rounds", [1, 2])
def test_planted_slowdown_fails_with_rounds_and_a_rerun_passes(
    loop_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, rounds: int
) -> None:
    opts = ("--perf-rounds", str(rounds), *FAST)
    rec = loop_project.runpytest("--perf", "--update-baselines", *opts)
    rec.assert_outcomes(passed=2)
    entry = _baseline(loop_project)["test_loop[numpy-cpu-f64]"]
    assert len(entry["runs"]) == rounds  # type: ignore[arg-type]
    assert all(len(r) == 15 for r in entry["runs"])  # type: ignore[attr-defined]

    again = loop_project.runpytest("--perf", *opts)
    again.assert_outcomes(passed=2)
    plural = "s" if rounds > 1 else ""
    again.stdout.fnmatch_lines([f"baselines in *; {rounds} process round{plural}; *"])

    monkeypatch.setenv("BURNPERF_TEST_WORK", "2.0")  # far above the 1-vs-1 floor; rounds inherit it
    slow = loop_project.runpytest("--perf", *opts)
    slow.assert_outcomes(passed=1, failed=1)
    slow.stdout.fnmatch_lines(
        [
            f"test_loop[[]numpy-cpu-f64[]]: * (+*% [[]*[]], p=*, n=*, runs={rounds}/{rounds}) exceeds *"
        ]
    )
    if rounds == 1:
        slow.stdout.fnmatch_lines(["*between-process noise is not measured, so the prior*"])


def test_adaptive_rounds_go_to_the_undecided_benchmarks_only(
    loop_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A planted +30% cannot be ruled out, so test_loop runs all 4 rounds and fails; the
    unchanged test_steady may stop earlier (how soon depends on the machine's noise, so its count
    is only bounded)."""
    opts = ("--perf-rounds", "2", *FAST)
    loop_project.runpytest("--perf", "--update-baselines", *opts).assert_outcomes(passed=2)
    monkeypatch.setenv("BURNPERF_TEST_WORK", "1.3")
    slow = loop_project.runpytest(
        "--perf", "--perf-max-rounds", "4", "--perf-json", "r.json", *opts
    )
    slow.assert_outcomes(passed=1, failed=1)
    slow.stdout.fnmatch_lines(
        [
            "burnperf: baselines *, 2 process rounds (up to 4 for undecided benchmarks), size *",
            "pytest-burnperf: adaptive round 2 (of at most 4) for * of 2 benchmarks still "
            "undecided (*",
            "pytest-burnperf: round 4/4 in this process (*",
            "test_loop[[]numpy-cpu-f64[]]: * runs=2/4) exceeds *",
            "baselines in *; 2 process rounds (up to 4 for undecided benchmarks): *4 ran; *",
        ]
    )
    doc = json.loads(Path(loop_project.path, "r.json").read_text())
    runs = {r["name"].split("[")[0]: len(r["runs"]) for r in doc["results"]}
    assert runs["test_loop"] == 4 and 2 <= runs["test_steady"] <= 4


def test_max_rounds_below_rounds_is_a_usage_error(loop_project: pytest.Pytester) -> None:
    result = loop_project.runpytest("--perf", "--perf-rounds", "3", "--perf-max-rounds", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--perf-max-rounds 2 is below --perf-rounds 3*"])


def test_rounds_print_progress_while_they_run(loop_project: pytest.Pytester) -> None:
    result = loop_project.runpytest("--perf", "--perf-rounds", "3", *FAST)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "pytest-burnperf: round 1/3 of 2 benchmarks in a fresh process (*:* elapsed; *",
            "pytest-burnperf: round 1/3: 2/2 benchmarks, *:* elapsed",
            "pytest-burnperf: round 2/3 of 2 benchmarks in a fresh process (*",
            "pytest-burnperf: round 2/3: 2/2 benchmarks, *:* elapsed",
            "pytest-burnperf: round 3/3 in this process (*:* elapsed) ...",
        ]
    )


def test_results_json_keeps_every_round(loop_project: pytest.Pytester) -> None:
    loop_project.runpytest("--perf", "--perf-rounds", "3", "--perf-json", "r.json", *FAST)
    doc = json.loads(Path(loop_project.path, "r.json").read_text())
    for r in doc["results"]:
        assert len(r["runs"]) == 3 and r["runs"][-1] == r["samples"]


def test_strict_fails_no_baseline_and_default_does_not(loop_project: pytest.Pytester) -> None:
    loop_project.runpytest("--perf", *FAST).assert_outcomes(passed=2)
    strict = loop_project.runpytest("--perf", "--perf-strict", *FAST)
    strict.assert_outcomes(failed=2)
    strict.stdout.fnmatch_lines(
        ["test_loop[[]numpy-cpu-f64[]]: no-baseline (no baseline recorded); --perf-strict fails it"]
    )


def test_inconclusive_when_samples_are_too_few(loop_project: pytest.Pytester) -> None:
    few = ["--perf-samples", "3", "--perf-max-samples", "3", "--perf-warmup", "0.01"]
    few += ["--perf-min-time", "0.001"]
    update = ("--perf", "--update-baselines", "--perf-rounds", "1")
    loop_project.runpytest(*update, *few).assert_outcomes(passed=2)
    result = loop_project.runpytest("--perf", *few)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*n=3/3 samples can reach p=0.05 at best, not below alpha=0.005*"])


def test_threads_are_set_recorded_and_part_of_the_identity(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
        def test_mm(perf, device, dtype):
            a = device.random((64, 64), dtype)
            perf(device.xp.matmul, a, a)
        """
    )
    pytester.runpytest("--perf", "--update-baselines", *FAST).assert_outcomes(passed=1)
    (path,) = sorted((pytester.path / "baselines").rglob("*.json"))
    entry = json.loads(path.read_text())["benchmarks"]["test_mm[numpy-cpu-f64]"]
    assert entry["device"]["threads"] == 1 and entry["settings"]["threads"] == 1
    other = pytester.runpytest("--perf", "--perf-threads", "2", *FAST)
    other.assert_outcomes(passed=1)
    other.stdout.fnmatch_lines(["*incomparable: baseline from * (threads 1 -> 2)*"])


def test_bad_rounds_and_threads_are_usage_errors(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--perf", "--perf-rounds", "0")
    result.stderr.fnmatch_lines(["*--perf-rounds: rounds must be between 1 and 50, got '0'"])
    result = pytester.runpytest("--perf", "--perf-threads", "many")
    result.stderr.fnmatch_lines(["*--perf-threads: threads must be a whole number*got 'many'"])


def test_a_round_that_crashes_is_reported_and_the_run_goes_on(
    loop_project: pytest.Pytester,
) -> None:
    # only the fresh processes see --perf-worker-out on their command line
    loop_project.makeconftest(
        """
        import sys

        if any(a.startswith("--perf-worker-out") for a in sys.argv):
            raise SystemExit("round process refused to start")
        """
    )
    result = loop_project.runpytest("--perf", "--perf-rounds", "2", *FAST)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["round 1 in a fresh process failed (exit *); its samples are missing from the verdicts:*"]
    )
