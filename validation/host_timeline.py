"""Is the CPU itself steady? The same calls, in short blocks, inside one process, over time.

``validation/variance_sources.py`` switches candidate sources of between-process spread off one
at a time (hash seed, address-space layout, CPU migration, huge pages, alignment). This script
asks the question underneath: with everything fixed inside one process (the same buffers, the
same code, no allocation in the timed calls), does a call take the same time from one moment to
the next? It cycles through a few typical workloads in blocks of about ``--block-ms`` each
(pure Python, a numpy sort, a memory-bound numpy chain that fits the last-level cache, a copy of
64 MiB that does not, a BLAS product) and, around every cycle, reads what the guest can see of
its host: CPU time stolen by the hypervisor and taken by other processes (``/proc/stat``), and
the share of time a task waited for a CPU (``/proc/pressure/cpu``).

Printed per workload: the sd of the log block times (block to block, inside one process), the
lag-1 autocorrelation of those (slow drift against fast jitter), the sd of the process medians
(between processes), the mean correlation with the other workloads' blocks of the same cycle
(one cause slowing everything at once), and the share of blocks at least 1.3x the process's
fastest tenth (slow spells: the host's speed has two levels, not a bell curve). Guest counters
over the whole run are printed beside them. Run it with nothing else of yours running:

    python -m validation.host_timeline --processes 4 --cycles 60 --out docs/data/host-timeline.json

``--analyse FILE`` prints the tables of a saved run again.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CHILD = r"""
import json, math, os, sys, time
cycles, block = int(sys.argv[1]), float(sys.argv[2])
import numpy as np
from threadpoolctl import threadpool_limits
threadpool_limits(1)
rng = np.random.default_rng(0)

def py_loop():
    t = 0
    for i in range(24000):
        t += i * i
    return t

sort_src, sort_dst = rng.random(20000), np.empty(20000)
def np_sort():
    sort_dst[:] = sort_src
    sort_dst.sort()

chain_a, chain_o = rng.random(660000), np.empty(660000)
def np_chain():
    np.multiply(chain_a, chain_a, out=chain_o)
    np.add(chain_o, 1.0, out=chain_o)
    np.sqrt(chain_o, out=chain_o)

big_src, big_dst = rng.random(8 << 20), np.empty(8 << 20)
def dram_copy():
    np.copyto(big_dst, big_src)

ma, mb = rng.random((192, 640)), rng.random((640, 192))
def blas():
    ma @ mb

work = {"python-loop": py_loop, "numpy-sort": np_sort, "numpy-chain-5MB": np_chain,
        "copy-64MiB": dram_copy, "blas-192x640": blas}

def counters():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    busy = v[0] + v[1] + v[2] + v[5] + v[6]
    steal = v[7] if len(v) > 7 else 0
    try:
        with open("/proc/pressure/cpu") as f:
            psi = int(f.readline().rsplit("total=", 1)[1])
    except (OSError, IndexError, ValueError):
        psi = None
    return time.perf_counter(), time.process_time(), busy, steal, psi

hz = os.sysconf("SC_CLK_TCK")
ncpu = os.cpu_count() or 1
loops = {}
for name, fn in work.items():
    end = time.perf_counter() + 0.05
    while time.perf_counter() < end:
        fn()
    t0 = time.perf_counter(); fn(); one = time.perf_counter() - t0
    loops[name] = max(1, math.ceil(block / max(one, 1e-7)))
blocks = {name: [] for name in work}
host = []
for c in range(cycles):
    before = counters()
    for name, fn in work.items():
        n = loops[name]
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        blocks[name].append((time.perf_counter() - t0) / n)
    after = counters()
    wall = after[0] - before[0]
    own = after[1] - before[1]
    host.append({
        "wall": wall,
        "others_cpus": max(0.0, (after[2] - before[2]) / hz - own) / wall,
        "steal_share": (after[3] - before[3]) / hz / wall / ncpu,
        "psi_share": None if before[4] is None else (after[4] - before[4]) / 1e6 / wall,
    })
print(json.dumps({"blocks": blocks, "host": host}))
"""


#: A block this many times the process's 10th-percentile block ran in a slow spell of the host.
SLOW = 1.3


def run_child(cycles: int, block_ms: float) -> dict[str, Any]:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(cycles), str(block_ms / 1000.0)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"child failed ({done.returncode}):\n{done.stderr[-2000:]}")
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def _sd(xs: list[float]) -> float:
    return statistics.stdev(xs) if len(xs) > 1 else 0.0


def _corr(a: list[float], b: list[float]) -> float:
    sa, sb = _sd(a), _sd(b)
    if sa == 0.0 or sb == 0.0:
        return 0.0
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    return sum((x - ma) * (y - mb) for x, y in zip(a, b, strict=True)) / ((len(a) - 1) * sa * sb)


def summarise(processes: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per workload: block-to-block sd of log times inside a process (median over processes),
    its lag-1 autocorrelation, the sd of log process medians, and the mean correlation with the
    other workloads' blocks of the same cycle."""
    names = list(processes[0]["blocks"])
    out: dict[str, dict[str, float]] = {}
    for name in names:
        within, lag1, meds, corr, slow = [], [], [], [], []
        for proc in processes:
            blocks: dict[str, list[float]] = proc["blocks"]
            logs = [math.log(x) for x in blocks[name]]
            within.append(_sd(logs))
            lag1.append(_corr(logs[:-1], logs[1:]))
            meds.append(math.log(statistics.median(blocks[name])))
            fast = statistics.quantiles(blocks[name], n=10)[0]
            slow.append(sum(x >= SLOW * fast for x in blocks[name]) / len(blocks[name]))
            others = [_corr(logs, [math.log(x) for x in blocks[o]]) for o in names if o != name]
            corr.append(statistics.fmean(others))
        out[name] = {
            "within_sd": statistics.median(within),
            "lag1": statistics.median(lag1),
            "between_sd": _sd(meds),
            "corr_others": statistics.median(corr),
            "slow_share": statistics.fmean(slow),
        }
    return out


def host_summary(processes: list[dict[str, Any]]) -> dict[str, float | None]:
    rows = [h for p in processes for h in p["host"]]
    psi = [r["psi_share"] for r in rows if r["psi_share"] is not None]
    return {
        "cycles": len(rows),
        "others_cpus_mean": statistics.fmean(r["others_cpus"] for r in rows),
        "others_cpus_max": max(r["others_cpus"] for r in rows),
        "steal_share_mean": statistics.fmean(r["steal_share"] for r in rows),
        "psi_share_mean": statistics.fmean(psi) if psi else None,
    }


def print_tables(doc: dict[str, Any]) -> None:
    table = summarise(doc["processes"])
    print(
        "| workload | block to block, inside a process | lag-1 autocorrelation | "
        f"between processes | correlation with the other workloads | blocks >= {SLOW:g}x the "
        "process's fastest tenth |"
    )
    print("|---|---|---|---|---|---|")
    for name, row in table.items():
        print(
            f"| {name} | {100 * row['within_sd']:.1f}% | {row['lag1']:+.2f} | "
            f"{100 * row['between_sd']:.1f}% | {row['corr_others']:+.2f} | "
            f"{100 * row['slow_share']:.0f}% |"
        )
    h = host_summary(doc["processes"])
    psi = "n/a" if h["psi_share_mean"] is None else f"{100 * h['psi_share_mean']:.2f}%"
    print(
        f"\nguest counters over {h['cycles']} cycles: other processes "
        f"{h['others_cpus_mean']:.2f} CPUs on average (max {h['others_cpus_max']:.2f}), "
        f"hypervisor steal {100 * (h['steal_share_mean'] or 0.0):.2f}% of CPU time, "
        f"CPU pressure (PSI some) {psi}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--processes", type=int, default=4, help="fresh processes, one after another")
    ap.add_argument("--cycles", type=int, default=60, help="cycles through the workloads each")
    ap.add_argument("--block-ms", type=float, default=10.0, help="length of one block")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--analyse", type=Path, default=None, help="print the tables of a saved run")
    args = ap.parse_args(argv)
    if args.analyse is not None:
        try:
            saved = json.loads(args.analyse.read_text())
            ok = isinstance(saved, dict) and isinstance(saved.get("processes"), list)
        except (OSError, ValueError) as exc:
            ap.error(f"--analyse {args.analyse}: cannot read it ({exc})")
        if not ok or not saved["processes"]:
            ap.error(f"--analyse {args.analyse}: not a saved run of this script (no 'processes')")
        print_tables(saved)
        return 0
    for name, value in (("--processes", args.processes), ("--cycles", args.cycles)):
        if value < 2:
            ap.error(f"{name} must be at least 2, got {value}")
    if args.block_ms <= 0:
        ap.error(f"--block-ms must be positive, got {args.block_ms}")
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    processes = [run_child(args.cycles, args.block_ms) for _ in range(args.processes)]
    doc: dict[str, Any] = {
        "started": started,
        "command": "python -m validation.host_timeline " + " ".join(argv or sys.argv[1:]),
        "processes": processes,
    }
    print_tables(doc)
    if args.out:
        args.out.write_text(json.dumps(doc, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
