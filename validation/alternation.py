"""How long a turn should be: two live processes taking turns in windows of different lengths.

Issue 28, item 4. A same-session comparison measures the reference and the current code in
interleaved process rounds; each side measures a benchmark for about a second before the other
side's turn. The host's slow spells last from a few hundred milliseconds to over a second
(docs/validation.md, "Inside one process"), so one side of a pair can sit in a spell the other
missed. This script measures, for the same cost, how precise an A/A comparison is when the two
sides take turns of different lengths:

* each *repetition* starts ``--pairs`` fresh pairs of processes, one after the other, both
  processes of a pair the same program (A/A, so the true ratio is 1);
* inside a pair, both processes are started and warmed, then each measures the workload for
  ``--seconds`` in all, in ``turns`` turns that alternate between the two (side order drawn at
  random in each turn): ``turns=1`` is today's rounds (one block a side per pair), larger counts
  are shorter windows;
* a pair's estimate is the log of the ratio of the two sides' medians; a repetition's estimate is
  the mean over its pairs. Its spread over the repetitions (sd of the log estimate) is the
  precision a verdict of that cost can have; the within-pair spread of per-turn ratios and the
  between-pair spread are reported too, since a verdict must estimate its own error from them.

Every turn length is measured in every repetition, in a shuffled order, so that the host's drift
hits all alike. ``--load`` runs ``validation/load.py`` (a bursty third of a core) beside every
other repetition. The children are plain Python processes, not pytest:

    python -m validation.alternation --repetitions 12 --load 0.33 --out docs/alternation.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from validation import load as _load

HERE = Path(__file__).resolve().parent


#: A child: sets up one workload, warms it, says "ready", then for each "TURN SECONDS" line on
#: stdin times calls of the workload for that long and answers with their durations.
CHILD = r"""
import json, os, sys, time
name = sys.argv[1]
if sys.argv[2] != "-":
    os.sched_setaffinity(0, {int(sys.argv[2])})
import numpy as np
rng = np.random.default_rng(1)

def make(name):
    if name == "python":
        def f():
            t = 0
            for i in range(20000):
                t += (i * i) & 0xFF
            return t
        return f
    if name == "dict":
        keys = [f"k{i}" for i in range(8000)]
        return lambda: len({k: i for i, k in enumerate(keys)})
    if name == "sort":
        x = rng.random(60000)
        return lambda: np.sort(x)
    if name == "memory":
        a, b = rng.random(2_000_000), rng.random(2_000_000)
        out = np.empty_like(a)
        return lambda: np.add(a, b, out=out)
    if name == "blas":
        a, b = rng.random((160, 160)), rng.random((160, 160))
        return lambda: [a @ b for _ in range(4)]
    raise SystemExit(f"unknown workload {name}")

f = make(name)
end = time.perf_counter() + 0.3
while time.perf_counter() < end:
    f()
print("ready", flush=True)
clock = time.perf_counter
for line in sys.stdin:
    seconds = float(line.split()[1])
    times = []
    stop = clock() + seconds
    while True:
        t0 = clock()
        f()
        t1 = clock()
        times.append(t1 - t0)
        if t1 >= stop:
            break
    print(json.dumps(times), flush=True)
"""

WORKLOADS = ("python", "dict", "sort", "memory", "blas")


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"
    return env


class Side:
    def __init__(self, workload: str, cpu: int | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, workload, "-" if cpu is None else str(cpu)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=child_env(),
        )

    def ready(self) -> None:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            raise RuntimeError(f"child did not start: {line!r}")

    def turn(self, seconds: float) -> list[float]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"TURN {seconds}\n")
        self.proc.stdin.flush()
        times: list[float] = json.loads(self.proc.stdout.readline())
        return times

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


def pair(
    workload: str, turns: int, seconds: float, rng: random.Random, pin: str = "none"
) -> dict[str, object]:
    """One pair of live processes taking ``turns`` turns each, ``seconds`` a side in all;
    ``pin``: ``same`` binds both to one CPU (drawn per pair), ``none`` leaves them free."""
    cpu = rng.choice(sorted(os.sched_getaffinity(0))) if pin == "same" else None
    a, b = Side(workload, cpu), Side(workload, cpu)
    try:
        a.ready()
        b.ready()
        sides: dict[str, list[float]] = {"a": [], "b": []}
        per_turn = []
        for _ in range(turns):
            order = [("a", a), ("b", b)]
            rng.shuffle(order)
            got = {}
            for label, side in order:
                got[label] = side.turn(seconds / turns)
                sides[label].extend(got[label])
            per_turn.append(math.log(statistics.median(got["a"]) / statistics.median(got["b"])))
    finally:
        a.close()
        b.close()
    return {
        "log_ratio": math.log(statistics.median(sides["a"]) / statistics.median(sides["b"])),
        "turn_log_ratios": per_turn,
        "samples": [len(sides["a"]), len(sides["b"])],
    }


def sd(xs: list[float]) -> float:
    return statistics.stdev(xs) if len(xs) > 1 else float("nan")


def key(turns: int, pin: str) -> str:
    """A condition's name in the results: the turn count, ``-same`` where both sides shared
    one CPU."""
    return str(turns) if pin == "none" else f"{turns}-{pin}"


def analyse(
    reps: list[dict[str, object]], workloads: list[str], conditions: list[tuple[int, str]]
) -> dict[str, object]:
    out: dict[str, object] = {}
    for loaded in (False, True, None):
        chosen = [r for r in reps if loaded is None or r["loaded"] == loaded]
        if not chosen:
            continue
        part = {False: "quiet", True: "loaded", None: "all"}[loaded]
        table: dict[str, dict[str, object]] = {}
        for w in workloads:
            for t, pin in conditions:
                ests, pairs_, turns_ = [], [], []
                for r in chosen:
                    got = r["results"][w][key(t, pin)]  # type: ignore[index]
                    logs = [p["log_ratio"] for p in got]
                    ests.append(statistics.fmean(logs))
                    pairs_.extend(logs)
                    for p in got:
                        turns_.extend(p["turn_log_ratios"])
                table.setdefault(w, {})[key(t, pin)] = {
                    "repetitions": len(ests),
                    "sd_estimate_pct": 100 * sd(ests),
                    "sd_pair_pct": 100 * sd(pairs_),
                    "sd_turn_pct": 100 * sd(turns_) if t > 1 else None,
                    "worst_estimate_pct": 100 * max(abs(e) for e in ests),
                }
        out[part] = table
    return out


def report(
    a: dict[str, object], conditions: list[tuple[int, str]], seconds: float, pairs: int
) -> str:
    lines = []
    for part, table in a.items():
        lines.append(f"\n{part}: sd of a repetition's log ratio (its precision), in %")
        head = " | ".join(
            f"{seconds / t:.3g} s turns" + ("" if pin == "none" else f", {pin} CPU")
            for t, pin in conditions
        )
        lines.append(f"| workload | {head} |")
        lines.append("|---|" + "---|" * len(conditions))
        for w, row in table.items():  # type: ignore[attr-defined]
            cells = " | ".join(
                f"{row[key(t, pin)]['sd_estimate_pct']:.2f} "
                f"(pair {row[key(t, pin)]['sd_pair_pct']:.2f})"
                for t, pin in conditions
            )
            lines.append(f"| {w} | {cells} |")
    lines.append(f"\n({pairs} process pairs a repetition, {seconds:g} s a side per pair)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repetitions", type=int, default=12)
    ap.add_argument("--pairs", type=int, default=3, help="process pairs per repetition")
    ap.add_argument("--seconds", type=float, default=1.0, help="seconds a side per pair")
    ap.add_argument("--turns", default="1,4,16", help="turn counts per pair, comma-separated")
    ap.add_argument(
        "--pins",
        default="none",
        help="none (the sides run where the scheduler puts them) and/or same (both sides of a "
        "pair bound to one CPU, drawn per pair), comma-separated",
    )
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--load", type=float, default=0.0, help="duty of validation/load.py beside")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    pins = [x for x in args.pins.split(",") if x]
    if set(pins) - {"none", "same"}:
        ap.error(f"--pins {args.pins}: allowed: none, same")
    conditions = [(int(t), pin) for t in args.turns.split(",") for pin in pins]
    workloads = [w for w in args.workloads.split(",") if w]
    unknown = sorted(set(workloads) - set(WORKLOADS))
    if unknown:
        ap.error(f"unknown workload(s) {', '.join(unknown)}; allowed: {', '.join(WORKLOADS)}")
    rng = random.Random(args.seed)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    reps: list[dict[str, object]] = []
    for rep in range(args.repetitions):
        loaded = bool(args.load) and rep % 2 == 1
        background = _load.start(args.load, seed=rep) if loaded else None
        try:
            results: dict[str, dict[str, list[dict[str, object]]]] = {}
            jobs = [(w, t, pin) for w in workloads for t, pin in conditions]
            rng.shuffle(jobs)
            for w, t, pin in jobs:
                results.setdefault(w, {})[key(t, pin)] = [
                    pair(w, t, args.seconds, rng, pin) for _ in range(args.pairs)
                ]
        finally:
            if background is not None:
                background.terminate()
                background.wait()
        reps.append({"loaded": loaded, "results": results})
        if args.out:  # the raw figures so far, should the run be stopped
            args.out.with_suffix(".partial.json").write_text(json.dumps(reps))
        print(
            f"repetition {rep + 1}/{args.repetitions} done ({'loaded' if loaded else 'quiet'})",
            flush=True,
        )
    a = analyse(reps, workloads, conditions)
    text = report(a, conditions, args.seconds, args.pairs)
    print(text)
    if args.out:
        doc = {
            "started": started,
            "machine": platform.processor() or platform.machine(),
            "command": "python -m validation.alternation " + " ".join(argv or sys.argv[1:]),
            "settings": vars(args) | {"out": str(args.out)},
            "analysis": a,
            "repetitions": reps,
        }
        args.out.write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
