"""benchmarks.toml and [tool.burnperf]: what a project configures, and every mistake named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ._helpers import FAST


def _results(project: pytest.Pytester) -> Any:
    return json.loads(Path(project.path, "r.json").read_text())


def test_benchmarks_toml_selects_configures_and_records(loop_project: pytest.Pytester) -> None:
    (loop_project.path / "benchmarks.toml").write_text(
        '[burnperf]\nbenches = ["test_loop"]\nthreshold = "1000%"\nalpha = 0.05\n'
        '[environment]\nrunner = "ci-a"\ngpu = false\n'
    )
    loop_project.makeini("[pytest]\nperf_threshold = 0.5\nperf_alpha = 0.02\n")
    result = loop_project.runpytest("--perf", "--perf-json", "r.json", "--perf-alpha", "0.1", *FAST)
    result.assert_outcomes(passed=1, deselected=1)
    doc = _results(loop_project)
    assert [r["name"] for r in doc["results"]] == ["test_loop[numpy-cpu-f64]"]
    settings = doc["settings"]
    assert settings["threshold"] == 10.0  # the file over the ini
    assert settings["alpha"] == 0.1  # the command line over the file
    assert doc["machine"]["environment"] == {"runner": "ci-a", "gpu": False}


def test_a_bench_name_that_matches_nothing_is_named(loop_project: pytest.Pytester) -> None:
    (loop_project.path / "benchmarks.toml").write_text('[burnperf]\nbenches = ["test_lop"]\n')
    result = loop_project.runpytest("--perf", *FAST)
    result.assert_outcomes(deselected=2)
    result.stdout.fnmatch_lines(
        ["*benchmarks.toml: benches: test_lop matched no collected benchmark (a typo, or a *"]
    )


def test_tool_burnperf_in_pyproject(loop_project: pytest.Pytester) -> None:
    (loop_project.path / "pyproject.toml").write_text(
        '[tool.burnperf]\ndtypes = ["f32"]\n[tool.burnperf.environment]\nrunner = "b"\n'
    )
    result = loop_project.runpytest("--perf", *FAST)
    result.assert_outcomes(deselected=2)  # the loop benchmarks are f64 only


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[burnperf]\nthreshhold = 0.1\n", "*benchmarks.toml: threshhold: unknown key; allowed: *"),
        ("[burnperf]\nthreshold = 5\n", "*benchmarks.toml: threshold: threshold 5 would mean*"),
        ('[burnperf]\nsamples = "ten"\n', "*benchmarks.toml: samples: samples must be a whole*"),
        ('[burnperf]\nbackends = ["gpu"]\n', "*benchmarks.toml: backends: unknown backend 'gpu'*"),
        ("[burnperf]\nbenches = []\n", "*benchmarks.toml: benches: must be a non-empty list*"),
        ('[burnperf]\nversions = ["main"]\n', "*benchmarks.toml: versions: comparing versions*"),
        (
            "[burn-bench]\n",
            "*benchmarks.toml: unknown table or top-level key burn-bench; allowed: *",
        ),
        ("[environment]\ngpu = [1]\n", "*benchmarks.toml: environment.gpu: must be a string*"),
        ("[burnperf\n", "*benchmarks.toml: is not valid TOML*"),
    ],
)
def test_config_mistakes_name_file_and_key(
    loop_project: pytest.Pytester, text: str, message: str
) -> None:
    (loop_project.path / "benchmarks.toml").write_text(text)
    result = loop_project.runpytest("--perf", *FAST)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "Traceback" not in result.stderr.str()


def test_two_configurations_are_an_error(loop_project: pytest.Pytester) -> None:
    (loop_project.path / "benchmarks.toml").write_text("[burnperf]\n")
    (loop_project.path / "pyproject.toml").write_text("[tool.burnperf]\n")
    result = loop_project.runpytest("--perf")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*both *benchmarks.toml and [[]tool.burnperf[]] in *; keep one"])


#: One benchmark on numpy, for the tests of options and their names.
SUM_MODULE = (
    "import pytest\n\n"
    "@pytest.mark.perf(backends=['numpy'], dtypes=['f64'])\n"
    "def test_sum(perf, device, dtype):\n"
    "    perf(sum, range(100))\n"
)


@pytest.mark.slow
def test_a_project_that_defines_update_baselines_itself_still_starts(
    pytester: pytest.Pytester,
) -> None:
    """Several projects' conftest.py files define --update-baselines for their own fixtures; the
    plugin then leaves that name to them (registering it too stopped pytest before it ran a
    test) and records with --perf-update."""
    pytester.makeconftest(
        "def pytest_addoption(parser):\n"
        "    parser.addoption('--update-baselines', action='store_true', help='the project\\'s')\n"
    )
    pytester.makepyfile(
        test_b=(
            SUM_MODULE + "\n"
            "def test_theirs(request):\n"
            "    assert request.config.getoption('update_baselines') is True\n"
        )
    )
    theirs = pytester.runpytest("--update-baselines", "-k", "theirs")
    theirs.assert_outcomes(passed=1, deselected=1)
    ours = pytester.runpytest("--perf", "--perf-update", "-k", "test_sum", *FAST)
    ours.assert_outcomes(passed=1, deselected=1)
    assert list(pytester.path.glob("baselines/*/test_b.json"))


@pytest.mark.slow
def test_update_baselines_records_like_perf_update_and_says_nothing_more(
    pytester: pytest.Pytester,
) -> None:
    # issue 41: the spelling users were promised is first-class, not deprecated
    pytester.makepyfile(test_b=SUM_MODULE)
    result = pytester.runpytest("--perf", "--update-baselines", *FAST)
    result.assert_outcomes(passed=1)
    assert list(pytester.path.glob("baselines/*/test_b.json"))
    result.stdout.fnmatch_lines(["baselines updated: 1 benchmark(s) in 1 file(s) under *"])
    assert "deprecated" not in result.stdout.str()
    helped = pytester.runpytest("--help")
    helped.stdout.fnmatch_lines(["*--update-baselines*record new baselines (the same as*"])
    assert "deprecated" not in "".join(
        line for line in helped.outlines if "update-baselines" in line
    )


def test_a_path_option_given_apart_that_may_move_the_rootdir_is_named(
    pytester: pytest.Pytester,
) -> None:
    """pytest picks the rootdir before it knows plugin options: an existing path outside the
    project given as `--perf-baselines-dir PATH` may count as a test path. The header says so
    and how to write it; with `=` it says nothing."""
    pytester.makepyfile(test_b=SUM_MODULE)
    outside = pytester.path.parent / "shared-baselines"
    outside.mkdir()
    apart = pytester.runpytest("--perf", "--perf-baselines-dir", str(outside), *FAST)
    header = " ".join(apart.stdout.str().split())  # the note wraps where its paths make it long
    assert f"note: `--perf-baselines-dir {outside}` names an existing path outside" in header
    assert f"--perf-baselines-dir={outside}" in header.split("names an existing path outside")[1]
    joined = pytester.runpytest("--perf", f"--perf-baselines-dir={outside}", *FAST)
    assert "names an existing path outside" not in joined.stdout.str()
