"""A pure-Python library's pytest-benchmark suite written as projects write it (issue 54): twelve
``benchmark.pedantic(fn, setup=...)`` calls without ``rounds=`` (calls of about 10 us to 1 ms),
nine of them spending their time in one internal helper, three controls that never call it.
Recorded once, then judged unchanged and with a planted +15% in the helper, by time and by
counts, beside a light bursty load
(``python -m validation.pedantic_suite --out docs/data/pedantic-suite.json``).

Counted per session: benchmarks flagged (``regressed``) on unchanged code, benchmarks judged
(a verdict other than inconclusive, incomparable or no-baseline), planted benchmarks caught, and
whether every table's median equals the results file's judged median. The last planted time
run's table is kept as printed at 80 columns.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

LIBRARY = """
import os

PLANT = float(os.environ.get("PEDANTIC_PLANT", "0"))


def _weigh(items, scale):
    # the helper the nine planted benchmarks spend their time in; the plant makes it walk
    # PLANT more of the items (+15%: 15% more of the same work)
    total = 0
    for x in items:
        total += (x * scale + 7) % 97
    for x in items[: int(len(items) * PLANT)]:
        total -= ((x * scale + 7) % 97) * 0
    return total


def score(values):
    return _weigh(values, 31)


def checksum(values):
    return _weigh(values, 17)


def digest(values):
    return _weigh(values, 5)


def control_join(parts):
    return "-".join(parts)


def control_sum(values):
    return sum(v * v for v in values)


def control_max(values):
    best = values[0]
    for v in values:
        if v > best:
            best = v
    return best
"""

SUITE = """
import pytest

import minilib

SIZES = [200, 2_000, 20_000]


@pytest.mark.parametrize("n", SIZES)
def test_score(benchmark, n):
    benchmark.pedantic(minilib.score, setup=lambda: ((list(range(n)),), {}))


@pytest.mark.parametrize("n", SIZES)
def test_checksum(benchmark, n):
    benchmark.pedantic(minilib.checksum, setup=lambda: ((list(range(n, 0, -1)),), {}))


@pytest.mark.parametrize("n", SIZES)
def test_digest(benchmark, n):
    benchmark.pedantic(minilib.digest, setup=lambda: (([i % 13 for i in range(n)],), {}))


def test_control_join(benchmark):
    benchmark.pedantic(minilib.control_join, setup=lambda: ((["ab"] * 2000,), {}))


def test_control_sum(benchmark):
    benchmark.pedantic(minilib.control_sum, setup=lambda: ((list(range(5000)),), {}))


def test_control_max(benchmark):
    benchmark.pedantic(minilib.control_max, setup=lambda: ((list(range(8000)),), {}))
"""

BUSY = """
import time
end = time.monotonic() + {seconds}
while time.monotonic() < end:
    t = time.monotonic() + 0.05
    while time.monotonic() < t:
        pass
    time.sleep(0.05)
"""

JUDGED = ("unchanged", "improved", "regressed")
PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly"]


def _run(root: Path, *args: str, plant: float = 0.0) -> dict[str, Any]:
    env = dict(os.environ, COLUMNS="80", PEDANTIC_PLANT=str(plant), PYTHONDONTWRITEBYTECODE="1")
    for k in ("CI", "GITHUB_STEP_SUMMARY"):
        env.pop(k, None)
    out = root / "r.json"
    out.unlink(missing_ok=True)
    t0 = time.monotonic()
    proc = subprocess.run(
        [*PYTEST, "--perf", "--perf-json", "r.json", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    wall = time.monotonic() - t0
    results = json.loads(out.read_text())["results"] if out.exists() else []
    rows = [
        {
            "test": r["name"],
            "status": r["verdict"]["status"],
            "change_pct": r["verdict"].get("change_pct"),
            "median": r["verdict"].get("median"),
            "reason": r["verdict"].get("reason"),
        }
        for r in results
    ]
    stdout = proc.stdout.replace(str(root), "TMPDIR/burnperf-pedantic")  # no machine paths
    return {"args": list(args), "plant": plant, "exit": proc.returncode, "wall_s": round(wall, 1),
            "results": rows, "stdout": stdout}  # fmt: skip


def _medians_match(session: dict[str, Any]) -> bool:
    """Every table row's median is the results file's judged median, as printed."""
    from pytest_burnperf.core import measures

    table = session["stdout"]
    return all(
        any(measures.of_field(m).format(r["median"]) in table for m in ("host", "counts"))
        for r in session["results"]
        if r["median"] is not None
    )


def summary(sessions: list[dict[str, Any]]) -> dict[str, Any]:
    planted_tests = {"test_score", "test_checksum", "test_digest"}

    def planted(r: dict[str, Any]) -> bool:
        return r["test"].split("[")[0] in planted_tests

    out: dict[str, Any] = {}
    for s in sessions:
        key = s["kind"]
        agg = out.setdefault(key, {"sessions": 0, "benchmarks": 0, "flagged": 0, "judged": 0,
                                   "caught": 0, "planted": 0, "controls_flagged": 0,
                                   "medians_match": 0, "wall_s": []})  # fmt: skip
        agg["sessions"] += 1
        agg["wall_s"].append(s["wall_s"])
        agg["medians_match"] += _medians_match(s)
        for r in s["results"]:
            agg["benchmarks"] += 1
            agg["judged"] += r["status"] in JUDGED
            if s["plant"] and planted(r):
                agg["planted"] += 1
                agg["caught"] += r["status"] == "regressed"
            elif r["status"] == "regressed":
                agg["flagged"] += 1
                agg["controls_flagged"] += s["plant"] > 0
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=3, help="unchanged and planted sessions each")
    ap.add_argument("--plant", type=float, default=0.15)
    ap.add_argument("--measures", default="time,counts", help="comma-separated")
    ap.add_argument(
        "--compositions",
        action="store_true",
        help="also judge with -k selections, so each counted process runs other benchmarks "
        "before each one than the recording did",
    )
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    from pytest_burnperf.host.hardware import cpu_identity, describe, hardware_class

    sessions: list[dict[str, Any]] = []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="burnperf-pedantic-") as tmp:
        root = Path(tmp)
        (root / "minilib.py").write_text(LIBRARY)
        (root / "test_suite.py").write_text(SUITE)
        (root / "pytest.ini").write_text("[pytest]\n")
        busy = subprocess.Popen([sys.executable, "-c", BUSY.format(seconds=3600)])
        try:
            measures = args.measures.split(",")
            selections = [[]]
            if args.compositions:
                selections += [["-k", "test_score"], ["-k", "digest or control"]]
            for measure in measures:
                rec = _run(root, "--update-baselines", "--perf-measure", measure)
                rec["kind"] = f"record {measure}"
                print(f"recorded {measure}: exit {rec['exit']} in {rec['wall_s']} s", flush=True)
                sessions.append(rec)
            for i in range(args.sessions):
                for measure, plant, selection in (
                    (m, p, k) for m in measures for p in (0.0, args.plant) for k in selections
                ):
                    s = _run(root, "--perf-measure", measure, *selection, plant=plant)
                    s["kind"] = f"{measure} {'planted' if plant else 'unchanged'}"
                    s["selection"] = " ".join(selection) or "all"
                    statuses = [r["status"] for r in s["results"]]
                    print(f"{i}: {s['kind']}: exit {s['exit']} in {s['wall_s']} s: "
                          f"{ {x: statuses.count(x) for x in set(statuses)} }", flush=True)  # fmt: skip
                    sessions.append(s)
        finally:
            busy.kill()
            busy.wait()
    doc = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"hardware class {hardware_class()} ({describe(cpu_identity())}), "
        f"{platform.system()}, Python {platform.python_version()}",
        "command": "python -m validation.pedantic_suite " + " ".join(sys.argv[1:]),
        "load": "one bursty CPU-bound process beside (50 ms busy, 50 ms asleep)",
        "plant": args.plant,
        "minutes": round((time.monotonic() - t0) / 60, 1),
        "summary": summary([s for s in sessions if not s["kind"].startswith("record")]),
        "last_planted_time_table": next(
            (s["stdout"] for s in reversed(sessions) if s["kind"] == "time planted"), ""
        ),
        "sessions": sessions,
    }
    print(json.dumps(doc["summary"], indent=1))
    if args.out:
        args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
