"""What the CPU memory meter (devices/memory_meters.allocator_track, memray through the allocator)
reads and costs (issue 75): the three figures of a call tracked again and again after one
untracked call (the same each time?), a temporary of the input's size planted (seen?), and what
starting and stopping a tracker costs with and without torch loaded (memray patches every loaded
library's symbol table).

    python -m validation.memory_tracker --json OUT.json

Each case runs in a fresh interpreter, so that torch is loaded only where the case says so.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_burnperf.host.hardware import cpu_model, hardware_class

#: Tracked calls per case; the first untracked call fills what a first call fills.
REPEATS = 5
N = 1_000_000

CASE = r"""
import json, statistics, sys, time
import numpy as np
from pytest_burnperf.devices.memory_meters import allocator_track

name, with_torch, repeats, n = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3]), int(sys.argv[4])
if with_torch:
    import torch
a, b = np.random.rand(n), np.random.rand(n)


def held():
    t = a.copy()  # held by a name: numpy cannot reuse it for the sum
    return t + b


calls = {
    "numpy a + b": lambda: a + b,
    "numpy planted copy": held,
    "numpy a.copy() + b (elided)": lambda: a.copy() + b,
    "python list(range(100000))": lambda: list(range(100_000)),
    "python planted list copy": lambda: list(list(range(100_000))),
    "no-op": lambda: None,
}
if with_torch:
    ta, tb = torch.rand(n), torch.rand(n)
    calls["torch-cpu a + b"] = lambda: ta + tb
    calls["torch-cpu planted clone"] = lambda: ta.clone() + tb
call = calls[name]
call()
figures, seconds = [], []
for _ in range(repeats):
    started = time.perf_counter()
    got = allocator_track(call)
    seconds.append(time.perf_counter() - started)
    figures.append([got.allocated, got.count, got.peak])
print(json.dumps({"figures": figures, "seconds": seconds}))
"""

CASES = (
    ("numpy a + b", False),
    ("numpy planted copy", False),
    ("numpy a.copy() + b (elided)", False),
    ("python list(range(100000))", False),
    ("python planted list copy", False),
    ("no-op", False),
    ("no-op", True),
    ("numpy a + b", True),
    ("torch-cpu a + b", True),
    ("torch-cpu planted clone", True),
)


def run_case(name: str, with_torch: bool) -> dict[str, Any]:
    cmd = [sys.executable, "-c", CASE, name, "1" if with_torch else "0", str(REPEATS), str(N)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    out: dict[str, Any] = json.loads(done.stdout)
    figures = out["figures"]
    return {
        "call": name,
        "torch_loaded": with_torch,
        "figures": figures,
        "same_each_time": all(f == figures[0] for f in figures),
        "allocated_bytes": figures[0][0],
        "allocations": figures[0][1],
        "peak_bytes": figures[0][2],
        "tracker_seconds": out["seconds"],
        "tracker_median_s": statistics.median(out["seconds"]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, required=True, help="where the raw figures go")
    args = parser.parse_args(argv)
    import memray
    import numpy

    started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    t0 = time.perf_counter()
    rows = [run_case(name, with_torch) for name, with_torch in CASES]
    doc = {
        "what": "issue 75: the CPU memory meter through the allocator (memray), figures and cost",
        "date": started,
        "command": "python -m validation.memory_tracker --json OUT.json",
        "machine": f"{cpu_model()} ({hardware_class()}), {os.cpu_count()} CPUs, {platform.platform()}",
        "python": platform.python_version(),
        "memray": getattr(memray, "__version__", "?"),
        "numpy": numpy.__version__,
        "repeats": REPEATS,
        "n": N,
        "wall_s": time.perf_counter() - t0,
        "cases": rows,
    }
    args.json.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    for r in rows:
        print(
            f"{r['call']:32s} torch={'yes' if r['torch_loaded'] else 'no ':3s} "
            f"same={r['same_each_time']!s:5s} allocated={r['allocated_bytes']:>10d} "
            f"count={r['allocations']:>6d} peak={r['peak_bytes']:>10d} "
            f"tracker={r['tracker_median_s'] * 1000:.0f} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
