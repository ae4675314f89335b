"""What a counted session costs beside a timed one of the same benchmarks (issue 44's cost
target: a counted session no longer than a timed one).

The shipped suite's CPU benchmarks (``perf_tests``, ``--perf-backends numpy``) are recorded and
then judged, once with each measure ``--judge`` names (``counts,time`` unless given; ``auto``
counts what has counts baselines and times it once beside; time: the default settings, 3
process rounds, adaptive up to 8), against a scratch baselines folder, one session after the
other on the same machine, ``--repeat`` times, the order rotating.
Each session's wall time is kept, and for counted sessions the counted pass's own time (the
run's "counted N/N benchmark(s) under callgrind in M:SS" line).

``python -m validation.counts_cost --repeat 2 --out docs/data/counts-cost.json``
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from validation.common import machine

ROOT = Path(__file__).resolve().parents[1]
PASS_LINE = re.compile(r"counted (\d+)/(\d+) benchmark\(s\) under callgrind in (\d+):(\d+)")


def session(measure: str, baselines: Path, record: bool, select: str) -> dict[str, Any]:
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
        "--perf-backends",
        "numpy",
        "--perf-measure",
        measure,
        "--perf-baselines-dir",
        str(baselines),
        "--perf-min-judged",
        "0",
    ]
    if select:
        cmd += ["-k", select]
    if record:
        cmd.append("--perf-update")
    t0 = time.monotonic()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=3600)
    wall = time.monotonic() - t0
    found = PASS_LINE.search(done.stdout)
    counted_s = int(found.group(3)) * 60 + int(found.group(4)) if found else None
    return {
        "measure": measure,
        "record": record,
        "exit": done.returncode,
        "wall_s": round(wall, 1),
        "counted_pass_s": counted_s,
        "counted": f"{found.group(1)}/{found.group(2)}" if found else None,
        "summary": done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "",
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--select", default="", help="-k expression (default: every benchmark)")
    ap.add_argument(
        "--judge",
        default="counts,time",
        help="the measures each judging round runs, comma-separated, the order rotating from "
        "round to round (auto: counts judge what has counts baselines, the time change beside)",
    )
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    judged = [m.strip() for m in args.judge.split(",") if m.strip()]
    unknown = sorted(set(judged) - {"counts", "time", "auto", "both"})
    if unknown or not judged:
        ap.error(f"--judge {args.judge!r}: give measures among auto, time, counts, both")
    scratch = Path(tempfile.mkdtemp(prefix="burnperf-cost-"))
    runs = []
    try:
        for measure in ("counts", "time"):
            runs.append(session(measure, scratch, True, args.select))
            print(runs[-1], flush=True)
        for i in range(args.repeat):
            order = judged[i % len(judged) :] + judged[: i % len(judged)]
            for measure in order:
                runs.append(session(measure, scratch, False, args.select))
                print(runs[-1], flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    doc = {
        "command": "python -m validation.counts_cost " + " ".join(argv or sys.argv[1:]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="minutes"),
        "machine": machine(),
        "runs": runs,
    }
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
