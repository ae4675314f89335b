"""``burnperf bisect GOOD BAD [-- PYTEST ARGS]``: which commit moved each selected benchmark,
by counts on the CPU and by device time paired with the good commit on devices
(runs/bisect_probe.py measures a commit, core/judging/bisection.py searches)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_burnperf.cli.arguments import EXIT_OK, InputError, results_doc
from pytest_burnperf.cli.bisect_report import Report, as_json, as_markdown, lines
from pytest_burnperf.core import measures
from pytest_burnperf.core.counting import counts
from pytest_burnperf.core.judging.bisection import (
    ProbeFailed,
    Search,
    bisect,
    dependency_changes,
    paired_change,
)
from pytest_burnperf.core.judging.verdict import IMPROVED, REGRESSED, Policy, Verdict
from pytest_burnperf.core.text import escape
from pytest_burnperf.host import callgrind
from pytest_burnperf.report import markdown
from pytest_burnperf.runs import bisect_probe

#: The family-wise error rate of the rule each comparison of the search uses.
ALPHA = 0.01
#: The smallest change a step timed beside the good commit must have (the gate's default
#: threshold): device time moved 0.01-0.7% between sessions on a quiet GPU, more for
#: launch-bound kernels; the host clock 1-5% between processes on a shared machine.
TIMED_THRESHOLD = Policy().threshold
#: The most commits measured side by side by default.
MAX_JOBS = 4


def register(sub: Any) -> None:
    p = sub.add_parser(
        "bisect",
        help="find the commit that moved each benchmark, by counts and device time",
        description="Measure the selected benchmarks at commits between GOOD and BAD (BAD's "
        "first parents) and name, for each benchmark that moved, every commit where it moved "
        "and by how much: CPU benchmarks by counts (callgrind), device benchmarks by device "
        "time in a session that measures GOOD beside each commit. Arguments after -- go to "
        "pytest (-k EXPR, test paths). Each commit is installed as --perf-against installs a "
        "git revision.",
    )
    p.add_argument("good", metavar="GOOD", help="a revision where the benchmarks were as wanted")
    p.add_argument("bad", metavar="BAD", help="a later revision where they moved (e.g. HEAD)")
    p.add_argument(
        "--max-probes",
        type=int,
        default=None,
        metavar="N",
        help="measure at most N commits (the good and bad ones included)",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="commits measured side by side (default: one per usable CPU, at most 4; counts do "
        "not depend on the host's load; timed sessions still run one at a time)",
    )
    p.add_argument(
        "--max-minutes",
        type=float,
        default=None,
        metavar="M",
        help="start no probe after M minutes (the good and bad commits are always measured); "
        "what is left is reported unfinished",
    )
    p.add_argument(
        "--from-results",
        type=Path,
        default=None,
        metavar="FILE",
        help="bisect the benchmarks a --perf-json results file judged regressed (the weekly "
        "run's); nothing regressed: nothing to do",
    )
    p.add_argument(
        "--markdown",
        type=Path,
        default=None,
        metavar="FILE",
        help="also write the findings as Markdown to FILE (and append them to "
        "$GITHUB_STEP_SUMMARY where it is set)",
    )
    p.add_argument(
        "--measure",
        choices=("auto", "counts", "time"),
        default=None,
        help="how CPU benchmarks are measured: counts (callgrind), or time beside the good "
        "commit in each probe's session; auto (the default): counts where valgrind runs, else "
        "time. Device benchmarks are always timed on the device beside the good commit",
    )
    p.add_argument(
        "--no-profiles",
        action="store_true",
        help="do not profile the two commits of each step found (by default each step is "
        "measured once more beside its commit before, both profiled, and what grew is named; "
        "the profiles land in perf-profiles/bisect)",
    )
    p.add_argument("--json", action="store_true", help="print the findings as JSON")
    p.add_argument(
        "rest", nargs=argparse.REMAINDER, metavar="... -- PYTEST ARGS", help=argparse.SUPPRESS
    )
    p.set_defaults(func=cmd_bisect)


def _split(args: argparse.Namespace) -> list[str]:
    """The pytest arguments (after ``--``, or whatever this command does not know); the options
    given after BAD (``--json``, ``--max-probes N``) are read into ``args``."""
    rest = list(args.rest)
    cut = rest.index("--") if "--" in rest else len(rest)
    late = argparse.ArgumentParser(prog="burnperf bisect", add_help=False)
    late.add_argument("--max-probes", type=int, default=args.max_probes)
    late.add_argument("--json", action="store_true", default=args.json)
    late.add_argument("--no-profiles", action="store_true", default=args.no_profiles)
    late.add_argument("--jobs", type=int, default=args.jobs)
    late.add_argument("--max-minutes", type=float, default=args.max_minutes)
    late.add_argument("--from-results", type=Path, default=args.from_results)
    late.add_argument("--markdown", type=Path, default=args.markdown)
    late.add_argument("--measure", choices=("auto", "counts", "time"), default=args.measure)
    got, unknown = late.parse_known_args(rest[:cut])
    args.max_probes, args.json, args.jobs = got.max_probes, got.json, got.jobs
    args.no_profiles = got.no_profiles
    args.max_minutes, args.from_results, args.markdown, args.measure = (
        got.max_minutes,
        got.from_results,
        got.markdown,
        got.measure or "auto",
    )
    return [*unknown, *rest[cut + 1 :]]


def _checked(args: argparse.Namespace) -> None:
    """The options' values, each refused with what is allowed."""
    if args.max_probes is not None and args.max_probes < 2:
        raise InputError(f"--max-probes {args.max_probes}: at least 2 (the good and bad commits)")
    if args.jobs is not None and args.jobs < 1:
        raise InputError(f"--jobs {args.jobs}: at least 1")
    if args.max_minutes is not None and not (0 < args.max_minutes < float("inf")):
        raise InputError(f"--max-minutes {args.max_minutes:g}: a number of minutes above 0")
    if args.markdown is not None:
        problem = markdown.target_problem(args.markdown)
        if problem is not None:
            raise InputError(f"--markdown {args.markdown}: {problem}")


def _from_results(path: Path) -> list[str]:
    """The node ids --from-results names: the benchmarks that file judged regressed, the CPU
    ones (bisected by counts) and those on devices (by device time, where the device is here)."""
    cpu, devices = bisect_probe.regressed_tests(results_doc(path))
    return sorted({*cpu, *devices})


def _counting(measure: str, say: Callable[[str], None]) -> bool:
    """Whether CPU benchmarks are counted: ``--measure counts`` needs valgrind (a usage error
    without it), ``auto`` counts where it runs and says so where it does not."""
    chosen = measures.choice(measure)
    if not (chosen.needs_counts or chosen.per_benchmark):  # the clock only
        return False
    missing = callgrind.unsupported_reason() or (
        None if callgrind.find_valgrind() else callgrind.valgrind_problem()
    )
    if missing is None:
        return True
    if chosen.needs_counts:
        raise InputError(f"--measure {chosen.name}: {missing}")
    say(
        f"burnperf bisect: CPU benchmarks are timed beside the good commit, not counted ({missing})"
    )
    return False


#: Where the profiles of each step land (beside --perf-profile's own folder).
PROFILE_DIR = Path("perf-profiles") / "bisect"


def _profiles(
    found: Search,
    commits: list[bisect_probe.Commit],
    rest: list[str],
    measures: bisect_probe.Measures,
    out_of_time: Callable[[], str | None],
    say: Callable[[str], None],
) -> dict[tuple[str, int], str]:
    """What grew at each step found: the step's commit measured beside the one before it, both
    profiled (one run for every benchmark that stepped there); why not, where that failed or the
    time budget ran out."""
    pairs: dict[tuple[int, int], list[str]] = {}
    for name, steps in sorted(found.steps.items()):
        for s in steps:
            pairs.setdefault((s.before, s.at), []).append(name)
    out: dict[tuple[str, int], str] = {}
    for (before, at), names in sorted(pairs.items()):
        late = out_of_time()
        if late is not None:
            out.update({(n, at): f"not profiled: {late}" for n in names})
            continue
        say(f"burnperf bisect: profiling {commits[at].sha[:12]} beside {commits[before].sha[:12]}")
        try:
            notes = bisect_probe.step_profiles(
                Path.cwd(),
                commits[before],
                commits[at],
                names,
                rest,
                cwd=Path.cwd(),
                counted=not all(n in measures.timed for n in names),
                profile_dir=PROFILE_DIR,
            )
        except ProbeFailed as exc:
            notes = {}
            why = f"not profiled: {exc}"
        else:
            why = "not profiled: the run kept no profile of it"
        out.update({(n, at): notes.get(n, why) for n in names})
    return out


def cmd_bisect(args: argparse.Namespace) -> int:
    started = time.monotonic()
    rest = _split(args)
    _checked(args)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    jobs = args.jobs if args.jobs is not None else max(1, min(MAX_JOBS, cpus or 1))
    chosen: list[str] = []
    if args.from_results is not None:
        chosen = _from_results(args.from_results)
        if not chosen:
            print(f"{escape(str(args.from_results))}: no benchmark regressed: nothing to bisect")
            return EXIT_OK
        rest = [*rest, *chosen]
    here = Path.cwd()
    try:
        commits = bisect_probe.commits_between(here, args.good, args.bad)
    except bisect_probe.RangeError as exc:
        raise InputError(str(exc)) from None

    def say(line: str) -> None:
        if not args.json:
            print(line, file=sys.stderr)

    say(
        f"burnperf bisect: {len(commits)} commits from {commits[0].sha[:12]} (good) to "
        f"{commits[-1].sha[:12]} (bad), first parents"
    )
    dirty = bisect_probe.changed_here(here)
    if dirty:
        shown = ", ".join(escape(f) for f in dirty[:3]) + (" ..." if len(dirty) > 3 else "")
        say(
            f"burnperf bisect: the working tree changes {len(dirty)} tracked file(s) ({shown}): "
            "every commit is measured with the benchmark files as they are here (its own code "
            "comes from the commit); commit or stash them to bisect with the committed ones"
        )
    count = _counting(args.measure, say)
    measures = bisect_probe.Measures()
    probe = bisect_probe.commit_probe(
        here,
        commits,
        rest,
        cwd=here,
        measures=measures,
        say=say,
        count_jobs=max(1, (cpus or 1) // jobs),
        count=count,
    )
    times: list[float] = []

    def timed(i: int) -> Any:
        t0 = time.monotonic()
        try:
            return probe(i)
        finally:
            times.append(time.monotonic() - t0)

    def judged(name: str, a: Any, b: Any) -> Verdict:
        alpha_each = ALPHA / max(1, len(measures.interpreter) + len(measures.timed))
        if name in measures.timed:
            return paired_change(a, b, threshold=TIMED_THRESHOLD, alpha=alpha_each)
        # Every commit of a bisection is counted by a process that runs the same way (the same
        # options and calls), so the gate's interpreter floor, which covers pure-Python counts
        # that moved between processes that ran differently (a recording and a later check),
        # does not apply: unchanged commits counted identically in the planted trials, and a
        # +3% pure-Python step was found at its commit (docs/validation.md, "Which commit").
        # The counts' own floor and spread still do.
        return counts.judge_counts(a, b, alpha_each=alpha_each, interpreter=0.0)

    def moved(name: str, a: Any, b: Any) -> bool:
        return judged(name, a, b).status in (REGRESSED, IMPROVED)

    def out_of_time() -> str | None:
        if args.max_minutes is None or time.monotonic() - started < 60 * args.max_minutes:
            return None
        return f"the time budget ({args.max_minutes:g} min) ran out"

    try:
        found = bisect(
            len(commits),
            timed,
            moved,
            max_probes=args.max_probes,
            parallel=jobs,
            out_of_time=out_of_time,
            # timed sessions run one at a time: halving measures the fewest commits for them
            narrow_by=lambda: 1 if measures.timed_found else jobs,
        )
    except ProbeFailed as exc:
        raise InputError(str(exc)) from None
    if not found.measured.get(len(commits) - 1):
        raise InputError(
            f"{args.bad}: none of the selected benchmarks was measured there (none selected, "
            "each skipped, or timed instead of counted); `pytest --perf` with the same "
            "arguments shows why"
        )
    deps = {
        (s.before, s.at): dependency_changes(
            bisect_probe.changed_files(here, commits[s.before].sha, commits[s.at].sha)
        )
        for steps in found.steps.values()
        for s in steps
    }
    t0 = time.monotonic()
    grew = {} if args.no_profiles else _profiles(found, commits, rest, measures, out_of_time, say)
    profile_s = time.monotonic() - t0 if grew else 0.0
    last = len(commits) - 1
    ends = found.measured.get(0, {}), found.measured.get(last, {})
    within = {
        name: judged(name, ends[0][name], ends[1][name])
        for name, steps in found.steps.items()
        if not steps and name not in found.came_back and name in ends[0] and name in ends[1]
    }
    wanted = set(chosen) if args.from_results is not None else set()
    missing = sorted((wanted | measures.uncounted) - set(ends[1]))
    by_time = frozenset(measures.timed)
    merges = {
        s.at: merged
        for steps in found.steps.values()
        for s in steps
        if (merged := bisect_probe.merged_branch(here, commits[s.at].sha)) is not None
    }
    report = Report(found, commits, times, within, deps, by_time, missing, grew, profile_s, merges)
    if args.json:
        print(json.dumps(as_json(report), indent=1, sort_keys=True))
    else:
        for line in lines(report):
            print(line)
    if args.markdown is not None:
        try:
            markdown.write(args.markdown, as_markdown(report, " ".join([args.good, args.bad])))
        except OSError as exc:
            raise InputError(f"--markdown {args.markdown}: {exc}") from None
    return EXIT_OK
