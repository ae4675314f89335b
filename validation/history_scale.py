"""How fast the results store answers at scale: a synthetic SQLite store of ``--runs`` runs x
``--benchmarks`` benchmarks (3 process rounds of 20 samples each, medians drifting with a few
planted shifts), then ``burnperf history`` over all of it, timed as a user runs it (a fresh
process). Also times recording one run of ``--benchmarks`` results into the store, the cost
``--perf-store`` adds to a perf run.

``python -m validation.history_scale --runs 1000 --benchmarks 200`` (building the store takes a
few minutes; it is kept in ``--work`` for reruns).
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def run_doc(i: int, benchmarks: int, rng: random.Random) -> dict[str, Any]:
    results = []
    for b in range(benchmarks):
        level = 1e-3 * (1 + b / benchmarks) * (1.1 if (b % 17 == 0 and i >= 600) else 1.0)
        runs = [[level * math.exp(rng.gauss(0, 0.01)) for _ in range(20)] for _ in range(3)]
        results.append(
            {
                "test": f"perf_tests/test_ops.py::test_op{b:03d}[numpy-cpu-f32]",
                "name": f"test_op{b:03d}[numpy-cpu-f32]",
                "backend": "numpy",
                "kind": "cpu",
                "dtype": "f32",
                "runs": runs,
                "verdict": {"status": "unchanged", "ratio": 1.0},
            }
        )
    return {
        "schema": "pytest-burnperf-results",
        "version": 1,
        "created": f"2026-{1 + i // 200:02d}-{1 + (i // 8) % 25:02d}T{i % 8:02d}:00:00+00:00",
        "machine": {"id": "linux-x86-64-test", "hardware_class": "x86-64-v3-f25m1"},
        "git": {"commit": f"{i:040x}", "dirty": False, "branch": "main"},
        "settings": {},
        "results": results,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--benchmarks", type=int, default=200)
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--repeat", type=int, default=5, help="times each history command is run")
    args = ap.parse_args(argv)
    from pytest_burnperf.storage.history.store import Store

    work = args.work or Path(tempfile.mkdtemp(prefix="burnperf-history-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    db = work / f"history-{args.runs}x{args.benchmarks}.sqlite"
    url = f"sqlite:///{db}"
    rng = random.Random(1)
    t0 = time.perf_counter()
    with Store(url) as store:
        have = store.counts()[0]
        for i in range(have, args.runs):
            store.record(run_doc(i, args.benchmarks, rng))
        counts = store.counts()
    print(
        f"store {db.name}: {counts[0]} runs, {counts[1]} results, {db.stat().st_size >> 20} MiB "
        f"(built in {time.perf_counter() - t0:.0f} s)"
    )
    one = run_doc(10**6, args.benchmarks, rng)
    (work / "record.sqlite").unlink(missing_ok=True)  # time a real insert, not a duplicate
    t0 = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json,sys; from pytest_burnperf.storage.history.store import Store\n"
            "with Store(sys.argv[1]) as s: s.record(json.load(open(sys.argv[2])))",
            f"sqlite:///{work / 'record.sqlite'}",
            str(_dump(work, one)),
        ],
        check=True,
    )
    del done
    print(
        f"recording one run of {args.benchmarks} results (fresh process, SQLAlchemy import "
        f"included): {time.perf_counter() - t0:.2f} s"
    )
    burnperf = Path(sys.executable).with_name("burnperf")
    for extra in ([], ["--last", "1000"], ["-k", "op017"]):
        took = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            out = subprocess.run(
                [str(burnperf), "history", "--store", url, *extra],
                capture_output=True,
                text=True,
                check=True,
            )
            took.append(time.perf_counter() - t0)
        print(
            f"burnperf history {' '.join(extra) or '(default --last 100)'}: median "
            f"{statistics.median(took):.2f} s of {args.repeat} "
            f"({', '.join(f'{t:.2f}' for t in took)}); {out.stdout.strip().splitlines()[-1]}"
        )
    return 0


def _dump(work: Path, doc: dict[str, Any]) -> Path:
    import json

    path = work / "one-run.json"
    path.write_text(json.dumps(doc))
    return path


if __name__ == "__main__":
    raise SystemExit(main())
