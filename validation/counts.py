"""Validation of the counted measure (``--perf-measure counts``): false alarms, undecided
benchmarks, +5% caught, the minimum detectable slowdown, quiet and beside a background load,
and what a counted session costs against a timed one of the same benchmarks.

Workloads (``validation/synthetic/workloads.py`` plus two of this harness's own): pure Python
and numpy at about 0.1 ms and 1 ms, BLAS at 0.1 ms, a sort, an allocation-heavy and a
dict-hashing workload, a cache-bound gather (random reads from a 64 MiB array: far beyond the
simulated 8 MiB last level) and a threaded one (BLAS on two threads). ``--heavy`` adds numeric
kernels of about 15-100 ms a call (BLAS matmuls, LAPACK solves, sorts), which counted processes
run with the libraries' portable kernels (docs/gate.md, "Portable kernels").
``--measure auto`` records and judges as a plain ``pytest --perf`` does (the default measure);
``counts`` (the default here) names ``--perf-measure counts``.

1. record counts baselines once, and time baselines at the CI settings;
2. ``--sessions`` counted sessions, every other one beside ``validation.load`` (a bursty third
   of a core): in each, a rotating half of the workloads does 5% more work (``--plant``)
   (``BURNPERF_VALIDATE_KNOBS``), the other half is unchanged;
3. ``--timed`` timed sessions of the same benchmarks and knobs, for the wall time of each;
4. with ``--peers``, every session also runs the synthetic workloads under pytest-benchmark's
   defaults (judged by ``--benchmark-compare-fail=median:5%`` against a saved run) and
   ``asv continuous --factor 1.05`` (validation/asv_compare.py), same knobs, same background.

``python -m validation.counts --sessions 20 --timed 2 --peers --out docs/data/counts.json``
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from validation import load
from validation.common import cp, machine

HERE = Path(__file__).resolve().parent
NAMES = (
    "python-0.1ms",
    "python-1ms",
    "numpy-0.1ms",
    "numpy-1ms",
    "blas-0.1ms",
    "sort-1ms",
    "alloc-1ms",
    "dict-1ms",
    "cache-gather",
    "threaded-blas",
)
PLANT = 1.05

EXTRA = """
import numpy as np
import pytest
from workloads import NAMES, knob, prepare

OURS = {ours}


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
@pytest.mark.parametrize("workload", [n for n in OURS if n in NAMES])
def test_synthetic(perf, workload):
    fn, args = prepare(workload)
    perf(fn, *args)


_BIG = np.random.default_rng(0).random(8_000_000)  # 64 MiB


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_cache_gather(perf):
    n = int(20_000 * knob("cache-gather"))
    idx = np.random.default_rng(1).integers(0, _BIG.size, n)
    perf(np.take, _BIG, idx)


HEAVY = {heavy}


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"], threads=1)
@pytest.mark.parametrize("kernel", HEAVY)
def test_heavy(perf, kernel):
    kind, size = kernel.split("-")[0], HEAVY[kernel]
    f = knob(kernel)
    rng = np.random.default_rng(4)
    if kind == "blas":
        n, k = size
        k = round(k * f)
        perf(np.matmul, rng.random((n, k)), rng.random((k, n)))
    elif kind == "lapack":
        n = round(size * f ** (1 / 3))  # an LU solve's work grows with n**3
        perf(np.linalg.solve, rng.random((n, n)) + n * np.eye(n), rng.random(n))
    else:
        perf(np.sort, rng.random(round(size * f)))


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"], threads=2)
def test_threaded_blas(perf):
    n = int(128 * knob("threaded-blas"))
    a = np.random.default_rng(2).random((96, n))
    b = np.random.default_rng(3).random((n, 96))
    perf(np.matmul, a, b)
"""


#: ``--heavy``: numeric kernels of about 15-100 ms a call natively (2-core Intel Xeon, AVX-512
#: BLAS on one thread): name -> (n, k) of an (n x k) @ (k x n) product, n of a solve, elements
#: of a sort.
HEAVY: dict[str, object] = {
    "blas-30ms": (800, 3500),
    "blas-100ms": (1000, 7500),
    "lapack-15ms": 1000,
    "lapack-40ms": 1500,
    "sort-15ms": 2_000_000,
    "sort-70ms": 8_000_000,
}


def workload_of(name: str) -> str:
    if "cache_gather" in name:
        return "cache-gather"
    if "threaded_blas" in name:
        return "threaded-blas"
    inside = name[name.index("[") + 1 : -1] if "[" in name else name
    return inside.removeprefix("numpy-cpu-f64-")


def setup(work: Path, heavy: bool = False) -> None:
    shutil.copy(HERE / "synthetic" / "workloads.py", work / "workloads.py")
    ours = [n for n in NAMES if n not in ("cache-gather", "threaded-blas")]
    text = EXTRA.format(ours=ours, heavy=HEAVY if heavy else {})
    (work / "test_counted_synthetic.py").write_text(text, encoding="utf-8")
    (work / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")


def pytest_run(
    work: Path, args: list[str], knobs: dict[str, float], loaded: bool
) -> tuple[subprocess.CompletedProcess[str], float]:
    """One pytest process in ``work`` with the workloads' knobs, beside the background load
    when ``loaded``; its result and wall time."""
    env = {**os.environ, "BURNPERF_VALIDATE_KNOBS": json.dumps(knobs)}
    bg = load.start(seconds=3600) if loaded else None
    t0 = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", *args],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        if bg is not None:
            bg.kill()
            bg.wait()
    return proc, time.monotonic() - t0


def session(
    work: Path, tag: str, knobs: dict[str, float], *args: str, loaded: bool = False
) -> dict[str, Any]:
    out = work / f"{tag}.json"
    proc, seconds = pytest_run(
        work,
        [
            "-q",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            "--perf",
            "--perf-json",
            str(out),
            "test_counted_synthetic.py",
            *args,
        ],
        knobs,
        loaded,
    )
    doc = json.loads(out.read_text()) if out.exists() else {"results": []}
    rows = {}
    for r in doc["results"]:
        v = r["verdict"]
        rows[workload_of(r["name"])] = {
            "status": v["status"],
            "change_pct": v["change_pct"],
            "min_effect": v["min_effect"],
            "measure": r.get("measure", "time"),
            "reason": v["reason"],
        }
    return {
        "tag": tag,
        "loaded": loaded,
        "knobs": knobs,
        "seconds": seconds,
        "exit": proc.returncode,
        "rows": rows,
        "tail": proc.stdout[-1500:] if proc.returncode not in (0, 1) else "",
    }


def bench(
    work: Path, tag: str, knobs: dict[str, float], *, save: bool = False, loaded: bool = False
) -> dict[str, Any]:
    """One pytest-benchmark session of the synthetic workloads (its defaults)."""
    out = work / f"bench-{tag}.json"
    args = [
        "-p",
        "no:burnperf",
        "-p",
        "no:randomly",
        "-q",
        "test_synthetic_bench.py",
        f"--benchmark-json={out}",
        f"--benchmark-storage=file://{work / '.benchmarks'}",
    ]
    args += ["--benchmark-save=base"] if save else ["--benchmark-compare=0001"]
    _, seconds = pytest_run(work, args, knobs, loaded)
    doc = json.loads(out.read_text())
    medians = {b["params"]["workload"]: b["stats"]["median"] for b in doc["benchmarks"]}
    return {"seconds": seconds, "medians": medians}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--timed", type=int, default=2)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--peers", action="store_true", help="pytest-benchmark and asv beside")
    ap.add_argument("--plant", type=float, default=PLANT, help="the planted work factor")
    ap.add_argument("--heavy", action="store_true", help="numeric kernels of 15-100 ms too")
    ap.add_argument(
        "--measure",
        choices=("counts", "auto"),
        default="counts",
        help="auto: record and judge as plain `pytest --perf` does (the default measure)",
    )
    a = ap.parse_args(argv)
    names = (*NAMES, *(HEAVY if a.heavy else ()))
    counted = ("--perf-measure", "counts") if a.measure == "counts" else ()
    started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    work = Path(tempfile.mkdtemp(prefix="burnperf-counts-validation-"))
    setup(work, a.heavy)
    asv_run = None
    base_bench: dict[str, Any] = {}
    if a.peers:
        from validation.run import start_asv

        shutil.copy(HERE / "synthetic" / "test_synthetic_bench.py", work)
        base_bench = bench(work, "base", {}, save=True)
        asv_run = start_asv(work)
    one = {n: 1.0 for n in names}
    t0 = time.monotonic()
    rec_counts = session(work, "record-counts", one, *counted, "--perf-update")
    counted_record_s = time.monotonic() - t0
    t0 = time.monotonic()
    rec_time = session(
        work, "record-time", one, "--perf-measure", "time", "--perf-update", "--perf-rounds", "3"
    )
    timed_record_s = time.monotonic() - t0
    sessions = []
    for i in range(a.sessions):
        knobs = {n: (a.plant if (i // 2 + j) % 2 == 0 else 1.0) for j, n in enumerate(names)}
        s = session(work, f"counts-{i}", knobs, *counted, loaded=i % 2 == 1)
        if a.peers:
            peers = {k: v for k, v in knobs.items() if k not in ("cache-gather", "threaded-blas")}
            s["bench"] = bench(work, str(i), peers, loaded=i % 2 == 1)
            bg = load.start(seconds=3600) if i % 2 == 1 else None
            try:
                assert asv_run is not None
                s["asv"] = asv_run(f"s{i}", peers)
            finally:
                if bg is not None:
                    bg.kill()
                    bg.wait()
        sessions.append(s)
        print(f"session {i}: {s['seconds']:.0f} s exit {s['exit']}", file=sys.stderr, flush=True)
    timed = []
    for i in range(a.timed):
        knobs = {n: (a.plant if (i // 2 + j) % 2 == 0 else 1.0) for j, n in enumerate(names)}
        timed.append(
            session(
                work,
                f"time-{i}",
                knobs,
                "--perf-measure",
                "time",
                "--perf-rounds",
                "3",
                "--perf-max-rounds",
                "8",
                loaded=i % 2 == 1,
            )
        )
    summary = analyse(sessions, timed)
    if a.peers:
        summary["peers"] = analyse_peers(sessions, base_bench)
    doc = {
        "command": "python -m validation.counts " + " ".join(argv or sys.argv[1:]),
        "started": started,
        "machine": machine(),
        "workloads": list(names),
        "measure": a.measure,
        "plant": a.plant,
        "record_seconds": {"counts": counted_record_s, "time": timed_record_s},
        "record_exit": {"counts": rec_counts["exit"], "time": rec_time["exit"]},
        "summary": summary,
        "sessions": sessions,
        "timed": timed,
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(summary, indent=1))
    shutil.rmtree(work, ignore_errors=True)
    return 0


def analyse(sessions: list[dict[str, Any]], timed: list[dict[str, Any]]) -> dict[str, Any]:
    def tally(group: list[dict[str, Any]]) -> dict[str, Any]:
        same = [(s, n) for s in group for n, k in s["knobs"].items() if k == 1.0]
        more = [(s, n) for s in group for n, k in s["knobs"].items() if k != 1.0]

        def status(s: dict[str, Any], n: str) -> str:
            return s["rows"].get(n, {}).get("status", "missing")

        flagged = sum(status(s, n) in ("regressed", "improved") for s, n in same)
        undecided = sum(status(s, n) not in ("regressed", "improved", "unchanged") for s, n in same)
        caught = sum(status(s, n) == "regressed" for s, n in more)
        failed_sessions = sum(
            any(status(s, n) == "regressed" for n, k in s["knobs"].items() if k == 1.0)
            for s in group
        )
        effects = [r["min_effect"] for s in group for r in s["rows"].values() if r["min_effect"]]
        rows = [r for s in group for r in s["rows"].values()]
        return {
            "sessions": len(group),
            "unchanged_flagged": cp(flagged, len(same)),
            "unchanged_undecided": cp(undecided, len(same)),
            "sessions_failed_on_unchanged": failed_sessions,
            "plus5_caught": cp(caught, len(more)),
            "judged_by_counts": cp(sum(r["measure"] == "counts" for r in rows), len(rows)),
            "min_effect_median": statistics.median(effects) if effects else None,
            "session_seconds_median": statistics.median(s["seconds"] for s in group)
            if group
            else None,
            "missed": sorted(
                {f"{n}: {status(s, n)}" for s, n in more if status(s, n) != "regressed"}
            ),
            "unchanged_changes_pct": sorted(
                round(s["rows"][n]["change_pct"], 3)
                for s, n in same
                if n in s["rows"] and s["rows"][n]["change_pct"] is not None
            )[:: max(1, len(same) // 20)],
        }

    quiet = [s for s in sessions if not s["loaded"]]
    loaded = [s for s in sessions if s["loaded"]]
    return {
        "counts_all": tally(sessions),
        "counts_quiet": tally(quiet),
        "counts_loaded": tally(loaded),
        "timed": tally(timed),
    }


def analyse_peers(sessions: list[dict[str, Any]], base: dict[str, Any]) -> dict[str, Any]:
    """pytest-benchmark (median:5%) and asv (--factor 1.05) on the workloads they share."""
    out: dict[str, Any] = {}
    for tool in ("pytest-benchmark", "asv"):
        for loaded in (False, True):
            same = more = flagged = caught = failed = 0
            walls = []
            for s in sessions:
                if s["loaded"] != loaded:
                    continue
                bad_session = False
                for name, k in s["knobs"].items():
                    if name in ("cache-gather", "threaded-blas"):
                        continue
                    if tool == "pytest-benchmark":
                        cur, ref = s["bench"]["medians"].get(name), base["medians"].get(name)
                        worse = cur is not None and ref is not None and cur > 1.05 * ref
                    else:
                        worse = s["asv"]["marks"].get(name) == "+"
                    if k == 1.0:
                        same += 1
                        flagged += worse
                        bad_session = bad_session or worse
                    else:
                        more += 1
                        caught += worse
                failed += bad_session
                walls.append(
                    s["bench"]["seconds"] if tool == "pytest-benchmark" else s["asv"]["wall"]
                )
            out[f"{tool} {'loaded' if loaded else 'quiet'}"] = {
                "unchanged_flagged": cp(flagged, same),
                "sessions_failed_on_unchanged": failed,
                "plus5_caught": cp(caught, more),
                "session_seconds_median": statistics.median(walls) if walls else None,
            }
    return out


if __name__ == "__main__":
    raise SystemExit(main())
