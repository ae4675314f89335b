"""Between-process noise: how far a benchmark's median moves from one fresh process to the next.

The gate needs this spread to tell a slowdown from the luck of a process (memory placement, address
layout, CPU migration). A run with one process on each side cannot see it, so the plugin falls back
on a prior (``between_runs.DEFAULT_PRIOR``); this script measures the figures that prior is chosen from.

It runs the validation harness's workloads (the shipped CPU benchmarks it selects and the nine
synthetic pure-Python, numpy and BLAS workloads) in ``--processes`` fresh pytest processes, one
after another, each with ``--perf-json``, and prints per benchmark the standard deviation of the
log of the process medians, then its quantiles over all benchmarks. ``--out FILE`` keeps them as
JSON. Run it on an otherwise idle machine:

    python -m validation.noise --processes 16 --out docs/data/noise.json
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

from validation.common import log
from validation.run import SHIPPED, SHIPPED_K, SYNTH_PERF, Harness

HERE = Path(__file__).resolve().parent


def run_processes(work: Path, n: int) -> dict[str, list[float]]:
    h = Harness(work)
    h.setup()
    medians: dict[str, list[float]] = {}
    for i in range(n):
        out = work / f"noise-{i}.json"
        args = ["-p", "no:benchmark", "--perf", "--perf-backends", "cpu", "--perf-json", str(out)]
        args += ["--perf-baselines-dir", str(work / "no-baselines"), "-q", SHIPPED, SYNTH_PERF]
        args += ["-k", f"{SHIPPED_K} or test_synthetic"]
        rc, wall, text = h._pytest(args, {})
        if not out.exists():
            raise SystemExit(f"process {i} wrote no results (exit {rc}):\n{text[-3000:]}")
        for r in json.loads(out.read_text())["results"]:
            medians.setdefault(f"{r['module']}::{r['name']}", []).append(r["stats"]["median"])
        log(f"process {i + 1}/{n}: {wall:.1f} s")
    return medians


def spreads(medians: dict[str, list[float]]) -> dict[str, float]:
    return {
        k: statistics.stdev([math.log(v) for v in vs]) for k, vs in medians.items() if len(vs) > 2
    }


def quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]


def fit_prior(sd: dict[str, float], processes: int) -> dict[str, float]:
    """Maximum-likelihood (scale, dof) of the prior, free and with dof fixed at 2."""
    import numpy as np
    from scipy import optimize
    from scipy.stats import f

    v = np.array(list(sd.values())) ** 2
    n = processes - 1

    def nll(log_scale: float, log_dof: float) -> float:
        s0, dof = np.exp(log_scale), np.exp(log_dof)
        return float(-np.sum(f.logpdf(v / s0**2, n, dof) - 2 * log_scale))

    free = optimize.minimize(
        lambda p: nll(p[0], p[1]), [np.log(0.03), np.log(3.0)], method="Nelder-Mead"
    )
    two = optimize.minimize_scalar(
        lambda ls: nll(ls, np.log(2.0)), bounds=(-8, 0), method="bounded"
    )
    return {
        "scale": float(np.exp(free.x[0])),
        "dof": float(np.exp(free.x[1])),
        "scale_at_dof2": float(np.exp(two.x)),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--processes", type=int, default=16)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--fit", type=Path, default=None, help="fit the noise prior to this JSON")
    args = ap.parse_args(argv)
    if args.fit is not None:
        doc = json.loads(args.fit.read_text())
        got = fit_prior(doc["sd"], doc["processes"])
        print(
            f"{len(doc['sd'])} benchmarks, {doc['processes']} processes each: free fit scale "
            f"{100 * got['scale']:.2f}% with {got['dof']:.2f} degrees of freedom; at 2 degrees "
            f"of freedom scale {100 * got['scale_at_dof2']:.2f}%"
        )
        return 0
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    with tempfile.TemporaryDirectory(prefix="burnperf-noise-") as tmp:
        medians = run_processes(Path(tmp) / "work", args.processes)
    sd = spreads(medians)
    for k in sorted(sd, key=sd.__getitem__):
        print(f"{100 * sd[k]:6.2f}%  {k}")
    values = list(sd.values())
    summary = {q: quantile(values, q) for q in (0.25, 0.5, 0.75, 0.9, 1.0)}
    print(
        "sd of log process medians over "
        f"{len(values)} benchmarks, {args.processes} processes each: "
        + ", ".join(f"q{int(100 * q)} {100 * v:.2f}%" for q, v in summary.items())
    )
    if args.out:
        args.out.write_text(
            json.dumps(
                {"started": started, "processes": args.processes, "medians": medians, "sd": sd},
                indent=1,
                sort_keys=True,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
