"""Same-session comparisons without pytest runs: REF forms, the environment cache (with a fake
installer), the paired between-run model, the round plan's bookkeeping and the versions table."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from pytest_burnperf.core.judging import between_runs, stats
from pytest_burnperf.core.judging.verdict import IMPROVED, REGRESSED, UNCHANGED, Policy, judge
from pytest_burnperf.core.records.versions import level
from pytest_burnperf.report.terminal import versions_table as table
from pytest_burnperf.runs.comparison.environments import (
    EnvError,
    check_ref,
    kind_of,
    parse_refs,
    resolve,
)
from pytest_burnperf.runs.comparison.same_session import Plan, shadowed_modules, summaries
from pytest_burnperf.runs.round_launcher import round_args
from pytest_burnperf.runs.scheduler import Measured


@pytest.mark.parametrize(
    ("ref", "kind"),
    [
        ("current", "current"),
        ("main", "git"),
        ("v1.2.0", "git"),
        ("HEAD~1", "git"),
        ("3f2a9c1", "git"),
        ("numpy==2.2.6", "release"),
        ("scipy[all]==1.15.0", "release"),
        ("local=../other", "local"),
        ("/opt/venv/bin/python", "python"),
        ("./venv/bin/python", "python"),
        ("~/venv/bin/python", "python"),
        ("origin/main", "git"),
        ("feature/x", "git"),
    ],
)
def test_kind_of_each_ref_form(ref: str, kind: str) -> None:
    assert kind_of(ref) == kind
    assert check_ref(ref, "--perf-against") == ref


@pytest.mark.parametrize(
    ("ref", "words"),
    [
        ("numpy>=2", "a release is written name==version"),
        ("numpy==", "a release is written name==version"),
        ("numpy==2.2 extra", "a release is written name==version"),
        ("x==0.1,<2", "a release is written name==version"),
        ("my branch", "a REF holds no spaces"),
        ("main\x1b[2J", "no control characters"),
        ("local=", "local= needs a path"),
        ("", "an empty REF"),
    ],
)
def test_bad_refs_are_named(ref: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        check_ref(ref, "--perf-against")


def test_version_lists() -> None:
    assert parse_refs("numpy==2.2.6, numpy==2.3.5", "--perf-versions") == (
        "numpy==2.2.6",
        "numpy==2.3.5",
    )
    for text, words in (("a", "at least two"), ("a,a", "given twice"), ("a,,b", "empty")):
        with pytest.raises(ValueError, match=words):
            parse_refs(text, "--perf-versions")


def test_plans() -> None:
    assert Plan.against("main") == Plan(("main", "current"), "main", "current", "--perf-against")
    p = Plan.versions(["v1", "current", "v2"], None)
    assert (p.reference, p.candidate) == ("v1", "current")
    p = Plan.versions(["v1", "v2", "v3"], None)
    assert (p.reference, p.candidate) == ("v1", "v3")
    p = Plan.versions(["current", "v2"], "current")
    assert (p.reference, p.candidate) == ("current", "v2")
    with pytest.raises(ValueError, match="--perf-reference 'v9' is not one of"):
        Plan.versions(["v1", "v2"], "v9")


def test_round_processes_get_the_parents_arguments_without_the_comparison() -> None:
    args = [
        "--perf",
        "--perf-against",
        "main",
        "-k",
        "sort",
        "--perf-versions=a,b",
        "--perf-reference",
        "a",
        "--perf-strict",
        "perf_tests",
    ]
    assert round_args(args) == ["--perf", "-k", "sort", "perf_tests"]


# --------------------------------------------------------------------------------------------
# environments with a fake installer


class FakeRunner:
    """Stands in for subprocess.run: git answers for a repository, the installer writes a
    dist-info (or fails), the version check answers."""

    def __init__(self, *, install_fails: bool = False, plugin: bool = True) -> None:
        self.calls: list[list[str]] = []
        self.install_fails = install_fails
        self.plugin = plugin
        self.install_env: Any = None

    def __call__(self, cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        self.calls.append(cmd)
        ok = subprocess.CompletedProcess(cmd, 0, "", "")
        if cmd[0] == "git":
            if "--show-toplevel" in cmd:
                return subprocess.CompletedProcess(cmd, 0, "/repo\n", "")
            if "--verify" in cmd:
                ref = cmd[-1].removesuffix("^{commit}")
                if ref == "nosuch":
                    return subprocess.CompletedProcess(cmd, 1, "", "")
                return subprocess.CompletedProcess(cmd, 0, "ab" * 20 + "\n", "")
            if "--points-at" in cmd:  # the commit's release tag, for setuptools-scm
                return subprocess.CompletedProcess(cmd, 0, "v1.2\nnot-a-version\n", "")
            if "archive" in cmd:
                import io
                import tarfile

                out = Path(cmd[cmd.index("-o") + 1])
                data = b"[project]\nname='p'\n"
                with tarfile.open(out, "w") as tar:
                    info = tarfile.TarInfo("pyproject.toml")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
                return ok
        if "install" in cmd:
            self.install_env = kw.get("env")
            if self.install_fails:
                return subprocess.CompletedProcess(cmd, 1, "building...\n", "error: no compiler\n")
            target = Path(cmd[cmd.index("--target") + 1])
            (target / "p-1.2.dist-info").mkdir(parents=True)
            (target / "p").mkdir()
            return ok
        if "-c" in cmd:  # the version check
            if not self.plugin:
                return subprocess.CompletedProcess(
                    cmd, 1, "", "ModuleNotFoundError: No module named 'pytest_burnperf'\n"
                )
            return subprocess.CompletedProcess(
                cmd, 0, json.dumps({"python": "3.11", "pytest": "9", "burnperf": "0.1"}), ""
            )
        raise AssertionError(cmd)


def installs(runner: FakeRunner) -> int:
    return sum("install" in c for c in runner.calls)


def test_a_git_ref_is_built_once_and_then_found_in_the_cache(tmp_path: Path) -> None:
    runner = FakeRunner()
    said: list[str] = []
    env = resolve("main", repo=tmp_path, cache=tmp_path / "c", say=said.append, run=runner)
    assert env.kind == "git" and env.version == "1.2" and env.detail.startswith("git main = abab")
    assert env.overlay is not None and Path(env.overlay).is_dir()
    assert env.environ({"PYTHONPATH": "/x"})["PYTHONPATH"].startswith(env.overlay + ":")
    again = resolve("main", repo=tmp_path, cache=tmp_path / "c", say=said.append, run=runner)
    assert again.overlay == env.overlay
    assert installs(runner) == 1
    # an exported tree has no .git: setuptools-scm / hatch-vcs get the commit's release tag
    assert runner.install_env["SETUPTOOLS_SCM_PRETEND_VERSION"] == "1.2"
    assert "building the reference environment for main" in said[0]
    assert "from the cache" in said[1]
    # nothing half-made is left beside the entry
    assert sorted(p.name for p in (tmp_path / "c").iterdir() if ".tmp-" in p.name) == []


def test_what_a_killed_build_left_is_removed_by_the_next_build_of_that_key(
    tmp_path: Path,
) -> None:
    runner = FakeRunner()
    env = resolve("main", repo=tmp_path, cache=tmp_path / "c", run=runner)
    assert env.overlay is not None
    key = Path(env.overlay).parent.name
    left = tmp_path / "c" / f"{key}.tmp-abc123"  # SIGKILL during a build leaves this
    (left / "site").mkdir(parents=True)
    other = tmp_path / "c" / "otherkey.tmp-xyz"  # another key's build, maybe running now
    other.mkdir()
    resolve("main", repo=tmp_path, cache=tmp_path / "c", run=runner)
    assert not left.exists() and other.exists()


def test_a_failed_build_keeps_its_log_and_caches_nothing(tmp_path: Path) -> None:
    runner = FakeRunner(install_fails=True)
    with pytest.raises(EnvError) as err:
        resolve("numpy==1.0", repo=tmp_path, cache=tmp_path / "c", run=runner)
    text = str(err.value)
    assert text.startswith("numpy==1.0: the reference environment could not be built: installing")
    assert "error: no compiler" in text
    log = Path(text.split("its whole output is in ", 1)[1].split(". Last lines", 1)[0])
    assert "building..." in log.read_text()
    entries = [p for p in (tmp_path / "c").iterdir() if p.is_dir()]
    assert entries == []
    with pytest.raises(EnvError):  # and it is tried again next time, not remembered as good
        resolve("numpy==1.0", repo=tmp_path, cache=tmp_path / "c", run=runner)
    assert installs(runner) == 2


def test_ref_errors_name_the_ref(tmp_path: Path) -> None:
    with pytest.raises(EnvError, match="nosuch: no such git revision in /repo"):
        resolve("nosuch", repo=tmp_path, cache=tmp_path, run=FakeRunner())
    with pytest.raises(EnvError, match="is not a directory"):
        resolve("local=/no/such/dir", repo=tmp_path, cache=tmp_path, run=FakeRunner())
    (tmp_path / "tree").mkdir()
    with pytest.raises(EnvError, match=r"has no pyproject\.toml or setup\.py"):
        resolve(f"local={tmp_path / 'tree'}", repo=tmp_path, cache=tmp_path, run=FakeRunner())
    with pytest.raises(EnvError, match="no such Python interpreter"):
        resolve(str(tmp_path / "python"), repo=tmp_path, cache=tmp_path, run=FakeRunner())
    with pytest.raises(EnvError, match="cannot import pytest and pytest-burnperf"):
        resolve(sys.executable, repo=tmp_path, cache=tmp_path, run=FakeRunner(plugin=False))


def test_a_local_tree_is_built_again_when_a_file_changes(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "pyproject.toml").write_text("[project]\nname='p'\n")
    runner = FakeRunner()
    first = resolve(f"local={tree}", repo=tmp_path, cache=tmp_path / "c", run=runner)
    resolve(f"local={tree}", repo=tmp_path, cache=tmp_path / "c", run=runner)
    assert installs(runner) == 1
    (tree / "mod.py").write_text("x = 1\n")
    changed = resolve(f"local={tree}", repo=tmp_path, cache=tmp_path / "c", run=runner)
    assert installs(runner) == 2 and changed.overlay != first.overlay


def test_shadowed_modules_of_an_overlay(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "pkg").mkdir(parents=True)
    (site / "pkg-1.0.dist-info").mkdir()
    (site / "single.py").write_text("")
    mine = types.ModuleType("pkg")
    mine.__file__ = str(site / "pkg" / "__init__.py")
    other = types.ModuleType("single")
    other.__file__ = "/checkout/single.py"
    assert shadowed_modules(str(site), {"pkg": mine}) == {}
    assert shadowed_modules(str(site), {"pkg": mine, "single": other}) == {
        "single": "/checkout/single.py"
    }


# --------------------------------------------------------------------------------------------
# the paired model


def runs_at(levels: list[float], n: int = 20, jitter: float = 0.002) -> list[list[float]]:
    return [[lv * (1 + jitter * ((i % 5) - 2)) for i in range(n)] for lv in levels]


def test_the_paired_model_cancels_what_moved_a_whole_round() -> None:
    # the machine's speed moves by 15% between rounds; the candidate is 10% slower in each
    machine = [1.0, 1.15, 0.9, 1.1, 0.95]
    ref = runs_at([1e-3 * m for m in machine])
    cur = runs_at([1.1e-3 * m for m in machine])
    paired = judge(ref, cur, Policy(paired=True))
    unpaired = judge(ref, cur, Policy())
    assert paired.status == REGRESSED
    assert paired.ratio == pytest.approx(1.1, rel=1e-3)
    assert paired.ratio_high is not None and paired.ratio_high < 1.13
    # unpaired, the round-to-round movement hides it
    assert unpaired.status != REGRESSED
    assert unpaired.spread is not None and paired.spread is not None
    assert paired.spread < unpaired.spread


def test_the_paired_model_spread_keeps_its_meaning() -> None:
    ref = [[1.0], [1.0], [1.0], [1.0]]
    cur = [[math.exp(d)] for d in (0.02, -0.02, 0.02, -0.02)]
    model = between_runs.paired_run_model(ref, cur, None)
    assert model is not None
    sd = stats.statistics.stdev([0.02, -0.02, 0.02, -0.02])
    assert model.spread == pytest.approx(sd / math.sqrt(2))
    assert model.se == pytest.approx(model.spread * math.sqrt(2 / 4))
    assert model.dof == 3
    assert between_runs.paired_run_model(ref, cur[:3], None) is None  # unequal: not paired


def test_paired_unchanged_and_improved() -> None:
    machine = [1.0, 1.02, 0.99]
    ref = runs_at([1e-3 * m for m in machine])
    assert judge(ref, runs_at([1e-3 * m for m in machine]), Policy(paired=True)).status == (
        UNCHANGED
    )
    faster = runs_at([0.7e-3 * m for m in machine])
    assert judge(ref, faster, Policy(paired=True)).status == IMPROVED


# --------------------------------------------------------------------------------------------
# summaries and the table


def test_level_is_the_geometric_mean_of_run_medians_with_a_t_interval() -> None:
    med, low, high = level([[1.0, 1.0, 1.0], [4.0, 4.0, 4.0]])
    assert med == pytest.approx(2.0)
    assert low is not None and high is not None and low < 2.0 < high
    assert level([[3.0]]) == (pytest.approx(3.0), None, None)


def test_versions_table() -> None:
    got = Measured()
    for lv, label in ((2e-3, "v1"), (1e-3, "v2"), (4e-3, "current")):
        for r in runs_at([lv, lv * 1.01, lv * 0.99]):
            got.add(label, "t::b", {"values": r})
    rows = summaries(["v1", "v2", "current"], got, "t::b")
    assert [round(r.speedup, 2) for r in rows] == [1.0, 2.0, 0.5]
    lines = table("b[cpu]", rows, "verdict current vs v1: regressed +100.0%")
    assert lines[0] == "b[cpu]"
    assert lines[1].split() == ["version", "median", "95%", "interval", "runs", "vs", "v1"]
    assert lines[2].split()[0] == "v1" and lines[2].endswith("1.00x")
    assert lines[3].endswith("2.00x faster")
    assert lines[4].endswith("2.00x slower")
    assert lines[5] == "  verdict current vs v1: regressed +100.0%"


def test_busy_host_rounds_are_left_out_when_enough_clean_ones_remain() -> None:
    from pytest_burnperf.host.activity import Window

    quiet = Window(seconds=1.0, cpus=2, own_cpus=1.0, others_cpus=0.0).as_dict()
    busy = Window(seconds=1.0, cpus=2, own_cpus=1.0, others_cpus=1.0).as_dict()
    assert Window.from_dict(busy).disturbed()  # type: ignore[union-attr]
    assert not Window.from_dict(quiet).disturbed()  # type: ignore[union-attr]
    got = Measured()
    # round 2 ran beside another job: its candidate run looks 40% slower
    for i, (hb, hc) in enumerate([(quiet, quiet), (quiet, busy), (quiet, quiet), (quiet, quiet)]):
        got.add("main", "t", {"values": [1e-3] * 5, "host": hb})
        got.add("current", "t", {"values": [1.4e-3 if i == 1 else 1e-3] * 5, "host": hc})
    assert got.busy_rounds(("main", "current"), "t") == {1: Window.from_dict(busy).disturbed()}  # type: ignore[union-attr]
    ref, cur, left = got.clean_pairs("main", "current", "t")
    assert len(ref) == len(cur) == 3 and list(left) == [1]
    assert judge(ref, cur, Policy(paired=True)).status == UNCHANGED
    # with fewer than three clean rounds nothing is left out (the host rule decides instead)
    ref, cur, left = got.clean_pairs("main", "current", "t", least=4)
    assert len(ref) == 4 and left == {}


def test_a_bare_word_is_a_git_revision_even_where_an_executable_of_that_name_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--perf-against main with an executable ./main here: git is asked, ./main never runs."""
    ran = tmp_path / "ran"
    main = tmp_path / "main"
    main.write_text(f"#!/bin/sh\ntouch {ran}\n")
    main.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    assert kind_of("main") == "git"
    calls: list[list[str]] = []

    def fake_run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
        calls.append(list(cmd))
        return subprocess.CompletedProcess(cmd, 128, "", "fatal: not a git repository")

    with pytest.raises(EnvError, match="not a git revision here"):
        resolve("main", repo=tmp_path, cache=tmp_path / "cache", run=fake_run)
    assert all(c[0] == "git" for c in calls) and not ran.exists()
