"""Same-session comparisons on a throw-away git repository: a small package in src/ layout with a
benchmark, committed three times (base, a docs-only change, a 30% slower change).

The package's work runs on a virtual clock (tests/plugin/_helpers.py explains why), so the +30%
is exact, whatever else runs on the machine. The reference environments are built once per test session:
the commits are made with a fixed author and date, so each has the same hash in every test, and
the environment cache is shared by the tests of this module.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from ._helpers import FAST, git, use_virtual_clock

PYPROJECT = """
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "spinpkg"
version = "1.0"

[tool.setuptools.packages.find]
where = ["src"]
"""

#: Its work runs on the virtual clock of the repository's root (_helpers.use_virtual_clock),
#: which every round of either version imports: the +30% is exact on a busy machine too.
PACKAGE = """
from virtual_clock import spin

FACTOR = {factor}


def planted_extra_pass():
    total = 0  # real work in its own frame: a new entry of the slower version's profile
    for i in range(2_000):
        total += i * i
    return total


def work():
    held = bytearray(4_000_000 if FACTOR > 1.2 else 0)  # the slower version's extra buffer
    if FACTOR > 1.2:
        planted_extra_pass()
    spin(300e-6 * FACTOR)
    del held
    return FACTOR
"""

BENCH = """
import pytest
import spinpkg


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_spin(perf, device, dtype):
    assert perf(spinpkg.work) > 0
"""

OPTS = (*FAST, "-p", "no:randomly", "-p", "no:cacheprovider")


@pytest.fixture
def repo(pytester: pytest.Pytester, env_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The repository, HEAD at the slow commit; this checkout's src/ on PYTHONPATH (the rounds
    of 'current' import the package from there, as a developer's editable install would)."""
    root = pytester.path
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "src" / "spinpkg").mkdir(parents=True)
    (root / "src" / "spinpkg" / "__init__.py").write_text(PACKAGE.format(factor=1.0))
    (root / "test_bench.py").write_text(BENCH)
    use_virtual_clock(pytester)
    (root / ".gitignore").write_text("__pycache__/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    git(root, "tag", "base")
    (root / "README").write_text("docs only\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "docs")
    git(root, "tag", "docs")
    (root / "src" / "spinpkg" / "__init__.py").write_text(PACKAGE.format(factor=1.3))
    git(root, "commit", "-q", "-am", "slower")
    monkeypatch.setenv("BURNPERF_ENV_CACHE", str(env_cache))
    monkeypatch.setenv("PYTHONPATH", str(root / "src"))
    monkeypatch.syspath_prepend(str(root / "src"))  # this (in-process) parent run's import
    return root


@pytest.mark.slow
def test_a_docs_only_commit_against_its_parent_passes(
    pytester: pytest.Pytester, repo: Path
) -> None:
    git(repo, "checkout", "-q", "docs")
    result = pytester.runpytest(
        "--perf", "--perf-against", "base", "--perf-profile", "regressed", *OPTS
    )
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert "same-session comparison: current vs base (git base = " in out
    assert "round 3/3" in out
    assert "regressed" not in out
    # --perf-profile=regressed: nothing regressed, so nothing was profiled in either environment
    assert "profiling" not in out
    assert not (repo / "perf-profiles").exists()
    # both environments' memory per call tracked, one process each, and compared
    assert "burnperf: tracking memory of 1 benchmark(s) in base ..." in out
    assert "perf: memory per call: 1 unchanged" in out


@pytest.mark.slow
def test_a_30_percent_slower_commit_fails_with_both_medians(
    pytester: pytest.Pytester, repo: Path
) -> None:
    result = pytester.runpytest(
        "--perf", "--perf-against", "docs", "--perf-json", "out.json", *OPTS
    )
    result.assert_outcomes(failed=1)
    line = next(ln for ln in result.outlines if ln.startswith("test_spin[numpy-cpu-f64]: docs "))
    # both versions' medians, the change and its interval: 300 us -> 390 us; what it exceeds is
    # the threshold, or the noise floor where the host made the rounds scatter more than that
    assert " -> current " in line and "us" in line
    assert re.search(r"exceeds (5% threshold|\d+\.\d+% noise floor)", line), line
    doc = json.loads((repo / "out.json").read_text())
    res = doc["results"][0]
    assert res["verdict"]["status"] == "regressed"
    assert 1.2 < res["verdict"]["ratio"] < 1.4
    assert res["baseline"]["reference"] == "docs"
    assert [v["label"] for v in res["versions"]] == ["docs", "current"]
    # the slower version also holds a 4 MB buffer during the call: its memory regressed
    # against the reference's, named where it was allocated
    memory = res["memory"]
    assert memory["status"] == "regressed", memory
    assert memory["figures"]["peak_bytes"] - memory["baseline"]["peak_bytes"] >= 4_000_000
    assert "bytearray(4_000_000" in memory["where"]
    same = doc["settings"]["same_session"]
    assert same["reference"] == "docs" and same["candidate"] == "current"
    assert len(same["round_orders"]) >= 3
    assert all(sorted(o) == ["current", "docs"] for o in same["round_orders"])
    assert doc["settings"]["baselines"] is None
    schema = json.loads(
        (Path(__file__).parents[2] / "schemas" / "results-v1.schema.json").read_text()
    )
    jsonschema.validate(doc, schema)
    assert not (repo / "baselines").exists()  # no baseline file is read or written


@pytest.mark.slow
def test_resident_sides_judge_a_same_session_comparison_as_fresh_rounds_do(
    pytester: pytest.Pytester, repo: Path
) -> None:
    """--perf-round-start resident (issue 72): each environment is one process for the whole
    comparison, its rounds asked for by message and interleaved with the other's as fresh
    rounds are; the 30% slower commit still fails with paired rounds."""
    result = pytester.runpytest(
        "--perf",
        "--perf-against",
        "docs",
        "--perf-round-start",
        "resident",
        "--perf-json",
        "out.json",
        *OPTS,
    )
    result.assert_outcomes(failed=1)
    res = json.loads((repo / "out.json").read_text())["results"][0]
    assert res["verdict"]["status"] == "regressed" and 1.2 < res["verdict"]["ratio"] < 1.4
    assert res["verdict"]["runs"] == [3, 3]
    doc = json.loads((repo / "out.json").read_text())
    assert doc["settings"]["same_session"]["round_start"] == "resident"
    result.stdout.fnmatch_lines(
        [
            "burnperf: round 1/3: 1 benchmarks in * (one resident process each) (*",
            "same-session comparison: current vs docs *; 3 interleaved rounds, order drawn at "
            "random in each, each environment's in one resident process: a difference between "
            "the two processes is not sampled and can read as a change (confirm a regression "
            "with --perf-round-start fresh)*",
        ]
    )


@pytest.mark.slow
def test_a_regression_is_profiled_in_both_environments_with_what_grew(
    pytester: pytest.Pytester, repo: Path
) -> None:
    result = pytester.runpytest(
        "--perf", "--perf-against", "docs", "--perf-profile", "--perf-json", "out.json", *OPTS
    )
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "burnperf: profiling 1 benchmark(s) in docs ..." in out
    assert "burnperf: profiling 1 benchmark(s) in current ..." in out
    # the failure message says what grew from the reference to the candidate, first the new
    # function of the slower commit, and where both profiles are
    assert "what grew (docs -> current, per call):" in out
    assert "planted_extra_pass (__init__.py) new:" in out
    res = json.loads((repo / "out.json").read_text())["results"][0]
    prof = res["profile"]
    assert prof["tool"] == "cProfile" and prof["against"] == "docs"
    assert prof["file"].endswith(".current.pstats") and prof["against_file"].endswith(
        ".docs.pstats"
    )
    for name in (prof["file"], prof["against_file"]):
        assert (repo / name).is_file(), name
    assert not any("planted" in e[0] for e in prof["against_summary"]["entries"])
    assert any("planted" in e[0] for e in prof["summary"]["entries"])
    assert prof["note"] in res["verdict"]["notes"]


@pytest.mark.slow
def test_versions_prints_one_table_per_benchmark(pytester: pytest.Pytester, repo: Path) -> None:
    result = pytester.runpytest("--perf", "--perf-versions", "base,docs,current", *OPTS)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "test_spin[[]numpy-cpu-f64[]]",
            "  version * median * 95% interval * runs * vs base",
            "  base * us *[[]* us, * us[]] * 3 * 1.00x",
            "  docs * us *1.0?x *",
            "  current * us *1.[234]?x slower",
            "  verdict current vs base: regressed +*",
        ]
    )
    assert "also measured: docs (git docs = " in out


@pytest.mark.slow
def test_versions_reference_can_be_another_than_the_first(
    pytester: pytest.Pytester, repo: Path
) -> None:
    result = pytester.runpytest(
        "--perf", "--perf-versions", "current,docs", "--perf-reference", "current", *OPTS
    )
    # the judged one is the last when the reference is current: docs is faster, never a failure
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["  verdict docs vs current: improved -*"])


def test_a_ref_that_does_not_exist_is_a_usage_error(pytester: pytest.Pytester, repo: Path) -> None:
    result = pytester.runpytest("--perf", "--perf-against", "no-such-branch", *OPTS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --perf-against no-such-branch: no such git revision in *"])
    assert "pytest-burnperf ===" not in result.stdout.str()


def test_a_ref_whose_install_fails_names_the_step_and_keeps_the_log(
    pytester: pytest.Pytester, repo: Path, env_cache: Path
) -> None:
    (repo / "pyproject.toml").write_text("[project\nthis is not toml\n")
    git(repo, "commit", "-q", "-am", "broken")
    git(repo, "tag", "broken")
    git(repo, "checkout", "-q", "docs")
    result = pytester.runpytest("--perf", "--perf-against", "broken", *OPTS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "ERROR: --perf-against broken: the reference environment could not be built: " in err
    assert "installing it failed (exit " in err
    log = err.split("its whole output is in ", 1)[1].split(". Last lines:", 1)[0]
    assert Path(log).is_file() and Path(log).parent == env_cache
    text = Path(log).read_text()
    assert text.startswith("$ ") and "--no-deps --target" in text and "TOML" in text


def test_an_interpreter_without_the_plugin_is_a_usage_error(
    pytester: pytest.Pytester, repo: Path, tmp_path: Path
) -> None:
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    python = bare / "bin" / "python"
    result = pytester.runpytest("--perf", "--perf-against", str(python), *OPTS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"ERROR: --perf-against {python}: {python} cannot import pytest and pytest-burnperf*"]
    )


def test_same_session_options_that_do_not_go_together(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x=BENCH)
    cases = [
        (("--perf-against", "main"), "needs --perf as well"),
        (("--perf", "--perf-against", "main", "--perf-versions", "a,b"), "not both"),
        (("--perf", "--perf-against", "main", "--perf-update"), "--perf-update"),
        (("--perf", "--perf-against", "current"), "compare this code with itself"),
        (("--perf", "--perf-reference", "a"), "--perf-reference names one of --perf-versions"),
        (("--perf", "--perf-versions", "a,b", "--perf-reference", "c"), "is not one of"),
    ]
    for args, words in cases:
        result = pytester.runpytest(*args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR, args
        assert words in result.stderr.str(), (args, result.stderr.str())
    for bad, words in (
        ("numpy>=2", "a release is written name==version"),
        ("a,a", "'a' is given twice"),
        ("a", "give at least two"),
        ("a,,b", "an empty entry"),
    ):
        option = "--perf-versions" if "," in bad or bad == "a" else "--perf-against"
        result = pytester.runpytest("--perf", option, bad)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert words in result.stderr.str(), (bad, result.stderr.str())
