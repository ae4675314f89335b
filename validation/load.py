"""A light, bursty background load for the validation harnesses: what a laptop with other work
open or a shared CI runner puts beside a benchmark run.

One process that spins the CPU in bursts and sleeps between them, both of random length (bursts
of 20-400 ms, on average about a third of one core with the default ``duty`` of 0.33), so the
interference arrives unannounced and in pieces, as another program's does, rather than as a
steady second core's worth that any round would see alike. It stops by itself after
``seconds`` (a harness kills it sooner). ``python -m validation.load --duty 0.33 --seconds 60``
runs it alone; :func:`start` runs it beside a session.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from pathlib import Path


def run(duty: float, seconds: float, seed: int | None = None) -> None:
    """Spin bursts and sleep gaps whose lengths keep the busy share near ``duty``."""
    rng = random.Random(seed)
    end = time.monotonic() + seconds
    parent = os.getppid()
    while time.monotonic() < end and os.getppid() == parent:  # ends with the harness
        burst = rng.uniform(0.02, 0.4)
        stop = time.perf_counter() + burst
        x = 0
        while time.perf_counter() < stop:
            x += 1
        gap = burst * (1.0 - duty) / duty * rng.uniform(0.5, 1.5)
        time.sleep(min(gap, max(0.0, end - time.monotonic())))


def start(
    duty: float = 0.33, seconds: float = 3600.0, seed: int | None = None
) -> subprocess.Popen[bytes]:
    """The load in a process of its own; stop it with ``.terminate()``."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--duty", str(duty)]
    cmd += ["--seconds", str(seconds)]
    if seed is not None:
        cmd += ["--seed", str(seed)]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duty", type=float, default=0.33, help="busy share of one core (0, 1]")
    ap.add_argument("--seconds", type=float, default=60.0, help="stop after this long")
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args(argv)
    if not 0.0 < args.duty <= 1.0 or args.seconds <= 0:
        ap.error("--duty must lie in (0, 1] and --seconds be positive")
    run(args.duty, args.seconds, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
