"""What counts see and what they cannot: one planted change per kind, each judged with
``--perf-measure both`` (counts judge; time is shown beside them) against baselines recorded
before the change, on the real plugin (docs/gate.md, "What counts cannot see").

1. more work: a Python loop runs 5% more iterations;
2. the same work, cache-unfriendly: numpy gathers 400,000 elements in random rather than
   sequential order (3.2 MB: more L1 misses, the same instructions);
   and prefetching: 40,000 elements 776 bytes apart, shuffled rather than in order (a new
   cache line per element either way; only a real CPU's prefetcher tells them apart);
3. waiting: the benchmark also sleeps 2 ms a call;
4. threads: the same sorting split over two threads instead of done on one;
5. CPU features: numpy's AVX-512 kernels switched off (``NPY_DISABLE_CPU_FEATURES``), which the
   simulated CPU (no AVX-512) never runs anyway.

``python -m validation.counts_blind_spots --out docs/data/counts-blind-spots.json``
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
from typing import Any

from validation.common import machine

BENCH = """
import os
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

PLANT = os.environ.get("BLIND_PLANT", "")
BIG = np.random.default_rng(0).random(8_000_000)  # 64 MiB, beyond the simulated 8 MiB LL
N = 40_000
STRIDED = np.arange(N) * 97  # a constant stride of 776 bytes: one cache line per element
SHUFFLED_STRIDED = np.random.default_rng(1).permutation(STRIDED)
M = 400_000  # 3.2 MB: beyond L1 and L2, inside the simulated 8 MiB last level
ORDERED = np.arange(M)
SHUFFLED = np.random.default_rng(1).permutation(ORDERED)
HALVES = [np.random.default_rng(2 + i).random(150_000) for i in range(2)]
POOL = ThreadPoolExecutor(2)


def loop(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_more_work(perf):
    perf(loop, 21_000 if PLANT == "more_work" else 20_000)


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_cache_unfriendly(perf):
    idx = SHUFFLED if PLANT == "cache" else ORDERED
    perf(np.take, BIG, idx)


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_prefetch(perf):
    idx = SHUFFLED_STRIDED if PLANT == "prefetch" else STRIDED
    perf(np.take, BIG, idx)


def sleepy(x):
    if PLANT == "sleep":
        time.sleep(0.002)
    return np.sort(x)


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_waiting(perf):
    perf(sleepy, HALVES[0])


def sort_halves():
    if PLANT == "threads":  # the same two sorts on one thread
        return [np.sort(h) for h in HALVES]
    return list(POOL.map(np.sort, HALVES))


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"], threads=2)
def test_threads(perf):
    perf(sort_halves)


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_cpu_features(perf):
    x = np.random.default_rng(3).random(200_000)
    perf(np.exp, x)
"""

PLANTS = {
    "more_work": ("test_more_work", {}),
    "cache": ("test_cache_unfriendly", {}),
    "prefetch": ("test_prefetch", {}),
    "sleep": ("test_waiting", {}),
    "threads": ("test_threads", {}),
    "cpu_features": (
        "test_cpu_features",
        {
            "NPY_DISABLE_CPU_FEATURES": "AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL "
            "AVX512_ICL AVX512_SPR"
        },
    ),
}


def run(work: Path, tag: str, env: dict[str, str], *args: str) -> dict[str, Any]:
    out = work / f"{tag}.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            "--perf",
            "--perf-measure",
            "both",
            "--perf-json",
            str(out),
            *args,
        ],
        cwd=work,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )
    doc = json.loads(out.read_text()) if out.exists() else {"results": []}
    stdout = proc.stdout[-6000:].replace(str(work), "<scratch>")  # no machine paths kept
    return {"exit": proc.returncode, "stdout": stdout, "results": doc["results"]}


def row(result: dict[str, Any]) -> dict[str, Any]:
    v = result["verdict"]
    t = (result.get("time") or {}).get("verdict") or {}
    time = result.get("time") or {}
    counted = result.get("counts") or {}
    return {
        "name": result["name"],
        "counts_status": v["status"],
        "instructions_change_pct": v["change_pct"],
        "instructions_per_call": counted.get("instructions"),
        "cycles_per_call": counted.get("cycles"),
        "time_status": t.get("status"),
        "time_change_pct": t.get("change_pct"),
        "time_median_s": (time.get("stats") or {}).get("median"),
        "time_baseline_median_s": t.get("baseline_median")
        or (time.get("baseline") or {}).get("median"),
        "notes": v["notes"],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    work = Path(tempfile.mkdtemp(prefix="burnperf-blind-"))
    (work / "test_blind_spots.py").write_text(BENCH, encoding="utf-8")
    (work / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    recorded = run(work, "record", {}, "--perf-update")
    cases = {}
    for plant, (test, env) in PLANTS.items():
        got = run(work, plant, {"BLIND_PLANT": plant, **env}, "-k", test)
        cases[plant] = {
            "exit": got["exit"],
            "rows": [row(r) for r in got["results"]],
            "stdout": got["stdout"],
        }
        print(plant, json.dumps(cases[plant]["rows"]), file=sys.stderr, flush=True)
    doc = {
        "command": "python -m validation.counts_blind_spots " + " ".join(argv or sys.argv[1:]),
        "started": started,
        "machine": machine(),
        "record_exit": recorded["exit"],
        "record_stdout": recorded["stdout"],
        "cases": cases,
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
