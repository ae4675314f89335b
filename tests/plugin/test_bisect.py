"""``burnperf bisect``: a regression found in a range of commits named by its commit, by
counts, past a commit that does not build; and the errors of a range that cannot be bisected."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_burnperf.cli import main
from pytest_burnperf.core.judging.abstention import Cause
from pytest_burnperf.core.judging.bisection import dependency_changes
from pytest_burnperf.core.records.results import RESULTS_SCHEMA, RESULTS_VERSION
from pytest_burnperf.runs import bisect_probe

from ._helpers import FAST, git, use_virtual_clock
from .test_counts import LOOP_BENCH, LOOP_PACKAGE, _need_valgrind
from .test_same_session import PYPROJECT


def _commit(root: Path, message: str, n: int | None = None, pyproject: str | None = None) -> None:
    if n is not None:
        (root / "src" / "looppkg" / "__init__.py").write_text(LOOP_PACKAGE.format(n=n))
    if pyproject is not None:
        (root / "pyproject.toml").write_text(pyproject)
    (root / "NOTES").write_text(message)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


@pytest.fixture
def history(pytester: pytest.Pytester, env_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Eight commits after ``good``: +10% work in ``slower``, right after ``broken build``
    (a pyproject that does not parse, so that commit cannot be installed)."""
    _need_valgrind()
    root = pytester.path
    good = PYPROJECT.replace("spinpkg", "looppkg")
    (root / "src" / "looppkg").mkdir(parents=True)
    (root / "test_counted_pkg.py").write_text(LOOP_BENCH)
    (root / ".gitignore").write_text("__pycache__/\n")
    git(root, "init", "-q", "-b", "main")
    _commit(root, "good", n=200_000, pyproject=good)
    git(root, "tag", "good")
    for i in range(4):
        _commit(root, f"docs {i}")
    _commit(root, "broken build", pyproject="[project\n")
    _commit(root, "slower, build fixed", n=220_000, pyproject=good)
    _commit(root, "docs 4")
    monkeypatch.setenv("BURNPERF_ENV_CACHE", str(env_cache))
    monkeypatch.setenv("PYTHONPATH", str(root / "src"))
    monkeypatch.chdir(root)
    return root


#: The weekly workflow's bisection (.github/workflows/benchmarks.yml, job "bisect").
WEEKLY_SCRIPT = Path(__file__).resolve().parents[2] / ".ci" / "bisect-weekly"


def _results(statuses: dict[str, str]) -> dict[str, object]:
    """A --perf-json document judging the named CPU benchmarks as given."""
    return {
        "schema": RESULTS_SCHEMA,
        "version": RESULTS_VERSION,
        "results": [
            {"test": test, "kind": "cpu", "samples": [1e-3, 1e-3], "verdict": {"status": status}}
            for test, status in statuses.items()
        ],
    }


@pytest.mark.slow
def test_bisect_names_the_commit_that_slowed_a_benchmark_past_one_that_does_not_build(
    history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # two commits measured side by side (counts do not depend on the host's load)
    # (the profiles of a step: test_benchmarks_timed_beside_the_good_commit_...)
    args = ["--json", "--jobs", "2", "--no-profiles", "--", "-k", "test_pkg_loop"]
    assert main(["bisect", "good", "HEAD", *args]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["commits"] == 8
    ((name, steps),) = doc["benchmarks"].items()
    assert name.endswith("test_pkg_loop[numpy-cpu-f64]")
    (step,) = steps
    assert step["at"]["subject"] == "slower, build fixed"
    assert step["before"]["subject"] == "docs 3"  # the broken build between was skipped
    assert 1.05 < step["ratio"] < 1.15
    (skipped,) = doc["skipped"]
    assert skipped["subject"] == "broken build" and skipped["why"]
    assert len(doc["probed"]) <= 2 * 3 + 2  # log2(8) probes a step, and the two ends

    assert step["dependency_files"] == []  # pyproject.toml is the same at both ends of the step

    # the weekly workflow's script: what the weekly run judged regressed, from the reference it
    # compared with, into bisect.md and the job summary (one commit at a time: --jobs 1); that
    # reference is the last commit before the broken build, so the script's search is short
    weekly = _results({f"{name}": "regressed", "other": "unchanged"})
    reference = git(history, "rev-parse", "HEAD~3")  # "docs 3"
    weekly["settings"] = {"reference": {"ref": reference, "baselines": False}}
    (history / "weekly.json").write_text(json.dumps(weekly))
    summary = history / "summary.md"
    env = dict(os.environ, GITHUB_STEP_SUMMARY=str(summary))
    ran = subprocess.run(
        ["bash", str(WEEKLY_SCRIPT), "weekly.json", sys.executable, "--jobs", "1", "--no-profiles"],
        cwd=history,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert '"slower, build fixed" (or one of the 1 skipped commit(s) before it)' in ran.stdout
    assert "skipped " in ran.stdout and '"broken build"' in ran.stdout
    written = (history / "bisect.md").read_text()
    assert (
        written.startswith(f"## pytest-burnperf: bisect `{reference} HEAD`")
        and "slower, build fixed" in written
    )
    assert summary.read_text() == written


def test_a_range_that_cannot_be_bisected_is_a_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = pytester.path
    monkeypatch.chdir(root)
    assert main(["bisect", "a", "b"]) == 2
    assert "is not in a git repository" in capsys.readouterr().err
    git(root, "init", "-q", "-b", "main")
    (root / "f").write_text("1")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "one")
    git(root, "tag", "one")
    (root / "f").write_text("2")
    git(root, "commit", "-q", "-am", "two")
    assert main(["bisect", "HEAD", "one"]) == 2
    assert "HEAD is not an ancestor of one" in capsys.readouterr().err
    assert main(["bisect", "nosuch", "HEAD"]) == 2
    assert "nosuch: no such revision here" in capsys.readouterr().err
    # issue 74: one commit twice ("measured 2 of 1 commits") is no range
    assert main(["bisect", "HEAD", "HEAD"]) == 2
    assert "HEAD and HEAD are the same commit (" in capsys.readouterr().err
    assert main(["bisect", "HEAD", "main"]) == 2
    assert "nothing to bisect between them" in capsys.readouterr().err
    assert main(["bisect", "one", "HEAD", "--max-probes", "1"]) == 2
    assert "--max-probes 1: at least 2" in capsys.readouterr().err
    assert main(["bisect", "one", "HEAD", "--jobs", "0"]) == 2
    assert "--jobs 0: at least 1" in capsys.readouterr().err
    assert main(["bisect", "one", "HEAD", "--max-minutes", "0"]) == 2
    assert "--max-minutes 0: a number of minutes above 0" in capsys.readouterr().err
    assert main(["bisect", "one", "HEAD", "--markdown", "out.txt"]) == 2
    assert "--markdown out.txt: must be a Markdown file" in capsys.readouterr().err
    assert main(["bisect", "one", "HEAD", "--from-results", "nosuch.json"]) == 2
    assert "nosuch.json: no such file" in capsys.readouterr().err
    # nothing regressed in the weekly run: nothing to bisect, and nothing is installed
    (root / "weekly.json").write_text(json.dumps(_results({"t.py::test_a": "unchanged"})))
    assert main(["bisect", "one", "HEAD", "--from-results", "weekly.json"]) == 0
    assert "no benchmark regressed: nothing to bisect" in capsys.readouterr().out


def test_a_steps_dependency_files_are_read_from_git(pytester: pytest.Pytester) -> None:
    root = pytester.path
    git(root, "init", "-q", "-b", "main")
    (root / "lib.py").write_text("x = 1\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "one")
    (root / "lib.py").write_text("x = 2\n")
    (root / "requirements.txt").write_text("numpy==2.3.5\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "two")
    changed = bisect_probe.changed_files(root, "HEAD~1", "HEAD")
    assert sorted(changed) == ["lib.py", "requirements.txt"]
    assert dependency_changes(changed) == ["requirements.txt"]
    assert bisect_probe.changed_files(root, "HEAD", "nosuch") == []
    # a working tree that changes tracked files: named (untracked ones are not)
    assert bisect_probe.changed_here(root) == []
    (root / "lib.py").write_text("x = 3\n")
    (root / "scratch.py").write_text("")
    assert bisect_probe.changed_here(root) == ["lib.py"]
    doc = _results({"a.py::test_x": "regressed", "a.py::test_y": "unchanged"})
    doc["results"].append(  # type: ignore[attr-defined]
        {"test": "a.py::test_gpu", "kind": "cuda", "verdict": {"status": "regressed"}}
    )
    assert bisect_probe.regressed_tests(doc) == (["a.py::test_x"], ["a.py::test_gpu"])


def test_paired_rounds_are_read_as_ratios_to_the_good_commit() -> None:
    """A same-session results file: each round's median of the commit over the good commit's in
    that round; CPU benchmarks only where nothing is counted, a round one side lost unpaired."""
    doc = {
        "results": [
            {
                "test": "t.py::test_gpu",
                "kind": "cuda",
                "runs": [[2.2, 2.2, 2.3], [2.4, 2.4], [9.0]],
                "baseline": {"reference": "good", "runs": [[2.0, 2.0, 1.9], [2.0, 2.0]]},
            },
            {
                "test": "t.py::test_cpu",
                "kind": "cpu",
                "runs": [[3.0]],
                "baseline": {"reference": "good", "runs": [[2.0]]},
            },
            {"test": "t.py::test_skipped", "kind": "cuda", "runs": [], "baseline": None},
        ]
    }
    assert bisect_probe.ran_cpu(doc) == ["t.py::test_cpu"]
    got = bisect_probe.read_paired(doc)
    assert list(got) == ["t.py::test_gpu"]
    assert got["t.py::test_gpu"] == pytest.approx([1.1, 1.2])
    assert bisect_probe.read_paired(doc, cpu=True)["t.py::test_cpu"] == pytest.approx([1.5])


def test_the_report_names_a_change_within_the_minimum_effect_and_a_dependency_step(
    tmp_path: Path,
) -> None:
    """What the terminal and the Markdown say, from a made-up search: a step with the dependency
    file its commits changed, a change too small to search, every text escaped."""
    from pytest_burnperf.cli.bisect_report import Report, as_markdown, lines
    from pytest_burnperf.core.judging.bisection import Search, Step
    from pytest_burnperf.core.judging.verdict import INCONCLUSIVE, UNCHANGED, Verdict

    commits = [bisect_probe.Commit(str(i) * 40, f"commit {i}") for i in range(4)]
    commits[2] = bisect_probe.Commit("2" * 40, "bump *numpy* <b>")
    found = Search(steps={"t.py::test_a": [Step(before=1, at=2, ratio=1.08)], "t.py::test_b": []})
    small = Verdict(UNCHANGED, 1.0, ratio=1.003, effect=0.005)
    report = Report(found, commits, [1.0, 3.0], {"t.py::test_b": small}, {(1, 2): ["uv.lock"]})
    out = lines(report)
    assert out[0].startswith("t.py::test_a: +8.00% at 222222222222 ")
    assert out[0].endswith("(a dependency change: uv.lock)")
    assert out[1] == (
        "t.py::test_b: +0.30% from good to bad, within its minimum effect of 0.50% (the counts' "
        "floor, or what they spread between its calls): no step searched"
    )
    undecided = Verdict(INCONCLUSIVE, 1.0, ratio=1.04, effect=0.005, cause=Cause.NOISE)
    report_u = Report(found, commits, [1.0], {"t.py::test_b": undecided}, {})
    assert "its counted calls spread too much to say" in lines(report_u)[1]
    text = as_markdown(report, "good HEAD")
    assert "<b>" not in text and "*numpy*" not in text
    # --markdown replaces its own earlier file, never one it did not write
    from pytest_burnperf.report import markdown

    mine, theirs = tmp_path / "bisect.md", tmp_path / "notes.md"
    mine.write_text(text)
    theirs.write_text("# my notes\n")
    assert markdown.target_problem(mine) is None
    assert markdown.target_problem(theirs) is not None

    # a device benchmark too spread to search, one --from-results asked for that was not
    # measured, and the measures named in the last line
    from pytest_burnperf.core.judging.bisection import paired_change

    wide = paired_change([1.0, 1.0, 1.0], [1.0, 1.25, 1.06], threshold=0.05, alpha=0.01)
    found = Search(steps={"t.py::test_gpu": [], "t.py::test_a": []})
    report = Report(
        found,
        commits,
        [2.0],
        {"t.py::test_gpu": wide},
        {},
        timed=frozenset({"t.py::test_gpu"}),
        missing=["t.py::test_gone"],
    )
    out = lines(report)
    assert (
        out[1].startswith("t.py::test_gpu: +9.") and "timed beside the good commit: too " in out[1]
    )
    assert out[1].endswith("spread to search (more rounds: -- --perf-rounds 8)")
    assert out[2] == (
        "t.py::test_gone: not measured at the bad commit (its device is not here, or it was "
        "timed instead of counted: `-- --perf-count-limit 0` counts it whatever it costs): not "
        "bisected"
    )
    assert out[-1].startswith("measured 0 of 4 commits by counts and time beside the good commit")


BISECT = (sys.executable, "-m", "pytest_burnperf.cli", "bisect", "good", "HEAD")


@pytest.mark.slow
def test_benchmarks_timed_beside_the_good_commit_are_bisected_by_paired_rounds(
    pytester: pytest.Pytester, env_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--measure time`` (what a machine without valgrind gets, and how device benchmarks are
    always measured): each commit is timed in a session that measures the good commit beside it,
    and the rounds' ratios are searched. On the virtual clock, so the +30% step is exact on a
    busy machine too; the commit that does not build is skipped."""
    from .test_same_session import BENCH, PACKAGE

    root = pytester.path
    (root / "src" / "spinpkg").mkdir(parents=True)
    (root / "test_bench.py").write_text(BENCH)
    use_virtual_clock(pytester)
    (root / ".gitignore").write_text("__pycache__/\n")
    git(root, "init", "-q", "-b", "main")
    steps = [("good", 1.0, PYPROJECT), ("docs", None, None), ("broken build", None, "[project\n")]
    steps += [("slower", 1.3, PYPROJECT), ("docs 2", None, None)]
    for message, factor, pyproject in steps:
        if factor is not None:
            (root / "src" / "spinpkg" / "__init__.py").write_text(PACKAGE.format(factor=factor))
        if pyproject is not None:
            (root / "pyproject.toml").write_text(pyproject)
        (root / "NOTES").write_text(message)
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", message)
        if message == "good":
            git(root, "tag", "good")
    monkeypatch.setenv("BURNPERF_ENV_CACHE", str(env_cache))
    monkeypatch.setenv("PYTHONPATH", str(root / "src"))
    monkeypatch.chdir(root)
    ran = subprocess.run(
        [*BISECT, "--json", "--measure", "time", "--", *FAST],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    doc = json.loads(ran.stdout)
    ((name, (step,)),) = doc["benchmarks"].items()
    assert name == "test_bench.py::test_spin[numpy-cpu-f64]" and doc["timed"] == [name]
    assert step["measure"] == "time" and 1.2 < step["ratio"] < 1.4
    assert step["at"]["subject"] == "slower" and step["before"]["subject"] == "docs"
    # what grew at the step: the slower commit measured beside the one before, both profiled
    assert step["what_grew"].startswith(f"what grew ({step['before']['sha'][:12]} -> ")
    assert "planted_extra_pass" in step["what_grew"]
    assert list((root / "perf-profiles" / "bisect").glob("*.pstats"))
    assert [s["subject"] for s in doc["skipped"]] == ["broken build"]
    # nothing selected: said, not an empty report
    ran = subprocess.run(
        [*BISECT, "--measure", "time", "--", "-k", "nosuchbenchmark"],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert "HEAD: none of the selected benchmarks was measured there" in ran.stderr


def test_a_step_at_a_merge_names_the_range_that_searches_its_branch(
    pytester: pytest.Pytester,
) -> None:
    """The search follows first parents, so a slowdown brought in by a merge is found at the
    merge; the line says which range searches the commits the merge brought in."""
    from pytest_burnperf.cli.bisect_report import Report, as_json, lines
    from pytest_burnperf.core.judging.bisection import Search, Step

    root = pytester.path
    git(root, "init", "-q", "-b", "main")
    for name in ("base", "main work"):
        (root / "NOTES").write_text(name)
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", name)
    git(root, "checkout", "-q", "-b", "topic", "HEAD~1")
    (root / "lib.py").write_text("x = 1\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "topic work")
    git(root, "checkout", "-q", "main")
    git(root, "merge", "-q", "--no-ff", "-m", "merge topic", "topic")
    commits = bisect_probe.commits_between(root, "HEAD~2", "HEAD")
    assert [c.subject for c in commits] == ["base", "main work", "merge topic"]
    merged = bisect_probe.merged_branch(root, commits[2].sha)
    base = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "HEAD~2"], capture_output=True, text=True
    ).stdout.strip()
    topic = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "topic"], capture_output=True, text=True
    ).stdout.strip()
    assert merged == (base, topic)
    assert bisect_probe.merged_branch(root, commits[1].sha) is None
    found = Search(steps={"t.py::test_a": [Step(before=1, at=2, ratio=1.1)]})
    report = Report(found, commits, [1.0], {}, {}, merges={2: merged})
    assert lines(report)[0].endswith(
        f'"merge topic" (a merge: `burnperf bisect {base[:12]} {topic[:12]}` searches the '
        "commits it brought in)"
    )
    (step,) = as_json(report)["benchmarks"]["t.py::test_a"]  # type: ignore[index]
    assert step["merged_branch"] == {"base": base, "tip": topic}
