"""``burnperf bisect`` against planted regressions (issue 56's targets).

Each trial builds a git repository of ``--commits`` commits (a pip-installable package and two
benchmarks of it): a numeric benchmark (numpy's add over more elements: ``--numeric`` more
work) and a pure-Python one (a loop of more iterations: ``--python`` more work), each slowed at
a commit of its own drawn at random, and one commit whose pyproject does not parse (it cannot be
installed) drawn at random too. ``burnperf bisect good HEAD --json`` then runs on it, and the
trial records whether each plant was found at exactly its commit, the probes it took and the
wall time per probe.

``python -m validation.bisection --trials 3 --out docs/data/bisect.json``

``--device torch-cuda0`` plants on a device instead: one benchmark, a chain of ``REPEAT`` f32
matrix products on that device (``--device-n`` square), one more product at the planted commit
(``--numeric``, e.g. 1.10 for 10 -> 11), and a commit that cannot be installed; bisected by device
time beside the good commit. ``--device torch-cpu --measure time`` runs the same on the CPU's
clock (a dry run of the harness, or the "by time" figure).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from validation.common import machine
from validation.same_session import PYPROJECT  # a src-layout package, setuptools

PACKAGE = """
import numpy as np

N = {n}
A, B, OUT = np.arange(N, dtype=np.float64), np.ones(N), np.empty(N)


def numeric():
    np.add(A, B, out=OUT)
    return float(OUT[-1])


def pure(k={k}):
    total = 0
    for i in range(k):
        total += i * i % 7
    return total
"""

BENCH = """
import pytest
import plantpkg


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_numeric(perf):
    assert perf(plantpkg.numeric) > 0


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_pure(perf):
    assert perf(plantpkg.pure) > 0
"""

GIT_ENV = {
    "GIT_AUTHOR_NAME": "v",
    "GIT_AUTHOR_EMAIL": "v@example.invalid",
    "GIT_COMMITTER_NAME": "v",
    "GIT_COMMITTER_EMAIL": "v@example.invalid",
}


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), *args],
        check=True,
        capture_output=True,
        env={**os.environ, **GIT_ENV},
    )


def build(
    root: Path, commits: int, plants: dict[str, int], broken: int, sizes: dict[str, float]
) -> None:
    """``commits`` commits in ``root``; commit ``plants[name]`` slows ``name``; ``broken`` holds a
    pyproject that does not parse."""
    (root / "src" / "plantpkg").mkdir(parents=True)
    (root / "test_plant.py").write_text(BENCH)
    (root / ".gitignore").write_text("__pycache__/\n")
    _git(root, "init", "-q", "-b", "main")
    n, k = 200_000, 20_000
    for i in range(commits):
        if i == plants["numeric"]:
            n = round(n * sizes["numeric"])
        if i == plants["pure"]:
            k = round(k * sizes["pure"])
        (root / "src" / "plantpkg" / "__init__.py").write_text(PACKAGE.format(n=n, k=k))
        (root / "pyproject.toml").write_text("[project\n" if i == broken else PYPROJECT)
        (root / "NOTES").write_text(f"commit {i}\n")
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", f"commit {i}")
        if i == 0:
            _git(root, "tag", "good")


DEVICE_PACKAGE = """
REPEAT = {repeat}


def chain(lib, a, b, c):
    for _ in range(REPEAT):
        lib.matmul(a, b, out=c)
"""

DEVICE_BENCH = """
import pytest
import plantpkg


@pytest.mark.perf(backends=["{backend}"], dtypes=["f32"])
def test_device(perf, device, dtype):
    a = device.random(({n}, {n}), dtype)
    b = device.random(({n}, {n}), dtype)
    c = device.zeros(({n}, {n}), dtype)
    perf(plantpkg.chain, device.lib, a, b, c)
"""


def build_device(
    root: Path, commits: int, at: int, broken: int, factor: float, backend: str, n: int
) -> None:
    """``commits`` commits in ``root`` of a device benchmark: ``REPEAT`` products of ``n`` x
    ``n`` matrices, ``round(10 * factor)`` from commit ``at``; ``broken`` cannot be installed."""
    (root / "src" / "plantpkg").mkdir(parents=True)
    (root / "test_plant.py").write_text(DEVICE_BENCH.format(backend=backend, n=n))
    (root / ".gitignore").write_text("__pycache__/\n")
    _git(root, "init", "-q", "-b", "main")
    for i in range(commits):
        repeat = round(10 * factor) if i >= at else 10
        (root / "src" / "plantpkg" / "__init__.py").write_text(DEVICE_PACKAGE.format(repeat=repeat))
        (root / "pyproject.toml").write_text("[project\n" if i == broken else PYPROJECT)
        (root / "NOTES").write_text(f"commit {i}\n")
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", f"commit {i}")
        if i == 0:
            _git(root, "tag", "good")


def _bisect(
    root: Path, cache: Path, extra: list[str]
) -> tuple[subprocess.CompletedProcess[str], float]:
    t0 = time.monotonic()
    ran = subprocess.run(
        [sys.executable, "-m", "pytest_burnperf.cli", "bisect", "good", "HEAD", "--json", *extra],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, "BURNPERF_ENV_CACHE": str(cache), "PYTHONPATH": str(root / "src")},
        check=False,
    )
    return ran, time.monotonic() - t0


def device_trial(
    commits: int, rng: random.Random, factor: float, cache: Path, args: argparse.Namespace
) -> dict[str, Any]:
    at = rng.choice(range(2, commits - 1))
    broken = rng.choice([i for i in range(1, commits - 1) if i != at])
    with tempfile.TemporaryDirectory(prefix="burnperf-bisect-trial-") as tmp:
        root = Path(tmp)
        build_device(root, commits, at, broken, factor, args.device, args.device_n)
        extra = ["--measure", args.measure] if args.measure else []
        ran, wall = _bisect(root, cache, extra)
        if ran.returncode != 0:
            return {"plant": at, "broken": broken, "error": ran.stderr[-2000:], "wall_s": wall}
        doc = json.loads(ran.stdout)
    steps = [
        {
            "at": int(s["at"]["subject"].split()[-1]),
            "before": int(s["before"]["subject"].split()[-1]),
            "ratio": s["ratio"],
            "measure": s["measure"],
        }
        for steps in doc["benchmarks"].values()
        for s in steps
    ]
    exact = [s["at"] for s in steps] == [at] and (
        steps[0]["before"] == at - 1 or (broken == at - 1 and steps[0]["before"] == at - 2)
    )
    return {
        "plant": at,
        "broken": broken,
        "found": steps,
        "exact": exact,
        "within": doc["within"],
        "skipped": [int(s["subject"].split()[-1]) for s in doc["skipped"]],
        "probes": len(doc["probed"]),
        "probe_bound": 2 * math.log2(commits) + 2,
        "seconds_per_probe": doc["seconds"],
        "wall_s": wall,
    }


def trial(
    commits: int,
    rng: random.Random,
    sizes: dict[str, float],
    cache: Path,
    measure: str | None = None,
) -> dict[str, Any]:
    numeric, pure = rng.sample(range(2, commits - 1), 2)
    broken = rng.choice([i for i in range(1, commits - 1) if i not in (numeric, pure)])
    plants = {"numeric": numeric, "pure": pure}
    with tempfile.TemporaryDirectory(prefix="burnperf-bisect-trial-") as tmp:
        root = Path(tmp)
        build(root, commits, plants, broken, sizes)
        ran, wall = _bisect(root, cache, ["--measure", measure] if measure else [])
        if ran.returncode != 0:
            return {"plants": plants, "broken": broken, "error": ran.stderr[-2000:], "wall_s": wall}
        doc = json.loads(ran.stdout)
    found: dict[str, Any] = {}
    for name, steps in doc["benchmarks"].items():
        key = "numeric" if "test_numeric" in name else "pure"
        found[key] = [
            {
                "at": int(s["at"]["subject"].split()[-1]),
                "before": int(s["before"]["subject"].split()[-1]),
                "ratio": s["ratio"],
            }
            for s in steps
        ]
    exact = {
        key: [f["at"] for f in found.get(key, [])] == [at]
        or (
            # the broken commit right before the plant: the step spans it
            len(found.get(key, [])) == 1
            and found[key][0]["at"] == at
            and found[key][0]["before"] == at - 2
            and broken == at - 1
        )
        for key, at in plants.items()
    }
    return {
        "plants": plants,
        "broken": broken,
        "found": found,
        "exact": exact,
        "within": doc["within"],
        "skipped": [int(s["subject"].split()[-1]) for s in doc["skipped"]],
        "probes": len(doc["probed"]),
        "probe_bound": 2 * (2 * math.log2(commits) + 2),
        "seconds_per_probe": doc["seconds"],
        "wall_s": wall,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--commits", type=int, default=64)
    ap.add_argument("--numeric", type=float, default=1.10, help="the numeric plant's work factor")
    ap.add_argument("--python", type=float, default=1.03, help="the pure-Python plant's factor")
    ap.add_argument("--seed", type=int, default=56)
    ap.add_argument("--device", default=None, help="plant on this device (e.g. torch-cuda0)")
    ap.add_argument("--device-n", type=int, default=2048, help="the device matrices' size")
    ap.add_argument("--measure", choices=("auto", "counts", "time"), default=None)
    ap.add_argument("--minutes", type=float, default=None, help="start no trial after this")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    sizes = {"numeric": args.numeric, "pure": args.python}
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    trials = []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="burnperf-bisect-envs-") as cache:
        for i in range(args.trials):
            if args.minutes is not None and time.monotonic() - t0 > 60 * args.minutes:
                break
            if args.device:
                got = device_trial(args.commits, rng, args.numeric, Path(cache), args)
            else:
                got = trial(args.commits, rng, sizes, Path(cache), args.measure)
            trials.append(got)
            keys = ("plants", "plant", "broken", "exact", "probes", "wall_s", "error")
            brief = {k: got[k] for k in keys if k in got}
            print(f"trial {i + 1}/{args.trials}: {json.dumps(brief)}", flush=True)
            if args.out:
                args.out.write_text(
                    json.dumps(
                        {
                            "what": "validation/bisection.py: burnperf bisect on planted repositories",
                            "command": "python -m validation.bisection "
                            + " ".join(argv or sys.argv[1:]),
                            "started": started,
                            "machine": machine(),
                            "commits": args.commits,
                            "sizes": sizes,
                            "device": args.device,
                            "trials": trials,
                        },
                        indent=1,
                    )
                    + "\n"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
