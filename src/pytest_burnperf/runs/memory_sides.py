"""The memory processes of a same-session comparison (``--perf-against``, ``--perf-versions``):
after the rounds, one pytest process per environment reruns the benchmarks compared in the
session with their memory per call tracked (instruments/memory_tracking.MEMORY_HERE), each in
its own environment, and writes what it found; this module starts such a process and reads what
it wrote.

A memory process measures no time: its calls never enter a sample or a verdict of time. One
process per environment, one after the other (memory per call does not move with the load).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_burnperf.core.memory.allocations import AllocationsError
from pytest_burnperf.core.memory.recorded_memory import RecordedMemory
from pytest_burnperf.runs.round_launcher import SidePass, read_side_file, side_pass
from pytest_burnperf.storage.jsonfile import Fields

#: The hidden option that makes a round process a memory process: the environment's label.
SIDE_OPTION = "--perf-round-process-memory-side"


def read_memory(path: Path) -> tuple[dict[str, RecordedMemory], dict[str, str]]:
    """What a memory process wrote (``{nodeid: {"memory": RecordedMemory}}``) and the
    benchmarks whose memory it could not track (``{nodeid: {"memory_error": why}}``), each field
    checked (``FileFormatError`` names a bad one)."""

    def parse(f: Fields, rec: dict[str, object], where: str) -> RecordedMemory:
        try:
            return RecordedMemory.from_json(rec.get("memory"), f"{where}.memory")
        except AllocationsError as exc:
            f.fail("", str(exc))

    return read_side_file(path, error="memory_error", parse=parse)


def run(*, label: str, **launch: Any) -> SidePass:
    """Track the memory per call of the benchmarks ``wanted`` (node ids) in one process of
    ``python -m pytest args``, the environment ``label``'s: each one's memory (``found``:
    RecordedMemory by node id) and why the others have none."""
    return side_pass(option=f"{SIDE_OPTION}={label}", what="memory", read=read_memory, **launch)
