"""Are rounds forked from one prepared process as independent as fresh processes?

A process round that starts a fresh interpreter pays start-up, pytest's collection and the heavy
imports (torch: 1-2 s) every time. Forking each round from one process that has already done all
that pays them once. The price could be independence: every fork inherits the same hash seed and
the same virtual address layout, and a session's rounds all come from one parent. If those
mattered, forked rounds would agree with each other more than fresh processes do, and the parent
would add a shift that all of a session's rounds share and that their spread cannot show.

This script runs the workloads of ``variance_sources.py`` (same child code) both ways, interleaved
in time: ``--parents`` prepared parents (zygotes) each forking ``--forks`` rounds, and as many
fresh processes. Per workload it reports the sd of the log process medians of the fresh processes,
the sd within one parent's forks, and the between-parent component (one-way random-effects
analysis of variance). Forked rounds are usable for the gate when the within-parent sd is about
the fresh sd and the between-parent component is about zero.

    python -m validation.fork_rounds --parents 8 --forks 6 --torch --out docs/data/fork-rounds.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from validation.variance_sources import CHILD

#: A prepared parent: imports once, then forks one measuring child per line on stdin (a path for
#: the child's JSON), answering each with a line once the child has exited.
ZYGOTE = r"""
import os, sys
flags = sys.argv[1]
import numpy
from threadpoolctl import threadpool_limits
if "torch" in flags.split(","):
    import torch
child = sys.argv[2]
for line in sys.stdin:
    path = line.strip()
    pid = os.fork()
    if pid == 0:
        try:
            with open(path, "w") as out:
                sys.stdout = out
                sys.argv = ["-c", flags]
                exec(compile(child, "<child>", "exec"), {"__name__": "__main__"})
                out.flush()
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    print(status, flush=True)
"""


def env() -> dict[str, str]:
    e = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    e.pop("PYTHONHASHSEED", None)
    return e


def fresh(flags: str) -> dict[str, list[float]]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, flags], env=env(), capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"fresh process failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def log_median(xs: list[float]) -> float:
    return math.log(statistics.median(xs))


def analyse(doc: dict) -> dict[str, dict[str, float]]:
    """Per workload, in log units: ``fresh`` (sd of fresh process medians), ``within`` (pooled sd
    of the forks of one parent), ``between_parents`` (the parent component's sd, 0 when the
    parents' means scatter no more than their forks predict) and ``ratio`` (within / fresh)."""
    out: dict[str, dict[str, float]] = {}
    for name in doc["fresh"][0]:
        fr = [log_median(p[name]) for p in doc["fresh"]]
        groups = [[log_median(f[name]) for f in parent] for parent in doc["forked"]]
        k = len(groups[0])
        ms_within = statistics.fmean(statistics.variance(g) for g in groups)
        ms_between = k * statistics.variance([statistics.fmean(g) for g in groups])
        comp = max(0.0, (ms_between - ms_within) / k)
        out[name] = {
            "fresh": statistics.stdev(fr),
            "within": math.sqrt(ms_within),
            "between_parents": math.sqrt(comp),
            "f_ratio": ms_between / ms_within if ms_within > 0 else math.inf,
            "fresh_minus_forked_median": statistics.median(fr)
            - statistics.median(x for g in groups for x in g),
        }
    return out


def print_table(table: dict[str, dict[str, float]], parents: int, forks: int) -> None:
    print(
        f"{'workload':14} {'fresh sd':>9} {'within-parent sd':>17} {'between-parent sd':>18} "
        f"{'F (' + str(parents - 1) + ',' + str(parents * (forks - 1)) + ')':>10} "
        f"{'fresh - forked':>15}"
    )
    for name, r in table.items():
        print(
            f"{name:14} {100 * r['fresh']:8.2f}% {100 * r['within']:16.2f}% "
            f"{100 * r['between_parents']:17.2f}% {r['f_ratio']:10.2f} "
            f"{100 * r['fresh_minus_forked_median']:+14.2f}%"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parents", type=int, default=8)
    ap.add_argument("--forks", type=int, default=6)
    ap.add_argument("--torch", action="store_true", help="add a torch matmul (slower start-up)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--analyse", type=Path, default=None, help="print the table of a saved run")
    args = ap.parse_args(argv)
    if args.analyse is not None:
        doc = json.loads(args.analyse.read_text())
        print_table(analyse(doc), len(doc["forked"]), len(doc["forked"][0]))
        return 0
    if args.parents < 2 or args.forks < 2:
        ap.error("--parents and --forks must be at least 2")
    flags = "torch" if args.torch else "-"
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    doc: dict = {"started": started, "fresh": [], "forked": []}
    t0 = time.monotonic()
    fork_s: list[float] = []
    fresh_s: list[float] = []
    with tempfile.TemporaryDirectory(prefix="fork-rounds-") as tmp:
        for p in range(args.parents):
            zygote = subprocess.Popen(
                [sys.executable, "-c", ZYGOTE, flags, CHILD],
                env=env(),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            assert zygote.stdin is not None and zygote.stdout is not None
            runs = []
            for f in range(args.forks):
                t = time.monotonic()
                doc["fresh"].append(fresh(flags))
                fresh_s.append(time.monotonic() - t)
                path = Path(tmp, f"p{p}f{f}.json")
                t = time.monotonic()
                zygote.stdin.write(f"{path}\n")
                zygote.stdin.flush()
                status = zygote.stdout.readline().strip()
                fork_s.append(time.monotonic() - t)
                if status != "0":
                    raise SystemExit(f"forked child failed (wait status {status})")
                runs.append(json.loads(path.read_text()))
            zygote.stdin.close()
            zygote.wait()
            doc["forked"].append(runs)
            print(f"parent {p + 1}/{args.parents}, {time.monotonic() - t0:.0f} s", flush=True)
    doc["seconds"] = {"fresh": statistics.median(fresh_s), "forked": statistics.median(fork_s)}
    doc["command"] = "python -m validation.fork_rounds " + " ".join(argv or sys.argv[1:])
    print_table(analyse(doc), args.parents, args.forks)
    print(
        f"median seconds a round: fresh process {doc['seconds']['fresh']:.2f}, "
        f"forked {doc['seconds']['forked']:.2f}"
    )
    if args.out:
        args.out.write_text(json.dumps(doc, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
