"""Memory per call as a verdict judged beside the time or counts verdict: its :class:`Side`
(core/sides/side_kind.py), registered in core/sides/side_registry.py. Its verdict is
:class:`~.memory_verdict.MemoryVerdict`; what a baseline keeps of it is read by
:meth:`~.recorded_memory.RecordedMemory.from_kept`. No pytest here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from pytest_burnperf.core.memory import memory_cells, memory_verdict
from pytest_burnperf.core.memory.memory_verdict import MemoryVerdict
from pytest_burnperf.core.memory.recorded_memory import (
    RecordedMemory,
    judge_recorded,
    judge_sides,
)
from pytest_burnperf.core.sides.side_kind import HistoryFigure, KeptError, Side, SideHistory
from pytest_burnperf.core.text import format_bytes

if TYPE_CHECKING:
    from pytest_burnperf.core.options.settings import Settings

#: The field a results entry holds the memory verdict in, and a baseline entry its figures.
FIELD = "memory"


def check_kept(doc: Mapping[str, object]) -> None:
    """A baseline entry's ``memory``: the figures per call recorded (``allocated_bytes``,
    ``allocations``, ``peak_bytes``), the key they were tracked under, and where the call
    allocated (bytes per allocating line). :class:`KeptError` names what is wrong."""
    for name in ("allocated_bytes", "allocations", "peak_bytes"):
        value = doc.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise KeptError(
                f"{FIELD}.{name}", f"must be a whole number of at least 0, got {value!r:.60}"
            )
    key = doc.get("key")
    if key is not None and not isinstance(key, Mapping):
        raise KeptError(f"{FIELD}.key", "must be an object or null")
    sites = doc.get("sites")
    if sites is None:
        return
    if not isinstance(sites, Mapping):
        raise KeptError(f"{FIELD}.sites", "must be an object or null")
    for site, size in sites.items():
        if not isinstance(site, str):
            raise KeptError(f"{FIELD}.sites", "must be keyed by the allocating line")
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise KeptError(f"{FIELD}.sites[{json.dumps(site)}]", "must be a whole number of bytes")


def read_recorded(doc: object, where: str) -> RecordedMemory:
    """A results entry's ``memory`` read back strictly (an AllocationsError names ``where``)."""
    return RecordedMemory.from_json(doc, where)


def rejudge(
    now: object, before: object | None, threshold: float | None, before_name: str
) -> MemoryVerdict:
    """``now`` (a :class:`RecordedMemory`) judged against ``before`` (one, or None) by the rule
    a run judges by (recorded_memory.judge_recorded)."""
    if not isinstance(now, RecordedMemory) or not isinstance(before, (RecordedMemory, type(None))):
        raise TypeError(f"memory is judged from RecordedMemory, got {now!r:.60}, {before!r:.60}")
    return judge_recorded(now, before, threshold=threshold, before_name=before_name)


def between(
    now: object,
    before: object | None,
    threshold: float | None,
    label: str,
    gap: str,
    settings: Settings,
) -> MemoryVerdict:
    """The candidate environment's memory (a :class:`RecordedMemory` tracked in the session)
    against the reference environment's (``label``; None: it has none, ``gap`` says why) by
    recorded_memory.judge_sides; the marker's ``max_memory`` holds for the candidate, and the
    verdict keeps the candidate's whole key (its libraries' versions too)."""
    if not isinstance(now, RecordedMemory) or not isinstance(before, (RecordedMemory, type(None))):
        raise TypeError(f"memory is judged from RecordedMemory, got {now!r:.60}, {before!r:.60}")
    verdict = judge_sides(
        replace(now, ceiling=settings.max_memory), before, threshold=threshold, label=label, gap=gap
    )
    return replace(verdict, key=dict(now.key))


#: The results store's memory columns (storage/history/store.py): the figures judged, queryable,
#: and the whole record (:meth:`RecordedMemory.to_json`).
STORED_COLUMNS = (
    ("memory_peak", "integer"),
    ("memory_allocated", "integer"),
    ("memory_allocations", "integer"),
    (FIELD, "json"),
)


def stored_values(record: object | None) -> dict[str, object]:
    """The store's memory columns for a result's record (None: not tracked; no figures where
    its calls varied)."""
    if record is not None and not isinstance(record, RecordedMemory):
        raise TypeError(f"memory is stored from RecordedMemory, got {record!r:.60}")
    figures = None if record is None else record.figures
    return {
        "memory_peak": None if figures is None else figures.peak,
        "memory_allocated": None if figures is None else figures.allocated,
        "memory_allocations": None if figures is None else figures.count,
        FIELD: None if record is None else record.to_json(),
    }


def history_line(point: Mapping[str, object]) -> str:
    """``  peak 7.6 MiB/call`` on a stored series' line; empty where it was not tracked."""
    peak = point.get("memory_peak")
    return f"  peak {format_bytes(peak)}/call" if isinstance(peak, int) else ""


def latest_peak(point: Mapping[str, object]) -> str:
    """The peak per call of a series' newest stored run, ``-`` where it was not tracked."""
    peak = point.get("memory_peak")
    return format_bytes(peak) if isinstance(peak, int) else "-"


HISTORY = SideHistory(
    title="memory per call",
    unit="bytes",
    axis="bytes per call",
    figures=(
        HistoryFigure("memory_peak", "peak", "memory_peak_bytes"),
        HistoryFigure("memory_allocated", "allocated", "memory_allocated_bytes"),
        HistoryFigure("memory_allocations", "allocations", "memory_allocations", charted=False),
    ),
    latest_header="latest peak/call",
    latest=latest_peak,
    line=history_line,
)


MEMORY = Side(
    field=FIELD,
    failing=memory_verdict.FAILING,
    accepted_by_recording=frozenset({"regressed"}),
    quiet=frozenset({"unchanged", "no-baseline"}),
    failed_text="memory regressed",
    summary=memory_verdict.memory_summary,
    check_kept=check_kept,
    read_recorded=read_recorded,
    rejudge=rejudge,
    between=between,
    stored_columns=STORED_COLUMNS,
    stored_values=stored_values,
    history=HISTORY,
    column="memory/call",
    cell=memory_cells.memory_cell,
    verdict_words=memory_cells.memory_verdict_words,
    shown=frozenset({"regressed", "improved", "over-limit"}),
    grew=memory_cells.memory_grew,
    failure=memory_cells.memory_failure,
    csv_columns=memory_cells.CSV_COLUMNS,
    csv_values=memory_cells.memory_csv,
)
