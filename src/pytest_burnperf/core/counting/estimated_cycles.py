"""Estimated cycles: a counted call's instructions weighted by the cache misses callgrind's
simulated caches saw (``--perf-count-cycles``), as KCachegrind's cycle estimate and CodSpeed's
CPU simulation do: one cycle per instruction, :data:`L1_MISS` cycles for an access that misses
L1 and hits the last level, :data:`LL_MISS` for one that goes to memory. Reported beside the
instructions that judge (core/counting/counts.cycles_note names a change only they show)."""

from __future__ import annotations

from collections.abc import Mapping

#: Cycle weights of the estimate: an L1 miss served by the last level, a last-level miss.
L1_MISS = 10
LL_MISS = 100
#: The events that say the caches were simulated (callgrind's dumps list them only then).
CACHE_EVENTS = ("I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw")


def simulated(events: Mapping[str, float]) -> bool:
    """Whether a call's events come from a run with the caches simulated."""
    return all(name in events for name in CACHE_EVENTS)


def estimated_cycles(events: Mapping[str, float]) -> int:
    """Instructions plus :data:`L1_MISS` per L1 miss and :data:`LL_MISS` per last-level miss."""
    l1 = events.get("I1mr", 0) + events.get("D1mr", 0) + events.get("D1mw", 0)
    ll = events.get("ILmr", 0) + events.get("DLmr", 0) + events.get("DLmw", 0)
    return int(events.get("Ir", 0) + L1_MISS * l1 + LL_MISS * ll)
