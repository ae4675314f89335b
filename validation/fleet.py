"""The fleet targets of docs/validation.md ("A fleet"), each timed as a user runs it (a fresh
``burnperf`` process):

1. **merge**: ``--shards`` shard results of a ``--grid``-comparison grid (3 process rounds of 20
   samples each, as the CI settings record) merged by ``burnperf merge``;
2. **publish**: ``burnperf publish`` over a store of ``--runs`` runs x ``--benchmarks`` benchmarks
   (built, or reused from ``--work``, by validation/history_scale.py's generator), then one
   benchmark page opened in headless Chromium (``--dump-dom``, the browser's start included);
3. **projection**: the time of a ``--grid``-comparison run at the CI settings on one runner and on
   ``--shards`` shards, from the per-benchmark cost of a measured run (``--measured RESULTS.json``
   with ``--measured-seconds`` of wall time, e.g. a ``nox -s perf`` run).

``python -m validation.fleet --work /tmp/fleet --measured perf-results.json --measured-seconds 420``
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def shard_doc(k: int, n: int, tests: list[str], rng: random.Random) -> dict[str, Any]:
    results = []
    for t in tests:
        level = 1e-3 * (1 + rng.random())
        runs = [[level * math.exp(rng.gauss(0, 0.01)) for _ in range(20)] for _ in range(3)]
        results.append(
            {
                "test": t,
                "name": t.split("::")[-1],
                "backend": "numpy",
                "kind": "cpu",
                "dtype": "f32",
                "runs": runs,
                "samples": runs[-1],
                "stats": {"median": level},
                "verdict": {"status": "unchanged", "ratio": 1.0, "ratio_ci95": [0.99, 1.01]},
            }
        )
    return {
        "schema": "pytest-burnperf-results",
        "version": 1,
        "created": f"2026-11-24T00:{k:02d}:00+00:00",
        "machine": {"id": "linux-x86-64-test", "hardware_class": "x86-64-v3-f25m1"},
        "git": {"commit": "ab" * 20, "dirty": False, "branch": "main"},
        "settings": {
            "alpha": 0.01,
            "threshold": 0.05,
            "update_baselines": False,
            "shard": {"index": k, "count": n, "selection": "f" * 16, "comparisons": 0},
        },
        "results": results,
        "coverage": {"judged": len(results), "total": len(results), "min_share": 0.9},
    }


def timed(cmd: list[str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    took = time.perf_counter() - t0
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return took, (done.stdout + done.stderr).strip()


def merge_target(work: Path, grid: int, shards: int) -> dict[str, Any]:
    rng = random.Random(3)
    tests = [f"perf_tests/test_grid.py::test_op{i:05d}[numpy-cpu-f32]" for i in range(grid)]
    d = work / f"shards-{grid}x{shards}"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    files = []
    for k in range(1, shards + 1):
        doc = shard_doc(k, shards, tests[k - 1 :: shards], rng)
        doc["settings"]["shard"]["comparisons"] = grid
        path = d / f"s{k}.json"
        path.write_text(json.dumps(doc))
        files.append(str(path))
    burnperf = str(Path(sys.executable).with_name("burnperf"))
    took, out = timed([burnperf, "merge", *files, "-o", str(d / "merged.json")])
    size = sum(Path(f).stat().st_size for f in files) >> 20
    return {"grid": grid, "shards": shards, "seconds": round(took, 2), "input_mib": size,
            "output": out.splitlines()[-1]}  # fmt: skip


def publish_target(work: Path, runs: int, benchmarks: int) -> dict[str, Any]:
    from validation.history_scale import main as build

    build(["--runs", str(runs), "--benchmarks", str(benchmarks), "--work", str(work),
           "--repeat", "1"])  # fmt: skip
    url = f"sqlite:///{work / f'history-{runs}x{benchmarks}.sqlite'}"
    site = work / "site"
    shutil.rmtree(site, ignore_errors=True)
    burnperf = str(Path(sys.executable).with_name("burnperf"))
    took, out = timed([burnperf, "publish", "-o", str(site), "--store", url])
    page = sorted((site / "b").glob("*.html"))[0]
    chromium = next((p for n in ("chromium", "chromium-browser") if (p := shutil.which(n))), None)
    load = None
    if chromium:
        load, _ = timed(
            [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--dump-dom",
             page.as_uri()]
        )  # fmt: skip
    return {"runs": runs, "benchmarks": benchmarks, "seconds": round(took, 2), "output": out,
            "page_load_s": None if load is None else round(load, 2), "page": page.name}  # fmt: skip


def projection(measured: Path, seconds: float, grid: int, shards: int) -> dict[str, Any]:
    doc = json.loads(measured.read_text())
    n = len(doc.get("results") or [])
    per = seconds / max(n, 1)
    return {
        "measured_benchmarks": n,
        "measured_seconds": seconds,
        "seconds_per_benchmark": round(per, 2),
        "grid": grid,
        "one_runner_hours": round(per * grid / 3600, 1),
        "shards": shards,
        "per_shard_hours": round(per * grid / shards / 3600, 2),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--grid", type=int, default=10_000)
    ap.add_argument("--shards", type=int, default=32)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--benchmarks", type=int, default=200)
    ap.add_argument("--measured", type=Path, default=None)
    ap.add_argument("--measured-seconds", type=float, default=None)
    ap.add_argument("--out", type=Path, default=None, help="write the outcomes as JSON here")
    args = ap.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="burnperf-fleet-"))
    work.mkdir(parents=True, exist_ok=True)
    got: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    got["merge"] = merge_target(work, args.grid, args.shards)
    print(json.dumps(got["merge"]), flush=True)
    got["publish"] = publish_target(work, args.runs, args.benchmarks)
    print(json.dumps(got["publish"]), flush=True)
    if args.measured and args.measured_seconds:
        got["projection"] = projection(args.measured, args.measured_seconds, args.grid, args.shards)
        print(json.dumps(got["projection"]), flush=True)
    if args.out:
        args.out.write_text(json.dumps(got, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
