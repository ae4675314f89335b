"""The memory gate as a user meets it (issue 75): memory per call judged beside time, in separate
pytest processes.

1. record baselines (``--perf-update``) of the shipped numpy benchmarks and of three planted
   benchmarks (numpy, torch-CPU, pure Python: an operation on an input of 1 M elements);
2. A/A: sessions of unchanged code, each beside a CPU-bound process (``--hog``): how many
   memory verdicts are ``regressed`` (a false alarm) or not judged;
3. planted: sessions in which each planted benchmark holds an extra temporary of its input's
   size (``BURNPERF_MEMORY_PLANT=1``): caught or not, and whether its time verdict moved;
4. the wall time of the shipped numpy benchmarks' run at the defaults (``--perf`` against the
   baselines of step 1, which are time baselines: the clock judges, 3 process rounds) with
   ``--perf-memory on`` and ``off``, alternated, and in each run with memory the seconds its
   tracked calls took (the results' ``memory.tracked_s``; cProfile cannot see them: memray's
   tracker takes the interpreter's profile hook).

    python -m validation.memory_gate --json docs/data/memory-gate.json [--sessions 6]
    python -m validation.memory_gate --json OUT.json --gpu --sessions 2 --walls 0 --hog 0

``--gpu``: the plant on torch-cuda and cupy instead (an array of the input's size held on the
GPU), and no shipped suite: torch's caching allocator's counters and a hook on cupy's pool, on
a lent GPU.

The A/A and planted sessions time with ``--perf-measure time --perf-quick``: the memory
verdict does not depend on how the time was taken, and one round keeps a session short.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_burnperf.host.hardware import cpu_model, hardware_class

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

PLANTS = """
import os

import numpy as np
import pytest

PLANT = os.environ.get("BURNPERF_MEMORY_PLANT") == "1"
N = 1_000_000


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_numpy_scale(perf):
    a = np.random.default_rng(0).random(N)

    def f():
        if PLANT:
            t = a.copy()  # an extra temporary of the input's size, held while the result is made
            out = a * 2.0
            del t
            return out
        return a * 2.0

    perf(f)


@pytest.mark.perf(backends=["torch"], dtypes=["f32"])
def test_torch_scale(perf):
    import torch

    a = torch.rand(N)

    def f():
        if PLANT:
            t = a.clone()
            out = a * 2.0
            del t
            return out
        return a * 2.0

    perf(f)


def test_python_doubled(benchmark):  # pytest-benchmark's fixture, no arrays: python-cpu
    data = [float(i) for i in range(N)]

    def f():
        if PLANT:
            tmp = list(data)  # a copy of the input list, held while the result is made
            out = [x * 2.0 for x in tmp]
            del tmp
            return out
        return [x * 2.0 for x in data]

    benchmark(f)
"""

GPU_PLANTS = """
import os

import pytest

PLANT = os.environ.get("BURNPERF_MEMORY_PLANT") == "1"
N = 1 << 22


@pytest.mark.perf(backends=["cuda"], dtypes=["f32"])
def test_cuda_scale(perf):
    import torch

    a = torch.rand(N, device="cuda")

    def f():
        if PLANT:
            t = a.clone()
            out = a * 2.0
            del t
            return out
        return a * 2.0

    perf(f)


@pytest.mark.perf(backends=["cupy"], dtypes=["f32"])
def test_cupy_scale(perf):
    import cupy

    a = cupy.random.random(N, dtype=cupy.float32)

    def f():
        if PLANT:
            t = a.copy()
            out = a * 2.0
            del t
            return out
        return a * 2.0

    perf(f)
"""

HOG = "import time\nend = time.time() + 36000\nwhile time.time() < end:\n    pass\n"


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _pytest(
    work: Path, args: list[str], env: dict[str, str] | None = None
) -> tuple[float, dict[str, Any]]:
    """Run pytest in ``work`` with ``args``; (wall seconds, the results JSON)."""
    out = work / "r.json"
    out.unlink(missing_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
        "--perf-baselines-dir",
        str(work / "baselines"),
        "--perf-json",
        str(out),
        *args,
    ]
    start = time.perf_counter()
    proc = subprocess.run(
        cmd, cwd=work, env={**os.environ, **(env or {})}, capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    if not out.is_file():
        raise SystemExit(
            f"{' '.join(cmd)} wrote no results (rc {proc.returncode}):\n{proc.stdout[-3000:]}"
        )
    return wall, json.loads(out.read_text())


def _memory(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        r["name"]: {
            "memory": (r.get("memory") or {}).get("status"),
            "peak": ((r.get("memory") or {}).get("figures") or {}).get("peak_bytes"),
            "base_peak": ((r.get("memory") or {}).get("baseline") or {}).get("peak_bytes"),
            "time": r["verdict"]["status"],
        }
        for r in doc["results"]
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, required=True, help="where the raw data goes")
    ap.add_argument("--sessions", type=int, default=6, help="A/A sessions (and planted ones)")
    ap.add_argument("--walls", type=int, default=2, help="default runs with memory on and off")
    ap.add_argument("--hog", type=int, default=1, help="CPU-bound processes beside the sessions")
    ap.add_argument("--gpu", action="store_true", help="the plant on torch-cuda, no shipped suite")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="burnperf-memory-gate-"))
    shutil.copytree(REPO / "perf_tests", work / "perf_tests")
    (work / "test_memory_plants.py").write_text(GPU_PLANTS if args.gpu else PLANTS)
    quick = ["--perf", "--perf-measure", "time", "--perf-quick"]
    shipped = [] if args.gpu else ["perf_tests", "--perf-backends", "numpy"]
    data: dict[str, Any] = {
        "machine": f"{cpu_model()} ({hardware_class()}), {os.cpu_count()} CPUs",
        "python": platform.python_version(),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(["python -m validation.memory_gate", *sys.argv[1:]]),
        "hog": args.hog,
        "gpu": args.gpu,
    }
    _log("recording the shipped numpy benchmarks and the plants")
    if shipped:
        _pytest(work, [*quick, "--perf-update", *shipped])
    _pytest(work, [*quick, "--perf-update", "test_memory_plants.py"])

    hogs = [
        subprocess.Popen([sys.executable, "-c", HOG], stdout=subprocess.DEVNULL)
        for _ in range(args.hog)
    ]
    sessions: list[dict[str, Any]] = []
    try:
        for i in range(args.sessions):
            _log(f"A/A session {i + 1}/{args.sessions}")
            _, doc = _pytest(work, [*quick, *shipped, "test_memory_plants.py"])
            sessions.append({"kind": "A/A", "results": _memory(doc)})
            _log(f"planted session {i + 1}/{args.sessions}")
            _, doc = _pytest(
                work, [*quick, "test_memory_plants.py"], {"BURNPERF_MEMORY_PLANT": "1"}
            )
            sessions.append({"kind": "planted", "results": _memory(doc)})
    finally:
        for h in hogs:
            h.kill()
    walls: list[dict[str, Any]] = []
    for i in range(args.walls):
        for memory in ("on", "off") if i % 2 == 0 else ("off", "on"):
            _log(f"default run of the shipped numpy benchmarks, memory {memory}")
            wall, doc = _pytest(work, ["--perf", "--perf-memory", memory, *shipped])
            walls.append(
                {
                    "memory": memory,
                    "wall_s": round(wall, 2),
                    "judged_by": dict(Counter(r.get("measure", "time") for r in doc["results"])),
                    "benchmarks": len(doc["results"]),
                    # what judging memory cost: each benchmark's tracked calls, tracker included
                    "tracked_s": round(
                        sum((r.get("memory") or {}).get("tracked_s", 0.0) for r in doc["results"]),
                        2,
                    ),
                }
            )
    data["sessions"] = sessions
    data["walls"] = walls
    data["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    args.json.write_text(json.dumps(data, indent=1) + "\n")
    shutil.rmtree(work, ignore_errors=True)
    summary(data)


def summary(data: dict[str, Any]) -> None:
    """What the raw data says, as docs/validation.md gives it."""
    aa = [r for s in data["sessions"] if s["kind"] == "A/A" for r in s["results"].values()]
    planted = [
        (name, r)
        for s in data["sessions"]
        if s["kind"] == "planted"
        for name, r in s["results"].items()
    ]
    print(f"A/A: {len(aa)} memory verdicts: {dict(Counter(r['memory'] for r in aa))}")
    caught = Counter(name for name, r in planted if r["memory"] == "regressed")
    every = Counter(name for name, _ in planted)
    for name in sorted(every):
        times = Counter(r["time"] for n, r in planted if n == name)
        print(
            f"planted {name}: caught {caught[name]} of {every[name]}; time verdicts {dict(times)}"
        )
    on = [w["wall_s"] for w in data["walls"] if w["memory"] == "on"]
    off = [w["wall_s"] for w in data["walls"] if w["memory"] == "off"]
    if on and off:
        growth = 100.0 * (sum(on) / len(on) - sum(off) / len(off)) / (sum(off) / len(off))
        print(f"default run walls: on {on}, off {off}: {growth:+.1f}%")
    for w in data["walls"]:
        if w["memory"] == "on" and w.get("tracked_s") is not None:
            print(
                f"memory on: {w['tracked_s']} s of {w['wall_s']} s tracking memory "
                f"({100 * w['tracked_s'] / w['wall_s']:.1f}%)"
            )


if __name__ == "__main__":
    main()
