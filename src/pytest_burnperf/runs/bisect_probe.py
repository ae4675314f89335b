"""``burnperf bisect``'s git side and its probe: the commits between a good and a bad one (first
parent), the checks that make the range valid, and the measure of the selected benchmarks at one
commit, taken by the plugin itself in pytest processes. No pytest here.

A commit is measured as ``--perf-against`` measures a git revision: its tree is installed into a
cached environment of its own (runs/comparison/environments.py) and put first on the path of this
interpreter, the benchmark files coming from the current checkout. Its CPU benchmarks are counted
under callgrind (``--perf-measure counts``) against an empty baselines folder; its device
benchmarks are timed on the device's clock in a session that measures the good commit beside it
(``--perf-against GOOD``, rounds interleaved), so each round gives a ratio to the good commit
that the host's and the device's state of the moment cancel from. Where nothing is counted (no
valgrind, or ``burnperf bisect --measure time``) the CPU benchmarks are timed that way too. Both
are read back from the runs' results files. A commit that does not install is a
:class:`core.judging.bisection.ProbeFailed`: the search skips it.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_burnperf import json_fields as jf
from pytest_burnperf.core import measures
from pytest_burnperf.core.judging.bisection import Measured, ProbeFailed
from pytest_burnperf.core.options.settings import KINDS
from pytest_burnperf.core.text import tail
from pytest_burnperf.runs.comparison import environments
from pytest_burnperf.runs.comparison.same_session import side_of
from pytest_burnperf.runs.scheduler import Side

#: pytest's exit status when nothing was selected (a measure with no benchmark of its kind).
NO_TESTS_COLLECTED = 5


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
    if shas[good] == shas[bad]:
        raise RangeError(
            f"{good} and {bad} are the same commit ({shas[good][:12]}): there is nothing to "
            "bisect between them; give GOOD older than BAD (e.g. v1.2 HEAD)"
        )
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


def changed_here(repo: Path) -> list[str]:
    """The tracked files the working tree changed (staged or not), as git names them: the
    benchmark files a bisection reads from the checkout, whatever the commit."""
    got = _git(repo, "status", "--porcelain", "--untracked-files=no")
    return [line[3:] for line in got.stdout.splitlines() if len(line) > 3]


def merged_branch(repo: Path, sha: str) -> tuple[str, str] | None:
    """Where commit ``sha`` is a merge: (the merge base of its parents, its second parent), the
    range that ``burnperf bisect`` takes to search the commits the merge brought in; else None."""
    second = _git(repo, "rev-parse", "--verify", "--quiet", f"{sha}^2")
    if second.returncode != 0 or not second.stdout.strip():
        return None
    tip = second.stdout.strip()
    base = _git(repo, "merge-base", f"{sha}^1", tip)
    if base.returncode != 0 or not base.stdout.strip():
        return None
    return base.stdout.strip(), tip


def regressed_tests(doc: object) -> tuple[list[str], list[str]]:
    """The benchmarks a results document (``--perf-json``, read strictly by the caller) judged
    ``regressed``, as pytest node ids: (the CPU ones, which ``--from-results`` bisects by counts
    where valgrind runs; the others, on devices, by device time)."""
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


#: The device kinds a probe's timed session selects (``--perf-backends``).
DEVICE_KINDS = tuple(k for k in KINDS if k != "cpu")


@dataclass
class Measures:
    """What the probes learned about the selected benchmarks: each counted one's interpreter
    share (the largest seen), which ones are timed beside the good commit (device benchmarks;
    every one where nothing is counted), and whether the bad commit's sessions found any
    benchmark of each measure (None until it is measured)."""

    interpreter: dict[str, float] = field(default_factory=dict)
    timed: set[str] = field(default_factory=set)
    counts_found: bool | None = None
    timed_found: bool | None = None
    #: CPU benchmarks the bad commit's counts session ran but did not count (timed instead:
    #: over the count limit, or their counted process failed): not bisected.
    uncounted: set[str] = field(default_factory=set)


def commit_probe(
    repo: Path,
    commits: Sequence[Commit],
    pytest_args: Sequence[str],
    *,
    cwd: Path,
    measures: Measures,
    python: str = sys.executable,
    say: Callable[[str], None] = lambda _line: None,
    cache: Path | None = None,
    count_jobs: int = 1,
    count: bool = True,
) -> Callable[[int], Measured]:
    """The probe of ``commits[i]``: each selected CPU benchmark's instructions per counted call
    (a ``--perf-measure counts`` session, CPU backends only), and each device benchmark's
    ratios to the good commit, round by round (a ``--perf-against GOOD`` session on the device
    kinds, time measured on the device's clock; at the good commit itself an A/A session).
    ``count`` False (no valgrind, or ``--measure time``): no counts session, and the timed
    session takes the CPU benchmarks too, timed beside the good commit like the devices. Timed
    sessions never run side by side (they would share the device, and load each other). A
    measure whose session at the bad commit found nothing is not run again. ``cwd``: where
    pytest runs, as the user would."""
    good, last = commits[0].sha, len(commits) - 1
    timed_lock = threading.Lock()
    if not count:
        measures.counts_found = False
    kinds = DEVICE_KINDS if count else KINDS
    # the user's own --perf-backends selects (it would override ours); what each session reads
    # back is still only its measure's
    chosen = any(a == "--perf-backends" or a.startswith("--perf-backends=") for a in pytest_args)

    def backends(names: Sequence[str]) -> list[str]:
        return [] if chosen else ["--perf-backends", ",".join(names)]

    def session(side: Side, what: list[str], tmp: Path, name: str) -> object | None:
        return _session(side, what, tmp / f"{name}.json", tmp, cwd, pytest_args)

    def probe(i: int) -> Measured:
        commit = commits[i]
        say(f"burnperf bisect: installing {commit.sha[:12]} ({commit.subject[:60]}) ...")
        try:
            env = environments.resolve(commit.sha, repo=repo, python=python, cache=cache)
        except environments.EnvError as exc:
            first = str(exc).splitlines()[0]
            raise ProbeFailed(first.removesuffix(" Last lines:").rstrip(".")) from None
        side = side_of(commit.sha[:12], env)
        got: dict[str, list[float]] = {}
        with tempfile.TemporaryDirectory(prefix="burnperf-bisect-") as tmp:
            if count and measures.counts_found is not False:
                say(f"burnperf bisect: counting at {commit.sha[:12]} ...")
                counts = ["--perf-measure", "counts", "--perf-count-jobs", str(count_jobs)]
                doc = session(side, [*counts, *backends(["cpu"])], Path(tmp), "counts")
                counted = {} if doc is None else read_counts(doc, measures.interpreter)
                got.update(counted)
                if i == last:
                    measures.counts_found = bool(counted)
                    measures.uncounted.update(set(ran_cpu(doc)) - set(counted))
            if measures.timed_found is not False:
                timed = ["--perf-measure", "time", "--perf-against", good]
                with timed_lock:
                    say(f"burnperf bisect: timing at {commit.sha[:12]} beside the good commit")
                    doc = session(side, [*timed, *backends(kinds)], Path(tmp), "timed")
                paired = {} if doc is None else read_paired(doc, cpu=not count)
                measures.timed.update(paired)
                got.update(paired)
                if i == last:
                    measures.timed_found = bool(paired)
        return got

    return probe


def _session(
    side: Side, what: list[str], out: Path, tmp: Path, cwd: Path, pytest_args: Sequence[str]
) -> object | None:
    """One ``pytest --perf`` run in ``side``'s environment, its results document (None where
    nothing was selected); :class:`ProbeFailed` where it wrote none."""
    cmd = [
        side.python,
        "-m",
        "pytest",
        "--perf",
        *what,
        "--perf-baselines-dir",
        str(tmp / "baselines"),
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
    if ran.returncode == NO_TESTS_COLLECTED:
        return None
    if not out.is_file():
        raise ProbeFailed(
            f"its pytest run wrote no results (exit {ran.returncode}): "
            f"{tail(ran.stdout + ran.stderr, 3)}"
        )
    doc: object = json.loads(out.read_text(encoding="utf-8"))
    return doc


def step_profiles(
    repo: Path,
    before: Commit,
    at: Commit,
    tests: Sequence[str],
    pytest_args: Sequence[str],
    *,
    cwd: Path,
    counted: bool,
    profile_dir: Path,
    python: str = sys.executable,
    cache: Path | None = None,
) -> dict[str, str]:
    """What grew in each of ``tests`` from commit ``before`` to ``at`` (a step the search
    found): ``at`` measured beside ``before`` (``--perf-against``, by counts where ``counted``)
    with ``--perf-profile``, both sides profiled, each in its own environment; the profiles kept
    in ``profile_dir``. {test: the note of what grew}, the commits named by their short hashes;
    :class:`ProbeFailed` where that run failed."""
    try:
        env = environments.resolve(at.sha, repo=repo, python=python, cache=cache)
    except environments.EnvError as exc:
        raise ProbeFailed(str(exc).splitlines()[0]) from None
    side = side_of(at.sha[:12], env)
    measure = ["--perf-measure", (measures.COUNTS_ONLY if counted else measures.TIME_ONLY).name]
    what = [
        *measure,
        "--perf-against",
        before.sha[:12],
        "--perf-profile",
        "all",
        "--perf-profile-dir",
        str(profile_dir),
    ]
    with tempfile.TemporaryDirectory(prefix="burnperf-bisect-") as tmp:
        doc = _session(
            side, what, Path(tmp) / "profiled.json", Path(tmp), cwd, [*pytest_args, *tests]
        )
    out: dict[str, str] = {}
    wanted = set(tests)
    for r in jf.mappings(jf.mapping(doc).get("results")):
        test = jf.text(r.get("test"))
        note = jf.text(jf.mapping(r.get("profile")).get("note"))
        if test in wanted and note:
            short = at.sha[:12]
            out[test] = note.replace(" -> current,", f" -> {short},").replace(
                " vs current)", f" vs {short})"
            )
    return out


def read_paired(doc: object, *, cpu: bool = False) -> dict[str, list[float]]:
    """Each device benchmark's ratios to the reference measured beside it, one a round (the
    median of the commit's samples in round k over the reference's in the same round), from a
    same-session results document; CPU benchmarks (unless ``cpu``) and those without paired
    rounds have none."""
    out: dict[str, list[float]] = {}
    for r in jf.mappings(jf.mapping(doc).get("results")):
        test = jf.text(r.get("test"))
        if test is None or r.get("kind") is None or (r.get("kind") == "cpu" and not cpu):
            continue
        mine = [jf.floats(run) for run in jf.sequence(r.get("runs"))]
        theirs = [jf.floats(run) for run in jf.sequence(jf.mapping(r.get("baseline")).get("runs"))]
        ratios = [
            statistics.median(a) / statistics.median(b)
            for a, b in zip(mine, theirs, strict=False)  # a round one side lost: unpaired
            if a and b and statistics.median(b) > 0
        ]
        if ratios:
            out[test] = ratios
    return out


def ran_cpu(doc: object) -> list[str]:
    """The CPU benchmarks a results document has a result for (counted or not)."""
    return [
        test
        for r in jf.mappings(jf.mapping(doc).get("results"))
        if r.get("kind") == "cpu" and (test := jf.text(r.get("test"))) is not None
    ]


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
