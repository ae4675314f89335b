"""A verdict wherever the plugin runs: the share judged is counted, shown and enforced
(--perf-min-judged, and by default in CI); --perf-against auto picks stored baselines of this
hardware class or measures the base of the change in this session; a flat layout (package at the
repository's root, a root conftest.py, benchmarks inside the package) compares two commits.

The work runs on the tests' virtual clock (tests/plugin/_helpers.py): a 2x slower commit is 2x
whatever else runs on the host, so these tests check the choice and the wiring, not the machine.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from ._helpers import FAST, LOOP_MODULE, git, use_virtual_clock

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"

OPTS = (*FAST, "-p", "no:randomly", "-p", "no:cacheprovider")

PYPROJECT = """
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "spinflat"
version = "1.0"

[tool.setuptools.packages.find]
include = ["spinflat*"]
"""

#: Its work runs on the virtual clock of the repository's root (_helpers.use_virtual_clock), which
#: the root conftest.py installs in every round of either version: the 2x is exact on a busy host.
PACKAGE = """
from virtual_clock import spin

FACTOR = {factor}


def work():
    spin(300e-6 * FACTOR)
    return FACTOR
"""

# inside the package, with a relative import, as many projects keep their benchmarks
BENCH = """
import pytest

from .. import work


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_spin(perf, device, dtype):
    assert perf(work) > 0
"""


@pytest.fixture
def flat(pytester: pytest.Pytester, env_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A flat-layout repository: v1.0 tagged, then a commit that makes the work 2x slower."""
    root = pytester.path
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "spinflat" / "benchmarks").mkdir(parents=True)
    (root / "spinflat" / "__init__.py").write_text(PACKAGE.format(factor=1.0))
    (root / "spinflat" / "benchmarks" / "__init__.py").write_text("")
    (root / "spinflat" / "benchmarks" / "test_spin.py").write_text(BENCH)
    # a root conftest.py that imports the package: pytest puts the root first on sys.path
    use_virtual_clock(pytester, "import spinflat  # noqa: F401\n")
    (root / ".gitignore").write_text("__pycache__/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "release")
    git(root, "tag", "v1.0")
    (root / "spinflat" / "__init__.py").write_text(PACKAGE.format(factor=2.0))
    git(root, "commit", "-q", "-am", "slower")
    monkeypatch.setenv("BURNPERF_ENV_CACHE", str(env_cache))
    return root


@pytest.mark.slow
@pytest.mark.parametrize(
    ("start", "rounds"),
    [
        ("fork", "in 2 environments taking 0.25 s turns"),  # two round servers
        ("fresh", "benchmarks in "),  # whole process rounds
    ],
)
def test_a_flat_layout_compares_two_commits_in_one_session(
    pytester: pytest.Pytester, flat: Path, start: str, rounds: str
) -> None:
    """`python -m pytest` from the root of a flat layout: the checkout is first on sys.path,
    yet the reference's rounds measure the reference (before: a usage error); both ways of
    running the rounds; each side ran its own code (the reference's work is half as long)."""
    result = pytester.runpytest_subprocess(
        "--perf", "--perf-against", "v1.0", "--perf-round-start", start, "--perf-json", "r.json",
        *OPTS,
    )  # fmt: skip
    out = result.stdout.str()
    assert result.ret == 1, out
    assert rounds in out
    assert "from the installed reference" not in out
    (entry,) = json.loads((flat / "r.json").read_text())["results"]
    verdict = entry["verdict"]
    assert verdict["status"] == "regressed" and 1.9 < verdict["ratio"] < 2.1, verdict


@pytest.mark.slow
def test_in_ci_a_machine_without_baselines_judges_against_the_last_release(
    pytester: pytest.Pytester, flat: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    result = pytester.runpytest_subprocess("--perf", "--perf-json", "r.json", *OPTS)
    out = result.stdout.str()
    assert "--perf-against auto compares in this session with the last release tag v1.0" in out
    assert result.ret == 1 and "regressed" in out, out
    doc = json.loads((flat / "r.json").read_text())
    schema = json.loads((SCHEMAS / "results-v1.schema.json").read_text())
    jsonschema.validate(doc, schema)
    assert doc["settings"]["reference"]["ref"] == "v1.0"
    assert doc["coverage"]["judged"] == 1 and doc["coverage"]["min_share"] == 0.9


@pytest.mark.slow
def test_auto_takes_the_stored_baselines_of_this_hardware_class(
    pytester: pytest.Pytester, flat: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded = pytester.runpytest("--perf", "--perf-update", *OPTS)
    assert recorded.ret == 0, recorded.stdout.str()
    monkeypatch.setenv("CI", "true")
    # unchanged code against its own baseline: unchanged or, on a noisy host, inconclusive;
    # --perf-min-judged 0 and a 1000% threshold keep the outcome independent of the host (a
    # slow spell beside two busy processes read +155% here): what is tested is the choice
    result = pytester.runpytest(
        "--perf", "--perf-min-judged", "0", *OPTS, "--perf-threshold", "1000%"
    )
    out = result.stdout.str()
    assert "--perf-against auto compares with the stored baselines of this hardware class" in out
    assert "same-session comparison:" not in out and "no-baseline" not in out, out
    assert "perf: judged " in out and " of 1 benchmarks" in out
    assert result.ret == 0


@pytest.mark.slow
def test_auto_measures_the_release_beside_this_code_where_the_baselines_host_was_faster(
    pytester: pytest.Pytester, flat: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stored baselines of this class from a host that ran the reference probe far faster: auto
    measures the last release in this session instead (the probe, not the clock, decides)."""
    recorded = pytester.runpytest("--perf", "--perf-update", *OPTS)
    assert recorded.ret == 0, recorded.stdout.str()
    [path] = (flat / "baselines").rglob("test_spin.json")
    doc = json.loads(path.read_text())
    for entry in doc["benchmarks"].values():
        entry["host_probe"].update(python=1e-5, copy=1e-5)  # a host hundreds of times faster
    path.write_text(json.dumps(doc))
    monkeypatch.setenv("CI", "true")
    monkeypatch.delenv("BURNPERF_TRUST_HOST")  # the host's evidence counts in this test
    result = pytester.runpytest_subprocess("--perf", "--perf-min-judged", "0", *OPTS)
    out = result.stdout.str()
    assert "--perf-against auto compares in this session with the last release tag v1.0" in out
    assert "came from another host: this host runs the reference probe" in out, out
    assert "same-session comparison: current vs v1.0" in out, out
    # under BURNPERF_TRUST_HOST=1 the host is kept out of the choice too
    monkeypatch.setenv("BURNPERF_TRUST_HOST", "1")
    trusted = pytester.runpytest("--perf", "--perf-min-judged", "0", *OPTS)
    assert "--perf-against auto compares with the stored baselines" in trusted.stdout.str()


@pytest.mark.slow
def test_auto_measures_the_release_beside_this_code_where_the_baselines_are_too_noisy(
    pytester: pytest.Pytester, flat: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stored baselines of this class whose rounds scattered by +-50% when recorded: they could
    judge no slowdown below a floor far above any the gate aims for, so auto measures the last
    release in this session instead (the recorded rounds, not the clock, decide)."""
    recorded = pytester.runpytest("--perf", "--perf-update", *OPTS)
    assert recorded.ret == 0, recorded.stdout.str()
    [path] = (flat / "baselines").rglob("test_spin.json")
    doc = json.loads(path.read_text())
    (name, entry), *_ = doc["benchmarks"].items()
    median = sorted(entry["samples"])[len(entry["samples"]) // 2]
    entry["runs"] = [[median * f] * 10 for f in (0.6, 1.0, 1.5, 0.7, 1.4, 1.0, 0.5, 1.3)]
    entry["samples"] = [v for r in entry["runs"] for v in r]
    entry.pop("host_probe", None)  # no probe: the host check has no evidence either way
    entry.pop("host", None)
    doc["benchmarks"] = {name: entry, f"{name[:-1]}-x]": entry, f"{name[:-1]}-y]": entry}
    path.write_text(json.dumps(doc))
    monkeypatch.setenv("CI", "true")
    monkeypatch.delenv("BURNPERF_TRUST_HOST")
    result = pytester.runpytest_subprocess("--perf", "--perf-min-judged", "0", *OPTS)
    out = result.stdout.str()
    assert "--perf-against auto compares in this session with the last release tag v1.0" in out
    assert "are too noisy to judge by: half of its 3 baselines see no slowdown below +" in out
    assert "same-session comparison: current vs v1.0" in out, out


def test_a_run_that_judged_too_little_fails_and_says_what_would_judge(
    pytester: pytest.Pytester,
) -> None:
    use_virtual_clock(pytester)
    pytester.makepyfile(test_bench=LOOP_MODULE)
    result = pytester.runpytest(
        "--perf", "--perf-min-judged", "50%", "--perf-markdown", "s.md", "--junitxml=j.xml", *OPTS
    )
    out = result.stdout.str()
    assert result.ret == 1, out
    assert "judged 0 of 2 benchmarks (0%); NOT judged: 2 (2 no reference)" in out
    assert "--perf-against auto" in out and "--perf-update" in out
    assert "FAILED: perf run judged only 0 of 2 benchmarks (0%), below --perf-min-judged 0.5" in out
    md = (pytester.path / "s.md").read_text()
    assert "**Judged 0 of 2 benchmarks (0%)**; minimum 50% (below the minimum: run failed)" in md
    xml = (pytester.path / "j.xml").read_text()
    assert '<property name="burnperf_not_judged" value="2" />' in xml
    # shown, not enforced, outside CI by default
    shown = pytester.runpytest("--perf", *OPTS)
    assert shown.ret == 0 and "NOT judged: 2" in shown.stdout.str()


def test_in_ci_outside_git_the_run_says_why_it_found_no_reference(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_virtual_clock(pytester)
    pytester.makepyfile(test_bench=LOOP_MODULE)
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(pytester.path.parent))
    result = pytester.runpytest("--perf", *OPTS)
    out = result.stdout.str()
    assert "--perf-against auto found no reference" in out and "not in a git repository" in out
    assert result.ret == 1 and "below --perf-min-judged 0.9" in out
    quiet = pytester.runpytest("--perf", "--perf-min-judged", "0", *OPTS)
    assert quiet.ret == 0
    # --perf-against baselines: the stored baselines only, even in CI (none here: not judged)
    stored = pytester.runpytest("--perf", "--perf-against", "baselines", *OPTS)
    out = stored.stdout.str()
    assert "--perf-against auto" not in out.split("perf: judged")[0], out
    assert "no-baseline" in out and stored.ret == 1 and "below --perf-min-judged 0.9" in out
    bare = pytester.runpytest("--perf-against", "baselines")
    assert bare.ret == 4
    bare.stderr.fnmatch_lines(["*--perf-against baselines compares with stored baselines*--perf*"])


def test_auto_is_refused_where_it_cannot_apply(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bench="def test_x():\n    pass\n")
    result = pytester.runpytest("--perf", "--perf-against", "auto", "--perf-update")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--perf-against auto * does not go with --perf-update*"])
    bad = pytester.runpytest("--perf", "--perf-min-judged", "2")
    assert bad.ret == 4
    bad.stderr.fnmatch_lines(["*--perf-min-judged*a share is a fraction in [[]0, 1[]]*"])
