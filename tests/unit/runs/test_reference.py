"""--perf-against auto: which reference a run takes, with a fake git (reference.choose), and once
with a real repository."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from pytest_burnperf.runs.comparison.reference import (
    NOISY_FLOOR,
    choose,
    has_baselines,
    stored_host_off,
    stored_noisy,
)

HEAD = "a" * 40
BASE = "b" * 40
MAIN = "c" * 40
TAG = "d" * 40


class FakeGit:
    """Answers ``git -C REPO ARGS...`` from a table of ARGS -> stdout (absent: exit 1)."""

    def __init__(self, answers: Mapping[tuple[str, ...], str]) -> None:
        self.answers = dict(answers)
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, cmd: Sequence[str]) -> subprocess.CompletedProcess[str]:
        assert list(cmd[:3]) == ["git", "-C", "/repo"]
        args = tuple(cmd[3:])
        self.calls.append(args)
        out = self.answers.get(args)
        return subprocess.CompletedProcess(list(cmd), 0 if out else 1, out or "", "")


def commit(ref: str) -> tuple[str, ...]:
    return ("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")


REPO = {("rev-parse", "--show-toplevel"): "/repo", commit("HEAD"): HEAD}
DESCRIBE = ("describe", "--tags", "--abbrev=0", "--match", "v[0-9]*", "--match", "[0-9]*")


def pick(answers: Mapping[tuple[str, ...], str], **kw: object) -> object:
    git = FakeGit({**REPO, **answers})
    kw.setdefault("stored", False)
    kw.setdefault("environ", {})
    return choose(machine="linux-x-v3", repo=Path("/repo"), run=git, **kw)  # type: ignore[arg-type]


def test_stored_baselines_of_this_class_come_first() -> None:
    git = FakeGit({})
    got = choose(
        stored=True,
        machine="m-v3",
        repo=Path("/repo"),
        environ={"GITHUB_BASE_REF": "main"},
        run=git,
    )
    assert got.baselines and got.ref is None and "m-v3" in got.why
    assert git.calls == []  # no git needed


def test_a_github_pull_request_compares_with_its_merge_base() -> None:
    got = pick(
        {commit("origin/main"): MAIN, ("merge-base", "HEAD", "origin/main"): BASE},
        environ={"GITHUB_BASE_REF": "main"},
        base="v9",  # the pull request's base wins over the project's fallback
    )
    assert got.ref == BASE and not got.baselines  # type: ignore[attr-defined]
    assert "merge base" in got.why and "origin/main" in got.why  # type: ignore[attr-defined]


def test_a_pull_request_whose_target_is_not_fetched_says_how_to_fetch_it() -> None:
    got = pick(
        {("rev-parse", "--is-shallow-repository"): "true"}, environ={"GITHUB_BASE_REF": "dev"}
    )
    assert got.ref is None and not got.baselines  # type: ignore[attr-defined]
    problem = got.problem  # type: ignore[attr-defined]
    assert "git fetch --no-tags origin dev:refs/remotes/origin/dev" in problem
    assert "shallow" in problem and "fetch-depth: 0" in problem


def test_a_shallow_clone_without_a_common_ancestor_names_the_fetch() -> None:
    got = pick(
        {commit("origin/main"): MAIN, ("rev-parse", "--is-shallow-repository"): "true"},
        environ={"GITHUB_BASE_REF": "main"},
    )
    assert got.ref is None and "git fetch --unshallow" in got.problem  # type: ignore[attr-defined]


def test_a_gitlab_merge_request_uses_its_diff_base() -> None:
    got = pick({commit(BASE): BASE}, environ={"CI_MERGE_REQUEST_DIFF_BASE_SHA": BASE})
    assert got.ref == BASE  # type: ignore[attr-defined]
    assert "names no commit" not in got.why  # type: ignore[attr-defined]
    # issue 42: a base that names no commit fell back to another reference without a word
    for garbage in ("zzz-not-a-sha", "0" * 40):
        got = pick(
            {commit("origin/main"): MAIN, ("merge-base", "HEAD", "origin/main"): BASE},
            environ={
                "CI_MERGE_REQUEST_DIFF_BASE_SHA": garbage,
                "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main",
            },
        )
        assert got.ref == BASE  # type: ignore[attr-defined]
        assert got.why.endswith(  # type: ignore[attr-defined]
            f"; CI_MERGE_REQUEST_DIFF_BASE_SHA {garbage!r} names no commit here"
        )
    got = pick(
        {commit("origin/main"): MAIN, ("merge-base", "HEAD", "origin/main"): BASE},
        environ={"CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main"},
    )
    assert got.ref == BASE  # type: ignore[attr-defined]


def test_on_the_default_branch_the_projects_base_comes_before_the_tag() -> None:
    answers = {
        commit("release-2"): TAG,
        commit("main"): HEAD,
        ("merge-base", "HEAD", "main"): HEAD,
        (*DESCRIBE, "HEAD"): "v1.0",
        commit("v1.0"): MAIN,
    }
    got = pick(answers, base="release-2")
    assert got.ref == "release-2" and "--perf-base" in got.why  # type: ignore[attr-defined]
    bad = pick({}, base="nope")
    assert bad.ref is None and "--perf-base 'nope'" in bad.problem  # type: ignore[attr-defined]
    # a branch compares with where it left the default branch, whatever the project's base
    branch = pick(
        {commit("main"): MAIN, ("merge-base", "HEAD", "main"): BASE, commit("release-2"): TAG},
        base="release-2",
    )
    assert branch.ref == BASE  # type: ignore[attr-defined]


def test_a_feature_branch_compares_with_its_merge_base_with_the_default_branch() -> None:
    got = pick(
        {
            ("symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD"): "origin/trunk",
            commit("origin/trunk"): MAIN,
            ("merge-base", "HEAD", "origin/trunk"): BASE,
        }
    )
    assert got.ref == BASE and "origin/trunk" in got.why  # type: ignore[attr-defined]


def test_on_the_default_branch_the_last_release_tag() -> None:
    answers = {
        commit("main"): HEAD,
        ("merge-base", "HEAD", "main"): HEAD,  # HEAD is main: no branch to compare with
        (*DESCRIBE, "HEAD"): "v1.2.0",
        commit("v1.2.0"): TAG,
    }
    got = pick(answers)
    assert got.ref == "v1.2.0" and "release tag" in got.why  # type: ignore[attr-defined]


def test_a_release_commit_compares_with_the_release_before() -> None:
    answers = {
        (*DESCRIBE, "HEAD"): "v1.3.0",
        commit("v1.3.0"): HEAD,  # HEAD is tagged v1.3.0
        (*DESCRIBE, "HEAD^"): "v1.2.0",
    }
    assert pick(answers).ref == "v1.2.0"  # type: ignore[attr-defined]


def test_nothing_to_compare_with_says_what_would_give_a_reference() -> None:
    got = pick({})
    assert got.ref is None and not got.baselines  # type: ignore[attr-defined]
    assert "--perf-base" in got.problem and "--perf-update" in got.problem  # type: ignore[attr-defined]
    outside = choose(stored=False, machine="m", repo=Path("/repo"), environ={}, run=FakeGit({}))
    assert outside.problem is not None and "not in a git repository" in outside.problem


OFF = "this host runs the reference probe 30% slower than the baselines' host (copy +50%)"


def test_stored_baselines_from_another_host_give_way_to_a_same_session_comparison() -> None:
    answers = {
        commit("main"): HEAD,
        ("merge-base", "HEAD", "main"): HEAD,
        (*DESCRIBE, "HEAD"): "v1.2.0",
        commit("v1.2.0"): TAG,
    }
    got = pick(answers, stored=True, host_off=OFF)
    assert got.ref == "v1.2.0" and not got.baselines  # type: ignore[attr-defined]
    why = got.why  # type: ignore[attr-defined]
    assert "the stored baselines of this hardware class (linux-x-v3) came from another host" in why
    assert OFF in why and "last release tag v1.2.0" in why


def test_stored_baselines_from_another_host_stay_where_nothing_else_can_be_measured() -> None:
    got = choose(
        stored=True, machine="m", repo=Path("/repo"), environ={}, run=FakeGit({}), host_off=OFF
    )
    assert got.baselines and got.ref is None and got.problem is None
    assert got.why.startswith("the stored baselines of this hardware class (m), as no earlier")
    assert OFF in got.why and "not in a git repository" in got.why
    assert got.why.endswith("Verdicts that host could explain stay inconclusive")


BASELINES = Path(__file__).resolve().parents[3] / "baselines"


def _baselines_with_probe(root: Path, probe: dict[str, float] | None) -> Path:
    """A copy of a committed baseline file whose entries recorded ``probe`` (None: no probe)."""
    src = next(  # a timed baseline (counts baselines have no rounds of time)
        p
        for p in sorted(BASELINES.glob("*/perf_tests/test_dogfood.json"))
        if not p.parts[-3].startswith("counts-")
    )
    doc = json.loads(src.read_text())
    for entry in doc["benchmarks"].values():
        entry.pop("host_probe", None)
        if probe is not None:
            entry["host_probe"] = {"version": 2, "matmul": 1e-4, **probe}
    target = root / "m" / "perf_tests"
    target.mkdir(parents=True, exist_ok=True)
    (target / "test_dogfood.json").write_text(json.dumps(doc))
    return root / "m"


def test_a_host_far_from_the_baselines_host_is_named(tmp_path: Path) -> None:
    group = _baselines_with_probe(tmp_path, {"python": 0.004, "copy": 0.006})
    assert stored_host_off(group, {"python": 0.0042, "copy": 0.0063}) is None  # +5%: within
    slower = stored_host_off(group, {"python": 0.0044, "copy": 0.009})
    assert slower is not None, "python +10%, copy +50%: geometric mean +28%"
    assert "28% slower than the baselines' host (copy +50%, python +10%)" in slower
    faster = stored_host_off(group, {"python": 0.002, "copy": 0.003})
    assert faster is not None and "50% faster than the baselines' host" in faster


def test_baselines_without_a_probe_or_unreadable_are_no_evidence(tmp_path: Path) -> None:
    far = {"python": 0.04, "copy": 0.06}
    assert stored_host_off(_baselines_with_probe(tmp_path / "a", None), far) is None
    assert stored_host_off(tmp_path / "absent", far) is None
    group = _baselines_with_probe(tmp_path / "b", {"python": 0.004, "copy": 0.006})
    (group / "perf_tests" / "test_broken.json").write_text("{not json")
    corrupt = group / "perf_tests" / "test_broken.json"
    got = stored_host_off(group, far)  # the readable file still counts; the corrupt one is
    assert got is not None and "900% slower" in got  # skipped here and left as it was
    assert corrupt.read_text() == "{not json"


def test_has_baselines_needs_a_baseline_file(tmp_path: Path) -> None:
    assert not has_baselines(tmp_path / "absent")
    (tmp_path / "m" / "tests").mkdir(parents=True)
    assert not has_baselines(tmp_path / "m")
    (tmp_path / "m" / "tests" / "test_x.json").write_text("{}")
    assert has_baselines(tmp_path / "m")


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.mark.skipif(subprocess.run(["git", "--version"], check=False).returncode, reason="git")
def test_a_real_repository_branch_and_tags(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "f.txt").write_text("1")
    _git(repo, "add", "f.txt")
    _git(repo, "commit", "-qm", "one")
    _git(repo, "tag", "v0.1.0")
    (repo / "f.txt").write_text("2")
    _git(repo, "commit", "-qam", "two")
    on_main = choose(stored=False, machine="m", repo=repo, environ={})
    assert on_main.ref == "v0.1.0", on_main
    first = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-qb", "feature")
    (repo / "f.txt").write_text("3")
    _git(repo, "commit", "-qam", "three")
    on_branch = choose(stored=False, machine="m", repo=repo, environ={})
    assert on_branch.ref == first, on_branch
    pr = choose(stored=False, machine="m", repo=repo, environ={"GITHUB_BASE_REF": "main"})
    assert pr.ref == first, pr


def test_ci_variables_that_are_no_revision_are_not_passed_to_git() -> None:
    git = FakeGit(REPO)
    got = choose(
        stored=False,
        machine="m",
        repo=Path("/repo"),
        environ={"GITHUB_BASE_REF": "--output=x", "CI_MERGE_REQUEST_DIFF_BASE_SHA": "-x"},
        run=git,
    )
    assert got.ref is None and "is no branch name" in (got.problem or "")
    assert not any(a.startswith("-x") or "--output" in a for call in git.calls for a in call)


NOISY = "half of its 12 baselines see no slowdown below +40%"


def test_noisy_stored_baselines_give_way_to_a_same_session_comparison() -> None:
    answers = {
        commit("main"): HEAD,
        ("merge-base", "HEAD", "main"): HEAD,
        (*DESCRIBE, "HEAD"): "v1.2.0",
        commit("v1.2.0"): TAG,
    }
    got = pick(answers, stored=True, noisy=NOISY)
    assert got.ref == "v1.2.0" and not got.baselines  # type: ignore[attr-defined]
    why = got.why  # type: ignore[attr-defined]
    assert "the stored baselines of this hardware class (linux-x-v3) are too noisy" in why
    assert NOISY in why and "last release tag v1.2.0" in why
    # where nothing else can be measured, the noisy baselines stay, and the run says so
    kept = choose(
        stored=True, machine="m", repo=Path("/repo"), environ={}, run=FakeGit({}), noisy=NOISY
    )
    assert kept.baselines and kept.ref is None and kept.why.endswith(f"They are noisy: {NOISY}")


def _baselines_with_runs(root: Path, runs: list[list[float]]) -> Path:
    """A committed baseline entry, four times under other names, each with ``runs``."""
    src = next(  # a timed baseline (counts baselines have no rounds of time)
        p
        for p in sorted(BASELINES.glob("*/perf_tests/test_dogfood.json"))
        if not p.parts[-3].startswith("counts-")
    )
    doc = json.loads(src.read_text())
    (name, entry), *_ = doc["benchmarks"].items()
    entry["runs"] = runs
    entry["samples"] = [v for r in runs for v in r]
    doc["benchmarks"] = {f"{name}-{i}": entry for i in range(4)}
    target = root / "m" / "perf_tests"
    target.mkdir(parents=True, exist_ok=True)
    (target / "test_dogfood.json").write_text(json.dumps(doc))
    return root / "m"


def test_baselines_whose_rounds_scattered_are_named_noisy(tmp_path: Path) -> None:
    steady = [[1.0 + 0.001 * i for i in range(10)] for _ in range(8)]
    steady = [[v * (1 + 0.01 * (k % 3 - 1)) for v in r] for k, r in enumerate(steady)]
    assert stored_noisy(_baselines_with_runs(tmp_path / "a", steady)) is None
    scattered = [[v * f for v in steady[0]] for f in (0.7, 1.0, 1.5, 0.8, 1.3, 1.0, 0.6, 1.4)]
    why = stored_noisy(_baselines_with_runs(tmp_path / "b", scattered))
    assert why is not None and why.startswith("half of its ") and "see no slowdown below +" in why
    floor = int(why.split("below +")[1].split("%")[0])
    assert floor > 100 * NOISY_FLOOR


def test_unreadable_or_too_few_baselines_are_no_evidence_of_noise(tmp_path: Path) -> None:
    group = tmp_path / "m" / "perf_tests"
    group.mkdir(parents=True)
    (group / "test_x.json").write_text("{not json")
    assert stored_noisy(tmp_path / "m") is None
    assert (group / "test_x.json").read_text() == "{not json"  # left untouched
    assert stored_noisy(tmp_path / "absent") is None
