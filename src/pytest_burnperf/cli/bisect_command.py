"""``burnperf bisect GOOD BAD [-- PYTEST ARGS]``: which commit moved each selected benchmark,
by counts (runs/bisect_probe.py measures a commit, core/bisection.py searches)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from pytest_burnperf.cli.arguments import EXIT_OK, InputError
from pytest_burnperf.core import counts
from pytest_burnperf.core.bisection import ProbeFailed, Search, Step, bisect
from pytest_burnperf.core.text import clock, escape
from pytest_burnperf.core.verdict import IMPROVED, REGRESSED, Verdict
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
    got, unknown = late.parse_known_args(rest[:cut])
    args.max_probes, args.json, args.jobs = got.max_probes, got.json, got.jobs
    return [*unknown, *rest[cut + 1 :]]


def cmd_bisect(args: argparse.Namespace) -> int:
    rest = _split(args)
    if args.max_probes is not None and args.max_probes < 2:
        raise InputError(f"--max-probes {args.max_probes}: at least 2 (the good and bad commits)")
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    jobs = args.jobs if args.jobs is not None else max(1, min(MAX_JOBS, cpus or 1))
    if jobs < 1:
        raise InputError(f"--jobs {jobs}: at least 1")
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
        alpha_each = ALPHA / max(1, len(shares))
        return counts.judge_counts(a, b, alpha_each=alpha_each, interpreter=shares.get(name, 0.0))

    def moved(name: str, a: Any, b: Any) -> bool:
        return judged(name, a, b).status in (REGRESSED, IMPROVED)

    try:
        found = bisect(len(commits), timed, moved, max_probes=args.max_probes, parallel=jobs)
    except ProbeFailed as exc:
        raise InputError(str(exc)) from None
    last = len(commits) - 1
    ends = found.measured.get(0, {}), found.measured.get(last, {})
    within = {
        name: judged(name, ends[0][name], ends[1][name])
        for name, steps in found.steps.items()
        if not steps and name not in found.came_back and name in ends[0] and name in ends[1]
    }
    if args.json:
        print(json.dumps(as_json(found, commits, times, within), indent=1, sort_keys=True))
    else:
        for line in lines(found, commits, times, within):
            print(line)
    return EXIT_OK


def _commit(commits: list[bisect_probe.Commit], i: int) -> str:
    c = commits[i]
    return f"{c.sha[:12]} {json.dumps(escape(c.subject))}"


def _step(commits: list[bisect_probe.Commit], s: Step) -> str:
    where = _commit(commits, s.at)
    if s.at - s.before > 1:
        where += f" (or one of the {s.at - s.before - 1} skipped commit(s) before it)"
    return f"{100 * (s.ratio - 1):+.2f}% at {where}"


def _within(v: Verdict) -> str:
    """Why no step was searched: the change from good to bad and the minimum effect it stays in."""
    change = "?" if v.change_pct is None else f"{v.change_pct:+.2f}%"
    effect = "?" if v.effect is None else f"{100 * v.effect:.2f}%"
    return (
        f"{change} from good to bad, within its minimum effect of {effect} (what its counts "
        "move between processes): no step searched"
    )


def lines(
    found: Search,
    commits: list[bisect_probe.Commit],
    times: list[float],
    within: dict[str, Verdict],
) -> list[str]:
    """The terminal's report: one line per benchmark, then what was skipped and what it cost."""
    out = []
    for name, steps in sorted(found.steps.items()):
        if steps:
            out.append(f"{escape(name)}: " + "; then ".join(_step(commits, s) for s in steps))
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


def as_json(
    found: Search,
    commits: list[bisect_probe.Commit],
    times: list[float],
    within: dict[str, Verdict],
) -> dict[str, object]:
    def commit(i: int) -> dict[str, object]:
        return {"sha": commits[i].sha, "subject": commits[i].subject}

    return {
        "commits": len(commits),
        "good": commit(0),
        "bad": commit(len(commits) - 1),
        "benchmarks": {
            name: [
                {"before": commit(s.before), "at": commit(s.at), "ratio": s.ratio} for s in steps
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
