"""Which commit: the search behind ``burnperf bisect``. Given the commits from a good one to a bad
one (oldest first) and a probe that measures the selected benchmarks at one of them, find for
each benchmark every commit where its measure moved, with the change at that step.

No git and no processes here: a probe is a function of a commit's index, and whether two
measurements differ is the caller's rule (counts: ``core/counting/counts.judge_counts``; device time,
measured paired with the good commit in each probe's session: :func:`paired_change`). A benchmark is
searched only where the good and bad commits differ; a step is narrowed by halving, the probes
shared between benchmarks; after a step, the search goes on from it to the bad commit, so a
slowdown that came in two commits is two steps. A commit whose probe fails (it does not build
or install) is skipped, as ``git bisect skip`` does, and a neighbour is probed instead.
"""

from __future__ import annotations

import fnmatch
import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from pytest_burnperf.core.judging import between_runs
from pytest_burnperf.core.judging.abstention import Cause
from pytest_burnperf.core.judging.verdict import (
    IMPROVED,
    INCONCLUSIVE,
    REGRESSED,
    UNCHANGED,
    Verdict,
)

#: A measurement of every selected benchmark at one commit: benchmark -> its values.
Measured = Mapping[str, Sequence[float]]


class ProbeFailed(Exception):
    """A commit that could not be measured (it does not build or install): why, in words."""


class OutOfProbes(Exception):
    """A budget ran out (the probes' or the minutes'): which, in words."""


#: Files whose change between two commits is a dependency change (a lock file, a pinned or
#: declared version): named beside a step, since the code of the project may not have moved.
DEPENDENCY_FILES = (
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "requirements*.txt",
    "requirements*.in",
    "constraints*.txt",
    "*.lock",
    "Pipfile",
    "environment.yml",
    "environment.yaml",
    "conda-lock.yml",
)


def dependency_changes(paths: Iterable[str]) -> list[str]:
    """The paths among ``paths`` (as git names them, relative to the repository) that declare
    or pin dependencies (:data:`DEPENDENCY_FILES`, matched on the file name), sorted."""
    out = set()
    for path in paths:
        name = path.rsplit("/", 1)[-1]
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in DEPENDENCY_FILES):
            out.add(path)
    return sorted(out)


@dataclass(frozen=True)
class Step:
    """A benchmark's measure moved between commit ``before`` and the next one measured,
    ``at`` (indices into the commits; ``at == before + 1`` unless the commits between were
    skipped)."""

    before: int
    at: int
    ratio: float


@dataclass
class Search:
    """What a bisection found: each benchmark's steps, the commits probed in order, those
    skipped and why, and the benchmarks it could not finish (why)."""

    steps: dict[str, list[Step]] = field(default_factory=dict)
    probed: list[int] = field(default_factory=list)
    skipped: dict[int, str] = field(default_factory=dict)
    unfinished: dict[str, str] = field(default_factory=dict)
    #: Benchmarks that moved at a commit probed between and came back by the bad one.
    came_back: dict[str, tuple[int, float]] = field(default_factory=dict)
    #: Benchmarks missing at the good commit (added later), with the first commit that has them.
    added: dict[str, int] = field(default_factory=dict)
    #: Every measurement taken, by commit.
    measured: dict[int, Measured] = field(default_factory=dict)


def paired_change(
    before: Sequence[float], after: Sequence[float], *, threshold: float, alpha: float
) -> Verdict:
    """Whether a device benchmark moved between two commits, each measured in a session of its
    own paired with the good commit: ``before`` and ``after`` are the ratios of each of their
    rounds (the commit's median over the good commit's in the same round), so what the host or
    the device did to a whole session cancels. Welch's t on the log ratios (two-sided, level
    ``alpha``); moved (``regressed`` or ``improved``) where the interval excludes no change and
    the estimate reaches ``threshold``; ``unchanged`` where it is significant but smaller, or
    where the interval stays inside +-``threshold``; else ``inconclusive``. The good commit's
    own probe (an A/A session) is one side like any other."""
    la = [math.log(x) for x in before if x > 0]
    lb = [math.log(x) for x in after if x > 0]
    if not la or not lb:
        return Verdict(
            INCONCLUSIVE, float("nan"), reason="no paired rounds on one side", cause=Cause.NOISE
        )
    d = statistics.fmean(lb) - statistics.fmean(la)
    va = statistics.variance(la) / len(la) if len(la) > 1 else 0.0
    vb = statistics.variance(lb) / len(lb) if len(lb) > 1 else 0.0
    se = math.sqrt(va + vb)
    ratio = math.exp(d)
    base = Verdict(
        UNCHANGED,
        current_median=median(after),
        baseline_median=median(before),
        ratio=ratio,
        n_baseline=len(la),
        n_current=len(lb),
        alpha_each=alpha,
        effect=threshold,
    )
    if se == 0.0:
        if len(la) + len(lb) < 3:
            return replace(
                base, status=INCONCLUSIVE, reason="one round a side: no spread", cause=Cause.NOISE
            )
        low = high = ratio  # every round agreed exactly
    else:
        parts = [v**2 / (n - 1) for v, n in ((va, len(la)), (vb, len(lb))) if n > 1 and v > 0]
        dof = (va + vb) ** 2 / sum(parts) if parts else math.inf
        q = between_runs.t_quantile(1.0 - alpha / 2.0, dof)
        low, high = math.exp(d - q * se), math.exp(d + q * se)
    verdict = replace(base, ratio_low=low, ratio_high=high)
    big = abs(ratio - 1.0) >= threshold
    if (low > 1.0 or high < 1.0) and big:
        return replace(verdict, status=REGRESSED if ratio > 1.0 else IMPROVED)
    if low > 1.0 or high < 1.0 or (low >= 1.0 / (1.0 + threshold) and high <= 1.0 + threshold):
        return verdict
    return replace(
        verdict,
        status=INCONCLUSIVE,
        reason="the paired rounds spread too much to say (more rounds help)",
        cause=Cause.NOISE,
    )


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


class _Probes:
    """The probe with memory and a budget: each commit is measured at most once; ``workers``
    probes at a time where the search asks for several commits at once."""

    def __init__(
        self,
        probe: Callable[[int], Measured],
        budget: int | None,
        out: Search,
        workers: int = 1,
        out_of_time: Callable[[], str | None] | None = None,
    ) -> None:
        self._probe = probe
        self._budget = budget
        self._out = out
        self._workers = workers
        self._out_of_time = out_of_time
        #: Whether the minutes budget applies yet (not to the good and bad commits).
        self.budgeted = False
        self._got: dict[int, Measured] = {}

    def _late(self) -> str | None:
        """Why no probe may start now (the minutes budget), else None."""
        if not self.budgeted or self._out_of_time is None:
            return None
        return self._out_of_time()

    def prefetch(self, points: Sequence[int]) -> None:
        """Measure ``points`` side by side (those not measured or skipped yet, within the budget);
        their results are then :meth:`__call__`'s."""
        todo = [i for i in points if i not in self._got and i not in self._out.skipped]
        if self._budget is not None:
            todo = todo[: max(0, self._budget - len(self._out.probed))]
        if self._workers < 2 or len(todo) < 2 or self._late() is not None:
            return
        with ThreadPoolExecutor(max_workers=self._workers) as pool:
            running = {i: pool.submit(self._probe, i) for i in todo}
        for i in todo:
            self._out.probed.append(i)
            try:
                self._got[i] = running[i].result()
            except ProbeFailed as exc:
                self._out.skipped[i] = str(exc)

    def __call__(self, i: int) -> Measured | None:
        """Commit ``i``'s measurement, None where it was skipped."""
        if i in self._got:
            return self._got[i]
        if i in self._out.skipped:
            return None
        if self._budget is not None and len(self._out.probed) >= self._budget:
            raise OutOfProbes(f"the probe budget ({self._budget}) ran out")
        why = self._late()
        if why is not None:
            raise OutOfProbes(why)
        self._out.probed.append(i)
        try:
            got = self._probe(i)
        except ProbeFailed as exc:
            self._out.skipped[i] = str(exc)
            return None
        self._got[i] = got
        return got

    def known(self) -> dict[int, Measured]:
        return dict(self._got)


def bisect(
    commits: int,
    probe: Callable[[int], Measured],
    moved: Callable[[str, Sequence[float], Sequence[float]], bool],
    *,
    max_probes: int | None = None,
    parallel: int = 1,
    out_of_time: Callable[[], str | None] | None = None,
    narrow_by: Callable[[], int] | None = None,
) -> Search:
    """Search ``commits`` commits (index 0 the good one, the last the bad one) with ``probe``;
    ``moved(name, a, b)``: whether benchmark ``name``'s measurements ``a`` and ``b`` differ.
    The good and the bad commit must measure (:class:`ProbeFailed` from either is raised).
    ``parallel``: commits measured side by side; each round of the search then splits a range
    in ``parallel + 1`` parts instead of halving it (fewer rounds, about as many probes).
    ``out_of_time()``: None while probes may start, else why not (a minutes budget); the good
    and bad commits are measured whatever it says. ``narrow_by()``, asked once the good and bad
    commits are measured: how many commits each round of the search measures from then on
    (default ``parallel``; 1 where what was measured cannot share the host, e.g. timed work)."""
    out = Search()
    get = _Probes(probe, max_probes, out, parallel, out_of_time)
    last = commits - 1
    get.prefetch([last, 0])
    bad = get(last)
    good = get(0)
    if good is None or bad is None:
        end = "good" if good is None else "bad"
        raise ProbeFailed(f"the {end} commit: {out.skipped[0 if good is None else last]}")
    get.budgeted = True
    width = parallel if narrow_by is None else max(1, min(parallel, narrow_by()))
    for name in sorted(bad):
        if name not in good:
            try:
                out.added[name] = _first_with(name, get, last)
            except OutOfProbes as exc:
                out.unfinished[name] = f"added after the good commit; {exc}"
            continue
        try:
            out.steps[name] = _steps(name, 0, last, get, moved, width)
        except OutOfProbes as exc:
            out.unfinished[name] = str(exc)
    for name, found in out.steps.items():
        if found:
            continue
        base = good[name]
        for i, got in sorted(get.known().items()):
            if 0 < i < last and name in got and moved(name, base, got[name]):
                out.came_back[name] = (i, median(got[name]) / median(base))
                break
    out.measured = get.known()
    return out


def _steps(
    name: str,
    lo: int,
    hi: int,
    get: _Probes,
    moved: Callable[[str, Sequence[float], Sequence[float]], bool],
    parallel: int = 1,
) -> list[Step]:
    """Every step of ``name`` between commits ``lo`` and ``hi`` (both measured)."""
    steps: list[Step] = []
    end = hi
    while True:
        base, last = _values(get, lo, name), _values(get, end, name)
        if not moved(name, base, last):
            return steps
        a, b = lo, end
        while b - a > 1:
            if parallel > 1:
                a, b, narrowed = _split(get, a, b, name, moved, parallel)
                if narrowed:
                    continue
            mid = _probe_near(get, a, b, name)
            if mid is None:  # every commit between was skipped: the step is one of them or b
                break
            if moved(name, _values(get, a, name), _values(get, mid, name)):
                b = mid
            else:
                a = mid
        before, after = _values(get, a, name), _values(get, b, name)
        steps.append(Step(before=a, at=b, ratio=median(after) / median(before)))
        lo = b


def _split(
    get: _Probes,
    a: int,
    b: int,
    name: str,
    moved: Callable[[str, Sequence[float], Sequence[float]], bool],
    parallel: int,
) -> tuple[int, int, bool]:
    """One round of a search side by side: ``parallel`` commits evenly inside ``(a, b)``
    measured at once, the range narrowed to the part where ``name`` moved; ``narrowed`` False
    where none of them measured (the caller falls back to one commit at a time)."""
    points = sorted({a + round(j * (b - a) / (parallel + 1)) for j in range(1, parallel + 1)})
    points = [p for p in points if a < p < b]
    get.prefetch(points)
    base = _values(get, a, name)
    lower, narrowed = a, False
    for p in points:
        got = get(p)
        if got is None or name not in got:
            continue
        narrowed = True
        if moved(name, base, got[name]):
            return lower, p, True
        lower = p
    return lower, b, narrowed


def _values(get: _Probes, i: int, name: str) -> Sequence[float]:
    got = get(i)
    assert got is not None
    return got.get(name, ())


def _probe_near(get: _Probes, a: int, b: int, name: str) -> int | None:
    """A commit strictly between ``a`` and ``b`` that measures ``name``: the middle one, else
    the nearest to it that is not skipped; None where none does."""
    mid = (a + b) // 2
    order = sorted(range(a + 1, b), key=lambda i: (abs(i - mid), i))
    for i in order:
        got = get(i)
        if got is not None and name in got:
            return i
    return None


def _first_with(name: str, get: _Probes, last: int) -> int:
    """The first measured commit that has benchmark ``name`` (it was added after the good one),
    by halving: the commits that have it are assumed to be the later ones."""
    lo, hi = 0, last
    while hi - lo > 1:
        mid = (lo + hi) // 2
        got = get(mid)
        if got is None:  # skipped: look at the commits after it
            lo = mid
            continue
        if name in got:
            hi = mid
        else:
            lo = mid
    return hi
