"""Verdict assembly: a benchmark's runs, its baseline entry and what is known about the host, in;
one :class:`~pytest_burnperf.core.judging.verdict.Verdict`, out. No pytest here.

Order of the questions:

1. Is there a baseline? A legacy one (recorded before the hardware identity existed) is never
   compared (``comparability.legacy_reason``).
2. May it be compared at all (``comparability.blocker``: hardware class, dispatch, clock, flush)?
3. The statistics (``verdict.judge``): Mann-Whitney, Hodges-Lehmann, the noise floor with its prior.
4. Could the host explain the outcome? Rounds measured on a disturbed host (``host.activity``) are
   left out of the verdict when at least ``MIN_CLEAN_ROUNDS`` clean rounds remain: the host
   monitor, not the timings, chose them, so leaving them out removes no difference between the
   sides. With fewer clean rounds, or a host that runs the reference probe slower or faster than
   the baseline's host (``probe``), a verdict the host could explain becomes ``inconclusive``
   with the reason: never a failure blamed on the code, never a silent pass through a floor the
   busy host raised. A disturbance excuses only as much as it can explain
   (``Window.explains_up_to``): a slowdown beyond that fails, with the busy host in a note.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from pytest_burnperf.core.judging.abstention import Cause
from pytest_burnperf.core.judging.comparability import blocker, legacy_reason
from pytest_burnperf.core.judging.verdict import (
    IMPROVED,
    INCONCLUSIVE,
    REGRESSED,
    UNCHANGED,
    Policy,
    Verdict,
    judge,
    not_comparable,
)
from pytest_burnperf.core.options.pedantic_shape import PedanticShape
from pytest_burnperf.core.records.stored_baseline import StoredBaseline
from pytest_burnperf.host import probe as _probe
from pytest_burnperf.host import threads as _threads
from pytest_burnperf.host.activity import MIN_WINDOW_S, Window
from pytest_burnperf.host.nvml import OTHERS_SM_MIN

#: Clean rounds a benchmark needs before its busy-host rounds are left out of the verdict.
MIN_CLEAN_ROUNDS = 3


def round_list(indices: Iterable[int]) -> str:
    """Round numbers (from 0) as a reader counts them, runs joined: ``1-3, 5``."""
    nums = sorted({i + 1 for i in indices})
    parts: list[str] = []
    start = prev = None
    for n in [*nums, None]:
        if n is not None and prev is not None and n == prev + 1:
            prev = n
            continue
        if start is not None:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = n
    return ", ".join(parts)


def busy_rounds(windows: Sequence[Window | None]) -> dict[int, str]:
    """``{round index: why}`` of the rounds whose host window says the host was disturbed
    (another process on our CPUs, steal, CPU pressure, a descheduled sample)."""
    return {i: why for i, w in enumerate(windows) if w is not None and (why := w.disturbed())}


def gpu_neighbour_for_the_run(windows: Sequence[Window]) -> list[Window]:
    """``windows`` with another process's kernels, where one window saw them, put in every
    window that read the GPU: NVML samples each process's use of the SMs, so a round it saw
    none in is not a quiet one. Seen on an H200 (2026-11-28): with a matmul loop beside for the
    whole run, NVML named it in 3 of a reduction's 8 rounds, and the 5 others, kept as clean,
    ran +4.4% slow and failed the kernel. Another process's kernels are the run's condition,
    not one round's."""
    worst = max(
        (w for w in windows if w.gpu_others_sm is not None and w.gpu_others_sm >= OTHERS_SM_MIN),
        key=lambda w: w.gpu_others_sm or 0.0,
        default=None,
    )
    if worst is None:
        return list(windows)
    return [
        w
        if w.gpu_others_sm is None or w.gpu_others_sm >= OTHERS_SM_MIN
        else replace(w, gpu_others_sm=worst.gpu_others_sm, gpu_others=worst.gpu_others)
        for w in windows
    ]


def leave_out_busy(
    rounds: int, busy: Mapping[int, str], *, least: int = MIN_CLEAN_ROUNDS
) -> dict[int, str]:
    """THE busy-round rule, for stored baselines and same-session pairs alike: the busy rounds
    of ``rounds`` are left out of a verdict where at least ``least`` clean ones remain (the
    monitor picked them, not the timings, so leaving them out removes no difference between the
    sides); with fewer, none is (and the adaptive rounds buy another, busy_round_costs_another)."""
    return dict(busy) if busy and rounds - len(busy) >= least else {}


@dataclass(frozen=True)
class HostEvidence:
    """What the session knows about the host for one benchmark."""

    #: Host windows of this run's rounds (one per process) and of the baseline's.
    windows: Sequence[Window] = ()
    baseline_windows: Sequence[Window] = ()
    #: This run's reference probe of the device, and the baseline's.
    probe: Mapping[str, object] | None = None
    baseline_probe: Mapping[str, object] | None = None
    #: A device-bound GPU kernel (``between_runs.noise_source``): only the GPU's figures of the
    #: windows count (``Window.device_side``), and the probe, which times the host, excuses
    #: nothing: it is a note.
    device_bound: bool = False

    def _seen(self, windows: Sequence[Window]) -> list[Window]:
        seen = gpu_neighbour_for_the_run(windows)
        return [w.device_side() for w in seen] if self.device_bound else seen

    def busy_rounds(self, rounds: int) -> dict[int, str]:
        """``{round index: why}`` of this run's rounds measured on a disturbed host, when the
        windows are one per round (``rounds`` of them); empty otherwise."""
        if len(self.windows) != rounds:
            return {}
        return busy_rounds(self._seen(self.windows))

    def disturbed(self) -> str | None:
        """Why this run's host was not quiet in some round, or None."""
        reasons = [(i, w.disturbed()) for i, w in enumerate(self._seen(self.windows))]
        bad = [(i, why) for i, why in reasons if why]
        if not bad:
            return None
        if len(self.windows) == 1:
            return f"host busy while it ran: {bad[0][1]}"
        rounds = round_list(i for i, _ in bad)
        return f"host busy in round(s) {rounds} of {len(self.windows)}: {bad[0][1]}"

    def explains_up_to(self) -> float:
        """The largest slowdown (a ratio) the disturbance of this run's host can explain: the
        worst of its windows (``Window.explains_up_to``)."""
        return max((w.explains_up_to() for w in self._seen(self.windows)), default=1.0)

    def baseline_disturbed(self) -> str | None:
        reasons = [w.disturbed() for w in self._seen(self.baseline_windows)]
        bad = [why for why in reasons if why]
        return f"the baseline was recorded on a busy host ({bad[0]})" if bad else None

    def baseline_busy_rounds(self, rounds: int) -> dict[int, str]:
        """``{round index: why}`` of the baseline's rounds recorded on a disturbed host, when its
        windows are one per round (``rounds`` of them); empty otherwise."""
        if len(self.baseline_windows) != rounds:
            return {}
        return busy_rounds(self._seen(self.baseline_windows))

    def baseline_inflation(self, runs: Sequence[Sequence[float]]) -> float:
        """How much slower than it should be the baseline's level may be because of its busy
        rounds (a ratio, 1.0 for none): measured where its windows line up with its ``runs`` and
        some rounds were clean (the level of all rounds over that of the clean ones, never
        below 1), else the most its busy windows can explain (``Window.explains_up_to``)."""
        busy = self.baseline_busy_rounds(len(runs))
        clean = [r for i, r in enumerate(runs) if i not in busy and len(r)]
        every = [r for r in runs if len(r)]
        if busy and clean and len(clean) < len(every):
            return max(1.0, _level(every) / _level(clean))
        return max((w.explains_up_to() for w in self._seen(self.baseline_windows)), default=1.0)

    def probe_ratio(self) -> tuple[float, dict[str, float]] | None:
        return _probe.host_ratio(self.baseline_probe, self.probe)


def _level(runs: Sequence[Sequence[float]]) -> float:
    """The geometric mean of the runs' medians: a side's level, as the between-run model has it."""
    return math.exp(statistics.fmean(math.log(statistics.median(r)) for r in runs))


def explain_by_busy_baseline(verdict: Verdict, why: str, inflation: float) -> Verdict:
    """A baseline recorded on a busy host may be slower than the code was: its slow rounds make
    a slowdown look smaller. An ``unchanged`` or ``improved`` verdict whose change, taken
    against the baseline as it would have been on a quiet host (``inflation`` slower), exceeds
    the verdict's minimum effect is inconclusive: never a pass on the strength of the baseline's
    slow rounds. A regression stands (the slow baseline only made it look smaller)."""
    r = verdict.ratio
    effect = verdict.effect if verdict.effect is not None else 0.0
    if verdict.status not in (UNCHANGED, IMPROVED) or r is None or r * inflation - 1.0 <= effect:
        return replace(verdict, notes=(*verdict.notes, why))
    if math.isinf(inflation):
        how = "how much slower that made it is not measured"
        hidden = "any slowdown"
    else:
        how = f"its rounds may have run up to +{100 * (inflation - 1):.1f}% slow"
        hidden = f"a slowdown of up to +{100 * (r * inflation - 1):.1f}%"
    return replace(
        verdict,
        status=INCONCLUSIVE,
        cause=Cause.HOST,
        reason=(
            f"{why}: {how}, so the {_change(verdict)} measured against it could hide {hidden}; "
            f"not called {verdict.status}; re-record the baseline on a quiet host "
            "(-k NAME --perf-update)"
        ),
    )


def busy_round_costs_another(rounds: int, clean: int) -> bool:
    """Whether the adaptive rounds should buy another round because the host disturbed some of
    ``rounds``: a verdict leaves busy rounds out only where ``MIN_CLEAN_ROUNDS`` clean ones
    remain, so until then a busy round costs a round rather than the verdict."""
    return clean < rounds and clean < MIN_CLEAN_ROUNDS


def baseline_runs(baseline: StoredBaseline) -> list[list[float]]:
    return [list(r) for r in baseline.runs]


def _change(v: Verdict) -> str:
    return "-" if v.change_pct is None else f"{v.change_pct:+.1f}%"


def _interval(v: Verdict) -> str:
    """``+122.7% [+119.7%, +125.7%]``: the change with its 95% interval where known."""
    if v.ratio_low is None or v.ratio_high is None:
        return _change(v)
    return f"{_change(v)} [{100 * (v.ratio_low - 1):+.1f}%, {100 * (v.ratio_high - 1):+.1f}%]"


def explain_by_host(verdict: Verdict, why: str, policy: Policy, up_to: float = math.inf) -> Verdict:
    """A disturbed host: a slowdown it could have caused, or a floor it raised, is inconclusive.
    ``up_to`` is the largest slowdown (a ratio) the disturbance can explain
    (``HostEvidence.explains_up_to``): a slowdown whose whole 95% interval lies beyond it is
    the code's, and fails with the busy host in a note."""
    if verdict.status == REGRESSED:
        low = verdict.ratio_low if verdict.ratio_low is not None else verdict.ratio
        bound = "" if math.isinf(up_to) else f" (it can explain up to +{100 * (up_to - 1):.0f}%)"
        if low is not None and low > up_to:
            return replace(
                verdict,
                reason=(
                    f"{why}; a host this busy can explain up to +{100 * (up_to - 1):.0f}%, "
                    f"not the {_interval(verdict)} measured: failed all the same"
                ),
            )
        return replace(
            verdict,
            status=INCONCLUSIVE,
            cause=Cause.HOST,
            reason=(
                f"{why}{bound}; the {_interval(verdict)} change may be the host's, not the "
                "code's: not failed (--perf-strict fails it); run again on a quiet host"
            ),
        )
    raised = verdict.effect is not None and verdict.effect > policy.threshold
    if verdict.status == UNCHANGED and raised:
        assert verdict.effect is not None
        return replace(
            verdict,
            status=INCONCLUSIVE,
            cause=Cause.HOST,
            reason=(
                f"{why}; with this noise it sees only slowdowns above +{100 * verdict.effect:.1f}%, "
                "so 'unchanged' would claim too much; run again on a quiet host"
            ),
        )
    return replace(verdict, notes=(*verdict.notes, why))


def note_paired_host(verdict: Verdict, busy: Mapping[int, str]) -> Verdict:
    """A same-session verdict over rounds the host disturbed, where too few clean ones remain to
    leave them out: the verdict stands, with a note. Both sides of each pair ran on that host
    one after the other, in an order drawn at random, so what the host added falls on either
    side alike and widens the pairs' spread, which the paired model measures; turning the
    verdict inconclusive made any disturbance a pass. (Replayed on the same-session harness's
    rounds beside a bursty load, 2026-11-23: 0 of 32 unchanged comparisons failed without the
    rule, and 20 of 52 comparisons were left undecided instead of 40; docs/validation.md.)"""
    if not busy:
        return verdict
    rounds = round_list(busy)
    why = busy[min(busy)]
    return replace(
        verdict,
        notes=(
            *verdict.notes,
            f"host busy in round(s) {rounds} ({why}); both sides of each pair ran on it, and "
            "the spread of the pairs carries what it added",
        ),
    )


def explain_by_probe(
    verdict: Verdict, ratio: float, parts: Mapping[str, float], policy: Policy
) -> Verdict:
    """A host that runs the probe slower (faster) than the baseline's: a slowdown (speed-up)
    within what that explains is inconclusive; anything else keeps its verdict with a note."""
    text = _probe.describe(ratio, parts)
    effect = verdict.effect if verdict.effect is not None else policy.threshold
    r = verdict.ratio
    if r is not None and ratio > 1 and verdict.status == REGRESSED and r <= ratio * (1 + effect):
        return replace(
            verdict,
            status=INCONCLUSIVE,
            cause=Cause.HOST,
            reason=f"{text}, which explains the {_change(verdict)} change: not failed",
        )
    if r is not None and ratio < 1 and verdict.status == IMPROVED and r >= ratio / (1 + effect):
        return replace(
            verdict,
            status=INCONCLUSIVE,
            cause=Cause.HOST,
            reason=f"{text}, which explains the {_change(verdict)} change",
        )
    if ratio < 1 and verdict.status == UNCHANGED:
        text += f"; a slowdown of the code up to {100 * (1 / ratio - 1):.0f}% may be hidden"
    return replace(verdict, notes=(*verdict.notes, text))


def assess(
    baseline: StoredBaseline | None,
    runs: Sequence[Sequence[float]],
    *,
    fingerprint: Mapping[str, object],
    timer: str,
    l2_flush: bool,
    policy: Policy,
    legacy: bool = False,
    host: HostEvidence | None = None,
    pedantic: PedanticShape | None = None,
) -> Verdict:
    """The verdict of one benchmark: its process ``runs`` (this process last) against
    ``baseline`` (the stored baseline, or None)."""
    pooled = [v for r in runs for v in r]
    if baseline is not None and legacy:
        return not_comparable(pooled, baseline.samples, legacy_reason(), Cause.LEGACY_BASELINE)
    if baseline is not None:
        why, cause, notes = blocker(baseline, fingerprint, timer, l2_flush, pedantic)
        if why is not None and cause is not None:
            old = [v for r in baseline_runs(baseline) for v in r]
            return not_comparable(pooled, old, why, cause)
        kept = [list(r) for r in runs]
        left_out = {} if host is None else leave_out_busy(len(runs), host.busy_rounds(len(runs)))
        if left_out:
            kept = [list(r) for i, r in enumerate(runs) if i not in left_out]
            first = left_out[min(left_out)]
            rounds = round_list(left_out)
            notes = (
                *notes,
                f"round(s) {rounds} of {len(runs)} left out of the verdict: host busy ({first})",
            )
        base = baseline_runs(baseline)
        base_left = (
            {} if host is None else leave_out_busy(len(base), host.baseline_busy_rounds(len(base)))
        )
        if base_left:  # the one busy-round rule, on the baseline's side too
            base = [r for i, r in enumerate(base) if i not in base_left]
            notes = (
                *notes,
                f"baseline round(s) {round_list(base_left)} of {len(base) + len(base_left)} "
                f"left out of the verdict: recorded on a busy host ({base_left[min(base_left)]})",
            )
        verdict = judge(base, kept, policy)
        verdict = replace(verdict, notes=(*notes, *verdict.notes))
    else:
        left_out = base_left = {}
        verdict = judge(None, [list(r) for r in runs], policy)
    if host is None or baseline is None:
        return verdict
    busy = None if left_out else host.disturbed()
    if busy is not None:
        verdict = explain_by_host(verdict, busy, policy, host.explains_up_to())
    old_busy = None if base_left else host.baseline_disturbed()
    if old_busy is not None:
        verdict = explain_by_busy_baseline(
            verdict, old_busy, host.baseline_inflation(baseline_runs(baseline))
        )
    probed = host.probe_ratio()
    if probed is not None and _probe.differs(probed[0]) and host.device_bound:
        text = _probe.describe(*probed)
        note = f"{text}; not an explanation: a device-bound kernel's device time is the GPU's"
        verdict = replace(verdict, notes=(*verdict.notes, note))
    elif probed is not None and _probe.differs(probed[0]):
        verdict = explain_by_probe(verdict, probed[0], probed[1], policy)
    return verdict


def own_threads(
    verdict: Verdict, windows: Sequence[Window], limit: int, pools: list[str]
) -> Verdict:
    """A CPU benchmark that used more CPUs than its thread limit in some round: the note names
    its own threads and what pins them (host/threads.py), first in the reason of a verdict left
    undecided, whose noise they may be, rather than only the host."""
    # over a window shorter than MIN_WINDOW_S a few milliseconds of the process's other work
    # read as a CPU's worth (1.7 CPUs over 30 ms, measured on a pure-Python benchmark)
    busiest = max((w.own_cpus for w in windows if w.seconds >= MIN_WINDOW_S), default=0.0)
    text = _threads.note(busiest, limit, pools)
    if text is None:
        return verdict
    if verdict.status == INCONCLUSIVE:  # on a busy host its threads wait for each other
        return replace(verdict, reason=f"{text}; {verdict.reason}", cause=Cause.HOST)
    return replace(verdict, notes=(text, *verdict.notes))
