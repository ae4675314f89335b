"""What the reports say of a memory verdict, read from its field of a results entry
(``entry["memory"]``: the JSON that :class:`~.memory_verdict.MemoryVerdict` writes there, or a
results file read back, which may hold anything): the tables' ``memory/call`` cell, the verdict
cell's words where memory alone fails the test, where a regression grew, what a failure says,
and the CSV's memory columns. The reports reach these through memory_side.MEMORY. No pytest here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from pytest_burnperf.core.text import format_bytes


def _map(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def _status(memory: object) -> str | None:
    status = _map(memory).get("status")
    return status if isinstance(status, str) else None


def memory_cell(memory: object) -> str:
    """The memory cell: the peak per call judged (``7.6 MiB``), with its change where it moved
    past the minimum effect (``15.3 MiB +100%``); ``varies``, ``no base``, ``other key`` where
    it was not judged; ``-`` where not tracked."""
    status = _status(memory)
    if status is None:
        return "-"
    figures, base = _map(_map(memory).get("figures")), _map(_map(memory).get("baseline"))
    peak, was = figures.get("peak_bytes"), base.get("peak_bytes")
    if status == "varies":
        return "varies"
    if status == "over-limit":
        return f"{format_bytes(peak)} > max"
    shown = format_bytes(peak)
    if status in ("regressed", "improved") and isinstance(peak, int) and isinstance(was, int):
        change = "new" if was == 0 else f"{100.0 * (peak - was) / was:+.0f}%"
        allocated, before = figures.get("allocated_bytes"), base.get("allocated_bytes")
        if peak == was and isinstance(allocated, int) and isinstance(before, int) and before:
            change = f"{100.0 * (allocated - before) / before:+.0f}% alloc"
        return f"{shown} {change}"
    if status == "no-baseline":
        return f"{shown} (no base)"
    if status == "incomparable":
        return f"{shown} (other key)"
    return shown


def memory_verdict_words(memory: object, main_status: str) -> str | None:
    """The verdict cell where memory decides it: ``over max_memory`` (the marker's ceiling)
    beside any verdict but ``failed``, ``memory regressed`` beside one that passes; else None
    (the time or counts verdict's status stands)."""
    status = _status(memory)
    if status == "over-limit" and main_status != "failed":
        return "over max_memory"
    if status == "regressed" and main_status not in ("regressed", "failed"):
        return "memory regressed"
    return None


def memory_grew(memory: object) -> str | None:
    """Where a memory regression grew (``grew at copy (b.py:4)``), as the verdict located it;
    None where it did not."""
    where = _map(memory).get("where")
    return where if isinstance(where, str) and where else None


def memory_failure(memory: object) -> str:
    """What a failed memory verdict says where a report names the failure (a merged run's
    JUnit file): ``memory regressed: grew at copy (b.py:4); peak +1.0 MiB (+100.0%)``."""
    said = [str(x) for x in (_map(memory).get("where"), _map(memory).get("reason")) if x]
    return f"memory {_status(memory)}: " + "; ".join(said)


#: The results CSV's memory columns (report/csv.py), in :func:`memory_csv`'s order.
CSV_COLUMNS: Final = (
    "memory_status",
    "memory_peak_bytes",
    "memory_allocated_bytes",
    "memory_allocations",
)


def memory_csv(memory: object) -> tuple[object, ...]:
    """The values of :data:`CSV_COLUMNS`: the status and the figures judged (None: empty)."""
    figures = _map(_map(memory).get("figures"))
    return (
        _status(memory),
        figures.get("peak_bytes"),
        figures.get("allocated_bytes"),
        figures.get("allocations"),
    )
