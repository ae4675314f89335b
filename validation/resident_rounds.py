"""Same-session rounds in resident processes against fresh ones: wall time and verdicts.

Runs A/A same-session comparisons (``--perf-against REF`` where REF is this checkout's own
commit, so nothing changed) of the shipped suite's benchmarks on the chosen backends, once with
``--perf-round-start fresh`` (a new interpreter per round and environment: the driver, the
device context and the imports set up again each round) and once with ``resident`` (one process
per environment for the whole comparison), alternating, ``--pairs`` times. Writes each run's
wall time, rounds, verdicts and floors (``min_detectable_slowdown``) as JSON.

    python -m validation.resident_rounds --backends opencl,vulkan --pairs 2 \\
        --out docs/data/resident-rounds-cpu-devices.json

On a GPU the same command with ``--backends cuda`` measures what issue 72 asks (a same-session
GPU session within 1.5x of a stored-baselines one).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def one_run(start: str, backends: str, ref: str, extra: list[str], work: Path) -> dict[str, Any]:
    out = work / f"{start}-{time.monotonic_ns()}.json"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "perf_tests",
        "-q",
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
        "--perf",
        "--perf-measure",
        "time",
        "--perf-backends",
        backends,
        "--perf-against",
        ref,
        "--perf-round-start",
        start,
        "--perf-min-judged",
        "0",
        "--perf-json",
        str(out),
        *extra,
    ]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.monotonic() - t0
    results = json.loads(out.read_text())["results"] if out.exists() else []
    return {
        "start": start,
        "rc": proc.returncode,
        "wall_s": wall,
        "tail": proc.stdout[-3000:],
        "verdicts": [
            {
                "name": r["name"],
                "status": r["verdict"]["status"],
                "change_pct": r["verdict"]["change_pct"],
                "mds": r["verdict"]["min_detectable_slowdown"],
                "runs": r["verdict"]["runs"],
            }
            for r in results
        ],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backends", default="opencl,vulkan")
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--ref", default="HEAD", help="the reference: this commit (an A/A session)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("extra", nargs="*", help="more pytest arguments")
    args = ap.parse_args(argv)
    runs = []
    with tempfile.TemporaryDirectory(prefix="burnperf-resident-") as tmp:
        for i in range(args.pairs):
            for start in ("fresh", "resident") if i % 2 == 0 else ("resident", "fresh"):
                r = one_run(start, args.backends, args.ref, args.extra, Path(tmp))
                statuses = [v["status"] for v in r["verdicts"]]
                print(
                    f"pair {i + 1} {start:8}: rc {r['rc']}, {r['wall_s']:.0f} s, "
                    + ", ".join(f"{s} {statuses.count(s)}" for s in sorted(set(statuses))),
                    flush=True,
                )
                runs.append({"pair": i + 1, **r})
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    args.out.write_text(
        json.dumps(
            {
                "command": "python -m validation.resident_rounds "
                + " ".join(a for a in (argv or sys.argv[1:])),
                "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                "commit": commit,
                "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
                "runs": runs,
            },
            indent=1,
        )
        + "\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
