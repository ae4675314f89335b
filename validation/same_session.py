"""Validation of same-session comparisons (``--perf-against REF``): false alarms and detection
when the reference is the same code at another commit, on a machine with no stored baselines.

Builds a throw-away git repository holding the harness's 13 synthetic workloads
(``synthetic/workloads.py``) as an installable package, commits it, and then runs sessions of

    pytest --perf --perf-against base --perf-rounds 3 --perf-max-rounds 8 test_wl.py

with the checkout's ``src/`` on PYTHONPATH (the current code) against the commit ``base``
(installed once into a cached overlay, as users get it). In each session some workloads do more
or less work in the current code only (a ``knobs.json`` next to the package in the checkout,
never committed): +10% on two, +20% on two, -10% on one, rotated from session to session; the
other eight are unchanged and count as A/A comparisons. Nothing sleeps.

Writes a Markdown report (``--out``) and the raw verdicts as JSON next to it. Run it on an idle
machine: ``python -m validation.same_session --sessions 24 --out docs/validation-same-session.md``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from validation.common import machine

HERE = Path(__file__).resolve().parent

ARGS = ("--perf", "--perf-rounds", "3", "--perf-max-rounds", "8")
PLANTS = (1.10, 1.10, 1.20, 1.20, 0.90)
MDS_GATE = 0.07

PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "burnperf-wl"
version = "1.0"

[tool.setuptools.packages.find]
where = ["src"]
"""

TESTS = """import pytest
from burnperf_wl import NAMES, prepare


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
@pytest.mark.parametrize("workload", NAMES)
def test_wl(perf, workload):
    fn, args = prepare(workload)
    perf(fn, *args)
"""

KNOB_FROM_FILE = '''def knob(name: str) -> float:
    """The factor of ``name`` from knobs.json beside this module (the checkout's, never the
    installed reference's)."""
    path = os.path.join(os.path.dirname(__file__), "knobs.json")
    factors = json.load(open(path)) if os.path.exists(path) else {}
    return float(factors.get(name, 1.0))
'''


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def git(repo: Path, *args: str) -> None:
    env = dict(os.environ, GIT_AUTHOR_NAME="v", GIT_AUTHOR_EMAIL="v@example.com")
    env.update(GIT_COMMITTER_NAME="v", GIT_COMMITTER_EMAIL="v@example.com")
    subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True)


def package_dir(work: Path, layout: str) -> Path:
    return work / "burnperf_wl" if layout == "flat" else work / "src" / "burnperf_wl"


def setup(work: Path, layout: str = "src") -> list[str]:
    """The repository with the workloads package committed as ``base``; the workload names.
    ``layout`` "flat" puts the package at the root beside a root conftest.py that imports it
    (the current code then comes from the checkout, first on sys.path under
    ``python -m pytest``)."""
    work.mkdir(parents=True, exist_ok=True)
    pkg = package_dir(work, layout)
    pkg.mkdir(parents=True)
    source = (HERE / "synthetic" / "workloads.py").read_text()
    start = source.index("def knob(")
    end = source.index("\n\n\n", start)
    (pkg / "__init__.py").write_text(source[:start] + KNOB_FROM_FILE + source[end + 1 :])
    if layout == "flat":
        (work / "pyproject.toml").write_text(
            PYPROJECT.replace('where = ["src"]', 'include = ["burnperf_wl*"]')
        )
        (work / "conftest.py").write_text("import burnperf_wl  # noqa: F401\n")
    else:
        (work / "pyproject.toml").write_text(PYPROJECT)
    (work / "test_wl.py").write_text(TESTS)
    (work / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider -p no:benchmark\n")
    (work / ".gitignore").write_text("knobs.json\n__pycache__/\n*.json\n")
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "base")
    git(work, "tag", "base")
    from validation.synthetic.workloads import NAMES

    return list(NAMES)


def knobs_for(i: int, names: list[str]) -> dict[str, float]:
    n = len(names)
    return {names[(i * len(PLANTS) + j) % n]: f for j, f in enumerate(PLANTS)}


def session(
    work: Path,
    i: int,
    knobs: dict[str, float],
    layout: str = "src",
    load: float = 0.0,
    round_start: str | None = None,
) -> dict[str, Any]:
    (package_dir(work, layout) / "knobs.json").write_text(json.dumps(knobs))
    out = work / f"s{i}.json"
    env = dict(os.environ, BURNPERF_ENV_CACHE=str(work / "envs"))
    for name in ("CI", "GITHUB_BASE_REF"):
        env.pop(name, None)
    if layout != "flat":
        env["PYTHONPATH"] = str(work / "src")
    cmd = [sys.executable, "-m", "pytest", *ARGS, "--perf-against", "base", "-q"]
    cmd += ["--perf-json", str(out), "test_wl.py"]
    if round_start is not None:
        cmd += ["--perf-round-start", round_start]
    background = None
    if load > 0:
        from validation.load import start

        background = start(load, seed=i)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, check=False)
    finally:
        if background is not None:
            background.terminate()
            background.wait()
    wall = time.perf_counter() - t0
    if not out.exists():
        raise SystemExit(
            f"session {i} wrote no results (exit {proc.returncode}):\n"
            f"{(proc.stdout + proc.stderr)[-3000:]}"
        )
    doc = json.loads(out.read_text())
    verdicts = {}
    for r in doc["results"]:
        v = r["verdict"]
        name = r["name"].split("-")[-2] + "-" + r["name"].split("-")[-1].rstrip("]")
        verdicts[name] = {
            "status": v["status"],
            "ratio": v["ratio"],
            "mds": v["min_detectable_slowdown"],
            "rounds": len(r["runs"]),
            "reason": v["reason"],
        }
    return {
        "i": i,
        "knobs": knobs,
        "load": load,
        "layout": layout,
        "round_start": round_start or "auto",
        "rc": proc.returncode,
        "wall": wall,
        "verdicts": verdicts,
        "orders": doc["settings"]["same_session"]["round_orders"],
    }


def analyse(sessions: list[dict[str, Any]]) -> dict[str, Any]:
    aa: list[str] = []
    failed_sessions = 0
    det: dict[float, list[tuple[str, float | None]]] = {f: [] for f in set(PLANTS)}
    mds: list[float] = []
    rounds: list[int] = []
    busy = 0
    undecided = 0
    for s in sessions:
        bad = False
        for name, v in s["verdicts"].items():
            f = s["knobs"].get(name, 1.0)
            rounds.append(v["rounds"])
            undecided += v["status"] in ("inconclusive", "no-baseline", "incomparable")
            busy += str(v.get("reason", "")).startswith("host busy")
            if v["mds"] is not None:
                mds.append(v["mds"])
            if f == 1.0:
                aa.append(v["status"])
                bad = bad or v["status"] == "regressed"
            else:
                det[f].append((v["status"], v["mds"]))
        failed_sessions += bad
    return {
        "sessions": len(sessions),
        "aa": len(aa),
        "aa_false": sum(st == "regressed" for st in aa),
        "aa_counts": dict(Counter(aa)),
        "failed_sessions": failed_sessions,
        "host_busy": busy,
        "undecided": undecided,
        "comparisons": sum(len(s["verdicts"]) for s in sessions),
        "detect": {
            str(f): {
                "all": [sum(st == "regressed" for st, _ in v), len(v)],
                "gateable": [
                    sum(st == "regressed" for st, m in v if m is not None and m <= MDS_GATE),
                    sum(1 for _, m in v if m is not None and m <= MDS_GATE),
                ],
                "counts": dict(Counter(st for st, _ in v)),
            }
            for f, v in sorted(det.items())
        },
        "median_mds": statistics.median(mds) if mds else None,
        "rounds_mean": statistics.fmean(rounds) if rounds else None,
        "wall_median": statistics.median(s["wall"] for s in sessions) if sessions else None,
    }


def pct(k: int, n: int) -> str:
    return f"{k}/{n} ({100 * k / n:.1f}%)" if n else "-"


def report(a: dict[str, Any], started: str, mach: str, command: str, title: str = "") -> str:
    d = a["detect"]
    lines = [
        f"# Validation of same-session comparisons (`--perf-against`){title}",
        "",
        f"Measured {started} UTC on {mach}, with `{command}`",
        "(validation/same_session.py). Each session: "
        f"`pytest {' '.join(ARGS)} --perf-against base` over the 13 synthetic workloads, the "
        "reference being the same package at the commit `base`, installed into a cached overlay; "
        "in the current checkout two workloads do 10% more work, two 20% more and one 10% less "
        "(rotated), the other eight are unchanged.",
        "",
        "| figure | measured | target |",
        "|---|---|---|",
        f"| sessions | {a['sessions']} | >= 20 |",
        f"| unchanged comparisons failed (false alarms) | {pct(a['aa_false'], a['aa'])} | "
        "<= 0.5% |",
        f"| sessions with a false alarm | {pct(a['failed_sessions'], a['sessions'])} | <= 5% |",
        f"| +10% caught, all | {pct(*d['1.1']['all'])} | |",
        f"| +10% caught, detectable (MDS <= 7%) | {pct(*d['1.1']['gateable'])} | >= 90% |",
        f"| +20% caught, all | {pct(*d['1.2']['all'])} | |",
        f"| +20% caught, detectable (MDS <= 7%) | {pct(*d['1.2']['gateable'])} | >= 99% |",
        f"| -10% (a speed-up) failed | {d['0.9']['counts'].get('regressed', 0)} of "
        f"{d['0.9']['all'][1]} | 0 |",
        f"| median minimum detectable slowdown | +{100 * a['median_mds']:.1f}% | |",
        f"| process rounds per benchmark and side (mean) | {a['rounds_mean']:.1f} | |",
        f"| session wall time (median) | {a['wall_median']:.0f} s | |",
        f"| comparisons not judged (inconclusive) | {pct(a['undecided'], a['comparisons'])} | "
        "<= 5% |",
        "",
        f"Comparisons made inconclusive by the host-state rule (`host busy in a round`): "
        f"{a['host_busy']} of {a['comparisons']}. "
        f"Verdicts of the unchanged comparisons: {a['aa_counts']}. "
        f"+10%: {d['1.1']['counts']}; +20%: {d['1.2']['counts']}; -10%: {d['0.9']['counts']}.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=24)
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--command", default="python -m validation.same_session --sessions 24")
    ap.add_argument("--from-json", type=Path, default=None)
    ap.add_argument(
        "--layout",
        choices=("src", "flat"),
        default="src",
        help="the workloads package in src/ or at the root beside a root conftest.py",
    )
    ap.add_argument(
        "--load",
        type=float,
        default=0.0,
        help="every other session runs beside validation/load.py at this busy share of a core "
        "(0.33: light and bursty); the report gives quiet and loaded sessions apart",
    )
    ap.add_argument(
        "--rejudge",
        type=Path,
        default=None,
        metavar="WORK",
        help="with --from-json: judge the sessions' raw rounds in WORK again under other rules",
    )
    ap.add_argument(
        "--round-starts",
        default=None,
        metavar="A,B",
        help="cycle the sessions' --perf-round-start through these (e.g. fork,fresh: the sides "
        "taking turns in short windows against whole interleaved process rounds), in pairs of "
        "sessions so that each is run quiet and loaded; the report gives each apart",
    )
    args = ap.parse_args(argv)
    starts = args.round_starts.split(",") if args.round_starts else [None]
    if args.rejudge is not None:
        if args.from_json is None:
            ap.error("--rejudge WORK needs --from-json (the harness's JSON of those sessions)")
        raw = json.loads(args.from_json.read_text())
        print(rejudge(args.rejudge, raw["sessions"]))
        return 0
    if args.from_json is not None:
        raw = json.loads(args.from_json.read_text())
        text = reports(raw["sessions"], raw["started"], raw["machine"], args.command)
        print(text)
        if args.out:
            args.out.write_text(text)
        return 0
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    work = args.work or Path(tempfile.mkdtemp(prefix="burnperf-same-session-"))
    names = setup(work, args.layout)
    log(f"work directory {work}")
    sessions = []
    for i in range(args.sessions):
        load = args.load if i % 2 == 1 else 0.0
        start = starts[(i // 2) % len(starts)]
        s = session(work, i, knobs_for(i, names), args.layout, load, start)
        sessions.append(s)
        log(
            f"session {i + 1}/{args.sessions}: "
            f"{dict(Counter(v['status'] for v in s['verdicts'].values()))} in {s['wall']:.0f} s"
        )
        raw = {"started": started, "machine": machine(), "sessions": sessions}
        if args.out:
            args.out.with_suffix(".json").write_text(json.dumps(raw, indent=1) + "\n")
    text = reports(sessions, started, machine(), args.command)
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


#: Replays of --rejudge: (name, leave busy rounds out where 3 clean remain, else make a verdict
#: the host could explain inconclusive (assess.explain_by_host), the share of each round's
#: fastest samples judged or None for all). "live" is the rule these sessions ran with.
RULES = (
    ("live: leave out, else inconclusive", True, True, None),
    ("leave out, else keep (note_paired_host)", True, False, None),
    ("no host rule", False, False, None),
    ("fastest 25%, leave out, else inconclusive", True, True, 0.25),
    ("fastest 25%, no host rule", False, False, 0.25),
)


def rejudge(work: Path, sessions: list[dict[str, Any]]) -> str:
    """Each session's raw rounds (``s<i>.json`` in ``work``) judged again under each of
    :data:`RULES`, as the plugin judges a same-session comparison (versions.Measured.clean_pairs,
    assess.explain_by_host), quiet and loaded sessions apart. A Markdown table."""
    from pytest_burnperf.core.judging.assess import MIN_CLEAN_ROUNDS, explain_by_host
    from pytest_burnperf.core.judging.verdict import Policy, judge
    from pytest_burnperf.host.activity import Window

    def fastest(runs: list[list[float]], share: float | None) -> list[list[float]]:
        if share is None:
            return runs
        return [sorted(r)[: max(1, round(len(r) * share))] for r in runs]

    rows = []
    kinds = sorted({(bool(s.get("load")), s.get("round_start", "auto")) for s in sessions})
    for name, leave_out, explain, share in RULES:
        for loaded, start in kinds:
            aa = aa_false = undecided = total = 0
            caught: dict[float, list[int]] = {1.1: [0, 0], 1.2: [0, 0]}
            mds: list[float] = []
            same = 0
            for sess in sessions:
                if (bool(sess.get("load")), sess.get("round_start", "auto")) != (loaded, start):
                    continue
                doc = json.loads((work / f"s{sess['i']}.json").read_text())
                n = len(doc["results"])
                for r in doc["results"]:
                    wl = r["name"].split("-")[-2] + "-" + r["name"].split("-")[-1].rstrip("]")
                    ref, cur = r["baseline"]["runs"], r["runs"]
                    k = min(len(ref), len(cur))
                    ref, cur = ref[:k], cur[:k]
                    windows = r.get("host") or []
                    busy: dict[int, str] = {}
                    if len(windows) == 2 * k:  # reference's rounds, then the candidate's
                        for j, d in enumerate(windows):
                            w = Window.from_dict(d)
                            why = None if w is None else w.disturbed()
                            if why and j % k not in busy:
                                busy[j % k] = why
                    policy = Policy(
                        alpha=r["settings"]["alpha"],
                        threshold=r["settings"]["threshold"],
                        comparisons=n,
                        paired=True,
                    )
                    keep = [j for j in range(k) if j not in busy]
                    if leave_out and busy and len(keep) >= MIN_CLEAN_ROUNDS:
                        ref, cur = [ref[j] for j in keep], [cur[j] for j in keep]
                        v = judge(fastest(ref, share), fastest(cur, share), policy)
                    else:
                        v = judge(fastest(ref, share), fastest(cur, share), policy)
                        if explain and busy:
                            v = explain_by_host(
                                v, f"host busy in a round: {busy[min(busy)]}", policy
                            )
                    if name.startswith("live"):
                        same += v.status == r["verdict"]["status"]
                    total += 1
                    undecided += v.status == "inconclusive"
                    if v.min_detectable is not None:
                        mds.append(v.min_detectable)
                    f = sess["knobs"].get(wl, 1.0)
                    if f == 1.0:
                        aa += 1
                        aa_false += v.status == "regressed"
                    elif f in caught:
                        caught[f][0] += v.status == "regressed"
                        caught[f][1] += 1
            if not total:
                continue
            rows.append(
                f"| {name} | {'loaded' if loaded else 'quiet'}, {start} | {aa_false}/{aa} | "
                f"{caught[1.1][0]}/{caught[1.1][1]} | {caught[1.2][0]}/{caught[1.2][1]} | "
                f"{undecided}/{total} | +{100 * statistics.median(mds):.1f}% |"
                + (f" {same}/{total} |" if name.startswith("live") else " |")
            )
    head = [
        "| rule | sessions | unchanged failed | +10% caught | +20% caught | not judged | "
        "median MDS | same as live |",
        "|---|---|---|---|---|---|---|---|",
    ]
    return "\n".join(head + rows) + "\n"


def reports(sessions: list[dict[str, Any]], started: str, mach: str, command: str) -> str:
    """One report per kind of session: quiet or beside the load, and per --perf-round-start."""
    groups: dict[tuple[float, str], list[dict[str, Any]]] = {}
    for s in sessions:
        groups.setdefault((float(s.get("load") or 0.0), s.get("round_start", "auto")), []).append(s)
    if len(groups) == 1:
        return report(analyse(sessions), started, mach, command)
    out = []
    for (duty, start), group in sorted(groups.items()):
        where = (
            f"beside a bursty load (validation/load.py, {duty:g} of a core)" if duty else "quiet"
        )
        title = f": {where}, --perf-round-start {start}"
        out.append(report(analyse(group), started, mach, command, title))
    return "\n".join(out)


if __name__ == "__main__":
    raise SystemExit(main())
