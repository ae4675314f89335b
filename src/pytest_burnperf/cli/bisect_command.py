"""``burnperf bisect GOOD BAD [-- PYTEST ARGS]``: which commit moved each selected benchmark,
by counts (runs/bisect_probe.py measures a commit, core/bisection.py searches)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_burnperf.cli.arguments import EXIT_OK, InputError, results_doc
from pytest_burnperf.core import counts
from pytest_burnperf.core.bisection import ProbeFailed, Search, Step, bisect, dependency_changes
from pytest_burnperf.core.text import clock, escape
from pytest_burnperf.core.verdict import IMPROVED, REGRESSED, Verdict
from pytest_burnperf.report import markdown
from pytest_burnperf.runs import bisect_probe

#: The family-wise error rate of the counts rule each comparison of the search uses.
ALPHA = 0.01
#: The most commits measured side by side by default.
MAX_JOBS = 4


def register(sub: Any) -> None:
    p = sub.add_parser(
        "bisect",
        help="find the commit that moved each benchmark, by counts",
        description="Measure the selected benchmarks by counts (callgrind) at commits between "
        "GOOD and BAD (BAD's first parents) and name, for each benchmark that moved, every "
        "commit where it moved and by how much. Arguments after -- go to pytest (-k EXPR, "
        "test paths). Each commit is installed as --perf-against installs a git revision.",
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
        "not depend on the host's load)",
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
        help="bisect the CPU benchmarks a --perf-json results file judged regressed (the "
        "weekly run's); nothing regressed: nothing to do",
    )
    p.add_argument(
        "--markdown",
        type=Path,
        default=None,
        metavar="FILE",
        help="also write the findings as Markdown to FILE (and append them to "
        "$GITHUB_STEP_SUMMARY where it is set)",
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
    late.add_argument("--jobs", type=int, default=args.jobs)
    late.add_argument("--max-minutes", type=float, default=args.max_minutes)
    late.add_argument("--from-results", type=Path, default=args.from_results)
    late.add_argument("--markdown", type=Path, default=args.markdown)
    got, unknown = late.parse_known_args(rest[:cut])
    args.max_probes, args.json, args.jobs = got.max_probes, got.json, got.jobs
    args.max_minutes, args.from_results, args.markdown = (
        got.max_minutes,
        got.from_results,
        got.markdown,
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
    """The node ids --from-results names: the CPU benchmarks that file judged regressed; the
    device benchmarks it judged regressed are named, since counts cannot bisect them."""
    cpu, devices = bisect_probe.regressed_tests(results_doc(path))
    if devices:
        shown = ", ".join(escape(t) for t in devices[:5])
        more = f" and {len(devices) - 5} more" if len(devices) > 5 else ""
        print(
            f"{escape(str(path))}: {len(devices)} device benchmark(s) regressed too and are not "
            f"bisected (bisect counts CPU benchmarks only): {shown}{more}",
            file=sys.stderr,
        )
    return cpu


def cmd_bisect(args: argparse.Namespace) -> int:
    started = time.monotonic()
    rest = _split(args)
    _checked(args)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    jobs = args.jobs if args.jobs is not None else max(1, min(MAX_JOBS, cpus or 1))
    if args.from_results is not None:
        chosen = _from_results(args.from_results)
        if not chosen:
            print(
                f"{escape(str(args.from_results))}: no CPU benchmark regressed: nothing to bisect"
            )
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
    shares: dict[str, float] = {}
    probe = bisect_probe.counts_probe(
        here,
        commits,
        rest,
        cwd=here,
        interpreter=shares,
        say=say,
        count_jobs=max(1, (cpus or 1) // jobs),
    )
    times: list[float] = []

    def timed(i: int) -> Any:
        t0 = time.monotonic()
        try:
            return probe(i)
        finally:
            times.append(time.monotonic() - t0)

    def judged(name: str, a: Any, b: Any) -> Verdict:
        # Every commit of a bisection is counted by a process that runs the same way (the same
        # options and calls), so the gate's interpreter floor, which covers pure-Python counts
        # that moved between processes that ran differently (a recording and a later check),
        # does not apply: unchanged commits counted identically in the planted trials, and a
        # +3% pure-Python step was found at its commit (docs/validation.md, "Which commit").
        # The counts' own floor and spread still do.
        alpha_each = ALPHA / max(1, len(shares))
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
        )
    except ProbeFailed as exc:
        raise InputError(str(exc)) from None
    deps = {
        (s.before, s.at): dependency_changes(
            bisect_probe.changed_files(here, commits[s.before].sha, commits[s.at].sha)
        )
        for steps in found.steps.values()
        for s in steps
    }
    last = len(commits) - 1
    ends = found.measured.get(0, {}), found.measured.get(last, {})
    within = {
        name: judged(name, ends[0][name], ends[1][name])
        for name, steps in found.steps.items()
        if not steps and name not in found.came_back and name in ends[0] and name in ends[1]
    }
    report = Report(found, commits, times, within, deps)
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


@dataclass(frozen=True)
class Report:
    """What a bisection found and what it cost, with each step's dependency files."""

    found: Search
    commits: list[bisect_probe.Commit]
    times: list[float]
    within: dict[str, Verdict]
    deps: dict[tuple[int, int], list[str]]


def _commit(commits: list[bisect_probe.Commit], i: int) -> str:
    c = commits[i]
    return f"{c.sha[:12]} {json.dumps(escape(c.subject))}"


def _step(r: Report, s: Step) -> str:
    where = _commit(r.commits, s.at)
    if s.at - s.before > 1:
        where += f" (or one of the {s.at - s.before - 1} skipped commit(s) before it)"
    files = r.deps.get((s.before, s.at))
    if files:
        where += f" (a dependency change: {escape(', '.join(files))})"
    return f"{100 * (s.ratio - 1):+.2f}% at {where}"


def _within(v: Verdict) -> str:
    """Why no step was searched: the change from good to bad and the minimum effect it stays in."""
    change = "?" if v.change_pct is None else f"{v.change_pct:+.2f}%"
    effect = "?" if v.effect is None else f"{100 * v.effect:.2f}%"
    return (
        f"{change} from good to bad, within its minimum effect of {effect} (the counts' floor, "
        "or what they spread between its calls): no step searched"
    )


def lines(r: Report) -> list[str]:
    """The terminal's report: one line per benchmark, then what was skipped and what it cost."""
    found, commits, times, within = r.found, r.commits, r.times, r.within
    out = []
    for name, steps in sorted(found.steps.items()):
        if steps:
            out.append(f"{escape(name)}: " + "; then ".join(_step(r, s) for s in steps))
        elif name in found.came_back:
            i, ratio = found.came_back[name]
            out.append(
                f"{escape(name)}: the same at good and bad, but {100 * (ratio - 1):+.2f}% at "
                f"{_commit(commits, i)}: it moved and came back"
            )
        elif name in within:
            out.append(f"{escape(name)}: {_within(within[name])}")
        else:
            out.append(f"{escape(name)}: unchanged from good to bad")
    for name, i in sorted(found.added.items()):
        out.append(f"{escape(name)}: not at the good commit; first at {_commit(commits, i)}")
    for name, why in sorted(found.unfinished.items()):
        out.append(f"{escape(name)}: not finished: {why}")
    for i, why in sorted(found.skipped.items()):
        out.append(f"skipped {_commit(commits, i)}: {escape(why)}")
    each = sum(times) / len(times) if times else 0.0
    out.append(
        f"measured {len(found.probed)} of {len(commits)} commits by counts, "
        f"{clock(each)} each, {clock(sum(times))} in all"
    )
    return out


def as_markdown(r: Report, asked: str) -> str:
    """The findings as a Markdown section (a job summary's), every text escaped for it."""
    head = [
        # the title every summary this tool renders begins with: a later run may replace the
        # file, and no file the tool did not write is replaced (markdown.target_problem)
        f"{markdown.TITLE}: bisect {markdown.code(asked)}",
        "",
        *(f"- {markdown.escape(line)}" for line in lines(r)),
    ]
    return "\n".join(head) + "\n"


def as_json(r: Report) -> dict[str, object]:
    found, commits, times, within = r.found, r.commits, r.times, r.within

    def commit(i: int) -> dict[str, object]:
        return {"sha": commits[i].sha, "subject": commits[i].subject}

    return {
        "commits": len(commits),
        "good": commit(0),
        "bad": commit(len(commits) - 1),
        "benchmarks": {
            name: [
                {
                    "before": commit(s.before),
                    "at": commit(s.at),
                    "ratio": s.ratio,
                    "dependency_files": r.deps.get((s.before, s.at), []),
                }
                for s in steps
            ]
            for name, steps in found.steps.items()
        },
        "came_back": {
            name: {"at": commit(i), "ratio": r} for name, (i, r) in found.came_back.items()
        },
        "added": {name: commit(i) for name, i in found.added.items()},
        "within": {
            name: {"change_pct": v.change_pct, "min_effect": v.effect} for name, v in within.items()
        },
        "unfinished": dict(found.unfinished),
        "skipped": [{**commit(i), "why": why} for i, why in sorted(found.skipped.items())],
        "probed": [commits[i].sha for i in found.probed],
        "seconds": times,
    }
