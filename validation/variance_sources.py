"""Where between-process variance comes from: each candidate source switched off on its own.

A benchmark's median moves from one fresh process to the next far more than inside one process.
This script runs a small suite of typical workloads (pure Python, dict/str hashing, allocation,
numpy sort, numpy memory-bound, BLAS, and torch with ``--torch``) in many fresh processes under
each *condition* below, interleaved in a shuffled order so that drift of the machine hits every
condition alike, and reports per workload and condition the sd of the log of the process medians
(between) and the median within-process sd of log samples (within):

``default``   a plain fresh process: random hash seed, randomised address space, any CPU, numpy
              free to ask for transparent huge pages for big arrays;
``hashseed``  ``PYTHONHASHSEED=0`` (pyperf varies it per worker on purpose);
``no-aslr``   address-space layout randomisation off (``setarch -R``);
``pinned``    the process bound to one CPU (``taskset``): no migration between cores;
``no-thp``    no transparent huge pages (``prctl(PR_SET_THP_DISABLE)`` and numpy's madvise off);
``aligned``   every input array starts on a 4 KiB page boundary (as ``burnperf``'s devices allocate);
``all``       everything above at once.

The child is a plain Python process, not pytest, so that each source is seen alone; the plugin's
own mitigations are measured end to end by ``validation/noise.py``. Run it on an idle machine:

    python -m validation.variance_sources --processes 16 --out docs/variance-sources.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

CONDITIONS = ("default", "hashseed", "no-aslr", "pinned", "no-thp", "aligned", "all")

CHILD = r"""
import ctypes, json, math, os, statistics, sys, time
cond = set(sys.argv[1].split(","))
if "no-thp" in cond:
    ctypes.CDLL(None).prctl(41, 1, 0, 0, 0)
import numpy as np
if "no-thp" in cond:
    np._core.multiarray._set_madvise_hugepage(False)
from threadpoolctl import threadpool_limits
threadpool_limits(1)
rng = np.random.default_rng(0)

def array(n, dtype=np.float64):
    if "aligned" not in cond:
        return np.empty(n, dtype)
    itemsize = np.dtype(dtype).itemsize
    raw = np.empty(n * itemsize + 4096, np.uint8)
    off = (-raw.ctypes.data) % 4096
    return raw[off:off + n * itemsize].view(dtype)

def filled(n):
    a = array(n)
    a[:] = rng.random(n)
    return a

def py_loop():
    t = 0
    for i in range(24000):
        t += i * i
    return t

WORDS = [f"w{i:05d}" for i in range(4000)]
def py_dict():
    d = {}
    for w in WORDS:
        d[w] = len(d)
    return sum(d[w] for w in WORDS[::3])

def py_alloc():
    return [{"a": i, "b": (i, i + 1), "c": [i]} for i in range(3000)]

sort_src, sort_dst = filled(20000), array(20000)
def np_sort():
    sort_dst[:] = sort_src
    sort_dst.sort()

chain_a, chain_o = filled(660000), array(660000)
def np_chain():
    np.multiply(chain_a, chain_a, out=chain_o)
    np.add(chain_o, 1.0, out=chain_o)
    np.sqrt(chain_o, out=chain_o)

ma, mb = filled(192 * 640).reshape(192, 640), filled(640 * 192).reshape(640, 192)
def blas():
    ma @ mb

work = {"python-loop": py_loop, "python-dict": py_dict, "python-alloc": py_alloc,
        "numpy-sort": np_sort, "numpy-chain": np_chain, "blas": blas}
if "torch" in cond:
    import torch
    torch.set_num_threads(1)
    ta, tb = torch.rand(256, 256), torch.rand(256, 256)
    work["torch-matmul"] = lambda: ta @ tb

out = {}
for name, fn in work.items():
    end = time.perf_counter() + 0.05
    while time.perf_counter() < end:
        fn()
    t0 = time.perf_counter(); fn(); one = time.perf_counter() - t0
    loops = max(1, math.ceil(0.002 / max(one, 1e-7)))
    xs = []
    for _ in range(25):
        t0 = time.perf_counter()
        for _ in range(loops):
            fn()
        xs.append((time.perf_counter() - t0) / loops)
    out[name] = xs
print(json.dumps(out))
"""


def command(cond: str, torch: bool) -> tuple[list[str], dict[str, str]]:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.pop("PYTHONHASHSEED", None)
    parts = set(CONDITIONS[1:-1]) if cond == "all" else {cond}
    prefix: list[str] = []
    if "hashseed" in parts:
        env["PYTHONHASHSEED"] = "0"
    if "no-aslr" in parts:
        prefix += ["setarch", "-R"]
    if "pinned" in parts:
        prefix += ["taskset", "-c", str((os.cpu_count() or 1) - 1)]
    flags = sorted(parts & {"no-thp", "aligned"}) + (["torch"] if torch else [])
    return [*prefix, sys.executable, "-c", CHILD, ",".join(flags) or "-"], env


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--processes", type=int, default=16, help="fresh processes per condition")
    ap.add_argument("--conditions", default=",".join(CONDITIONS))
    ap.add_argument("--torch", action="store_true", help="add a torch matmul (slower start-up)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--analyse", type=Path, default=None, help="print the tables of a saved run")
    args = ap.parse_args(argv)
    if args.analyse is not None:
        doc = json.loads(args.analyse.read_text())
        # the run order is rebuilt from the conditions in the order the run was given them
        conds = doc.get("conditions") or args.conditions.split(",")
        print_table(summarise(doc["samples"]), conds)
        print_structure(doc["samples"], schedule(conds, doc["processes"]))
        return 0
    conds = args.conditions.split(",")
    unknown = sorted(set(conds) - set(CONDITIONS))
    if unknown:
        ap.error(f"unknown condition(s) {unknown}; choose from {', '.join(CONDITIONS)}")
    order = schedule(conds, args.processes)
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    samples: dict[str, dict[str, list[list[float]]]] = {c: {} for c in conds}
    t0 = time.monotonic()
    for i, cond in enumerate(order):
        cmd, env = command(cond, args.torch)
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"{cond}: child failed ({done.returncode}):\n{done.stderr[-2000:]}")
        for name, xs in json.loads(done.stdout).items():
            samples[cond].setdefault(name, []).append(xs)
        if (i + 1) % 20 == 0:
            print(f"{i + 1}/{len(order)} processes, {time.monotonic() - t0:.0f} s", flush=True)
    table = summarise(samples)
    print_table(table, conds)
    print_structure(samples, order)
    if args.out:
        doc = {
            "started": started,
            "command": "python -m validation.variance_sources " + " ".join(argv or sys.argv[1:]),
            "processes": args.processes,
            "conditions": conds,
            "summary": table,
            "samples": samples,
        }
        args.out.write_text(json.dumps(doc, sort_keys=True) + "\n")
    return 0


def schedule(conds: list[str], processes: int) -> list[str]:
    """The order the processes ran in (seeded, so a saved run's order can be rebuilt)."""
    order = [c for _ in range(processes) for c in conds]
    random.Random(1).shuffle(order)
    return order


def print_structure(samples: dict[str, dict[str, list[list[float]]]], order: list[str]) -> None:
    """Is a process's level shared? Lag-1 autocorrelation of each workload's log process median
    in time order (drift of the host), and the mean correlation between the workloads of one
    process (a process that is slow for everything), both after removing each condition's mean
    and clipping deviations at +-10% so that one outlier process does not decide them."""
    import numpy as np

    names = list(next(iter(samples.values())))
    means = {
        c: {w: statistics.fmean(math.log(statistics.median(r)) for r in per[w]) for w in names}
        for c, per in samples.items()
    }
    seen = dict.fromkeys(samples, 0)
    rows = []
    for c in order:
        i = seen[c]
        seen[c] += 1
        rows.append([math.log(statistics.median(samples[c][w][i])) - means[c][w] for w in names])
    m = np.clip(np.array(rows), -0.1, 0.1)
    lag = {w: float(np.corrcoef(m[:-1, j], m[1:, j])[0, 1]) for j, w in enumerate(names)}
    corr = np.corrcoef(m.T)
    pairs = [corr[i, j] for i in range(len(names)) for j in range(i + 1, len(names))]
    print(
        "lag-1 autocorrelation in time order: " + ", ".join(f"{w} {v:+.2f}" for w, v in lag.items())
    )
    print(
        f"correlation between the workloads of one process: mean {statistics.fmean(pairs):+.2f}, "
        f"range {min(pairs):+.2f} to {max(pairs):+.2f}"
    )


def summarise(
    samples: dict[str, dict[str, list[list[float]]]],
) -> dict[str, dict[str, dict[str, float]]]:
    """``{workload: {condition: {...}}}`` in log units: ``between`` (sd of the log process
    medians), ``robust`` (1.4826 x their median absolute deviation: the spread of the bulk of the
    processes, blind to the odd process a disturbed host slowed down), ``outliers`` (processes
    more than 4 robust spreads, and at least 5%, from the median), ``within`` (median of the
    processes' sd of log samples) and ``median_s``."""
    table: dict[str, dict[str, dict[str, float]]] = {}
    for cond, per in samples.items():
        for name, runs in per.items():
            meds = [math.log(statistics.median(r)) for r in runs]
            within = statistics.median(statistics.stdev([math.log(v) for v in r]) for r in runs)
            mid = statistics.median(meds)
            robust = 1.4826 * statistics.median(abs(x - mid) for x in meds)
            far = max(4 * robust, math.log(1.05))
            table.setdefault(name, {})[cond] = {
                "between": statistics.stdev(meds),
                "robust": robust,
                "outliers": sum(abs(x - mid) > far for x in meds),
                "within": within,
                "median_s": math.exp(mid),
            }
    return table


def print_table(table: dict[str, dict[str, dict[str, float]]], conds: list[str]) -> None:
    print("between-process spread of log medians: sd / robust sd (1.4826 MAD) / outlier processes")
    print(f"{'workload':14}" + "".join(f"{c:>21}" for c in conds))
    for name, per in table.items():
        cells = "".join(
            f"{100 * per[c]['between']:7.2f}% /{100 * per[c]['robust']:5.2f}% /{per[c]['outliers']:2d}"
            for c in conds
        )
        print(f"{name:14}{cells}")


if __name__ == "__main__":
    sys.exit(main())
