"""The memory processes of a same-session comparison (``--perf-against``, ``--perf-versions``):
after the rounds, one pytest process per environment reruns the benchmarks compared in the
session with their memory per call tracked (instruments/memory_tracking.MEMORY_HERE), each in
its own environment, and writes what it found; this module starts such a process and reads what
it wrote.

A memory process measures no time: its calls never enter a sample or a verdict of time. One
process per environment, one after the other (memory per call does not move with the load).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_burnperf.core.memory.allocations import AllocationsError
from pytest_burnperf.core.memory.recorded_memory import RecordedMemory
from pytest_burnperf.core.text import tail
from pytest_burnperf.runs.round_launcher import run_round_process
from pytest_burnperf.storage.jsonfile import Fields, FileFormatError, read_json

#: The hidden option that makes a round process a memory process: the environment's label.
SIDE_OPTION = "--perf-round-process-memory-side"


@dataclass
class TrackedSide:
    """What one environment's memory process wrote: each benchmark's memory, and why others
    have none."""

    memory: dict[str, RecordedMemory] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0


def read_memory(path: Path) -> tuple[dict[str, RecordedMemory], dict[str, str]]:
    """What a memory process wrote (``{nodeid: {"memory": RecordedMemory}}``) and the
    benchmarks whose memory it could not track (``{nodeid: {"memory_error": why}}``), each field
    checked (``FileFormatError`` names a bad one)."""
    doc = read_json(path)
    f = Fields(path)
    memory: dict[str, RecordedMemory] = {}
    errors: dict[str, str] = {}
    for nodeid, value in f.obj(doc, "document").items():
        where = f"[{json.dumps(nodeid)}]"
        rec = f.obj(value, where)
        if "memory_error" in rec:
            errors[nodeid] = f.text(rec["memory_error"], f"{where}.memory_error")
            continue
        try:
            memory[nodeid] = RecordedMemory.from_json(rec.get("memory"), f"{where}.memory")
        except AllocationsError as exc:
            f.fail("", str(exc))
    return memory, errors


def run(
    *,
    python: str,
    args: Sequence[str],
    label: str,
    wanted: Sequence[str],
    cwd: Path,
    say: Callable[[int], None],
    env: Mapping[str, str] | None = None,
) -> TrackedSide:
    """Track the memory per call of the benchmarks ``wanted`` (node ids) in one process of
    ``python -m pytest args``, the environment ``label``'s."""
    got = TrackedSide()
    t0 = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="burnperf-memory-"))
    try:
        code, output, out = run_round_process(
            python,
            args,
            wanted=wanted,
            work=work,
            cwd=cwd,
            say=say,
            options=[f"{SIDE_OPTION}={label}"],
            env=env,
        )
        if not out.exists():
            why = f"its memory process failed (exit {code})"
            got.problems.append(f"{why}:\n{tail(output)}")
            got.missing = {n: why for n in wanted}
            return got
        try:
            got.memory, errors = read_memory(out)
        except FileFormatError as exc:
            why = f"its memory process wrote a bad file ({exc})"
            got.problems.append(why)
            got.missing = {n: why for n in wanted}
            return got
        got.missing.update(errors)
        for n in wanted:
            if n not in got.memory and n not in got.missing:
                got.missing[n] = "it failed or was skipped in the memory process" + (
                    f" (exit {code})" if code not in (0, 1) else ""
                )
    finally:
        got.seconds = time.monotonic() - t0
        shutil.rmtree(work, ignore_errors=True)
    return got
