"""Failures as a user sees them: their own code in the traceback, misuse as one clean line, a
benchmark that failed after timing counted as failed, verdicts in JUnit XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from ._helpers import FAST

MODULE = """
import pytest


def broken(n):
    return helper_that_fails(n)


def helper_that_fails(n):
    raise ZeroDivisionError(f"user bug {n}")


@pytest.mark.perf(backends=["numpy"])
def test_user_error(perf):
    perf(broken, 3)


@pytest.mark.perf(backends=["numpy"])
def test_wrong_after_timing(perf):
    out = perf(sum, range(100))
    assert out == 0, "the result check failed"


@pytest.mark.perf(backends=["numpy"])
def test_fine(perf):
    perf(sum, range(100))
"""


def test_user_errors_show_user_frames_and_failed_benchmarks_count_as_failed(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_m=MODULE)
    result = pytester.runpytest("--perf", "--junitxml", "junit.xml", *FAST)
    result.assert_outcomes(passed=1, failed=2)
    out = result.stdout.str()
    # the user's frames are there, the plugin's timing machinery is not
    assert "def helper_that_fails(n):" in out and "ZeroDivisionError: user bug 3" in out
    assert (
        "pytest_burnperf/core/timing.py" not in out and "pytest_burnperf/plugin/hooks.py" not in out
    )
    # timed, then failed: shown and counted as failed, not as no-baseline
    result.stdout.fnmatch_lines(
        [
            "test_wrong_after_timing * failed",
            "test_wrong_after_timing[[]numpy-cpu-f32[]]: failed: the test failed in call after "
            "it was timed (see its failure)",
            "perf: 1 failed, 1 no-baseline",
        ]
    )

    tree = ET.parse(pytester.path / "junit.xml")
    props = {
        case.get("name"): {p.get("name"): p.get("value") for p in case.iter("property")}
        for case in tree.iter("testcase")
    }
    fine = props["test_fine[numpy-cpu-f32]"]
    assert fine["perf_verdict"] == "no-baseline" and float(fine["perf_median_s"]) > 0
    assert props["test_wrong_after_timing[numpy-cpu-f32]"]["perf_verdict"] == "no-baseline"


WRONG_CALL = """
import pytest


@pytest.mark.perf(backends=["numpy"])
def test_wrong_call(perf):
    perf(lambda: None, 1, 2)


@pytest.mark.perf(backends=["numpy"])
def test_wrong_pedantic(perf):
    perf.pedantic(lambda: None, args=(1,), rounds=3)
"""


@pytest.mark.parametrize(
    "measure", ["time", pytest.param("counts", marks=pytest.mark.slow, id="counts")]
)
def test_a_call_with_the_wrong_arguments_fails_at_the_tests_own_line(
    pytester: pytest.Pytester, measure: str
) -> None:
    """perf(fn, *args) and perf.pedantic(fn, args=...) that fn cannot take: the traceback is
    the test's line and the error, under either measure, with none of the plugin's frames."""
    if measure == "counts":
        import shutil

        if shutil.which("valgrind") is None:
            pytest.skip("no valgrind")
    pytester.makepyfile(test_w=WRONG_CALL)
    result = pytester.runpytest("--perf", *FAST, "--perf-measure", measure)
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    failure = out.split("= FAILURES =", 1)[1].split("pytest-burnperf ==", 1)[0]
    assert ">       perf(lambda: None, 1, 2)" in failure
    assert "takes 0 positional arguments but 2 were given" in failure
    assert ">       perf.pedantic(lambda: None, args=(1,), rounds=3)" in failure
    assert "takes 0 positional arguments but 1 was given" in failure
    assert "pytest_burnperf" not in failure.replace("pytest_burnperf.plugin.measuring", "")


def test_verdict_properties_in_junit_after_a_comparison(loop_project: pytest.Pytester) -> None:
    rec = ("--perf", "--perf-update", "--perf-rounds", "1", *FAST)
    loop_project.runpytest(*rec).assert_outcomes(passed=2)
    loop_project.runpytest("--perf", "--junitxml", "j.xml", *FAST).assert_outcomes(passed=2)
    tree = ET.parse(loop_project.path / "j.xml")
    case = next(c for c in tree.iter("testcase") if c.get("name", "").startswith("test_loop"))
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["perf_verdict"] in ("unchanged", "inconclusive", "improved")
    assert props["perf_measure"] == "time"
    for key in (
        "perf_median_s",
        "perf_baseline_median_s",
        "perf_change_pct",
        "perf_change_ci95_pct",
        "perf_p_value",
        "perf_min_detectable_pct",
    ):
        assert key in props, key
    low, high = (float(x) for x in props["perf_change_ci95_pct"].split(","))
    assert low <= float(props["perf_change_pct"]) <= high


def test_misuse_is_one_clean_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.perf(backends=["numpy"])
        def test_not_callable(perf):
            perf(42)
        """
    )
    result = pytester.runpytest("--perf", *FAST)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_not_callable*: perf() needs a callable, got 42"])
    assert "Traceback" not in result.stdout.str() and "plugin.py" not in result.stdout.str()


FAILS_LATER = """
import pytest

made = []


def third_call_fails():
    made.append(1)
    if len(made) == 3:
        raise RuntimeError(f"user bug on call {len(made)}")


@pytest.mark.perf(backends=["numpy"])
def test_fails_on_third_call(perf):
    perf(third_call_fails)
"""


def test_a_call_failing_while_memory_is_tracked_shows_the_users_frames(
    pytester: pytest.Pytester,
) -> None:
    """The third call is the first the memory tracking meters (instruments/memory_tracking.py):
    one that fails there shows the user's function and the test's line, none of the plugin's
    frames (its tracker's included)."""
    pytester.makepyfile(test_later=FAILS_LATER)
    result = pytester.runpytest("--perf", *FAST)
    result.assert_outcomes(failed=1)
    failure = result.stdout.str().split("= FAILURES =", 1)[1].split("pytest-burnperf ==", 1)[0]
    assert ">       perf(third_call_fails)" in failure
    assert "RuntimeError: user bug on call 3" in failure
    assert "pytest_burnperf" not in failure.replace("pytest_burnperf.plugin.measuring", "")
