"""A benchmark's memory as a run recorded it (the ``memory`` of a ``--perf-json`` result, the
memory of a result in the results store), read back strictly and judged against another
recorded run's by the rule a run judges by (:func:`~.memory_verdict.judge`): ``burnperf
compare``, ``burnperf compare-history``. No pytest here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from pytest_burnperf.core.memory.allocations import Allocations, AllocationsError
from pytest_burnperf.core.memory.memory_verdict import MemoryVerdict, judge, key_changes, located
from pytest_burnperf.core.text import escape


@dataclass(frozen=True)
class RecordedMemory:
    """What a run kept of a benchmark's memory: the figures judged (None where its calls
    allocated differently: ``reason`` says how), the key they were tracked under, where the
    calls allocated, and the marker's ``max_memory``."""

    figures: Allocations | None
    key: Mapping[str, object] = field(default_factory=dict)
    reason: str = ""
    sites: Mapping[str, int] = field(default_factory=dict)
    ceiling: int | None = None

    def to_json(self) -> dict[str, object]:
        """What the store keeps (read back by :meth:`from_json`)."""
        return {
            "figures": None if self.figures is None else self.figures.to_json(),
            "key": dict(self.key),
            "reason": self.reason,
            "sites": dict(self.sites),
            "max_memory_bytes": self.ceiling,
        }

    @classmethod
    def from_json(cls, doc: object, where: str) -> RecordedMemory:
        """A result's ``memory`` object (core/records/results.Result.as_json, or
        :meth:`to_json`'s); :class:`AllocationsError` naming ``where`` and the field at fault."""
        if not isinstance(doc, Mapping):
            raise AllocationsError(f"{where}: must be an object, got {doc!r:.60}")
        figures = doc.get("figures")
        key = doc.get("key")
        if key is not None and not isinstance(key, Mapping):
            raise AllocationsError(f"{where}.key: must be an object or null, got {key!r:.60}")
        sites = doc.get("sites")
        if sites is not None and not (
            isinstance(sites, Mapping)
            and all(
                isinstance(s, str) and isinstance(n, int) and not isinstance(n, bool)
                for s, n in sites.items()
            )
        ):
            raise AllocationsError(
                f"{where}.sites: must map each allocating line to its bytes, got {sites!r:.60}"
            )
        ceiling = doc.get("max_memory_bytes")
        if ceiling is not None and (
            isinstance(ceiling, bool) or not isinstance(ceiling, int) or ceiling <= 0
        ):
            raise AllocationsError(
                f"{where}.max_memory_bytes: must be a whole number over 0 or null, "
                f"got {ceiling!r:.60}"
            )
        reason = doc.get("reason")
        return cls(
            figures=None if figures is None else Allocations.from_json(figures, f"{where}.figures"),
            key=dict(key or {}),
            # what a file holds reaches a terminal in a verdict's line: no control character
            reason=escape(reason) if isinstance(reason, str) else "",
            sites={escape(site): size for site, size in (sites or {}).items()},
            ceiling=ceiling,
        )


def kept_memory(doc: object) -> RecordedMemory | None:
    """What a baseline entry keeps of memory per call (its ``memory``, written by
    :meth:`~.memory_verdict.MemoryVerdict.kept` and checked by memory_side.check_kept when the
    file was read): the figures, their key and where the call allocated; None where it kept
    none, or none that reads (the file's check names it; a verdict never fails on it)."""
    if not isinstance(doc, Mapping):
        return None
    try:
        figures = Allocations.from_json(doc, "memory")
    except AllocationsError:
        return None
    key, sites = doc.get("key"), doc.get("sites")
    return RecordedMemory(
        figures,
        key=dict(key) if isinstance(key, Mapping) else {},
        sites={
            str(s): n
            for s, n in (sites.items() if isinstance(sites, Mapping) else ())
            if isinstance(n, int) and not isinstance(n, bool)
        },
    )


def judge_recorded(
    now: RecordedMemory,
    before: RecordedMemory | None,
    *,
    threshold: float | None,
    before_name: str,
) -> MemoryVerdict:
    """``now`` judged against ``before`` (``before_name`` says which run that was, for the
    reasons) as a run judges against a memory baseline: calls that varied are said, memory
    tracked under another key is not compared, the marker's ``max_memory`` still holds."""
    if now.figures is None:
        return MemoryVerdict(
            "varies", None, reason=now.reason or "its calls allocated differently in this run"
        )
    if before is not None and before.figures is not None:
        verdict = judge(
            [now.figures],
            before.figures,
            key=now.key,
            baseline_key=before.key,
            threshold=threshold,
            ceiling=now.ceiling,
        )
        if verdict.status == "incomparable":
            said = key_changes(now.key, before.key)
            verdict = replace(
                verdict,
                reason=f"{before_name} tracked its memory under another key ({said}): not compared",
            )
        return located(verdict, now.sites, before.sites)
    verdict = judge(
        [now.figures],
        None,
        key=now.key,
        baseline_key=None,
        threshold=threshold,
        ceiling=now.ceiling,
    )
    if verdict.status != "no-baseline":
        return verdict
    why = (
        f"{before_name} kept no memory figures for it"
        if before is None
        else f"its calls allocated differently in {before_name}"
    )
    return replace(verdict, reason=why)


#: What may differ between the two sides of a same-session comparison and still compare: the
#: library's versions (what ``--perf-versions`` compares; a reference commit may pin others).
SIDES_MAY_DIFFER = frozenset({"versions"})


def judge_sides(
    candidate: RecordedMemory,
    reference: RecordedMemory | None,
    *,
    threshold: float | None,
    label: str,
    gap: str = "",
) -> MemoryVerdict:
    """The candidate environment's memory against the reference environment's (``label``),
    measured in one session: the rule a run judges by against a memory baseline, the
    libraries' versions free to differ (the rest of the key must match: the meter, Python, the
    dispatch, the threads). ``gap``: why the reference has none, where it has none."""

    def common(m: RecordedMemory) -> RecordedMemory:
        return replace(m, key={k: v for k, v in m.key.items() if k not in SIDES_MAY_DIFFER})

    verdict = judge_recorded(
        common(candidate),
        None if reference is None else common(reference),
        threshold=threshold,
        before_name=label,
    )
    if reference is None and verdict.status == "no-baseline" and gap:
        verdict = replace(verdict, reason=f"{label}: not tracked ({gap})")
    return verdict
