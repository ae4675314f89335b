"""How much a pure-Python benchmark's counts move between counted processes that ran other
code before it (the "history" a recording and a later check never share), and which part of
that is glibc's copy loops and which the allocators.

Eleven small pure-Python workloads (int arithmetic, objects and methods, dict building, a JSON
round trip, set membership of objects, string work, a sort, recursion, a regular expression,
attribute lookups through 40 classes: CPython's type attribute cache follows the addresses of
the names, so where its lookups collide follows the process's memory layout; dictionaries keyed
by classes, which hash by their addresses)
are counted as a counted process counts them (core/counting/counted_calls.count_calls, the counted call's
events from host/callgrind_dumps.counted_events), in ``--histories`` processes that each first
allocate and keep a different number of objects and import different modules. Once with glibc's
defaults, once with the counted process's fixed copy tunables (runs/counted.GLIBC_TUNABLES). For
each workload, the spread (max - min over the median) of the per-process medians of: the
dump's total (``raw``), the same less the allocators' own instructions (CPython's small-object
allocator and glibc's malloc), and the counted call's instructions as the plugin counts them
(``counted``: the allocators' calls at a fixed cost, host/callgrind_dumps.py).

``python -m validation.counts_history --histories 7 --out docs/data/counts-history.json``
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pytest_burnperf.host import callgrind
from pytest_burnperf.runs.counted import FORCED_ENV, GLIBC_TUNABLES, PINNED_ENV
from validation.common import machine

ROOT = Path(__file__).resolve().parent.parent
#: The allocators' functions whose own instructions are reported apart.
ALLOCATORS = [
    "_PyObject_Malloc",
    "_PyObject_Calloc",
    "_PyObject_Realloc",
    "_PyObject_Free",
    "malloc",
    "calloc",
    "realloc",
    "free",
    "cfree",
    "_int_malloc",
    "_int_free",
    "_int_realloc",
    "unlink_chunk",
    "malloc_consolidate",
    "sysmalloc",
    "allocate_from_new_pool",
]

#: What each process reports per workload: the counted call's instructions as the plugin
#: counts them, the dump's total, and the total less the allocators' own instructions.
KINDS = ("raw", "raw_less_allocators", "counted")

CHILD = """
import gc, json, re, statistics, sys
from pathlib import Path
from pytest_burnperf.core.counting import counted_calls
from pytest_burnperf.host import callgrind, callgrind_dumps

history, out = int(sys.argv[1]), Path(sys.argv[2])
ALLOCATORS = frozenset(sys.argv[3].split(","))
junk = [{{"k%d" % i: [i] * (i % 5)}} for i in range(history)]
del junk[::3]
# blocks beyond the small-object allocator's 512 bytes, from glibc's heap, where classes live
blocks = [bytearray(520 + (i * 7919) % 3000) for i in range(history % 97)]
if history % 2:
    import decimal, email.parser, fractions, xml.dom.minidom  # noqa: F401


class P:
    def __init__(self, x):
        self.x = x

    def f(self, y):
        return self.x * y + 1


OBJS = [P(i) for i in range(500)]


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


# attribute lookups through 40 classes: CPython's type attribute cache is indexed by the name
# string's address, so which lookups collide there follows the process's memory layout
NAMES = ["attr_%d" % i for i in range(300)]
BASES = []
for depth in range(40):
    ns = {{name: depth for name in NAMES[depth * 7 : (depth + 1) * 7]}}
    BASES.append(type("Mixin%d" % depth, tuple(BASES[-1:]) or (object,), ns))
DEEP = type("Deep", (BASES[-1],), {{}})()
# an entity-component store: dictionaries keyed by classes, which hash by their address
# (each class after a block of its own, so that where the three land apart differs too)
COMPS = []
for i in range(3):
    blocks.append(bytearray(520 + (history * (i + 3) * 7919) % 2000))
    COMPS.append(type("Comp%d" % i, (), {{}}))
ENTS = [{{c: i for c in COMPS[: 1 + i % 3]}} for i in range(1000)]


WORK = {{
    "int": lambda: sum(i * i % 7 for i in range(20000)),
    "objects": lambda: sum(p.f(3) for p in [P(i) for i in range(2000)]),
    "dict": lambda: sorted({{"key%d" % i: str(i) for i in range(3000)}}.items())[:5],
    "json": lambda: json.loads(json.dumps({{"a": [list(range(50)) for _ in range(40)]}})),
    "set": lambda: (lambda s: sum(1 for o in OBJS if o in s))(set(OBJS[::2])),
    "str": lambda: "-".join(w.upper()[::-1] for w in ("alpha beta gamma " * 300).split()),
    "sort": lambda: sorted([(i * 7919 % 1000, str(i)) for i in range(3000)]),
    "recursion": lambda: fib(16),
    "regex": lambda: re.findall(r"(\\w+)@(\\w+)\\.com", "x a@b.com y c@d.com " * 200),
    "lookups": lambda: sum(getattr(DEEP, name) for name in NAMES[:280]),
    "class_keys": lambda: sum(COMPS[0] in e for e in ENTS) + sum(COMPS[2] in e for e in ENTS),
}}
requests = callgrind.Requests(out.parent)
got = {{}}
gc.disable()
for name, fn in WORK.items():
    rows = []

    def read(path):
        events = callgrind_dumps.counted_events(path)
        raw = callgrind_dumps.read_dump(path)["Ir"]
        own = callgrind_dumps.costs(path).own_cost(ALLOCATORS).get("Ir", 0)
        rows.append((events["Ir"], raw, own))
        path.unlink()
        return {{"Ir": events["Ir"]}}

    counted_calls.count_calls(lambda: (fn, None), requests, read, calls=4, label=name, first_calls=4)
    got[name] = {{
        "counted": statistics.median(r[0] for r in rows),
        "raw": statistics.median(r[1] for r in rows),
        "raw_less_allocators": statistics.median(r[1] - r[2] for r in rows),
        "per_call": [r[0] for r in rows],
    }}
out.write_text(json.dumps(got))
"""


def one(valgrind: str, history: int, tunables: bool, work: Path) -> dict[str, Any]:
    """One counted process with ``history`` objects kept before the workloads."""
    folder = Path(tempfile.mkdtemp(prefix=f"h{history}-", dir=work))
    script = work / "child.py"
    out = folder / "counts.json"
    env = {**os.environ, **PINNED_ENV, "PYTHONHASHSEED": FORCED_ENV["PYTHONHASHSEED"]}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
    env.pop("GLIBC_TUNABLES", None)
    if tunables:
        env["GLIBC_TUNABLES"] = GLIBC_TUNABLES
    cmd = [*callgrind.command(valgrind, folder), sys.executable, str(script)]
    subprocess.run(
        [*cmd, str(history), str(out), ",".join(ALLOCATORS)],
        env=env,
        check=True,
        timeout=900,
        stderr=subprocess.DEVNULL,
    )
    return {"history": history, "tunables": tunables, "workloads": json.loads(out.read_text())}


def spread(values: list[float]) -> float:
    return (max(values) - min(values)) / statistics.median(values)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--histories", type=int, default=7)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    valgrind = callgrind.find_valgrind()
    if valgrind is None:
        raise SystemExit("needs valgrind")
    sizes = [0, 1, 7777, 20001, 60000, 100000, 300001, 150000, 500001][: args.histories]
    work = Path(tempfile.mkdtemp(prefix="burnperf-history-"))
    try:
        (work / "child.py").write_text(CHILD.format())
        jobs = [(h, t) for t in (False, True) for h in sizes]
        with ThreadPoolExecutor(args.jobs) as pool:
            runs = list(pool.map(lambda j: one(valgrind, j[0], j[1], work), jobs))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    table = []
    for tunables in (False, True):
        mine = [r for r in runs if r["tunables"] == tunables]
        for name in mine[0]["workloads"]:
            got = {k: [r["workloads"][name][k] for r in mine] for k in KINDS}
            row: dict[str, Any] = {"tunables": tunables, "workload": name}
            for kind, values in got.items():
                row[f"median_{kind}"] = statistics.median(values)
                row[f"spread_{kind}_pct"] = round(100 * spread(values), 3)
            table.append(row)
            print(
                f"{'fixed' if tunables else 'glibc'} {name:9s} {row['median_raw']:>12,.0f}  "
                + "  ".join(f"{k} {row[f'spread_{k}_pct']:.3f}%" for k in KINDS),
                flush=True,
            )
    if args.out:
        doc = {
            "command": "python -m validation.counts_history " + " ".join(argv or sys.argv[1:]),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="minutes"),
            "machine": machine(),
            "valgrind": callgrind.valgrind_version(valgrind),
            "histories": sizes,
            "table": table,
            "runs": runs,
        }
        args.out.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
