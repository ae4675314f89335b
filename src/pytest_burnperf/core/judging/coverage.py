"""How much of a run was judged: a benchmark without a verdict is a miss, not a pass.

A perf run that compared nothing (no baseline for this hardware class, a baseline of another
class, a change the noise or a busy host left open) used to end green like a run that found
nothing slower. This module counts the verdicts (``regressed``, ``unchanged``, ``improved``)
against the abstentions (``no-baseline``, ``incomparable``, ``inconclusive``), groups the
abstentions by the cause each verdict carries (core/judging/abstention.py, never by its text), names
the command that would judge each group, and checks the share judged against
``--perf-min-judged``. No pytest here: the plugin, the JSON document, the
Markdown summary and the JUnit properties all read the same :class:`Coverage`.

The default minimum (:data:`CI_MIN_JUDGED`, only where ``$CI`` is set) is 0.9. A CI job's
green must mean "compared, and nothing got slower"; a job that judged less than nine in ten of
its benchmarks met a condition worth failing for (a runner of a new hardware class, no
reference, a host too busy to measure), and says which. The tenth left over is room for the
few benchmarks of a large suite whose noise floor sits above the threshold on shared runners,
which would otherwise fail every run for a reason no code change causes. Outside CI the share
is shown, not enforced: a first local run without baselines is how a user starts.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pytest_burnperf.core.judging.abstention import Cause
from pytest_burnperf.core.judging.verdict import (
    FAILED,
    IMPROVED,
    INCOMPARABLE,
    INCONCLUSIVE,
    NO_BASELINE,
    REGRESSED,
    UNCHANGED,
)
from pytest_burnperf.core.options.command_args import without_options

#: Statuses that are a verdict on the code.
JUDGED = (REGRESSED, UNCHANGED, IMPROVED)
#: Statuses that are not.
NOT_JUDGED = (NO_BASELINE, INCOMPARABLE, INCONCLUSIVE)
#: ``--perf-min-judged`` where ``$CI`` is set and nothing else names a share.
CI_MIN_JUDGED = 0.9

#: Why a benchmark was not judged (core/judging/abstention.Cause), in the order the summary lists them.
NOT_MEASURED = Cause.NOT_MEASURED
NO_REFERENCE = Cause.NO_REFERENCE
NO_COUNTS = Cause.NO_COUNTS
OTHER_MACHINE = Cause.OTHER_MACHINE
COUNTS_KEY = Cause.COUNTS_KEY
SAMPLED_OTHERWISE = Cause.SAMPLED_OTHERWISE
HOST = Cause.HOST
NOISE = Cause.NOISE
COUNTS_SPREAD = Cause.COUNTS_SPREAD
WHY_ORDER: tuple[Cause, ...] = (
    NOT_MEASURED,
    NO_REFERENCE,
    NO_COUNTS,
    OTHER_MACHINE,
    COUNTS_KEY,
    SAMPLED_OTHERWISE,
    HOST,
    NOISE,
    COUNTS_SPREAD,
)
#: Causes the summary counts in another's group, whose advice fits them too: a baseline recorded
#: before the hardware class was kept is one of another machine for all this run can tell.
GROUP: Mapping[Cause, Cause] = {Cause.LEGACY_BASELINE: OTHER_MACHINE}
_WHY_TEXT = {
    NOT_MEASURED: "their test failed before they were measured (an error, or the process "
    "measuring them died: each test's failure says which)",
    NO_REFERENCE: "no baseline for this hardware class and no same-session reference",
    NO_COUNTS: "no counts baseline recorded",
    OTHER_MACHINE: "their baselines come from another machine or device",
    COUNTS_KEY: "their counts baselines were counted under another key (the simulated CPU, "
    "Python build, C library, library versions, threads or counting rule)",
    SAMPLED_OTHERWISE: "their baselines were sampled with other pedantic settings (rounds, "
    "iterations, warm-up rounds or setup): a sample means something else",
    HOST: "the host was busy while they ran",
    NOISE: "the change lies inside their noise floor or needs more samples",
    COUNTS_SPREAD: "their counts cannot tell a change of the threshold's size apart (calls "
    "that small or that spread: each one's reason says which)",
}


def why(cause: Cause | None) -> Cause | None:
    """The summary's group of an abstention's cause (None for a verdict)."""
    return None if cause is None else GROUP.get(cause, cause)


@dataclass(frozen=True)
class Coverage:
    """The verdicts and abstentions of one run."""

    judged: int = 0
    #: Benchmarks whose test failed for another reason after they were timed.
    failed: int = 0
    #: why -> the benchmarks' labels
    missed: Mapping[Cause, tuple[str, ...]] = field(default_factory=dict)

    @property
    def not_judged(self) -> int:
        return sum(len(v) for v in self.missed.values())

    @property
    def total(self) -> int:
        return self.judged + self.failed + self.not_judged

    @property
    def share(self) -> float:
        """The share of benchmarks with a verdict (failed ones count as judged: they fail)."""
        return 1.0 if self.total == 0 else (self.judged + self.failed) / self.total

    def line(self) -> str:
        """``judged 10 of 12 benchmarks (83%); not judged: 2 (no reference)``."""
        if self.total == 0:
            return "judged 0 benchmarks: none ran"
        text = (
            f"judged {self.judged + self.failed} of {self.total} benchmarks "
            f"({100 * self.share:.0f}%)"
        )
        if self.not_judged:
            parts = [f"{len(self.missed[w])} {w.value}" for w in WHY_ORDER if self.missed.get(w)]
            text += f"; NOT judged: {self.not_judged} ({', '.join(parts)})"
        return text

    def as_json(
        self, minimum: float | None = None, advice: Iterable[str] = ()
    ) -> dict[str, object]:
        return {
            "judged": self.judged + self.failed,
            "not_judged": self.not_judged,
            "total": self.total,
            "share": self.share,
            "min_share": minimum,
            "missed": {w.value: list(self.missed[w]) for w in WHY_ORDER if self.missed.get(w)},
            "advice": list(advice),
        }


def coverage(results: Iterable[tuple[str, str, Cause | None]]) -> Coverage:
    """From ``(label, status, cause)`` of each result (``Verdict.cause``: None for a verdict)."""
    judged = failed = 0
    missed: dict[Cause, list[str]] = {}
    for label, status, cause in results:
        if status == FAILED:
            failed += 1
            continue
        group = why(cause)
        if group is None:
            judged += 1
        else:
            missed.setdefault(group, []).append(label)
    return Coverage(judged, failed, {k: tuple(v) for k, v in missed.items()})


def advice(
    cov: Coverage,
    *,
    same_session: bool,
    command: str,
    plain: str | None = None,
    hardware_class: str = "",
    auto_problem: str | None = None,
    rounds: int = 1,
    max_rounds: int = 1,
) -> list[str]:
    """One line per group of abstentions: why, and the command that would judge them.
    ``rounds`` and ``max_rounds`` are the run's own: the rounds suggested are always more.

    ``command`` is the run's own command line without ``--perf``; ``plain`` the same without
    what it compared with (``--perf-against``, ``--perf-versions``...: core/options/settings.
    recording_args), which the commands that record or name their own comparison repeat
    (default: ``command``); ``same_session`` says whether
    this run already compared in one session (then more rounds, not a reference, is the cure);
    ``auto_problem``: why ``--perf-against auto`` found no reference in this run, if it did not.
    """
    out: list[str] = []
    run_command = command
    command = command if plain is None else plain
    against = f"pytest --perf --perf-against auto {command}".rstrip()
    # where stored baselines judged (and left these undecided), --perf-against auto would take
    # them again: a same-session comparison names the code compared with
    beside = f"pytest --perf --perf-against REF {command}".rstrip()
    more = more_rounds(rounds, max_rounds)
    for w in WHY_ORDER:
        names = cov.missed.get(w)
        if not names:
            continue
        head = f"{len(names)} not judged, {_WHY_TEXT[w]}"
        if w == NOT_MEASURED:
            out.append(
                f"{head}: fix what failed; neither rounds nor baselines judge it until it runs"
            )
        elif w == NO_REFERENCE and auto_problem:
            out.append(f"{head}: {auto_problem}")
        elif w == NO_COUNTS:
            out.append(
                f"{head}: record them with `pytest --perf --perf-update {command}`".rstrip()
                + " (counts baselines judge on any machine with the same counts key, whatever "
                "its CPU model), or count the base of the change beside them in this session "
                f"with `pytest --perf --perf-against REF {command}`".rstrip()
                + " (REF: a git ref such as main)"
            )
        elif w == COUNTS_KEY:
            out.append(
                f"{head}: count the base of the change beside them in this session with "
                f"`pytest --perf --perf-against REF {command}`".rstrip()
                + " (REF: a git ref such as main; both sides counted here), or record counts "
                f"baselines where they are judged with `pytest --perf --perf-update {command}`".rstrip()
            )
        elif w == SAMPLED_OTHERWISE:
            out.append(
                f"{head}: if the new settings are meant, record them with "
                f"`pytest --perf --perf-update {command}`".rstrip()
                + "; else give perf.pedantic (or benchmark.pedantic) the settings the baselines "
                "were recorded with (each one's reason names them)"
            )
        elif w in (NO_REFERENCE, OTHER_MACHINE):
            where = f" ({hardware_class})" if hardware_class else ""
            out.append(
                f"{head}{where}: judge them in this session against the base of the change "
                f"with `{against}`, or record baselines on this machine with "
                f"`pytest --perf --perf-update {command}`".rstrip()
            )
        elif w == COUNTS_SPREAD:
            timed = shlex.join(without_options(shlex.split(run_command), ("--perf-measure",)))
            by_time = f"pytest --perf {timed}".rstrip() + " --perf-measure time"
            out.append(
                f"{head}: more process rounds or a quieter host do not narrow counts; judge "
                f"them by time (`{by_time}`), "
                "or give each call more work so that the interpreter's share of its counts falls"
            )
        elif w == HOST:
            cure = (
                f"more interleaved rounds ({more})"
                if same_session
                else f"a same-session comparison, whose interleaved rounds see the same host "
                f"(`{beside}`, REF: the git ref of the code to compare with, such as main), or "
                f"more rounds ({more})"
            )
            out.append(f"{head}: run again on a quieter host, or use {cure}")
        else:
            cure = (
                f"more interleaved rounds ({more})"
                if same_session
                else f"more process rounds ({more}), or a same-session comparison with the "
                f"code to compare with (`{beside}`, REF: a git ref such as main)"
            )
            out.append(f"{head}: {cure} narrows the floor")
    return out


def more_rounds(rounds: int, max_rounds: int) -> str:
    """The options for more rounds than a run with ``rounds`` (``max_rounds`` adaptive) had:
    ``--perf-rounds 3 --perf-max-rounds 8`` after one round, twice the adaptive rounds after 8."""
    parts = []
    if rounds < 3:
        parts.append("--perf-rounds 3")
    top = max(8, 2 * max_rounds) if max_rounds >= 8 else 8
    parts.append(f"--perf-max-rounds {top}")
    return " ".join(parts)


def in_ci(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``$CI`` says this is a CI job (GitHub Actions, GitLab CI and most others set it)."""
    env = os.environ if environ is None else environ
    return env.get("CI", "").strip().lower() not in ("", "0", "false", "no", "off")


def default_min_share(ci: bool) -> float:
    """:data:`CI_MIN_JUDGED` in a CI job (:func:`in_ci`), else 0 (shown, not enforced)."""
    return CI_MIN_JUDGED if ci else 0.0


def shortfall(cov: Coverage, minimum: float) -> str | None:
    """The failure message when the run judged less than ``minimum`` of its benchmarks."""
    if cov.total == 0 or cov.share >= minimum or minimum <= 0:
        return None
    return (
        f"perf run judged only {cov.judged + cov.failed} of {cov.total} benchmarks "
        f"({100 * cov.share:.0f}%), below --perf-min-judged {minimum:g}: a benchmark that was "
        "not judged is a miss, not a pass (what would judge them is listed above; "
        "--perf-min-judged 0 reports without failing)"
    )
