"""``burnperf bisect``'s git side and its probe: the commits between a good and a bad one (first
parent), the checks that make the range valid, and the counts of the selected benchmarks at one
commit, measured by the plugin itself in a pytest process. No pytest here.

A commit is measured as ``--perf-against`` measures a git revision: its tree is installed into a
cached environment of its own (runs/environments.py) and put first on the path of this
interpreter, the benchmark files coming from the current checkout; the benchmarks are counted
under callgrind (``--perf-measure counts``) against an empty baselines folder, and their counts
read back from the run's results file. A commit that does not install is a
:class:`core.bisection.ProbeFailed`: the search skips it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_burnperf import json_fields as jf
from pytest_burnperf.core.bisection import Measured, ProbeFailed
from pytest_burnperf.core.text import tail
from pytest_burnperf.runs import environments
from pytest_burnperf.runs.same_session import side_of


class RangeError(Exception):
    """GOOD..BAD cannot be bisected here: the message names the revision and what to do."""


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
    )


def commits_between(repo: Path, good: str, bad: str) -> list[Commit]:
    """The commits from ``good`` to ``bad`` along ``bad``'s first parents, oldest first, both
    included; :class:`RangeError` where that is not a range."""
    if _git(repo, "rev-parse", "--show-toplevel").returncode != 0:
        raise RangeError(f"{repo} is not in a git repository")
    shas = {}
    for name in (good, bad):
        got = _git(repo, "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}")
        if got.returncode != 0 or not got.stdout.strip():
            shallow = _git(repo, "rev-parse", "--is-shallow-repository").stdout.strip() == "true"
            raise RangeError(
                f"{name}: no such revision here"
                + (
                    " (this is a shallow clone: fetch the range, e.g. `git fetch --unshallow`)"
                    if shallow
                    else "; `git log --oneline` lists the revisions"
                )
            )
        shas[name] = got.stdout.strip()
    if _git(repo, "merge-base", "--is-ancestor", shas[good], shas[bad]).returncode != 0:
        raise RangeError(
            f"{good} is not an ancestor of {bad}: bisect needs GOOD older than BAD on one history"
        )
    listed = _git(
        repo,
        "rev-list",
        "--first-parent",
        "--reverse",
        "--format=%H %s",
        f"{shas[good]}..{shas[bad]}",
    )
    if listed.returncode != 0:
        raise RangeError(f"git rev-list {good}..{bad} failed: {tail(listed.stderr, 2)}")
    out = [Commit(shas[good], _subject(repo, shas[good]))]
    for line in listed.stdout.splitlines():
        if line.startswith("commit "):
            continue
        sha, _, subject = line.partition(" ")
        out.append(Commit(sha, subject))
    if out[-1].sha != shas[bad]:
        raise RangeError(
            f"{good} is not on {bad}'s first-parent line (it came in through a merge): give "
            "GOOD on the main line"
        )
    return out


def changed_files(repo: Path, before: str, at: str) -> list[str]:
    """The paths that differ between commits ``before`` and ``at`` (as git names them); empty
    where git cannot say."""
    got = _git(repo, "diff", "--name-only", "--no-renames", before, at)
    return got.stdout.splitlines() if got.returncode == 0 else []


def regressed_tests(doc: object) -> tuple[list[str], list[str]]:
    """The benchmarks a results document (``--perf-json``, read strictly by the caller) judged
    ``regressed``, as pytest node ids: (the CPU ones, which ``--from-results`` bisects by counts;
    the others, on devices, which it cannot)."""
    cpu: set[str] = set()
    other: set[str] = set()
    for r in jf.mappings(jf.mapping(doc).get("results")):
        verdict = jf.mapping(r.get("verdict"))
        test = jf.text(r.get("test"))
        if test and verdict.get("status") == "regressed":
            (cpu if r.get("kind") == "cpu" else other).add(test)
    return sorted(cpu), sorted(other)


def _subject(repo: Path, sha: str) -> str:
    return _git(repo, "log", "-1", "--format=%s", sha).stdout.strip()


def counts_probe(
    repo: Path,
    commits: Sequence[Commit],
    pytest_args: Sequence[str],
    *,
    cwd: Path,
    interpreter: dict[str, float],
    python: str = sys.executable,
    say: Callable[[str], None] = lambda _line: None,
    cache: Path | None = None,
    count_jobs: int = 1,
) -> Callable[[int], Measured]:
    """The probe of ``commits[i]``: each selected benchmark's instructions per counted call (the
    share of them the interpreter ran kept in ``interpreter``, the largest seen: it sets how far
    counts must move to count as moved). ``cwd``: where pytest runs, as the user would."""

    def probe(i: int) -> Measured:
        commit = commits[i]
        say(f"burnperf bisect: installing {commit.sha[:12]} ({commit.subject[:60]}) ...")
        try:
            env = environments.resolve(commit.sha, repo=repo, python=python, cache=cache)
        except environments.EnvError as exc:
            first = str(exc).splitlines()[0]
            raise ProbeFailed(first.removesuffix(" Last lines:").rstrip(".")) from None
        side = side_of(commit.sha[:12], env)
        say(f"burnperf bisect: counting at {commit.sha[:12]} ...")
        with tempfile.TemporaryDirectory(prefix="burnperf-bisect-") as tmp:
            out = Path(tmp) / "results.json"
            cmd = [
                side.python,
                "-m",
                "pytest",
                "--perf",
                "--perf-measure",
                "counts",
                "--perf-count-jobs",
                str(count_jobs),
                "--perf-baselines-dir",
                str(Path(tmp) / "baselines"),
                "--perf-json",
                str(out),
                "-p",
                "no:randomly",
                "-p",
                "no:cacheprovider",
                "-q",
                *pytest_args,
            ]
            ran = subprocess.run(
                cmd, cwd=cwd, env=side.environ, capture_output=True, text=True, check=False
            )
            if not out.is_file():
                raise ProbeFailed(
                    f"its pytest run wrote no results (exit {ran.returncode}): "
                    f"{tail(ran.stdout + ran.stderr, 3)}"
                )
            return read_counts(json.loads(out.read_text(encoding="utf-8")), interpreter)

    return probe


def read_counts(doc: object, interpreter: dict[str, float]) -> dict[str, list[float]]:
    """Each counted benchmark's instructions per call from a results document (a benchmark that
    was timed instead, or failed, has none); its interpreter share into ``interpreter``."""
    out: dict[str, list[float]] = {}
    for r in jf.mappings(jf.mapping(doc).get("results")):
        test = jf.text(r.get("test"))
        counted = jf.mapping(r.get("counts"))
        calls = jf.floats(counted.get("instructions"))
        if test is not None and calls:
            out[test] = calls
            share = jf.number(counted.get("interpreter")) or 0.0
            interpreter[test] = max(interpreter.get(test, 0.0), share)
    return out
