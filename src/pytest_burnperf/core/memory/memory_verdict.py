"""The memory verdict: a benchmark's memory per call (:class:`~.allocations.Allocations`)
against its baseline's, compared exactly with a small minimum effect. A verdict of its own,
beside the time or counts verdict of the same benchmark: its abstentions (no memory baseline,
another key, calls that allocate differently) are said on the benchmark's line and never make
the benchmark "not judged", which its time or counts verdict decides. No pytest here.

- The tracked calls must agree (within the minimum effect) before anything is judged: a call
  whose memory moves from call to call (a cache warming up, a pool growing) is said, not
  judged (``varies``); so are calls during which torch.compile compiled (what they allocated
  was the compiler's work, which follows its caches).
- ``regressed`` where the peak or the bytes allocated per call grew past the minimum effect:
  the user's threshold (``threshold``, where one is set) or :data:`DEFAULT_SHARE`, and never
  under :data:`FLOOR_BYTES`; ``improved`` where one shrank past it and neither grew; else
  ``unchanged``. The number of allocations is shown, not judged (more, smaller allocations of
  the same bytes are the clock's business).
- ``over-limit`` where a tracked call's peak is over the marker's ``max_memory`` (a hard
  ceiling, with or without a baseline, whether the calls agree or not): it fails the test.
- A baseline recorded under another key (allocator, Python, the device's library and its
  version, the platform) is not compared (``incomparable``), and says which fields differ.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final, Literal

from pytest_burnperf.core.memory.allocations import Allocations
from pytest_burnperf.core.memory.call_figures import where_grew
from pytest_burnperf.core.text import format_bytes

MemoryStatus = Literal[
    "over-limit", "regressed", "unchanged", "improved", "varies", "no-baseline", "incomparable"
]

#: Statuses that fail the benchmark's test (memory_side.MEMORY; core/judging/outcome.side_fails).
FAILING: Final[frozenset[str]] = frozenset({"over-limit", "regressed"})

#: Statuses that compared the figures with a baseline.
JUDGED: Final[frozenset[str]] = frozenset({"regressed", "unchanged", "improved"})

#: The minimum effect where the user set no threshold: 1% of the baseline's figure.
DEFAULT_SHARE: Final = 0.01
#: ... and never less than this many bytes (an allocator's rounding, a small header).
FLOOR_BYTES: Final = 4096


@dataclass(frozen=True)
class MemoryVerdict:
    status: MemoryStatus
    #: The figures judged (the tracked calls' largest), None where the calls varied.
    figures: Allocations | None
    #: The baseline's figures, where there is one.
    baseline: Allocations | None = None
    #: The growth in bytes each figure had to pass (peak, allocated): the minimum effect.
    effect: tuple[int, int] = (FLOOR_BYTES, FLOOR_BYTES)
    #: Why it is not a verdict, or what the verdict rests on.
    reason: str = ""
    #: The marker's ``max_memory`` in bytes, where one was given.
    ceiling: int | None = None
    #: Where the last tracked call allocated (bytes per allocating Python line, the largest),
    #: and for a regression where it grew against the baseline's (``grew at add (b.py:22)
    #: +7.6 MiB (new)``), or where it allocated most where the baseline kept no sites.
    sites: Mapping[str, int] = field(default_factory=dict)
    where: str = ""
    #: Seconds the tracked calls took, the tracker included: what judging memory cost.
    tracked_s: float = 0.0
    #: The key its figures were tracked under (allocator, Python, the library's versions and
    #: dispatch, the threads, the platform: allocations.memory_key); None where not said.
    key: Mapping[str, object] | None = None

    @property
    def judged(self) -> bool:
        return self.status in JUDGED

    def change_text(self) -> str:
        """``peak +7.6 MiB (+100.0%), allocated +7.6 MiB (+50.0%)``: the change of each judged
        figure; ``-`` where nothing was compared."""
        if self.figures is None or self.baseline is None or not self.judged:
            return "-"
        parts = []
        for name, now, base in (
            ("peak", self.figures.peak, self.baseline.peak),
            ("allocated", self.figures.allocated, self.baseline.allocated),
        ):
            parts.append(f"{name} {_signed_bytes(now - base)} ({_share(now, base)})")
        return ", ".join(parts)

    def line(self) -> str:
        """What the benchmark's report says of its memory, in one line."""
        f = self.figures
        figures = (
            ""
            if f is None
            else f"peak {format_bytes(f.peak)}, {format_bytes(f.allocated)} in {f.count} "
            "allocations per call"
        )
        if self.status == "regressed":
            where = f"; {self.where}" if self.where else ""
            return f"memory regressed: {self.change_text()}{where} ({figures}; {self.reason})"
        if self.status == "over-limit":
            return f"memory over max_memory: {self.reason}"
        if self.judged:
            change = self.change_text()
            return f"memory {self.status}: {figures}" + ("" if change == "-" else f" ({change})")
        return f"memory not judged: {self.reason}" + (f" ({figures})" if figures else "")

    def as_json(self) -> dict[str, object]:
        return {
            "status": self.status,
            "figures": None if self.figures is None else self.figures.to_json(),
            "baseline": None if self.baseline is None else self.baseline.to_json(),
            "min_effect_bytes": {"peak": self.effect[0], "allocated": self.effect[1]},
            "reason": self.reason,
            "max_memory_bytes": self.ceiling,
            "sites": dict(self.sites),
            "where": self.where,
            "tracked_s": round(self.tracked_s, 4),
            "key": None if self.key is None else dict(self.key),
        }

    def kept(self) -> dict[str, object] | None:
        """What a baseline recorded from this verdict keeps (memory_side.check_kept checks it,
        recorded_memory.RecordedMemory.from_kept reads it): the figures where the calls
        agreed, their key and where the call allocated; None where the calls varied."""
        if self.figures is None:
            return None
        return {**self.figures.to_json(), "key": dict(self.key or {}), "sites": dict(self.sites)}


def _signed_bytes(n: int) -> str:
    return ("+" if n >= 0 else "-") + format_bytes(abs(n))


def _share(now: int, base: int) -> str:
    if base == 0:
        return "new" if now else "+0.0%"
    return f"{100.0 * (now - base) / base:+.1f}%"


def minimum_effect(base: int, threshold: float | None) -> int:
    """The growth in bytes of a figure of ``base`` bytes that is a change."""
    share = DEFAULT_SHARE if threshold is None else threshold
    return max(FLOOR_BYTES, math.ceil(share * base))


def agreed(calls: Sequence[Allocations]) -> Allocations | str:
    """The figures of the tracked ``calls`` where they agree within :data:`FLOOR_BYTES` (the
    largest of each), else why they do not: the figures of each call."""
    if not calls:
        return "no call was tracked"
    peaks = [c.peak for c in calls]
    allocated = [c.allocated for c in calls]
    if max(peaks) - min(peaks) > FLOOR_BYTES or max(allocated) - min(allocated) > FLOOR_BYTES:
        each = ", ".join(
            f"peak {format_bytes(c.peak)} / {format_bytes(c.allocated)}" for c in calls
        )
        return (
            f"its calls allocate differently ({each}): a cache or a pool that grows from call "
            "to call; memory is judged where calls repeat"
        )
    return Allocations(allocated=max(allocated), count=max(c.count for c in calls), peak=max(peaks))


def key_changes(key: Mapping[str, object], baseline_key: Mapping[str, object] | None) -> str:
    """``versions: {...} -> {...}; meter: ...``: each field of the two memory keys that
    differs, before and now; empty where they are the same key."""
    before = baseline_key or {}
    moved = sorted(name for name in set(key) | set(before) if key.get(name) != before.get(name))
    return "; ".join(f"{n}: {before.get(n)!r} -> {key.get(n)!r}" for n in moved)


def compiled_during(frames: int, settle_calls: int) -> str:
    """Why calls during which a just-in-time compiler compiled ``frames`` frames are not judged
    (also after up to ``settle_calls`` untracked calls made for it to settle); empty where it
    compiled none."""
    if frames <= 0:
        return ""
    return (
        f"torch.compile compiled {frames} frame(s) during its judged calls, also after up to "
        f"{settle_calls} more calls made for it to settle: what a compilation allocates follows "
        "the compiler's caches, in the process and on disk; memory is judged where calls run "
        "what is compiled"
    )


def judge(
    calls: Sequence[Allocations],
    baseline: Allocations | None,
    *,
    key: Mapping[str, object],
    baseline_key: Mapping[str, object] | None,
    threshold: float | None,
    ceiling: int | None = None,
    unsettled: str = "",
) -> MemoryVerdict:
    """The memory verdict of the tracked ``calls`` against ``baseline`` (recorded under
    ``baseline_key``); ``threshold`` is the user's, where one is set; ``ceiling`` the marker's
    ``max_memory``; ``unsettled``: why the calls are not yet what later calls will be (they
    compiled), where they are not: said as calls that vary, never compared."""
    if unsettled:
        verdict = MemoryVerdict("varies", None, baseline, reason=unsettled, key=dict(key))
    else:
        verdict = replace(
            _judge(calls, baseline, key=key, baseline_key=baseline_key, threshold=threshold),
            key=dict(key),
        )
    top = max((c.peak for c in calls), default=None)
    if ceiling is None:
        return verdict
    if top is not None and top > ceiling:
        return replace(
            verdict,
            status="over-limit",
            ceiling=ceiling,
            reason=f"a call's peak of {format_bytes(top)} ({top:,} bytes) is over "
            f"max_memory={format_bytes(ceiling)} ({ceiling:,} bytes)",
        )
    return replace(verdict, ceiling=ceiling)


def _judge(
    calls: Sequence[Allocations],
    baseline: Allocations | None,
    *,
    key: Mapping[str, object],
    baseline_key: Mapping[str, object] | None,
    threshold: float | None,
) -> MemoryVerdict:
    figures = agreed(calls)
    if isinstance(figures, str):
        return MemoryVerdict("varies", None, baseline, reason=figures)
    if baseline is None:
        return MemoryVerdict(
            "no-baseline",
            figures,
            reason="no memory baseline (recorded by --update-baselines from this release on)",
        )
    said = key_changes(key, baseline_key)
    if said:
        return MemoryVerdict(
            "incomparable",
            figures,
            baseline,
            reason=f"memory baseline recorded under another key ({said}); record it again here",
        )
    effect = (
        minimum_effect(baseline.peak, threshold),
        minimum_effect(baseline.allocated, threshold),
    )
    grew = (figures.peak - baseline.peak, figures.allocated - baseline.allocated)
    source = "the threshold" if threshold is not None else f"{DEFAULT_SHARE:.0%} of the baseline"
    rule = (
        f"a change is over {format_bytes(effect[0])} of peak or {format_bytes(effect[1])} "
        f"allocated ({source}, at least {format_bytes(FLOOR_BYTES)})"
    )
    if grew[0] > effect[0] or grew[1] > effect[1]:
        return MemoryVerdict("regressed", figures, baseline, effect, rule)
    if grew[0] < -effect[0] or grew[1] < -effect[1]:
        return MemoryVerdict("improved", figures, baseline, effect, rule)
    return MemoryVerdict("unchanged", figures, baseline, effect, rule)


def located(
    verdict: MemoryVerdict,
    sites: Mapping[str, int],
    baseline_sites: Mapping[str, int] | None,
) -> MemoryVerdict:
    """``verdict`` with the ``sites`` where its calls allocated, and for a regression where it
    grew: against the ``baseline_sites`` where the baseline kept them, else where the call
    allocates most."""
    verdict = replace(verdict, sites=dict(sites))
    if verdict.status != "regressed" or not sites:
        return verdict
    if baseline_sites:
        grew = where_grew(sites, baseline_sites)
        return replace(verdict, where=f"grew at {grew}" if grew else "")
    most = ", ".join(f"{s} {format_bytes(b)}" for s, b in list(sites.items())[:3])
    return replace(verdict, where=f"allocated most at {most}")


#: The memory verdicts' statuses in the order a summary names them.
SUMMARY_ORDER: Final = (
    "over-limit",
    "regressed",
    "improved",
    "unchanged",
    "varies",
    "incomparable",
    "no-baseline",
)
#: How a summary names each memory status: in words of its own, so that a line searched for
#: the time verdicts' ``no-baseline`` or ``incomparable`` finds only those.
SUMMARY_WORDS: Final = {
    "over-limit": "over max_memory",
    "varies": "calls vary",
    "incomparable": "memory baseline of another key",
    "no-baseline": "no memory baseline",
}


def memory_summary(statuses: Iterable[str]) -> str | None:
    """``memory per call: 1 regressed, 3 unchanged, 2 no memory baseline``: memory verdicts
    counted by status; None where there is none."""
    memory: Counter[str] = Counter(statuses)
    if not memory:
        return None
    return "memory per call: " + ", ".join(
        f"{memory[status]} {SUMMARY_WORDS.get(status, status)}"
        for status in SUMMARY_ORDER
        if memory[status]
    )
