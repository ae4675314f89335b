"""Hostile and mistaken input, as a user meets it: values that used to slip through, files that
used to be overwritten or printed raw. Each is a clear error naming the option, ini key, marker
keyword or file, never a traceback from inside the plugin."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ._helpers import FAST

BENCH = """
import pytest

@pytest.mark.perf(backends=["numpy"], threshold="1000%")
def test_a(perf):
    perf(sum, range(50))
"""


def _no_traceback(result: pytest.RunResult) -> None:
    text = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in text and "INTERNALERROR" not in text, text


@pytest.mark.parametrize(
    ("keyword", "message"),
    [
        ("samples='\u00b2'", "samples must be a whole number, got '\u00b2'"),
        (
            "samples='1' + '0' * 5000",
            "samples must be a whole number, got '100000000000000000000000000000000000000... (5003 characters)",
        ),
        ("warmup=10**400", "warmup is far out of range, got a 401-digit number"),
        (
            "threshold=5",
            "threshold 5 would mean a slowdown of +500%; a bare number is a fraction in [[]0, 1]: "
            "write '5%' or 0.05 for 5%*",
        ),
        ("alpha='1_0'", "alpha must be a number, got '1_0'"),
        ("min_time='\u0661'", "min_time must be a number, got '\u0661'"),
        ("threads=2.0", "threads must be a whole number (0 = the libraries' default), got 2.0"),
    ],
)
def test_bad_marker_values(pytester: pytest.Pytester, keyword: str, message: str) -> None:
    pytester.makepyfile(
        test_v=f"""
        import pytest

        @pytest.mark.perf(backends=["numpy"], {keyword})
        def test_x(perf):
            perf(sum, range(5))

        @pytest.mark.perf(backends=["numpy"])
        def test_fine(perf):
            perf(sum, range(5))
        """
    )
    result = pytester.runpytest("--perf", *FAST)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([f"*test_v.py::test_x: @pytest.mark.perf(*=...): {message}*"])
    _no_traceback(result)


def test_stacked_markers_are_an_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_s="""
        import pytest

        pytestmark = pytest.mark.perf(backends=["numpy"])

        @pytest.mark.perf(backends=["numpy"], samples=5)
        def test_x(perf):
            perf(sum, range(5))
        """
    )
    result = pytester.runpytest("--perf", *FAST)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*test_s.py::test_x: 2 @pytest.mark.perf markers apply*keep one*"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--perf-json", "a\x01b.json"],
            "--perf-json: a path of at most 4096 characters without control characters*",
        ),
        (
            ["--perf-baselines-dir", "x\ny"],
            "--perf-baselines-dir: a path of at most 4096 characters*",
        ),
        (
            ["--perf-threshold", "5"],
            "--perf-threshold: threshold '5' would mean a slowdown of +500%*",
        ),
        (
            ["--perf-samples", "\u00b3"],
            "--perf-samples: samples must be a whole number, got '\u00b3'",
        ),
        (
            ["--perf-rounds", "9" * 5000],
            "--perf-rounds: rounds must be a whole number, got '99999999999*",
        ),
    ],
)
def test_bad_option_values_name_the_option(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    pytester.makepyfile(test_a=BENCH)
    result = pytester.runpytest("--perf", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}"])
    _no_traceback(result)


@pytest.mark.parametrize(
    ("ini", "message"),
    [
        ("perf = maybe", "ini option perf in *tox.ini: must be true or false*maybe*"),
        (
            "perf_threshold = 5",
            "ini option perf_threshold in *tox.ini: threshold*5* would mean a slowdown of +500%*",
        ),
        ("perf_json = \x01", "ini option perf_json in *tox.ini: *"),
    ],
)
def test_bad_ini_values_name_key_and_file(
    pytester: pytest.Pytester, ini: str, message: str
) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile(test_a=BENCH)
    result = pytester.runpytest("--perf")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}"])
    _no_traceback(result)


@pytest.mark.parametrize("target", ["test_a.py", "tox.ini", "baselines/x.json", "notes.json"])
def test_perf_json_refuses_to_overwrite_what_it_did_not_write(
    pytester: pytest.Pytester, target: str
) -> None:
    pytester.makepyfile(test_a=BENCH)
    pytester.makeini("[pytest]\n")
    (pytester.path / "notes.json").write_text('{"mine": true}')
    path = pytester.path / target
    path.parent.mkdir(exist_ok=True)
    if not path.exists():
        path.write_text("{}")
    before = path.read_bytes()
    result = pytester.runpytest("--perf", "--perf-json", target, *FAST)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--perf-json {target}: *"])
    assert path.read_bytes() == before
    # its own results file it overwrites
    ok = pytester.runpytest("--perf", "--perf-json", "r.json", *FAST)
    ok.assert_outcomes(passed=1)
    again = pytester.runpytest("--perf", "--perf-json", "r.json", *FAST)
    again.assert_outcomes(passed=1)


def test_text_from_a_baseline_file_cannot_forge_report_lines(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_a=BENCH)
    pytester.runpytest("--perf", "--perf-update", "--perf-rounds", "1", *FAST).assert_outcomes(
        passed=1
    )
    (path,) = sorted((pytester.path / "baselines").rglob("test_a.json"))
    doc = json.loads(path.read_text())
    entry = doc["benchmarks"]["test_a[numpy-cpu-f32]"]
    entry["device"]["versions"]["numpy"] = "9\nperf: 2 unchanged\x1b[2J"
    path.write_text(json.dumps(doc))
    result = pytester.runpytest("--perf", *FAST)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*device.versions.numpy: contains a control character: 9\\x0aperf: 2 unchanged\\x1b[[]2J*"]
    )
    assert "\x1b[2J" not in result.stdout.str()
    result.stdout.no_fnmatch_line("perf: 2 unchanged")


def test_tiny_samples_never_put_infinity_in_the_results_json(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_a=BENCH)
    pytester.runpytest("--perf", "--perf-update", "--perf-rounds", "1", *FAST).assert_outcomes(
        passed=1
    )
    (path,) = sorted((pytester.path / "baselines").rglob("test_a.json"))
    doc = json.loads(path.read_text())
    doc["benchmarks"]["test_a[numpy-cpu-f32]"]["samples"] = [5e-324] * 15
    doc["benchmarks"]["test_a[numpy-cpu-f32]"].pop("runs")
    path.write_text(json.dumps(doc))
    result = pytester.runpytest("--perf", "--perf-json", "r.json", *FAST)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*samples[[]0[]]: must be between 1e-12 and 86400, got 5e-324*"])
    json.loads(Path(pytester.path, "r.json").read_text(), parse_constant=lambda c: 1 / 0)


def test_pedantic_setup_that_returns_the_wrong_thing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_p="""
        import pytest

        @pytest.mark.perf(backends=["numpy"])
        def test_p(perf):
            perf.pedantic(sum, setup=lambda: 5, rounds=3)
        """
    )
    for args in (("--perf", *FAST), ()):
        result = pytester.runpytest(*args)
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(
            [
                "*test_p.py::test_p[[]numpy-cpu-f32[]]: perf.pedantic: setup must return None or "
                "(args, kwargs)*got int 5"
            ]
        )
        _no_traceback(result)


@pytest.mark.slow
def test_a_baselines_directory_that_cannot_be_created_is_an_error_not_a_traceback(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_a=BENCH)
    (pytester.path / "afile").write_text("not a directory")
    result = pytester.runpytest(
        "--perf", "--perf-update", "--perf-baselines-dir", "afile/baselines", *FAST
    )
    out = result.stdout.str() + result.stderr.str()
    assert result.ret != pytest.ExitCode.OK, out
    assert "Traceback" not in out and "INTERNALERROR" not in out
    assert "During handling of the above exception" not in out
    result.stdout.fnmatch_lines(
        ["*afile/baselines/*test_a.json: cannot be read (Not a directory)*"]
    )
    assert (pytester.path / "afile").read_text() == "not a directory"


def test_a_deeply_nested_settings_file_is_an_error_not_a_traceback(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_a=BENCH)
    (pytester.path / "benchmarks.toml").write_text("[burnperf]\nx = " + "[" * 5000 + "]" * 5000)
    result = pytester.runpytest("--perf", *FAST)
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out
    assert "RecursionError" not in out and "INTERNALERROR" not in out
    result.stderr.fnmatch_lines(["*benchmarks.toml: nests arrays or tables too deeply*"])
