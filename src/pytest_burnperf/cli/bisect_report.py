"""What ``burnperf bisect`` found, as the terminal, Markdown and JSON show it: each benchmark's
steps (size, commit, subject, dependency files, what grew), changes within the minimum effect,
skipped commits and what the search cost."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from pytest_burnperf.core import measures
from pytest_burnperf.core.judging.bisection import Search, Step
from pytest_burnperf.core.judging.verdict import INCONCLUSIVE, Verdict
from pytest_burnperf.core.text import clock, escape
from pytest_burnperf.report import markdown
from pytest_burnperf.runs import bisect_probe


@dataclass(frozen=True)
class Report:
    """What a bisection found and what it cost, with each step's dependency files."""

    found: Search
    commits: list[bisect_probe.Commit]
    times: list[float]
    within: dict[str, Verdict]
    deps: dict[tuple[int, int], list[str]]
    #: The benchmarks timed beside the good commit (device ones, and the CPU ones where nothing
    #: was counted); the others by counts.
    timed: frozenset[str] = frozenset()
    #: Benchmarks asked for (--from-results), or run but not counted, that the bad commit's
    #: probe did not measure.
    missing: list[str] = field(default_factory=list)
    #: What grew at each step, by (benchmark, the step's commit): the profiles' note, or why
    #: there is none.
    grew: dict[tuple[str, int], str] = field(default_factory=dict)
    #: Seconds spent profiling the steps.
    profile_s: float = 0.0
    #: Steps at a merge commit: (the merge base, the merged branch's tip), by the step's commit.
    merges: dict[int, tuple[str, str]] = field(default_factory=dict)

    def measure(self) -> str:
        counted = any(n not in self.timed for n in self.found.steps) or not self.timed
        return " and ".join(
            w
            for w, on in (("counts", counted), ("time beside the good commit", bool(self.timed)))
            if on
        )


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
    merged = r.merges.get(s.at)
    if merged is not None:
        where += (
            f" (a merge: `burnperf bisect {merged[0][:12]} {merged[1][:12]}` searches the "
            "commits it brought in)"
        )
    return f"{100 * (s.ratio - 1):+.2f}% at {where}"


def _within(v: Verdict, timed: bool) -> str:
    """Why no step was searched: the change from good to bad and the minimum effect it stays in
    (or, timed beside the good commit, that the paired rounds could not say)."""
    change = "?" if v.change_pct is None else f"{v.change_pct:+.2f}%"
    effect = "?" if v.effect is None else f"{100 * v.effect:.2f}%"
    if timed and v.status == INCONCLUSIVE:
        interval = (
            ""
            if v.ratio_low is None or v.ratio_high is None
            else f" [{100 * (v.ratio_low - 1):+.1f}%, {100 * (v.ratio_high - 1):+.1f}%]"
        )
        return (
            f"{change}{interval} from good to bad, timed beside the good commit: too spread "
            "to search (more rounds: -- --perf-rounds 8)"
        )
    if timed:
        return (
            f"{change} from good to bad, timed beside the good commit, within the minimum "
            f"effect of {effect}: no step searched"
        )
    if v.status == INCONCLUSIVE:
        return (
            f"{change} from good to bad: its counted calls spread too much to say (undecided "
            "by counts): no step searched"
        )
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
            out.extend(
                f"  at {commits[s.at].sha[:12]}: {escape(r.grew[(name, s.at)])}"
                for s in steps
                if (name, s.at) in r.grew
            )
        elif name in found.came_back:
            i, ratio = found.came_back[name]
            out.append(
                f"{escape(name)}: the same at good and bad, but {100 * (ratio - 1):+.2f}% at "
                f"{_commit(commits, i)}: it moved and came back"
            )
        elif name in within:
            out.append(f"{escape(name)}: {_within(within[name], name in r.timed)}")
        else:
            out.append(f"{escape(name)}: unchanged from good to bad")
    for name, i in sorted(found.added.items()):
        out.append(f"{escape(name)}: not at the good commit; first at {_commit(commits, i)}")
    for name, why in sorted(found.unfinished.items()):
        out.append(f"{escape(name)}: not finished: {why}")
    for name in r.missing:
        out.append(
            f"{escape(name)}: not measured at the bad commit (its device is not here, or it "
            "was timed instead of counted: `-- --perf-count-limit 0` counts it whatever it "
            "costs): not bisected"
        )
    for i, why in sorted(found.skipped.items()):
        out.append(f"skipped {_commit(commits, i)}: {escape(why)}")
    each = sum(times) / len(times) if times else 0.0
    out.append(
        f"measured {len(found.probed)} of {len(commits)} commits by {r.measure()}, "
        f"{clock(each)} each, {clock(sum(times))} in all"
        + (f"; the steps profiled in {clock(r.profile_s)}" if r.profile_s else "")
    )
    return out


def as_markdown(r: Report, asked: str) -> str:
    """The findings as a Markdown section (a job summary's), every text escaped for it."""
    head = [
        # the title every summary this tool renders begins with: a later run may replace the
        # file, and no file the tool did not write is replaced (markdown.target_problem)
        f"{markdown.TITLE}: bisect {markdown.code(asked)}",
        "",
        *(
            f"  - {markdown.escape(line.strip())}"
            if line.startswith("  ")
            else f"- {markdown.escape(line)}"
            for line in lines(r)
        ),
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
                    "measure": (measures.TIME if name in r.timed else measures.COUNTS).name,
                    "before": commit(s.before),
                    "at": commit(s.at),
                    "ratio": s.ratio,
                    "dependency_files": r.deps.get((s.before, s.at), []),
                    "what_grew": r.grew.get((name, s.at)),
                    "merged_branch": None
                    if s.at not in r.merges
                    else {"base": r.merges[s.at][0], "tip": r.merges[s.at][1]},
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
            name: {
                "status": v.status,
                "change_pct": v.change_pct,
                "ratio_ci95": None if v.ratio_low is None else [v.ratio_low, v.ratio_high],
                "min_effect": v.effect,
            }
            for name, v in within.items()
        },
        "unfinished": dict(found.unfinished),
        "not_measured": list(r.missing),
        "timed": sorted(r.timed),
        "skipped": [{**commit(i), "why": why} for i, why in sorted(found.skipped.items())],
        "probed": [commits[i].sha for i in found.probed],
        "seconds": times,
        "profile_seconds": r.profile_s,
    }
