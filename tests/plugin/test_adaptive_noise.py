"""Adaptive sampling, the noise floor and single- vs multi-run baselines, as a user meets them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ._helpers import FAST, use_virtual_clock

#: On the virtual clock (_helpers.use_virtual_clock): the levels are exact on a busy machine too.
SPIN = """
import pathlib

import pytest

from virtual_clock import spin
"""

ADAPTIVE_MODULE = (
    SPIN
    + """
CALLS = [0]


def alternate():
    # 200 and 600 us in turn: whatever number of warm-up calls came first, any run of samples
    # is half at each level, so the median can never be pinned down (a random choice would
    # depend on how many calls the time-based warm-up made, that is on the machine's speed)
    CALLS[0] += 1
    spin(200e-6 * (1.0, 3.0)[CALLS[0] % 2])


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_steady(perf):
    perf(spin, 200e-6)


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_noisy(perf):
    perf(alternate)
"""
)

# Every process that imports this module takes the next number from a counter file: even
# processes run at one speed level, odd ones 25% slower, like the workloads that sit at one of
# two levels for a whole process.
JUMPY_MODULE = (
    SPIN
    + """
COUNTER = pathlib.Path(__file__).with_name("processes.txt")
N = int(COUNTER.read_text()) if COUNTER.exists() else 0
COUNTER.write_text(str(N + 1))
LEVEL = 1.0 if N % 2 == 0 else 1.25


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_jumpy(perf):
    perf(spin, 200e-6 * LEVEL)
"""
)


def _results(project: pytest.Pytester) -> dict[str, dict[str, object]]:
    doc = json.loads(Path(project.path, "r.json").read_text())
    return {r["name"].split("[")[0]: r for r in doc["results"]}


def test_adaptive_sampling_stops_early_on_a_clear_case_and_extends_on_a_noisy_one(
    pytester: pytest.Pytester,
) -> None:
    """Far apart on purpose, so a busy machine cannot swap them: one call per sample, a 50%
    threshold (each process's median wanted to +-10.7%), a steady 200 us spin against one that
    takes 200 and 600 us in turn. The steady one's sample count is not asserted (a spike may
    extend it); the alternating one cannot reach the goal at any speed, so it runs to the cap."""
    use_virtual_clock(pytester)
    pytester.makepyfile(test_bench=ADAPTIVE_MODULE)
    opts = ("--perf-max-samples", "60", "--perf-max-time", "30", "--perf-json", "r.json")
    opts += ("--perf-min-time", "0", "--perf-threshold", "50%")
    result = pytester.runpytest("--perf", "-v", *FAST, *opts)  # -v: every note
    result.assert_outcomes(passed=2)
    res = _results(pytester)
    steady, noisy = res["test_steady"]["sampling"], res["test_noisy"]["sampling"]
    assert steady["stopped"] == "precise" and steady["n"] < 60  # type: ignore[index]
    assert noisy["stopped"] == "cap" and noisy["n"] == 60  # type: ignore[index]
    assert noisy["median_ci95_halfwidth"] > noisy["goal_halfwidth"]  # type: ignore[index]
    result.stdout.fnmatch_lines(
        [
            "test_noisy*: note: sampling stopped at the 60-sample cap (max_samples) with this "
            "process's median known to +-*% (goal +-10.7%)"
        ]
    )


@pytest.mark.slow
def test_a_benchmark_too_noisy_for_the_threshold_is_reported_not_failed(
    pytester: pytest.Pytester,
) -> None:
    use_virtual_clock(pytester)
    pytester.makepyfile(test_bench=JUMPY_MODULE)
    opts = ("--perf-rounds", "3", "--perf-json", "r.json", *FAST)
    pytester.runpytest("--perf", "--perf-update", *opts).assert_outcomes(passed=1)
    # Baseline runs at levels (1.0, 1.25, 1.0); this session's at (1.25, 1.0, 1.25).
    result = pytester.runpytest("--perf", "-v", *opts)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "test_jumpy*: note: noisy: runs of this benchmark move by *% (sd of run medians; pooled "
            "with the 2.2% prior: *% with 6 degrees of freedom), so it gates only above +*% with "
            "3+3 runs*"
        ]
    )
    verdict = _results(pytester)["test_jumpy"]["verdict"]
    assert verdict["status"] != "regressed"  # type: ignore[index]
    assert verdict["min_effect"] > 0.2 and verdict["runs"] == [3, 3]  # type: ignore[index]
    # issue 41: without -v, at most one line per benchmark and where the rest is
    brief = pytester.runpytest("--perf", *opts)
    brief.assert_outcomes(passed=1)
    assert not any(": note: " in line for line in brief.stdout.lines)
    assert sum(line.startswith("test_jumpy") for line in brief.stdout.lines) <= 2  # row + reason
    assert "details of each verdict: -v, or the results JSON (--perf-json)" in brief.stdout.str()


@pytest.mark.slow
def test_single_and_multi_run_baselines_are_reported_as_such(loop_project: pytest.Pytester) -> None:
    # --perf-update records 3 process rounds unless told otherwise; a plain run is 1 round,
    # judged with the spread of the baseline's own runs pooled with the prior
    loop_project.runpytest("--perf", "--perf-update", *FAST).assert_outcomes(passed=2)
    plain = loop_project.runpytest("--perf", "--perf-json", "r.json", *FAST)
    plain.assert_outcomes(passed=2)
    verdict = _results(loop_project)["test_loop"]["verdict"]
    assert verdict["runs"] == [3, 1]  # type: ignore[index]
    assert verdict["spread_source"] == "runs+prior"  # type: ignore[index]
    assert "not measured" not in plain.stdout.str()

    # one round on each side: nothing measured the between-process noise, so the prior is used
    # and the report says how far the comparison can see
    opts = ("--perf-rounds", "1", "--perf-json", "r.json", *FAST)
    loop_project.runpytest("--perf", "--perf-update", *opts).assert_outcomes(passed=2)
    one = loop_project.runpytest("--perf", "-v", *opts)
    one.assert_outcomes(passed=2)
    one.stdout.fnmatch_lines(
        [
            "test_loop*: note: *1 baseline run vs 1 current run: between-process noise is not "
            "measured, so the prior is assumed (2.2%*gates only above +*"
        ]
    )
    verdict = _results(loop_project)["test_loop"]["verdict"]
    assert verdict["runs"] == [1, 1] and verdict["spread_source"] == "prior"  # type: ignore[index]
