"""``burnperf bisect`` against planted regressions (issue 56's targets).

Each trial builds a git repository of ``--commits`` commits (a pip-installable package and two
benchmarks of it): a numeric benchmark (numpy's add over more elements: ``--numeric`` more
work) and a pure-Python one (a loop of more iterations: ``--python`` more work), each slowed at
a commit of its own drawn at random, and one commit whose pyproject does not parse (it cannot be
installed) drawn at random too. ``burnperf bisect good HEAD --json`` then runs on it, and the
trial records whether each plant was found at exactly its commit, the probes it took and the
wall time per probe.

``python -m validation.bisection --trials 3 --out docs/data/bisect.json``
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


def trial(commits: int, rng: random.Random, sizes: dict[str, float], cache: Path) -> dict[str, Any]:
    numeric, pure = rng.sample(range(2, commits - 1), 2)
    broken = rng.choice([i for i in range(1, commits - 1) if i not in (numeric, pure)])
    plants = {"numeric": numeric, "pure": pure}
    with tempfile.TemporaryDirectory(prefix="burnperf-bisect-trial-") as tmp:
        root = Path(tmp)
        build(root, commits, plants, broken, sizes)
        t0 = time.monotonic()
        ran = subprocess.run(
            [sys.executable, "-m", "pytest_burnperf.cli", "bisect", "good", "HEAD", "--json"],
            cwd=root,
            capture_output=True,
            text=True,
            env={**os.environ, "BURNPERF_ENV_CACHE": str(cache), "PYTHONPATH": str(root / "src")},
            check=False,
        )
        wall = time.monotonic() - t0
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
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    sizes = {"numeric": args.numeric, "pure": args.python}
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    trials = []
    with tempfile.TemporaryDirectory(prefix="burnperf-bisect-envs-") as cache:
        for i in range(args.trials):
            got = trial(args.commits, rng, sizes, Path(cache))
            trials.append(got)
            brief = {k: got.get(k) for k in ("plants", "broken", "exact", "probes", "wall_s")}
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
                            "trials": trials,
                        },
                        indent=1,
                    )
                    + "\n"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
