"""The counted measure: a benchmark's CPU cost as instructions executed and estimated cycles on
callgrind's simulated CPU, and the verdict from counts (how the calls are counted is
core/counting/counted_calls.py; what decides whether two counts compare is core/counting/counts_key.py).

Counts are nearly deterministic: the same code on the same simulated CPU executes the same
instructions, whatever the host is doing and whichever CPU model the runner drew. What still
moves them is measured, not assumed: the per-call spread within a counted process (the
interpreter's caches, allocator state) and the spread between processes (address layout);
the minimum effect of a counts verdict is never below :data:`SPREAD_FACTOR` times the larger
of the two, nor below :data:`COUNTS_FLOOR`.

Estimated cycles (core/counting/estimated_cycles.py, where the caches are simulated) see the same work
done with a worse access pattern (instructions do not); neither sees time spent waiting (sleeps,
I/O, locks) or gained from more threads. Every thread's instructions count (a BLAS or OpenMP
pool's too), except a thread's waiting for another (host/callgrind_dumps.WAIT_FUNCTIONS).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from pytest_burnperf import json_fields as jf
from pytest_burnperf.core.judging import stats
from pytest_burnperf.core.judging.abstention import Cause
from pytest_burnperf.core.judging.verdict import (
    IMPROVED,
    INCOMPARABLE,
    INCONCLUSIVE,
    NO_BASELINE,
    REGRESSED,
    UNCHANGED,
    Status,
    Verdict,
)
from pytest_burnperf.core.text import format_count

COUNTS_TIMER = "counts"  # the timer name of a counted sample (results, baselines, the table)
#: What a counts verdict judges: instructions. Measured on the shipped numpy suite (docs/gate.md,
#: "Counted CPU cost"): between two counted processes instructions moved by 0.004% (median) and
#: 0.38% at most, estimated cycles by 0.01% and 1.3%, and within one process the cycles of a
#: memory-bound call spread up to 37% (the simulated last level meets each allocation's
#: addresses differently). Cycles are reported, and a change in them that instructions do not
#: show is named in the verdict's notes.
GATING = "instructions"
#: Where the minimum effect a benchmark's own counts allow is larger than this, counts cannot
#: judge it (threads spinning under valgrind's one-at-a-time scheduling, say): inconclusive.
MAX_EFFECT = 0.05
#: The smallest change a counts verdict calls a change.
COUNTS_FLOOR = 0.005
#: The minimum effect is at least this many times the measured relative spread (the per-call
#: range, calls meeting the allocator in different states: core/counting/counted_calls.allocator_pad).
SPREAD_FACTOR = 2.0
#: Relative spread of a benchmark's per-call counts between counted processes that no single
#: process shows (address layout, hash seeds): the largest measured on the shipped suite
#: (docs/gate.md, "Counted CPU cost"), a floor under every counts verdict's spread.
PROCESS_SPREAD = 0.0005
#: What the interpreter's own instructions may still move between counted processes once the
#: allocators count by their calls, small calls are counted settled and type, dict and set
#: lookups count at a fixed cost (host/callgrind_dumps.py,
#: core/counting/counted_calls.SETTLE_INSTRUCTIONS). A benchmark's minimum effect is at least this
#: times the share of its instructions the interpreter ran. The largest relative moves measured
#: under that rule between a recording and another process (docs/gate.md, the minimum effect):
#: 0.20% (pint's whole suite recorded, three of its modules checked; one module by itself),
#: 0.18% (cattrs), 0.11% (snecs): five times the largest. 1.5% until 2026-12-01 (4th session),
#: 3.5% while the allocators' paths counted (int arithmetic moved 3.4% between processes then).
INTERPRETER_FLOOR = 0.01
#: Instructions a call running interpreted code may count more in another process, whatever its
#: size: the interpreter's specialising state (a call site that does not specialise retries ever
#: more rarely, about 110 instructions each time, in whichever call the retry lands: docs/gate.md,
#: "The plugin's own instructions"; one in each of a check's two calls moves their median by
#: 110) and what of the memory layout the counting rule does not take out. The largest moves
#: measured under the present rule between a recording and another process, on calls under
#: 60 k instructions: 66, 45 and 39 (pint's checks), 58 (pint's whole-suite recording, between
#: its processes), 27 (cattrs), 12 (snecs): 250 is nearly four times the largest and more than
#: two retries. Calls from 5 k instructions (the plugin's own 4.5 k included) are judged by counts.
#: 800 until 2026-12-01 (4th session: 397 on snecs's 37 k ``component_lookups_esper`` before
#: dict lookups counted at their first probe, 117 on a 90 k call before settling followed the
#: counted instructions), 1,500 before.
INTERPRETER_STATE = 250
#: The interpreter's share of a benchmark's instructions from which its counts may follow the
#: counted process's memory layout, so that one process cannot stand for every other: CPython
#: indexes its type attribute cache by the address of the attribute name's string, so which
#: lookups collide there (and walk the class's MRO on every call) depends on where memory
#: landed (docs/gate.md, "Counts that follow the process's memory layout": 280 lookups through
#: 40 mixins counted 232-580 k instructions a call in seven processes; pint's benchmarks moved
#: up to 6% between processes). Such a benchmark is counted in :data:`RECORDED_PROCESSES`
#: processes when recorded and in a second process where one process's counts call a change
#: (:func:`needs_another_process`). Below it, a 10% move of the interpreter's instructions
#: stays within :data:`COUNTS_FLOOR`.
LAYOUT_SHARE = 0.05
#: Counted processes that record a benchmark whose counts may follow the memory layout
#: (:data:`LAYOUT_SHARE`): the baseline holds every process's calls, and the spread of their
#: medians (:attr:`Counted.process_medians`) widens its minimum effect.
RECORDED_PROCESSES = 3
#: A counts verdict's ``spread_source`` where the spread between counted processes set its
#: minimum effect (their memory layouts): past :data:`MAX_EFFECT` counts call no change at all.
LAYOUT_SOURCE = "processes"
PAIRED_SOURCE = "pairs"  # a verdict's ``spread_source`` judged call by call (paired_counts.py)
#: The end of the reason of a benchmark counts cannot decide (:func:`undecidable`).
UNDECIDED_ADVICE = "judge it by time"


@dataclass(frozen=True)
class Counted:
    """The counts of one benchmark in one counted process: one value per counted call."""

    instructions: tuple[int, ...]
    #: Estimated cycles, where the caches were simulated (--perf-count-cycles), else empty.
    cycles: tuple[int, ...]
    #: The median call's events (Ir; D1mr, ... with the caches simulated), for the report.
    events: dict[str, int] = field(default_factory=dict)
    #: The share of the median call's instructions run in the Python interpreter itself.
    interpreter: float = 0.0
    #: Where several counted processes counted it (:func:`pooled`): each one's median
    #: instructions a call, in the order they counted; empty where one process did.
    process_medians: tuple[int, ...] = ()
    #: Each counted call's place among the calls its process made (1: the first), in the
    #: order of :attr:`instructions`: the same place draws the same random parameters in
    #: every process (core/counting/paired_counts.py); empty where not known (an older record).
    positions: tuple[int, ...] = ()

    def values(self, metric: str = GATING) -> tuple[int, ...]:
        return self.cycles if metric == "cycles" else self.instructions

    def process_spread(self) -> float:
        """(max - min) / median of the processes' medians: how far the counts moved between
        the counted processes that counted it (0.0 where one process did)."""
        return relative_spread(self.process_medians)

    def as_json(self) -> dict[str, object]:
        doc: dict[str, object] = {
            "instructions": list(self.instructions),
            "cycles": list(self.cycles),
            "events": dict(self.events),
            "interpreter": self.interpreter,
        }
        if self.process_medians:
            doc["process_medians"] = list(self.process_medians)
        if self.positions:
            doc["positions"] = list(self.positions)
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, object]) -> Counted:
        return cls(
            instructions=tuple(int(v) for v in jf.floats(doc.get("instructions"))),
            cycles=tuple(int(v) for v in jf.floats(doc.get("cycles"))),
            events={
                str(k): int(n)
                for k, v in jf.mapping(doc.get("events")).items()
                if (n := jf.number(v)) is not None
            },
            interpreter=jf.number(doc.get("interpreter")) or 0.0,
            process_medians=tuple(int(v) for v in jf.floats(doc.get("process_medians"))),
            positions=tuple(int(v) for v in jf.floats(doc.get("positions"))),
        )


def pooled(parts: Sequence[Counted]) -> Counted:
    """One benchmark's counts from several counted processes as one: every process's calls,
    each process's median instructions (:attr:`Counted.process_medians`; a part that was
    itself pooled brings its own), the median process's events, and the largest interpreter
    share. Judged so, a change must stand beyond how far the processes moved apart."""
    if not parts:
        raise ValueError("no counts to pool")
    if len(parts) == 1:
        return parts[0]
    medians: list[int] = []
    for part in parts:
        medians.extend(part.process_medians or (round(statistics.median(part.instructions)),))
    order = sorted(parts, key=lambda p: statistics.median(p.instructions))
    return Counted(
        instructions=tuple(v for p in parts for v in p.instructions),
        cycles=tuple(v for p in parts for v in p.cycles) if all(p.cycles for p in parts) else (),
        events=dict(order[(len(order) - 1) // 2].events),
        interpreter=max(p.interpreter for p in parts),
        process_medians=tuple(medians),
        positions=tuple(v for p in parts for v in p.positions)
        if all(len(p.positions) == len(p.instructions) for p in parts)
        else (),
    )


def may_follow_layout(counted: Counted) -> bool:
    """Whether this benchmark's counts may follow the counted process's memory layout
    (:data:`LAYOUT_SHARE`): where so, one process's counts do not stand for another's."""
    return counted.interpreter >= LAYOUT_SHARE


def needs_another_process(verdict: Verdict, counted: Counted) -> bool:
    """Whether a counts verdict that calls a change (regressed or improved) rests on one
    counted process of a benchmark whose counts may follow its memory layout: then another
    process counts it before the change is called (pooled with this one, the change must stand
    beyond how far the two moved apart)."""
    return (
        verdict.status in (REGRESSED, IMPROVED)
        and may_follow_layout(counted)
        and len(counted.process_medians) < 2
    )


def between_processes(*sides: Counted | None) -> float:
    """The between-process spread a verdict on these counts allows for: the largest the
    sides' own processes showed (:meth:`Counted.process_spread`), never below
    :data:`PROCESS_SPREAD`."""
    return max([PROCESS_SPREAD, *(s.process_spread() for s in sides if s is not None)])


# --------------------------------------------------------------------------------------------
# the verdict from counts


def relative_spread(values: Sequence[float]) -> float:
    """(max - min) / median of one side's per-call counts."""
    if len(values) < 2:
        return 0.0
    mid = statistics.median(values)
    return (max(values) - min(values)) / mid if mid > 0 else 0.0


def minimum_effect(floor: float, spread: float, interpreter: float, base_median: float) -> float:
    """The smallest change a counts verdict calls one (:func:`judge_counts` names the terms)."""
    state = INTERPRETER_STATE / base_median if interpreter else 0.0
    return max(floor, SPREAD_FACTOR * spread, INTERPRETER_FLOOR * interpreter, state)


def judge_counts(
    baseline: Sequence[float] | None,
    current: Sequence[float],
    *,
    alpha_each: float,
    floor: float = COUNTS_FLOOR,
    process_spread: float = PROCESS_SPREAD,
    interpreter: float = 0.0,
    threshold: float | None = None,
) -> Verdict:
    """``regressed`` when the current counts exceed the baseline's by more than the minimum
    effect and Mann-Whitney says so at ``alpha_each`` (where the calls are too few for it to
    reach ``alpha_each``: every current call above every baseline call); ``improved`` the other way;
    ``unchanged`` within the minimum effect. The minimum effect: the largest of ``floor``,
    :data:`SPREAD_FACTOR` times the larger of the sides' per-call spread and the between-process
    spread, and :data:`INTERPRETER_FLOOR` times the ``interpreter`` share of the instructions.
    ``process_spread``: how far the counted processes of either side moved apart
    (:func:`between_processes`).
    ``threshold``: the one the user set (command line, ini file, marker), the smallest change
    that fails or counts as an improvement here too; a change counts see below it is
    ``unchanged``, its figure and why said. None: the minimum effect alone gates."""
    cur = [float(v) for v in current]
    cur_median = statistics.median(cur)
    if not baseline:
        return Verdict(
            NO_BASELINE,
            cur_median,
            n_current=len(cur),
            runs_current=1,
            reason="no counts baseline recorded",
            cause=Cause.NO_COUNTS,
        )
    base = [float(v) for v in baseline]
    base_median = statistics.median(base)
    if base_median <= 0 or cur_median <= 0:
        return Verdict(
            INCOMPARABLE,
            cur_median,
            baseline_median=base_median,
            n_baseline=len(base),
            n_current=len(cur),
            reason="a side counted no instructions (did the benchmark run under valgrind?)",
            cause=Cause.COUNTS_KEY,
        )
    ratio = cur_median / base_median
    spread = max(relative_spread(base), relative_spread(cur), process_spread)
    state = INTERPRETER_STATE / base_median if interpreter else 0.0
    effect = minimum_effect(floor, spread, interpreter, base_median)
    # the spread is the processes' where they moved apart at least half as far as any calls
    by_layout = process_spread > PROCESS_SPREAD and 2 * process_spread >= spread
    # Too few calls for the rank test to reach alpha (core/counting/counted_calls stops early only where the
    # calls agree): decided by their separation, beyond the minimum effect, instead; no p is
    # shown for a test that did not judge.
    by_rank = stats.min_attainable_p(len(base), len(cur)) <= alpha_each
    p_slower = stats.mann_whitney_greater(cur, base, exact=True) if by_rank else None
    p_faster = stats.mann_whitney_greater(base, cur, exact=True) if by_rank else None
    low = min(cur) / max(base)
    high = max(cur) / min(base)
    verdict = Verdict(
        UNCHANGED,
        current_median=cur_median,
        baseline_median=base_median,
        ratio=ratio,
        ratio_low=min(low, ratio),
        ratio_high=max(high, ratio),
        p_slower=p_slower,
        p_faster=p_faster,
        n_baseline=len(base),
        n_current=len(cur),
        runs_baseline=1,
        runs_current=1,
        alpha_each=alpha_each,
        spread=spread,
        spread_source=LAYOUT_SOURCE if by_layout else "counts",
        effect=effect,
        min_detectable=effect if threshold is None else max(effect, threshold),
        threshold=threshold,
    )
    change = math.log(ratio)
    # a minimum effect above the threshold set is no blind spot: counts see what it asks for
    blind = effect > MAX_EFFECT and (threshold is None or effect > threshold)
    # processes that moved apart that far are a few draws of a wider spread (a check's two
    # processes counted 40% below a recording whose three spanned 30%): no change is called.
    # Where the call's size, not the processes' spread, makes it blind (an 8.7 k-instruction
    # call whose processes moved 0.1% apart), a change beyond it is still called
    layout_blind = by_layout and SPREAD_FACTOR * spread > MAX_EFFECT
    if (abs(change) <= math.log1p(effect) or layout_blind) and blind:
        if state >= SPREAD_FACTOR * spread:  # the call is small, not spread
            why = (
                f"a call of {format_count(base_median)} instructions running interpreted code, "
                f"whose state may count up to {INTERPRETER_STATE} more in another process"
            )
        elif by_layout:
            why = (
                f"its counts moved {100 * spread:.2g}% between the counted processes that "
                "counted it (interpreted code whose attribute lookups follow each process's "
                "memory layout)"
            )
        else:
            why = (
                f"its counts spread {100 * spread:.2g}% between calls (threads spinning under "
                "valgrind, allocation-dependent work, or work drawn afresh in each call, such "
                "as random parameters)"
            )
        cannot = (
            "a few processes show only part of how far it moves, so counts call no change"
            if layout_blind
            else f"counts cannot tell changes under {100 * effect:.2g}% apart"
        )
        return _with(verdict, INCONCLUSIVE, f"{why}: {cannot}; " + UNDECIDED_ADVICE)
    sides: tuple[tuple[int, float | None, Status], ...] = (
        (1, p_slower, REGRESSED),
        (-1, p_faster, IMPROVED),
    )
    for sign, p, status in sides:
        if sign * change > math.log1p(effect):
            if threshold is not None and sign * change <= math.log1p(threshold):
                seen = "" if p is None else f"p={p:.2g}, "
                return _with(
                    verdict,
                    UNCHANGED,
                    f"counts {100 * (ratio - 1):+.2f}% ({seen}beyond their {100 * effect:.2g}% "
                    f"minimum effect) is within the {100 * threshold:g}% threshold set: not failed",
                )
            if p is not None and p <= alpha_each:
                return _with(verdict, status, "")
            apart = min(cur) > max(base) if sign > 0 else max(cur) < min(base)
            if not by_rank and apart:
                side = "above" if sign > 0 else "below"
                return _with(
                    verdict,
                    status,
                    f"every counted call {side} every baseline call, by more than the "
                    f"{100 * effect:.2g}% minimum effect ({len(cur)} and {len(base)} calls: "
                    "too few for a rank test at this alpha, decided by their separation)",
                )
            if not by_rank:
                return _with(
                    verdict,
                    INCONCLUSIVE,
                    f"counts {100 * (ratio - 1):+.2f}% beyond the {100 * effect:.2g}% minimum "
                    f"effect, but the calls' counts overlap ({len(cur)} and {len(base)} calls)",
                )
            return _with(
                verdict,
                INCONCLUSIVE,
                f"counts {100 * (ratio - 1):+.2f}% beyond the {100 * effect:.2g}% minimum "
                f"effect but p={p:.2g} > alpha {alpha_each:.2g}: the calls' counts overlap",
            )
    if abs(ratio - 1) > floor and effect > floor:
        # a change counts saw beyond the floor the run's header states, not called a change
        # only because this benchmark's own minimum effect is larger: said, with what sets it
        terms = (
            (
                SPREAD_FACTOR * spread,
                f"{SPREAD_FACTOR:g}x how far its counted processes moved apart"
                if by_layout
                else f"{SPREAD_FACTOR:g}x its counts' spread",
            ),
            (
                INTERPRETER_FLOOR * interpreter,
                f"{100 * INTERPRETER_FLOOR:g}% x its interpreter's share, {100 * interpreter:.0f}%",
            ),
            (
                state,
                f"the interpreter's state in a call of {format_count(base_median)} "
                f"instructions, up to {INTERPRETER_STATE} more in another process",
            ),
        )
        why = max(terms, key=lambda t: t[0])[1]
        return replace(
            verdict,
            reason=f"counts {100 * (ratio - 1):+.2f}% within this benchmark's "
            f"{100 * effect:.2g}% minimum effect ({why})",
        )
    return verdict


def undecidable(verdict: Verdict) -> bool:
    """Whether a counts verdict is left open because counts cannot tell a change of this size
    apart (its minimum effect above :data:`MAX_EFFECT`, the change within it): a call that
    small, or whose counts spread that much; or whose counted processes moved apart that much,
    whatever the change (:data:`LAYOUT_SOURCE`)."""
    return (
        verdict.status == INCONCLUSIVE
        and verdict.effect is not None
        and verdict.effect > MAX_EFFECT
        and verdict.ratio is not None
        and verdict.ratio > 0
        and (
            verdict.spread_source == LAYOUT_SOURCE
            or abs(math.log(verdict.ratio)) <= math.log1p(verdict.effect)
        )
    )


def undecided_text(verdict: Verdict) -> str:
    """Why counts left an :func:`undecidable` verdict to the clock: ``counts +0.00%, but a call
    of 17.0 k instructions running interpreted code, ...: counts cannot tell changes under 8.8%
    apart``."""
    reason = verdict.reason.removesuffix("; " + UNDECIDED_ADVICE)
    return f"counts {counts_change(verdict)}, but {reason}"


def _with(verdict: Verdict, status: Status, reason: str) -> Verdict:
    """``status`` with its ``reason``; left open (inconclusive), the counts could not decide."""
    cause = Cause.COUNTS_SPREAD if status == INCONCLUSIVE else None
    return replace(verdict, status=status, reason=reason, cause=cause)


def cycles_note(base: Sequence[float], cur: Sequence[float], verdict: Verdict) -> str | None:
    """Where estimated cycles moved beyond their own spread, and beyond what the instructions
    moved, while the instructions judged unchanged: the same work with more (or fewer) cache
    misses. The instructions' own change is said as it is (``+2.60%``, under their minimum
    effect), never called "unchanged" where it moved."""
    if verdict.status != UNCHANGED or not base or not cur:
        return None
    ratio = statistics.median(cur) / statistics.median(base)
    effect = max(COUNTS_FLOOR, SPREAD_FACTOR * max(relative_spread(base), relative_spread(cur)))
    moved = verdict.ratio if verdict.ratio is not None else 1.0
    beyond = ratio / moved  # what the instructions' own change does not explain
    if abs(math.log(ratio)) <= math.log1p(effect) or abs(math.log(beyond)) <= math.log1p(effect):
        return None
    if abs(moved - 1) < 0.0005:
        instructions = "with instructions unchanged"
    else:
        floor = f"{100 * verdict.effect:.2g}% " if verdict.effect is not None else ""
        instructions = (
            f"with instructions {100 * (moved - 1):+.2f}% (judged unchanged: under their "
            f"{floor}minimum effect)"
        )
    return (
        f"estimated cycles {100 * (ratio - 1):+.2f}% (beyond their {100 * effect:.2g}% spread) "
        f"{instructions}: the same work with "
        + ("more" if beyond > 1 else "fewer")
        + " cache misses (access pattern, data size or memory layout)"
    )


def counts_change(v: Verdict) -> str:
    """``+5.02%``: a counts change, to two decimals (counts resolve far finer than time)."""
    return "-" if v.ratio is None else f"{100 * (v.ratio - 1):+.2f}%"


def counts_failure(
    test_id: str,
    verdict: Verdict,
    metric: str = GATING,
    labels: tuple[str, str] | None = None,
) -> str:
    """The one line a person reads when a benchmark's counts regressed; ``labels`` name the
    sides of a same-session comparison (reference, current)."""
    assert verdict.ratio is not None
    effect = verdict.effect if verdict.effect is not None else COUNTS_FLOOR
    gate = f"{100 * effect:.2g}% minimum effect of counts"
    if verdict.threshold is not None and verdict.threshold > effect:
        gate = f"{100 * verdict.threshold:g}% threshold set"
    # without a p: too few calls for the rank test, decided by every call's separation
    judged = "every call apart" if verdict.p_slower is None else f"p={verdict.p_slower:.2g}"
    change = f"{100 * (verdict.ratio - 1):+.2f}%"
    if verdict.spread_source == PAIRED_SOURCE:  # the median of the calls' own changes
        change += " the median call against the baseline's call at the same place"
    what = "estimated cycles" if metric == "cycles" else "instructions"
    before, after = (f"{labels[0]} ", f"{labels[1]} ") if labels else ("", "")
    return (
        f"{test_id}: {what} per call {before}{format_count(verdict.baseline_median)} -> "
        f"{after}{format_count(verdict.current_median)} ({change}, {judged}, "
        f"n={verdict.n_baseline}/{verdict.n_current} counted calls) exceeds the {gate}"
    )
