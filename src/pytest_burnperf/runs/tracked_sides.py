"""The tracking processes of a same-session comparison (``--perf-against``, ``--perf-versions``):
after the rounds, one pytest process per environment reruns the benchmarks compared in the
session, each instrument beside (instruments/registry.BESIDE: memory per call) measuring a few
calls of each (instruments/tracked_here.py), and writes what they found; this module starts such
a process and reads what it wrote, each side's record read back by its side
(core/sides/side_kind.Side.read_recorded).

A tracking process measures no time: its calls never enter a sample or a verdict of time. One
process per environment, one after the other (memory per call does not move with the load).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_burnperf.core.sides.side_registry import SIDES
from pytest_burnperf.runs.round_launcher import SidePass, read_side_file, side_pass
from pytest_burnperf.storage.jsonfile import Fields

#: The hidden option that makes a round process a tracking process: the environment's label.
SIDE_OPTION = "--perf-round-process-tracked-side"
#: The key a tracking process writes beside a side's field where it has no record of it
#: (``memory_error``): why.
ERROR_SUFFIX = "_error"


@dataclass(frozen=True)
class Tracked:
    """What a tracking process found of one benchmark: each side's record by its field (as
    its side reads it back), and why each side it has none of has none."""

    records: dict[str, object] = field(default_factory=dict)
    gaps: dict[str, str] = field(default_factory=dict)


def read_tracked(path: Path) -> tuple[dict[str, Tracked], dict[str, str]]:
    """What a tracking process wrote, ``{nodeid: {field: record, other_field + "_error": why}}``
    per side (memory's: ``memory``, ``memory_error``), each record read back by its side
    (``FileFormatError`` names a bad field)."""

    def parse(f: Fields, rec: dict[str, object], where: str) -> Tracked:
        got = Tracked()
        for side in SIDES:
            name, error = side.field, side.field + ERROR_SUFFIX
            if name in rec:
                try:
                    got.records[name] = side.read_recorded(rec[name], f"{where}.{name}")
                except ValueError as exc:
                    f.fail("", str(exc))
            elif error in rec:
                got.gaps[name] = f.text(rec[error], f"{where}.{error}")
        return got

    # no key marks a benchmark with nothing at all: each side says why it has none
    return read_side_file(path, error=None, parse=parse)


def run(*, label: str, **launch: Any) -> SidePass:
    """Track what the instruments beside measure of the benchmarks ``wanted`` (node ids) in one
    process of ``python -m pytest args``, the environment ``label``'s: each one's records
    (``found``: :class:`Tracked` by node id) and why the others have none."""
    return side_pass(option=f"{SIDE_OPTION}={label}", what="tracking", read=read_tracked, **launch)
