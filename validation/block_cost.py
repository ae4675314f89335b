"""What counting a call costs under callgrind, by instructions and by basic blocks: the reason
``--perf-count-limit`` is in blocks (docs/validation.md, "A limit in basic blocks").

Each workload runs in a process under callgrind as a counted process runs it (instrumentation
off until asked, no cache simulation, one thread, the portable kernels) with 1 and then 4 calls
instrumented; what the three extra calls add, over three, is one call's instructions, basic
blocks (the dumps' ``Timerange``) and seconds under valgrind. Each is also timed natively (the
host's kernels, the best of five calls), for the native blocks a second that
``--perf-measure auto`` assumes when it predicts from timed rounds.

``python -m validation.block_cost --out docs/data/block-cost.json``
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from validation.common import machine

WORKLOADS = {
    "pure-python-loop": (
        "def f():\n    s = 0\n    for i in range(200_000):\n        s += i * i % 7\n    return s"
    ),
    "pure-python-objects": (
        "def f():\n    d = {}\n    for i in range(50_000):\n        d[str(i)] = [i, (i, str(i))]\n"
        "    return sorted(d)"
    ),
    "numpy-exp-1M": "x = rng.random(1_000_000)\nf = lambda: np.exp(x)",
    "sort-8M-doubles": "x = rng.random(8_000_000)\nf = lambda: np.sort(x)",
    "lapack-solve-1500": (
        "a = rng.random((1500, 1500)); b = rng.random(1500)\nf = lambda: np.linalg.solve(a, b)"
    ),
    "blas-matmul-600x5000x600": (
        "a = rng.random((600, 5000)); b = rng.random((5000, 600))\nf = lambda: a @ b"
    ),
    "blas-matmul-1000x7500x1000": (
        "a = rng.random((1000, 7500)); b = rng.random((7500, 1000))\nf = lambda: a @ b"
    ),
}

CHILD = """
import json, sys, time
import numpy as np
from pathlib import Path
from pytest_burnperf.host import callgrind

rng = np.random.default_rng(0)
{setup}
n, out = int(sys.argv[1]), Path(sys.argv[2])
requests = callgrind.Requests(out.parent)
f()
if not requests.running():  # natively: the best of five calls
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    out.write_text(json.dumps({{"native_s": best}}))
    sys.exit(0)
requests.start()
requests.toggle()
t = time.perf_counter()
dumps = []
for i in range(n):
    requests.zero(); requests.toggle(); f(); requests.toggle()
    dumps.append(str(requests.dump(f"call {{i}}")))
took = time.perf_counter() - t
requests.toggle()
requests.stop()
out.write_text(json.dumps({{"seconds": took, "dumps": dumps}}))
"""


def run_one(name: str, setup: str, work: Path, valgrind: str | None) -> dict[str, float]:
    from pytest_burnperf.host import callgrind, callgrind_dumps

    script = work / f"{name}.py"
    script.write_text(CHILD.format(setup=setup), encoding="utf-8")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OPENBLAS_CORETYPE": "Sandybridge"}
    got: dict[str, float] = {}
    out = work / f"{name}.json"
    native_env = {k: v for k, v in env.items() if k != "OPENBLAS_CORETYPE"}
    subprocess.run([sys.executable, str(script), "1", str(out)], env=native_env, check=True)
    got["native_s"] = json.loads(out.read_text())["native_s"]
    if valgrind is None:
        return got
    per: dict[int, dict[str, float]] = {}
    for n in (1, 4):
        dump_dir = work / f"{name}-{n}"
        dump_dir.mkdir()
        out = dump_dir / "out.json"
        cmd = [
            *callgrind.command(valgrind, dump_dir),
            sys.executable,
            str(script),
            str(n),
            str(out),
        ]
        subprocess.run(cmd, env=env, check=True)
        doc = json.loads(out.read_text())
        dumps = [Path(p) for p in doc["dumps"]]
        per[n] = {
            "seconds": doc["seconds"],
            "instructions": sum(callgrind_dumps.read_dump(p)["Ir"] for p in dumps),
            "blocks": sum(callgrind_dumps.executed_blocks(p) or 0 for p in dumps),
        }
    for k in ("seconds", "instructions", "blocks"):
        got[k] = (per[4][k] - per[1][k]) / 3
    got["ns_per_block"] = 1e9 * got["seconds"] / got["blocks"]
    got["ns_per_instruction"] = 1e9 * got["seconds"] / got["instructions"]
    got["instructions_per_block"] = got["instructions"] / got["blocks"]
    got["native_blocks_per_s"] = got["blocks"] / got["native_s"]
    return got


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    from pytest_burnperf.host import callgrind

    valgrind = callgrind.find_valgrind()
    started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    work = Path(tempfile.mkdtemp(prefix="burnperf-block-cost-"))
    try:
        rows = {}
        for name, setup in WORKLOADS.items():
            rows[name] = run_one(name, setup, work, valgrind)
            print(name, json.dumps(rows[name]), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    doc = {
        "command": "python -m validation.block_cost " + " ".join(argv or sys.argv[1:]),
        "started": started,
        "machine": machine(),
        "valgrind": callgrind.valgrind_version(valgrind) if valgrind else None,
        "what": (
            "one call's instructions, basic blocks and seconds under callgrind as a counted "
            "process runs it (no cache simulation, one thread, portable kernels), from 4 calls "
            "less 1; native_s: the best of five calls natively (the host's kernels)"
        ),
        "workloads": rows,
    }
    a.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
