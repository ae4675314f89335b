"""The counted process: the selected CPU benchmarks run once more, in one process under
callgrind, each counted around its calls only (plugin/counting.py counts inside it); this
module starts it and reads what it wrote.

One process for every benchmark of a run: valgrind makes everything it runs 20-100x slower,
and importing the array libraries under it is paid once. Nothing is instrumented until the
first benchmark asks (``--instr-atstart=no``), so the imports and pytest's collection run at
valgrind's uninstrumented speed.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_burnperf.core.counts import Counted
from pytest_burnperf.core.text import tail
from pytest_burnperf.host import callgrind
from pytest_burnperf.runs.process_rounds import run_worker
from pytest_burnperf.storage.jsonfile import Fields, FileFormatError, read_json

#: The hidden option that makes a pytest process a counted one: the directory of its dumps.
COUNT_OPTION = "--perf-worker-count-dir"
#: What a counted process's environment pins: hash seeds (dict and set order, hence the
#: interpreter's work, the same in every run), how idle pool threads wait (GNU and Intel OpenMP
#: sleep at once instead of spinning; OpenBLAS's workers spin for the shortest time it allows,
#: 2^4 TSC cycles, before they sleep: a spinning thread's instructions depend on the host's
#: speed and valgrind's turns, a sleeping one's do not), and glibc's
#: mmap threshold: left dynamic, it rises when a large block is freed, so what ran before decides
#: whether a large array comes from mmap (page-aligned) or the heap, and with that how two
#: buffers sit to each other in a page, which picks glibc's memcpy loop (a 2 MiB copy counted
#: 250 k or 201 k instructions in two full runs). Fixed, every block over 128 KiB is mmapped.
PINNED_ENV = {
    "PYTHONHASHSEED": "0",
    "OMP_WAIT_POLICY": "PASSIVE",
    "KMP_BLOCKTIME": "0",
    "OPENBLAS_THREAD_TIMEOUT": "4",
    "MALLOC_MMAP_THRESHOLD_": "131072",
}


@dataclass
class CountedRun:
    """What a counted process measured: counts and key per node id, and what went wrong."""

    counts: dict[str, Counted] = field(default_factory=dict)
    keys: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: node id -> why it has no counts (the process failed, the test failed in it, ...).
    missing: dict[str, str] = field(default_factory=dict)
    #: node id -> why it was not counted but is timed instead: its first call took too long
    #: under valgrind (core/counts.COUNT_LIMIT_S).
    timed_instead: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0


def environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    for name, value in PINNED_ENV.items():
        env.setdefault(name, value)
    return env


def read_counts(
    path: Path,
) -> tuple[dict[str, Counted], dict[str, dict[str, Any]], dict[str, str]]:
    """The counts and keys a counted process wrote (``{nodeid: {"counts": ..., "key": ...}}``)
    and the benchmarks it timed instead (``{nodeid: {"timed_instead": why}}``), each field
    checked (``FileFormatError`` names a bad one)."""
    doc = read_json(path)
    f = Fields(path)
    records = f.obj(doc, "document")
    counts: dict[str, Counted] = {}
    keys: dict[str, dict[str, Any]] = {}
    slow: dict[str, str] = {}
    for nodeid, rec in records.items():
        where = f"[{json.dumps(nodeid)}]"
        f.obj(rec, where)
        if "timed_instead" in rec:
            slow[nodeid] = f.text(rec["timed_instead"], f"{where}.timed_instead")
            continue
        c = f.obj(rec.get("counts"), f"{where}.counts")
        for name in ("instructions", "cycles"):
            values = c.get(name)
            if not isinstance(values, list) or not values:
                f.fail(f"{where}.counts.{name}", "must be a non-empty list of counts")
            for v in values:
                f.integer(v, f"{where}.counts.{name}[]")
        counts[nodeid] = Counted.from_json(c)
        keys[nodeid] = f.plain(f.obj(rec.get("key"), f"{where}.key"), f"{where}.key")
    return counts, keys, slow


def run(
    *,
    valgrind: str,
    python: str,
    args: Sequence[str],
    wanted: Sequence[str],
    cwd: Path,
    say: Callable[[int], None],
    env: Mapping[str, str] | None = None,
) -> CountedRun:
    """Count the benchmarks ``wanted`` (node ids) in one process of ``python -m pytest args``
    under callgrind."""
    got = CountedRun()
    t0 = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="burnperf-counts-"))
    try:
        dumps = work / "dumps"
        dumps.mkdir()
        code, output, out = run_worker(
            python,
            args,
            wanted=wanted,
            work=work,
            cwd=cwd,
            say=say,
            options=[f"{COUNT_OPTION}={dumps}"],
            prefix=callgrind.command(valgrind, dumps),
            env=environment(env),
        )
        if not out.exists():
            why = f"the counted process failed (exit {code})"
            got.problems.append(f"{why}:\n{tail(output)}")
            got.missing = {n: why for n in wanted}
            return got
        try:
            got.counts, got.keys, got.timed_instead = read_counts(out)
        except FileFormatError as exc:
            why = f"the counted process wrote a bad counts file ({exc})"
            got.problems.append(why)
            got.missing = {n: why for n in wanted}
            return got
        for n in wanted:
            if n not in got.counts and n not in got.timed_instead:
                got.missing[n] = "not counted: it failed or was skipped in the counted process" + (
                    f" (exit {code})" if code not in (0, 1) else ""
                )
        if code not in (0, 1) or (code == 1 and got.missing):
            got.problems.append(
                f"the counted process ended with exit {code}; benchmarks it did not count are "
                f"not judged by counts:\n{tail(output)}"
            )
    finally:
        got.seconds = time.monotonic() - t0
        shutil.rmtree(work, ignore_errors=True)
    return got
