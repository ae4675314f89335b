"""False alarms and power of the gate's decision rule, by simulation: what a benchmark whose
process medians scatter by ``sigma`` needs in rounds to catch +10%.

Each simulated comparison draws ``k`` baseline and ``m`` current process runs. A run's level is
``shift + N(0, sigma)`` on the log scale (with probability ``--outliers`` a process is slowed by a
disturbed host, by 10-60%), and its ``--samples`` samples scatter around that level by 1%
(lognormal). ``compare.judge`` (this checkout's rule, with the default prior and the family-wise
alpha of a session of ``--comparisons`` benchmarks) gives the verdict. Printed per sigma and
rounds: the share of ``regressed`` verdicts for unchanged code (false alarms) and for +5%, +10%
and +20% (power), and the median noise floor. Nothing is timed, so it runs anywhere:

    python -m validation.power --reps 2000
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time

from pytest_burnperf.core.judging.verdict import REGRESSED, Policy, judge

SHIFTS = (0.0, 0.05, 0.10, 0.20)


def runs(
    rng: random.Random, count: int, shift: float, sigma: float, outliers: float, n: int
) -> list[list[float]]:
    out = []
    for _ in range(count):
        level = math.log1p(shift) + rng.gauss(0.0, sigma)
        if rng.random() < outliers:
            level += math.log(1.0 + rng.uniform(0.1, 0.6))
        out.append([math.exp(level + rng.gauss(0.0, 0.01)) for _ in range(n)])
    return out


def simulate(
    sigma: float,
    k: int,
    m: int,
    *,
    reps: int,
    outliers: float,
    comparisons: int,
    samples: int,
    seed: int = 0,
) -> dict[str, float]:
    rng = random.Random(seed)
    policy = Policy(alpha=0.01, threshold=0.05, comparisons=comparisons)
    out: dict[str, float] = {}
    floors: list[float] = []
    for shift in SHIFTS:
        hits = 0
        for _ in range(reps):
            base = runs(rng, k, 0.0, sigma, outliers, samples)
            cur = runs(rng, m, shift, sigma, outliers, samples)
            v = judge(base, cur, policy)
            hits += v.status == REGRESSED
            if shift == 0.0 and v.effect is not None:
                floors.append(v.effect)
        out[f"{shift:+.0%}"] = hits / reps
    out["floor"] = statistics.median(floors) if floors else math.nan
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--sigmas", default="0.003,0.01,0.02,0.03,0.06")
    ap.add_argument("--rounds", default="1x1,3x1,3x3,5x5,8x8,12x12", help="KxM: baseline x current")
    ap.add_argument("--outliers", type=float, default=0.0, help="share of disturbed processes")
    ap.add_argument("--comparisons", type=int, default=27)
    ap.add_argument("--samples", type=int, default=20, help="samples per process run")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    print(
        f"alpha 0.01 family-wise over {args.comparisons} comparisons, threshold 5%, "
        f"{args.samples} samples a run, outlier processes {args.outliers:.0%}, {args.reps} reps"
    )
    print(
        f"{'sigma':>6} {'rounds':>7} {'false alarms':>13} {'+5%':>6} {'+10%':>6} {'+20%':>6} floor"
    )
    for sigma in (float(s) for s in args.sigmas.split(",")):
        for spec in args.rounds.split(","):
            k, m = (int(x) for x in spec.lower().split("x"))
            r = simulate(
                sigma,
                k,
                m,
                reps=args.reps,
                outliers=args.outliers,
                comparisons=args.comparisons,
                samples=args.samples,
            )
            print(
                f"{sigma:6.1%} {spec:>7} {r['+0%']:13.2%} {r['+5%']:6.0%} {r['+10%']:6.0%} "
                f"{r['+20%']:6.0%} +{r['floor']:.1%}",
                flush=True,
            )
    print(f"{time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
