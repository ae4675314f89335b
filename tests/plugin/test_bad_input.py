"""Every kind of bad input gets a clear message naming what is wrong, and nothing is lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ._helpers import FAST


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        (
            "perf(backends=['numpy'], sample=3)",
            "test_bad.py::test_x: @pytest.mark.perf got unknown keyword 'sample'; "
            "allowed: backends, dtypes, samples, warmup, min_time, alpha, threshold, timer, "
            "flush_l2, threads, max_samples, max_time, max_memory",
        ),
        (
            "perf(backends=['gpu'])",
            "test_bad.py::test_x: @pytest.mark.perf(backends=...): unknown backend 'gpu'; "
            "expected a device kind (cpu, cuda, rocm, metal, opencl, vulkan)*",
        ),
        (
            "perf(dtypes=['float32'])",
            "test_bad.py::test_x: @pytest.mark.perf(dtypes=...): unknown dtype 'float32'; "
            "allowed: f16, bf16, f32, f64, i32, i64",
        ),
        (
            "perf(threshold='big')",
            "test_bad.py::test_x: @pytest.mark.perf(threshold=...): threshold must be a number, got 'big'",
        ),
    ],
)
@pytest.mark.parametrize("with_perf", [True, False])
def test_bad_marker_is_an_error_of_that_test_naming_it(
    pytester: pytest.Pytester, marker: str, message: str, with_perf: bool
) -> None:
    """Each bad marker errors its own test, every one of them is reported, and the rest of the
    module still runs."""
    pytester.makepyfile(
        test_bad=f"""
        import pytest

        @pytest.mark.{marker}
        def test_x(perf):
            perf(sum, [1])

        @pytest.mark.{marker}
        def test_y(perf):
            perf(sum, [1])

        def test_fine():
            pass
        """
    )
    result = pytester.runpytest(*(["--perf"] if with_perf else []))
    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines(["*ERROR at setup of test_x[[]invalid-perf-marker[]]*", message])
    result.stdout.fnmatch_lines([message.replace("test_x", "test_y")])
    result.stdout.no_fnmatch_line("*Traceback*")


def test_marker_without_perf_fixture(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_bad="""
        import pytest

        @pytest.mark.perf(backends=["numpy"])
        def test_x(device):
            pass
        """
    )
    result = pytester.runpytest("--perf")
    result.stdout.fnmatch_lines(
        ["test_bad.py::test_x: is marked @pytest.mark.perf but does not use the `perf` fixture*"]
    )


def test_perf_fixture_without_marker(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_bad="""
        def test_x(perf):
            perf(sum, [1])
        """
    )
    result = pytester.runpytest("--perf")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*test_bad.py::test_x: the perf, device and dtype fixtures need the test to be marked*"]
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--perf-alpha", "abc"],
            "*argument --perf-alpha: alpha must be a number, got 'abc'",
        ),
        (["--perf-alpha", "0.9"], "*--perf-alpha: alpha must be in (0, 0.5], got '0.9'"),
        (["--perf-samples", "1"], "*--perf-samples: samples must be between 2 and 100000, got '1'"),
        (["--perf-samples", "ten"], "*--perf-samples: samples must be a whole number, got 'ten'"),
        (
            ["--perf-threshold=-5%"],
            "*--perf-threshold: threshold must be a fraction in [[]0, 1] such as 0.05, or a percentage*",
        ),
        (["--perf-warmup", "soon"], "*--perf-warmup: warmup must be a number, got 'soon'"),
        (["--perf-size", "huge"], "*--perf-size: size must be one of tiny, small, medium, full*"),
        (
            ["--perf-max-samples", "1"],
            "*--perf-max-samples: max_samples must be between 2 and 100000, got '1'",
        ),
        (["--perf-max-time", "-1"], "*--perf-max-time: max_time must be seconds in [[]0, 3600]*"),
        (["--perf-backends", "gpu"], "*--perf-backends: unknown backend 'gpu'; expected*"),
        (["--perf-dtypes", "f32,f8"], "*--perf-dtypes: unknown dtype 'f8'; allowed: f16, bf16*"),
        (
            ["--perf-machine", "../escape"],
            "*--perf-machine: machine id '../escape' is not allowed*",
        ),
        (
            ["--perf-machine", "counts-linux-x86_64"],
            "*--perf-machine: machine id 'counts-linux-x86_64' names a counts baselines folder*",
        ),
        (
            ["--perf-update"],
            "*--perf-update records benchmark results, so it needs --perf*",
        ),
    ],
)
def test_bad_option_values(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    ((result.stderr.lines and result.stderr) or result.stdout).fnmatch_lines([message])


def test_bad_ini_value_names_the_ini_option(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nperf_threshold = lots\n")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("--perf")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*ini option perf_threshold in *tox.ini: threshold must be a number, got 'lots'"]
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["-o", "perf_machine=counts-x"],
            "*-o perf_machine=... on the command line: machine id 'counts-x' names a counts*",
        ),
        (["-o", "perf_threshold=lots"], "*-o perf_threshold=... on the command line: threshold*"),
        (["-o", "perf_quick=maybe"], "*-o perf_quick=... on the command line: must be true*"),
    ],
)
def test_bad_ini_value_given_with_o_names_the_command_line(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    """A value given with ``-o`` is the command line's, not the ini file's: the error says so
    (it had named the ini file, where the user will not find the value)."""
    pytester.makeini("[pytest]\nperf_threshold = 10%\n")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("--perf", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "tox.ini" not in result.stderr.str()


# threshold="1000%": these tests are about baseline files, not the gate, so timing noise
# between runs must not fail them
BENCH_A = """
import pytest

@pytest.mark.perf(backends=["numpy"], threshold="1000%")
def test_a(perf):
    perf(sum, range(50))
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{ this is not json", "is not valid JSON (line 1, column 3*"),
        (
            json.dumps({"schema": "pytest-burnperf-baselines", "version": 7, "benchmarks": {}}),
            "has schema version 7, this pytest-burnperf reads version 1 (written by a newer*",
        ),
    ],
)
def test_bad_baseline_file_errors_its_benchmarks_only_and_is_left_untouched(
    pytester: pytest.Pytester, content: str, problem: str
) -> None:
    pytester.makepyfile(test_a=BENCH_A, test_b=BENCH_A.replace("test_a", "test_b"))
    pytester.runpytest("--perf", "--perf-update", *FAST).assert_outcomes(passed=2)
    (bad,) = Path(pytester.path, "baselines").rglob("test_a.json")
    (good,) = Path(pytester.path, "baselines").rglob("test_b.json")
    bad.write_text(content)
    good_before = good.read_bytes()

    for extra in ([], ["--perf-update"]):
        result = pytester.runpytest("--perf", *extra, *FAST)
        result.assert_outcomes(passed=1, errors=1)
        result.stdout.fnmatch_lines(
            [f"*test_a.py::test_a[[]numpy-cpu-f32[]]: baseline file {bad}: {problem}"]
        )
        result.stdout.no_fnmatch_line("*Traceback*")
        assert bad.read_text() == content
    assert good.read_bytes() != good_before  # the healthy file was updated by the second run


@pytest.mark.installed_plugins  # pytest-xdist's -n
def test_perf_refuses_xdist(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("--perf", "-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*--perf cannot run under pytest-xdist (-n 2)*Run the perf tests without -n (or with -n 0)*"
        ]
    )
    # ordinary parallel runs are untouched, and -n 0 is fine with --perf
    pytester.runpytest("-n", "0", "--perf").assert_outcomes(passed=1)


def test_pedantic_argument_errors(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_p="""
        import pytest

        @pytest.mark.perf(backends=["numpy"])
        def test_rounds(perf):
            perf.pedantic(sum, ([1],), rounds=0)

        @pytest.mark.perf(backends=["numpy"])
        def test_both(perf):
            perf.pedantic(sum, ([1],), setup=lambda: None)

        @pytest.mark.perf(backends=["numpy"])
        def test_twice(perf):
            perf(sum, [1])
            perf(sum, [1])

        @pytest.mark.perf(backends=["numpy"])
        def test_shape(perf):
            perf.work(flops=1e6, shape=256)
            perf(sum, [1])
        """
    )
    # the same checks without --perf: a wrong call fails the ordinary test run (PerfBase)
    for args in (("--perf", *FAST), ()):
        result = pytester.runpytest(*args)
        result.assert_outcomes(failed=4)
        result.stdout.fnmatch_lines(
            [
                "*test_p.py::test_rounds[[]numpy-cpu-f32[]]: perf.pedantic(rounds=0): must be a "
                "whole number >= 1",
                "*test_p.py::test_both[[]numpy-cpu-f32[]]: perf.pedantic: give either setup*",
                "*test_p.py::test_twice[[]numpy-cpu-f32[]]: perf() was called a second time*",
                "*test_p.py::test_shape[[]numpy-cpu-f32[]]: perf.work: shape must be a string*",
            ]
        )


def test_unwritable_json_path_is_reported(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_a=BENCH_A)
    (pytester.path / "taken").write_text("a file, not a folder")
    result = pytester.runpytest("--perf", "--perf-json", "taken/results.json", *FAST)
    result.stdout.fnmatch_lines(["--perf-json: could not write *taken/results.json: *"])
    result.stdout.no_fnmatch_line("*Traceback*")
    assert result.ret != 0


@pytest.mark.slow
def test_baselines_that_cannot_be_saved_fail_the_run_with_the_path(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    pytester.makepyfile(test_a=BENCH_A)

    def no_space(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", no_space)
    result = pytester.runpytest("--perf", "--perf-update", *FAST)
    result.stdout.fnmatch_lines(
        ["NOT updated, left untouched: baseline file *test_a.json: could not be written (No space*"]
    )
    result.stdout.no_fnmatch_line("*Traceback*")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert not list(pytester.path.rglob("*.json"))


@pytest.mark.slow
def test_typed_values_in_pytest_9_native_toml(pytester: pytest.Pytester) -> None:
    """`[tool.pytest]` (pytest 9) hands TOML numbers over as numbers: they work like strings."""
    version = tuple(int(p) for p in pytest.__version__.split(".")[:2] if p.isdigit())
    if version < (9, 2):
        pytest.skip(f"pytest {pytest.__version__} has no native [tool.pytest] with typed values")
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.perf(backends=["numpy"])
        def test_a(perf):
            perf(sum, range(10))
        """
    )
    pytester.makefile(
        ".toml",
        pyproject=(
            "[tool.pytest]\n"
            "perf = true\n"
            "perf_alpha = 0.05\n"
            'perf_threshold = "10%"\n'
            "perf_samples = 5\n"
            "perf_max_samples = 5\n"
            "perf_warmup = 0\n"
            "perf_json = 'r.json'\n"
        ),
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    import json

    doc = json.loads((pytester.path / "r.json").read_text())
    assert doc["settings"]["alpha"] == 0.05 and doc["settings"]["threshold"] == 0.1
    assert doc["settings"]["samples"] == 5

    pytester.makefile(".toml", pyproject="[tool.pytest]\nperf = true\nperf_samples = 2.5\n")
    bad = pytester.runpytest()
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(
        [
            "*pyproject.toml: config option 'perf_samples' expects one of int | string, got float: 2.5"
        ]
    )


@pytest.mark.parametrize(
    ("marker", "words"),
    [
        ("samples='5'", "(samples=...): must be a whole number, got '5' (str)"),
        ("flush_l2='yes'", "(flush_l2=...): must be True or False, got 'yes' (str)"),
        ("backends={'numpy': 1}", "backends must be a list of names, got {'numpy': 1}"),
        ("warmup=True", "warmup must be a number, got True"),
    ],
)
def test_a_marker_value_of_the_wrong_python_type_is_named_not_converted(
    pytester: pytest.Pytester, marker: str, words: str
) -> None:
    pytester.makepyfile(
        test_m=(
            "import pytest\n\n"
            f"@pytest.mark.perf(backends=['numpy'], dtypes=['f64'], {marker})\n"
            "def test_x(perf):\n    perf(sum, range(10))\n"
        ).replace("backends=['numpy'], dtypes=['f64'], backends=", "dtypes=['f64'], backends=")
    )
    result = pytester.runpytest("--perf", *FAST)
    result.assert_outcomes(errors=1)
    assert words in result.stdout.str()


def test_silent_misreads_of_options_and_ini(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_m="def test_x():\n    pass\n")
    empty = pytester.runpytest("--perf", "--perf-store", "")
    assert empty.ret == pytest.ExitCode.USAGE_ERROR
    empty.stderr.fnmatch_lines(["*--perf-store '': an empty store*"])
    (pytester.path / "benchmarks.toml").write_text('[burnperf]\ntimer = "host\\n"\n')
    timer = pytester.runpytest("--perf")
    assert timer.ret == pytest.ExitCode.USAGE_ERROR
    timer.stderr.fnmatch_lines(["*timer must be one of device, host, graph, got 'host\\n'*"])
