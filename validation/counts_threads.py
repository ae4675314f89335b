"""Do counts of a benchmark on a thread pool hold still whatever the host does? Each workload
is counted call by call under callgrind, as the counted process counts it (every thread
collects, the calling thread around its calls only, first-come-first-served turns, the pinned
environment of runs/counted.py), quiet and beside CPU-bound processes, and each call's
instructions are kept twice: all of them, and less what the threads spent waiting for each other
(host/callgrind_dumps.WAIT_FUNCTIONS). The first ``--warm`` windows are counted but reported apart
(the counted process drops them).

``python -m validation.counts_threads --out docs/data/counts-threads.json``
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
from pathlib import Path
from typing import Any

from pytest_burnperf.host import callgrind
from pytest_burnperf.runs.counted import PINNED_ENV
from validation.common import machine

ROOT = Path(__file__).resolve().parents[1]

#: name -> (library, threads, setup, call): each a few lines run in the counted child.
WORKLOADS: dict[str, tuple[str, int, str, str]] = {
    "numpy matmul 200x200 f64, 2 threads (OpenBLAS)": (
        "numpy",
        2,
        "a = np.random.default_rng(0).random((200, 200))",
        "a @ a",
    ),
    "numpy matmul 205x205 f64, 2 threads (OpenBLAS; +7.7% multiply-adds)": (
        "numpy",
        2,
        "a = np.random.default_rng(0).random((205, 205))",
        "a @ a",
    ),
    "numpy matmul 200x200 f64, 1 thread": (
        "numpy",
        1,
        "a = np.random.default_rng(0).random((200, 200))",
        "a @ a",
    ),
    "torch matmul 200x200 f32, 2 threads (OpenMP)": (
        "torch",
        2,
        "a = torch.rand(200, 200)",
        "a @ a",
    ),
    "torch x * 2 + 1, 400,000 f32, 2 threads (OpenMP)": (
        "torch",
        2,
        "a = torch.rand(400_000)",
        "a * 2 + 1",
    ),
}

CHILD = """
import gc, json, sys
from pathlib import Path
import numpy as np
from threadpoolctl import threadpool_limits
from pytest_burnperf.host import callgrind, callgrind_dumps
threads, windows, out = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
{imports}
{setup}
req = callgrind.Requests(out.parent)
fn = lambda: {call}
got = []
gc.disable()
with threadpool_limits(threads):
    fn()
    req.start()
    req.toggle()
    for i in range(windows):
        req.zero()
        req.toggle()
        fn()
        req.toggle()
        path = req.dump(f"#{{i}}")
        total = callgrind_dumps.read_dump(path)["Ir"]
        got.append([total, callgrind_dumps.waiting(path).get("Ir", 0)])
        path.unlink()
    req.toggle()
    req.stop()
out.write_text(json.dumps(got))
"""


def count(name: str, windows: int, busy: int) -> dict[str, Any]:
    library, threads, setup, call = WORKLOADS[name]
    valgrind = callgrind.find_valgrind()
    if valgrind is None:
        raise SystemExit("needs valgrind")
    imports = "import torch; torch.set_num_threads(threads)" if library == "torch" else ""
    work = Path(tempfile.mkdtemp(prefix="burnperf-threads-"))
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    try:
        script = work / "child.py"
        script.write_text(CHILD.format(imports=imports, setup=setup, call=call))
        out = work / "counts.json"
        env = {**os.environ, **PINNED_ENV, "PYTHONPATH": str(ROOT / "src")}
        cmd = [*callgrind.command(valgrind, work), sys.executable, str(script)]
        subprocess.run(
            [*cmd, str(threads), str(windows), str(out)], env=env, check=True, timeout=900
        )
        rows = json.loads(out.read_text())
    finally:
        for p in procs:
            p.kill()
            p.wait()
        shutil.rmtree(work, ignore_errors=True)
    return {"workload": name, "busy_processes": busy, "windows": rows}


def spread(values: list[int]) -> float:
    return (max(values) - min(values)) / statistics.median(values)


def summary(run: dict[str, Any], warm: int) -> dict[str, Any]:
    kept = run["windows"][warm:]
    total = [t for t, _ in kept]
    work = [t - w for t, w in kept]
    return {
        "median_all": statistics.median(total),
        "spread_all_pct": round(100 * spread(total), 3),
        "median_less_waiting": statistics.median(work),
        "spread_less_waiting_pct": round(100 * spread(work), 3),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", type=int, default=12)
    ap.add_argument("--warm", type=int, default=2)
    ap.add_argument("--busy", default="0,2", help="CPU-bound processes beside, per pass")
    ap.add_argument("--only", default="", help="workloads whose name contains this")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    runs = []
    for busy in (int(b) for b in args.busy.split(",")):
        for name in WORKLOADS:
            if args.only and args.only not in name:
                continue
            run = count(name, args.windows, busy)
            run.update(summary(run, args.warm))
            runs.append(run)
            print(
                f"{name}, {busy} busy: all {run['median_all']:,} "
                f"(spread {run['spread_all_pct']}%), less waiting "
                f"{run['median_less_waiting']:,} (spread {run['spread_less_waiting_pct']}%)",
                flush=True,
            )
    if args.out:
        doc = {
            "command": "python -m validation.counts_threads " + " ".join(argv or sys.argv[1:]),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="minutes"),
            "machine": machine(),
            "valgrind": callgrind.valgrind_version(callgrind.find_valgrind() or "valgrind"),
            "pinned_env": PINNED_ENV,
            "warm_windows_dropped": args.warm,
            "runs": runs,
        }
        args.out.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
