"""How well ``burnperf history`` finds shifts: synthetic series of run medians with and without a
planted step, through ``history.changepoints.find``.

Noise as the validation harness measured it: each benchmark's between-process spread is drawn
from the fitted prior (scaled inverse chi-square, scale 2.2%, 2 degrees of freedom:
``between_runs.DEFAULT_PRIOR``, docs/validation.md), and a stored run's median averages ``--rounds``
process rounds, so its sd is that spread over sqrt(rounds). A step series gets +10% (``--step``)
from a random run on (at least 5 runs from either end). Reported for several penalties:

* found: the step's run is named within one position (and nothing else is reported);
* found, any: named within one position, other change points allowed;
* quiet: a series without a step reports no change point.

``python -m validation.changepoints --series 1000`` (a few seconds).
"""

from __future__ import annotations

import argparse
import json
import math
import random
from pathlib import Path

from pytest_burnperf.core.judging.between_runs import DEFAULT_PRIOR
from pytest_burnperf.storage.history import changepoints


def spread(rng: random.Random) -> float:
    """A benchmark's between-process sd from the prior: s0^2 * dof / chi2(dof)."""
    chi2 = rng.gammavariate(DEFAULT_PRIOR.dof / 2.0, 2.0)
    return DEFAULT_PRIOR.spread * math.sqrt(DEFAULT_PRIOR.dof / max(chi2, 1e-9))


def one(rng: random.Random, n: int, rounds: int, step: float | None) -> tuple[list[float], int]:
    sd = spread(rng) / math.sqrt(rounds)
    at = rng.randrange(5, n - 5) if step is not None else -1
    values = [
        1e-3 * math.exp(rng.gauss(0.0, sd)) * (step if step is not None and i >= at else 1.0)
        for i in range(n)
    ]
    return values, at


def measure(args: argparse.Namespace, penalty: float) -> dict[str, float]:
    rng = random.Random(args.seed)
    found = found_any = quiet = 0
    for _ in range(args.series):
        values, at = one(rng, args.length, args.rounds, args.step)
        cps = changepoints.find(values, penalty=penalty)
        near = [c for c in cps if abs(c.index - at) <= 1]
        found += bool(near) and len(cps) == 1
        found_any += bool(near)
        values, _ = one(rng, args.length, args.rounds, None)
        quiet += not changepoints.find(values, penalty=penalty)
    n = args.series
    return {"penalty": penalty, "found": found / n, "found_any": found_any / n, "quiet": quiet / n}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--series", type=int, default=1000)
    ap.add_argument("--length", type=int, default=30, help="runs per series")
    ap.add_argument("--rounds", type=int, default=3, help="process rounds per stored run")
    ap.add_argument("--step", type=float, default=1.10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--penalties", default="1,2,3,4,6,8")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    rows = [measure(args, float(p)) for p in args.penalties.split(",")]
    print(
        f"{args.series} series of {args.length} runs ({args.rounds} rounds each), step "
        f"x{args.step:g}, noise from the prior ({100 * DEFAULT_PRIOR.spread:g}%, "
        f"{DEFAULT_PRIOR.dof} dof); default penalty {changepoints.PENALTY:g}"
    )
    print("| penalty | step found within 1 run, alone | found, others allowed | steady: none |")
    print("|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['penalty']:g} | {100 * r['found']:.1f}% | {100 * r['found_any']:.1f}% | "
            f"{100 * r['quiet']:.1f}% |"
        )
    if args.json:
        args.json.write_text(
            json.dumps({"args": vars(args) | {"json": None}, "rows": rows}, indent=1) + "\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
