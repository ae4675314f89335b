"""Every verdict judged beside a benchmark's time or counts verdict, in the order the reports
say them: a measure judged beside is registered here, in one line. No pytest here."""

from __future__ import annotations

from pytest_burnperf.core.memory.memory_side import MEMORY
from pytest_burnperf.core.sides.side_kind import Side

SIDES: tuple[Side, ...] = (MEMORY,)


def side(field: str) -> Side:
    """The side a results or baseline entry holds in ``field``; a ValueError for none."""
    for one in SIDES:
        if one.field == field:
            return one
    raise ValueError(f"no verdict is judged beside under {field!r}: {[s.field for s in SIDES]}")
