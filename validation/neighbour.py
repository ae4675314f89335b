"""How much a CPU-bound neighbour on the other CPU slows a benchmark that keeps a CPU of its own:
the part of a busy host's effect that no waiting figure shows (``host.activity.NEIGHBOUR_FACTOR``).

``python -m validation.neighbour --repetitions 5 --out docs/data/neighbour.json``: each workload
pinned to CPU 0, measured alone and beside a pure-Python spin and a memory-streaming numpy loop
pinned to CPU 1, repetitions interleaved; the medians and their ratios to "alone" are written.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from validation.common import machine

NEIGHBOURS = {
    "python-spin": "while True: pass",
    "memory-stream": "import numpy as np\na = np.ones(8_000_000)\nwhile True: a.copy()",
}


def workloads() -> dict[str, Callable[[], Any]]:
    import numpy as np

    rng = np.random.default_rng(0)
    big, small, square = rng.random(4_000_000), rng.random(20_000), rng.random((256, 256))

    def py_loop() -> int:
        s = 0
        for i in range(200_000):
            s += i * i
        return s

    return {
        "pure-python": py_loop,
        "memory-bound": lambda: big.copy(),
        "numpy-sort": lambda: np.sort(small),
        "blas": lambda: square @ square,
    }


def median_time(fn: Callable[[], Any], seconds: float = 0.6) -> float:
    import statistics

    out = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def main(argv: list[str] | None = None) -> int:
    import statistics

    ap = argparse.ArgumentParser(prog="python -m validation.neighbour", description=__doc__)
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    if len(os.sched_getaffinity(0)) < 2:
        print("needs two CPUs", file=sys.stderr)
        return 2
    os.sched_setaffinity(0, {0})
    work = workloads()
    raw: dict[str, dict[str, list[float]]] = {
        k: {"alone": [], **{n: [] for n in NEIGHBOURS}} for k in work
    }
    for _ in range(args.repetitions):
        for name, code in [("alone", None), *NEIGHBOURS.items()]:
            proc = None
            if code is not None:
                cmd = ["taskset", "-c", "1", sys.executable, "-c", code]
                proc = subprocess.Popen(cmd)
                time.sleep(0.3)
            try:
                for k, fn in work.items():
                    raw[k][name].append(median_time(fn))
            finally:
                if proc is not None:
                    proc.kill()
                    proc.wait()
    ratios = {
        k: {n: statistics.median(v[n]) / statistics.median(v["alone"]) for n in NEIGHBOURS}
        for k, v in raw.items()
    }
    doc = {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": "python -m validation.neighbour " + " ".join(argv or sys.argv[1:]),
        "ratio_to_alone": ratios,
        "median_s": raw,
    }
    text = json.dumps(doc, indent=1)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    for k, r in ratios.items():
        print(f"{k:13s} " + "  ".join(f"{n} {x:.3f}" for n, x in r.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
