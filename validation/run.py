"""Validation harness: how often the gate cries wolf, and how often it catches a real slowdown.

Measures the gate the way a user meets it, in separate pytest processes:

1. record baselines (``--perf-update`` at the CI settings, ``--perf-rounds 3
   --perf-max-rounds 8``) for the shipped CPU benchmarks and 13 synthetic workloads (pure
   Python, numpy and BLAS at about 0.1 ms, 1 ms and 20 ms; a numpy sort, an allocation-heavy and
   a dict/str-hashing workload and a torch matmul at about 1 ms), and one saved pytest-benchmark
   run of the synthetic workloads;
2. A/A: fresh sessions of unchanged code;
3. planted: sessions in which each synthetic workload does 5%, 10%, 20% or 50% more work, or 10%
   less (rotated over the workloads from session to session, set through
   ``BURNPERF_VALIDATE_KNOBS``; nothing sleeps), interleaved with the A/A sessions;
4. every session's synthetic workloads also run under pytest-benchmark's defaults and are judged
   by its ``--benchmark-compare-fail`` rules ``median:5%`` and ``mean:5%`` against the saved run;
5. wall time of both.

Writes a Markdown report (``--out``) and the raw per-session verdicts as JSON next to it.
Run it on a quiet machine with nothing else running: ``nox -s validate`` or
``python -m validation.run --out docs/validation.md``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from validation.common import SIZES, cp, log, machine, ms, pct, planted_knobs

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
#: CI settings of the shipped suite (``nox -s perf``); everything else is the plugin's default.
OURS_CI = ("--perf", "--perf-rounds", "3", "--perf-max-rounds", "8", "--perf-backends", "cpu")
SHIPPED = "perf_tests"
SYNTH_PERF = "test_synthetic_perf.py"
SYNTH_BENCH = "test_synthetic_bench.py"
MDS_GATE = 0.07
#: Verdicts that judged; every other status (no-baseline, incomparable, inconclusive) did not.
JUDGED = ("regressed", "unchanged", "improved")
#: The shipped benchmarks the harness includes (a -k expression): one representative per kind of
#: work, 18 CPU comparisons, so that 35 sessions take about 30 minutes on 2 cores.
SHIPPED_K = (
    "(test_matmul and square) or test_elementwise_chain or (test_reduce and sum-axis0) "
    "or test_vector_add or test_sum"
)


#: The part of ``--out`` this harness writes; notes around it are kept (appended when absent).
START, END = "<!-- harness:start -->", "<!-- harness:end -->"


# ------------------------------------------------------------------------------------------
# running sessions


class Harness:
    def __init__(self, work: Path) -> None:
        self.work = work
        self.sessions: list[dict[str, Any]] = []
        self.timing: list[float] = []
        self.shipped_k = SHIPPED_K

    def setup(self) -> None:
        if self.work.exists():
            shutil.rmtree(self.work)
        self.work.mkdir(parents=True)
        shutil.copytree(REPO / SHIPPED, self.work / SHIPPED)
        for f in (HERE / "synthetic").glob("*.py"):
            shutil.copy(f, self.work / f.name)
        (self.work / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")

    def _pytest(self, args: list[str], knobs: dict[str, float]) -> tuple[int, float, str]:
        env = dict(os.environ, BURNPERF_VALIDATE_KNOBS=json.dumps(knobs))
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", *args],
            cwd=self.work,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        return proc.returncode, time.perf_counter() - t0, proc.stdout + proc.stderr

    def ours(self, tag: str, knobs: dict[str, float], *, update: bool = False) -> dict[str, Any]:
        out = self.work / f"ours-{tag}.json"
        args = ["-p", "no:benchmark", *OURS_CI, "--perf-json", str(out), "-q", SHIPPED, SYNTH_PERF]
        args += ["-k", f"{self.shipped_k} or test_synthetic"]
        if update:
            args.append("--perf-update")
        rc, wall, text = self._pytest(args, knobs)
        if not out.exists():
            raise SystemExit(
                f"burnperf session {tag} wrote no results (exit {rc}):\n{text[-3000:]}"
            )
        doc = json.loads(out.read_text())
        verdicts = {}
        for r in doc["results"]:
            v = r["verdict"]
            verdicts[f"{r['module']}::{r['name']}"] = {
                "status": v["status"],
                "ratio": v["ratio"],
                "median": r["stats"]["median"],
                "mds": v["min_detectable_slowdown"],
                "effect": v["min_effect"],
                "noise_mds": noise_mds(
                    v.get("spread"), v.get("spread_dof"), v.get("runs"), v.get("alpha_each")
                ),
                "n": [len(run) for run in r["runs"]],
            }
        got: dict[str, Any] = {"rc": rc, "wall": wall, "verdicts": verdicts}
        if update:  # the summary line naming baselines recorded too noisy, if any
            got["noisy"] = [ln for ln in text.splitlines() if ln.startswith("noisy baselines:")]
        return got

    def bench(self, tag: str, knobs: dict[str, float], *, save: bool = False) -> dict[str, Any]:
        out = self.work / f"bench-{tag}.json"
        storage = f"file://{self.work / '.benchmarks'}"
        args = ["-p", "no:burnperf", "-q", SYNTH_BENCH, f"--benchmark-json={out}"]
        args.append(f"--benchmark-storage={storage}")
        if save:
            args.append("--benchmark-save=base")
        else:
            args += ["--benchmark-compare=0001", "--benchmark-compare-fail=median:5%"]
        rc, wall, text = self._pytest(args, knobs)
        if not out.exists():
            raise SystemExit(
                f"pytest-benchmark session {tag} wrote no JSON (exit {rc}):\n{text[-3000:]}"
            )
        doc = json.loads(out.read_text())
        stats = {
            b["name"]: {"median": b["stats"]["median"], "mean": b["stats"]["mean"]}
            for b in doc["benchmarks"]
        }
        return {"rc": rc, "wall": wall, "stats": stats}


def fastest_share(runs: list[list[float]], share: float) -> list[list[float]]:
    """Each round cut to its fastest ``share`` of samples (at least one): what a gate that
    judged each round by a low quantile instead of its median would see (``--rejudge-fastest``)."""
    return [sorted(r)[: max(1, round(len(r) * share))] for r in runs if len(r)]


def rejudge(work: Path, sessions: list[dict[str, Any]], fastest: float | None = None) -> None:
    """Judge every session's saved samples again with this checkout's decision rule.

    Sampling inside a round does not depend on the rule (adaptive sampling looks at precision
    only), but the number of process rounds does: the rounds are replayed, each side cut at the
    first round count (from the initial 3) at which this checkout's rule would have stopped
    (``needs_more_rounds``, recording for the baseline). A rule that would have run more rounds
    than the measured run took cannot be replayed: it gets the rounds there are.

    Each verdict is assembled as the plugin assembles it (``assess.assess``), with the host
    evidence the rounds recorded (host windows, reference probes; the baseline's too), so that
    replaying a run with the rule it ran under gives its verdicts back.
    """
    from pytest_burnperf.core.judging.assess import HostEvidence, assess
    from pytest_burnperf.core.judging.more_rounds import needs_more_rounds
    from pytest_burnperf.core.judging.verdict import Policy
    from pytest_burnperf.core.records.stored_baseline import StoredBaseline
    from pytest_burnperf.host.activity import Window

    first = int(OURS_CI[OURS_CI.index("--perf-rounds") + 1])

    def replay(runs: list[Any], more: Any, *along: list[Any]) -> list[list[Any]]:
        # the measuring process's round is the last; the rounds before it ran in other
        # processes, and whether another was run was decided on those alone (plugin/rounds/round_control.py);
        # ``along``: per-round lists cut the same way (host windows) where they line up
        for n in range(first - 1, len(runs) - 1):
            if not more(runs[:n]):
                return [[*x[:n], x[-1]] if len(x) == len(runs) else x for x in (runs, *along)]
        return [runs, *along]

    def windows(docs: Any) -> tuple[Window, ...]:
        return tuple(w for d in docs or () if (w := Window.from_dict(d)) is not None)

    raw_base: dict[str, list[list[float]]] = {}
    entries: dict[str, dict[str, Any]] = {}
    # the machine's directory (the store also keeps a .gitignore and its lock file there)
    (machine_dir,) = [d for d in (work / "baselines").iterdir() if d.is_dir()]
    for f in machine_dir.rglob("*.json"):
        module = f.relative_to(machine_dir).with_suffix(".py").as_posix()
        for name, entry in json.loads(f.read_text())["benchmarks"].items():
            runs = entry["runs"]
            entries[f"{module}::{name}"] = entry
            raw_base[f"{module}::{name}"] = (
                runs if fastest is None else fastest_share(runs, fastest)
            )
    record_comparisons = len(raw_base)
    base = {}
    for key, runs in raw_base.items():
        kept, host = replay(
            runs,
            lambda r: needs_more_rounds(
                None, r, Policy(0.01, 0.05, record_comparisons), recording=True
            ),
            list(entries[key].get("host") or []),
        )
        base[key] = {**entries[key], "runs": kept, "host": host}
    for s in sessions:
        tag = f"{s['kind']}{s['i']}"
        doc = json.loads((work / f"ours-{tag}.json").read_text())
        comparisons = len(doc["results"])
        policy = Policy(0.01, 0.05, comparisons)
        for r in doc["results"]:
            key = f"{r['module']}::{r['name']}"
            b = base[key]
            measured = r["runs"] if fastest is None else fastest_share(r["runs"], fastest)
            runs, host = replay(
                measured,
                lambda c, b=b["runs"], policy=policy: needs_more_rounds(b, c, policy),
                list(r.get("host") or []),
            )
            v = assess(
                StoredBaseline.from_entry(b),
                runs,
                fingerprint=r["device"],
                timer=r["timer"],
                l2_flush=bool(r.get("l2_flush")),
                policy=policy,
                host=HostEvidence(
                    windows=windows(host),
                    baseline_windows=windows(b.get("host")),
                    probe=r.get("host_probe"),
                    baseline_probe=b.get("host_probe"),
                ),
            )
            s["ours"]["verdicts"][key].update(
                status=v.status,
                ratio=v.ratio,
                mds=v.min_detectable,
                effect=v.effect,
                noise_mds=noise_mds(
                    v.spread, v.spread_dof, [v.runs_baseline, v.runs_current], v.alpha_each
                ),
                n=[len(x) for x in runs],
            )


def noise_mds(
    spread: float | None, dof: int | None, runs: list[int] | None, alpha: float | None
) -> float | None:
    """The slowdown the between-run model alone detects with 90% probability, with no minimum
    effect (``threshold`` 0): ``exp((t(1 - alpha) + t(0.9)) * se) - 1``, ``se = spread *
    sqrt(1/k + 1/m)``. The reported minimum detectable slowdown is never below the threshold
    (a change must exceed it to fail); this says how far the noise alone would let one see."""
    if spread is None or not dof or not runs or min(runs) < 1 or alpha is None:
        return None
    from scipy.stats import t

    se = spread * math.sqrt(1.0 / runs[0] + 1.0 / runs[1])
    return math.exp((float(t.ppf(1.0 - alpha, dof)) + float(t.ppf(0.9, dof))) * se) - 1.0


def _bench_key(name: str) -> str:
    return name.split("[", 1)[1].rstrip("]")


def _ours_synthetic(key: str) -> str | None:
    """'test_synthetic_perf.py::test_synthetic[numpy-1ms-numpy-cpu-f64]' -> 'numpy-1ms'."""
    if not key.startswith(SYNTH_PERF):
        return None
    inside = key.split("[", 1)[1].rstrip("]")
    return inside.removeprefix("numpy-cpu-f64-").removesuffix("-numpy-cpu-f64")


# ------------------------------------------------------------------------------------------
# statistics of the outcomes


def bench_fails(cur: dict[str, float], base: dict[str, float], field: str) -> bool:
    """pytest-benchmark's PercentageRegressionCheck: (current - base) / base > 5%."""
    return (cur[field] - base[field]) / base[field] * 100.0 > 5.0


def analyse(h: Harness, base_bench: dict[str, Any]) -> dict[str, Any]:
    aa = [s for s in h.sessions if s["kind"] == "aa"]
    planted = [s for s in h.sessions if s["kind"] == "planted"]
    base_stats = base_bench["stats"]

    # A/A, per benchmark (shipped benchmarks are unchanged in planted sessions too)
    per: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"status": Counter(), "mds": [], "med": [], "noise": []}
    )
    for s in h.sessions:
        for key, v in s["ours"]["verdicts"].items():
            syn = _ours_synthetic(key)
            if s["kind"] == "planted" and syn is not None:
                continue
            p = per[key]
            p["status"][v["status"]] += 1
            if v["mds"] is not None:
                p["mds"].append(v["mds"])
            if v.get("noise_mds") is not None:
                p["noise"].append(v["noise_mds"])
            p["med"].append(v["median"])
    bench_per: dict[str, Counter[str]] = defaultdict(Counter)
    for s in aa:
        for name, st in s["bench"]["stats"].items():
            w = _bench_key(name)
            bench_per[w]["n"] += 1
            bench_per[w]["median"] += bench_fails(st, base_stats[name], "median")
            bench_per[w]["mean"] += bench_fails(st, base_stats[name], "mean")

    mds = {k: statistics.median(p["mds"]) if p["mds"] else None for k, p in per.items()}
    noise = {k: statistics.median(p["noise"]) if p["noise"] else None for k, p in per.items()}
    # per session
    ours_session_fail = sum(
        any(v["status"] == "regressed" for v in s["ours"]["verdicts"].values()) for s in aa
    )
    ours_session_fail_syn = sum(
        any(
            v["status"] == "regressed" and _ours_synthetic(k) is not None
            for k, v in s["ours"]["verdicts"].items()
        )
        for s in aa
    )
    bench_session = {
        field: sum(
            any(bench_fails(st, base_stats[n], field) for n, st in s["bench"]["stats"].items())
            for s in aa
        )
        for field in ("median", "mean")
    }
    bench_rc_fail = sum(s["bench"]["rc"] != 0 for s in aa)

    # planted
    det: dict[float, dict[str, Any]] = {
        size: {
            "ours": [0, 0],
            "ours_gate": [0, 0],
            "improved": 0,
            "undecided": 0,
            "bench_median": [0, 0],
            "bench_mean": [0, 0],
            "ratios": [],
        }
        for size in SIZES
    }
    for s in planted:
        knobs = s["knobs"]
        for key, v in s["ours"]["verdicts"].items():
            syn = _ours_synthetic(key)
            if syn is None:
                continue
            d = det[knobs[syn]]
            hit = v["status"] == "regressed"
            d["ours"][0] += hit
            d["ours"][1] += 1
            if mds.get(key) is not None and mds[key] <= MDS_GATE:
                d["ours_gate"][0] += hit
                d["ours_gate"][1] += 1
            d["improved"] += v["status"] == "improved"
            d["undecided"] += v["status"] not in JUDGED
            base_med = statistics.median(per[key]["med"])
            d["ratios"].append(v["median"] / base_med)
        for name, st in s["bench"]["stats"].items():
            d = det[knobs[_bench_key(name)]]
            for field in ("median", "mean"):
                d[f"bench_{field}"][0] += bench_fails(st, base_stats[name], field)
                d[f"bench_{field}"][1] += 1

    asv = analyse_asv(h.sessions)
    return {
        "asv": asv,
        "per": per,
        "mds": mds,
        "noise_mds": noise,
        "bench_per": bench_per,
        "aa_sessions": len(aa),
        "planted_sessions": len(planted),
        "ours_session_fail": ours_session_fail,
        "ours_session_fail_syn": ours_session_fail_syn,
        "bench_session": bench_session,
        "bench_rc_fail": bench_rc_fail,
        "det": det,
    }


def analyse_asv(sessions: list[dict[str, Any]]) -> dict[str, Any] | None:
    """``asv continuous`` in the same sessions (``--asv``): false alarms per benchmark and
    session, detection per planted size, session wall time; None when it did not run."""
    runs = [s for s in sessions if s.get("asv")]
    if not runs:
        return None
    aa = [s for s in runs if s["kind"] == "aa"]
    planted = [s for s in runs if s["kind"] == "planted"]
    # asv's table lists only the benchmarks that changed: count the workloads the session ran
    n_names = len(runs[0]["bench"]["stats"])
    det = {size: [0, 0] for size in SIZES}
    for s in planted:
        for name, size in s["knobs"].items():
            if size in det:
                det[size][0] += s["asv"]["marks"].get(name) == "+"
                det[size][1] += 1
    return {
        "fa": [sum(m == "+" for s in aa for m in s["asv"]["marks"].values()), len(aa) * n_names],
        "sessions": [sum(any(m == "+" for m in s["asv"]["marks"].values()) for s in aa), len(aa)],
        "det": det,
        "wall": statistics.median(s["asv"]["wall"] for s in runs),
    }


# ------------------------------------------------------------------------------------------
# report


def report(
    h: Harness, a: dict[str, Any], args: argparse.Namespace, started: str, where: str
) -> str:
    per, mds, det = a["per"], a["mds"], a["det"]
    L: list[str] = []
    L.append("# Validation: false alarms, detection and wall time")
    L.append("")
    L.append(
        "Produced by the harness in `validation/run.py` (`nox -s validate`), which runs every "
        "session as separate pytest processes, the way a user runs them. Figures are from one "
        "harness run; re-run it to check them on your machine."
    )
    L.append("")
    L.append(f"- Date: {started} (UTC)")
    L.append(f"- Machine: {where}")
    L.append(f"- Command: `{args.command}`")
    L.append(
        f"- burnperf at the CI settings: `pytest {' '.join(OURS_CI)}` (10 samples a round, "
        "the 3 pooled rounds' share of 20, adaptive up to 200 samples or 1 s per process; the "
        "default CPU warm-up ending once its calls settle; 3 process rounds, and up to 8 for "
        "the benchmarks still undecided, the extra rounds forked from one round server "
        "(`--perf-round-start auto`); "
        "1 thread, alpha 0.01 family-wise over the session, 5% threshold, disturbed rounds "
        "set aside); baselines recorded once with the same settings and `--perf-update`."
    )
    if a["asv"] is not None:
        L.append(
            "- `asv continuous --factor 1.05 base SESSION` in every session on the same synthetic "
            "workloads (validation/asv_compare.py: a throw-away repository whose session commit "
            "carries the session's work factors; asv's defaults otherwise, 2 processes per "
            "commit; its environment built once before the sessions). Its wall time covers both "
            "commits and the session commit's install, as a user of asv meets it."
        )
    L.append(
        "- pytest-benchmark at its defaults (min 5 rounds, 1 s max time, calibration, no "
        "warm-up), one BLAS thread, one saved run as the baseline, judged by "
        "`--benchmark-compare-fail=median:5%` and `mean:5%`."
    )
    L.append(
        f"- {a['aa_sessions']} A/A sessions and {a['planted_sessions']} planted sessions, "
        "interleaved. A/A sessions run the shipped CPU suite plus the synthetic workloads; "
        "planted sessions run the same, with each synthetic workload doing "
        "+5/+10/+20/+50% or -10% work (rotated); the shipped benchmarks stay unchanged there "
        "and count as A/A comparisons."
    )
    loads = sorted({s.get("load", 0.0) for s in h.sessions})
    if loads != [0.0]:
        L.append(
            f"- Every session (all three tools, and the timing runs) ran beside "
            f"`validation/load.py --duty {max(loads):g}`: one process spinning in bursts of "
            "20-400 ms with sleeps between them, about a third of one core on average, "
            "arriving unannounced as another program's work does. The baselines were recorded "
            "without it, as on a quiet runner."
        )
    if getattr(args, "rejudge", None) is not None:
        L.append(
            "- burnperf's verdicts below were judged again from the raw samples of that run "
            "with this checkout's decision rule (`--from-json ... --rejudge WORKDIR`); sampling "
            "does not depend on the rule, so no measurement was repeated."
            + (
                f" Each round of both sides was first cut to its fastest {100 * args.rejudge_fastest:g}% "
                "of samples (`--rejudge-fastest`): a gate on a low quantile of each round, not "
                "its median."
                if getattr(args, "rejudge_fastest", None) is not None
                else ""
            )
        )
    L.append("")
    L.append("## A/A: unchanged code")
    L.append("")
    total_k = sum(p["status"]["regressed"] for p in per.values())
    total_n = sum(sum(p["status"].values()) for p in per.values())
    syn_bench_n = sum(c["n"] for c in a["bench_per"].values())
    L.append("| rule | per-benchmark false alarms | per-session false fails |")
    L.append("|---|---|---|")
    L.append(
        f"| burnperf (shipped + synthetic) | {cp(total_k, total_n)} | "
        f"{cp(a['ours_session_fail'], a['aa_sessions'])} |"
    )
    syn_k = sum(p["status"]["regressed"] for k, p in per.items() if _ours_synthetic(k))
    syn_n = sum(sum(p["status"].values()) for k, p in per.items() if _ours_synthetic(k))
    L.append(
        f"| burnperf (synthetic only) | {cp(syn_k, syn_n)} | "
        f"{cp(a['ours_session_fail_syn'], a['aa_sessions'])} |"
    )
    for field in ("median", "mean"):
        k = sum(c[field] for c in a["bench_per"].values())
        L.append(
            f"| pytest-benchmark `{field}:5%` (synthetic) | {cp(k, syn_bench_n)} | "
            f"{cp(a['bench_session'][field], a['aa_sessions'])} |"
        )
    if a["asv"] is not None:
        L.append(
            f"| `asv continuous --factor 1.05` (synthetic) | {cp(*a['asv']['fa'])} | "
            f"{cp(*a['asv']['sessions'])} |"
        )
    undecided = sum(n for p in per.values() for s, n in p["status"].items() if s not in JUDGED)
    L.append("")
    L.append(
        f"burnperf left {cp(undecided, total_n)} of the unchanged comparisons undecided "
        "(`no-baseline`, `incomparable` or `inconclusive`: not judged, so not a pass)."
    )
    L.append("")
    L.append(
        f"pytest-benchmark's own exit status (run with `--benchmark-compare-fail=median:5%`) "
        f"failed {a['bench_rc_fail']}/{a['aa_sessions']} A/A sessions."
    )
    L.append("")
    L.append("Per benchmark (burnperf verdicts over all sessions where the code was unchanged):")
    L.append("")
    L.append(
        "| benchmark | median | min. detectable slowdown (median) | regressed | improved | "
        "inconclusive | unchanged | pytest-benchmark median:5% / mean:5% fails |"
    )
    L.append("|---|---|---|---|---|---|---|---|")
    for key in sorted(per):
        p = per[key]
        st = p["status"]
        syn = _ours_synthetic(key)
        bp = a["bench_per"].get(syn) if syn else None
        bcol = f"{bp['median']}/{bp['n']} / {bp['mean']}/{bp['n']}" if bp else "-"
        L.append(
            f"| `{key}` | {ms(statistics.median(p['med']))} | {pct(mds[key])} | "
            f"{st['regressed']} | {st['improved']} | {st['inconclusive']} | {st['unchanged']} | "
            f"{bcol} |"
        )
    vals = [v for k, v in mds.items() if v is not None and not _ours_synthetic(k)]
    L.append("")
    if vals:
        L.append(
            f"Median minimum detectable slowdown over the shipped CPU suite: "
            f"{pct(statistics.median(vals))} ({len(vals)} benchmarks)."
        )
    noise = [v for k, v in a["noise_mds"].items() if v is not None and not _ours_synthetic(k)]
    if noise:
        L.append(
            "It is never below the 5% threshold, since a change must exceed the threshold to "
            "fail; what the between-run noise alone would let the same rounds see (the slowdown "
            "caught with 90% probability with no minimum effect): median "
            f"{pct(statistics.median(noise))} over the shipped CPU suite, "
            f"{pct(statistics.median(v for k, v in a['noise_mds'].items() if v is not None))} "
            "over all benchmarks."
        )
    L.append("")
    L.append("## Planted regressions and speed-ups (synthetic workloads)")
    L.append("")
    L.append(
        "Detection = the benchmark's test failed (burnperf: verdict `regressed`; "
        "pytest-benchmark: the rule's percentage exceeded). 'Gateable' = benchmarks whose "
        f"median reported minimum detectable slowdown is <= {100 * MDS_GATE:.0f}%."
    )
    L.append("")
    asv = a["asv"]
    L.append(
        "| planted work | measured change (median) | burnperf, all | burnperf, gateable | "
        "burnperf not judged | pytest-benchmark median:5% | pytest-benchmark mean:5% |"
        + (" asv continuous |" if asv else "")
    )
    L.append("|---|---|---|---|---|---|---|" + ("---|" if asv else ""))
    for size in SIZES:
        d = det[size]
        change = pct(statistics.median(d["ratios"]) - 1) if d["ratios"] else "-"
        label = f"{100 * (size - 1):+.0f}%"
        L.append(
            f"| {label} | {change} | {cp(*d['ours'])} | {cp(*d['ours_gate'])} | "
            f"{d['undecided']}/{d['ours'][1]} | {cp(*d['bench_median'])} | {cp(*d['bench_mean'])} |"
            + (f" {cp(*asv['det'][size])} |" if asv else "")
        )
    d = det[0.90]
    L.append("")
    L.append(
        f"With 10% less work, burnperf reported `improved` for {d['improved']}/{d['ours'][1]} "
        f"and failed {d['ours'][0]}."
    )
    L.append("")
    L.append("## Wall time")
    L.append("")
    ours_full = [s["ours"]["wall"] for s in h.sessions]
    bench_w = [s["bench"]["wall"] for s in h.sessions]
    n_full = len(next(iter(h.sessions))["ours"]["verdicts"])
    L.append("| run | benchmarks | session wall time (median) | per benchmark |")
    L.append("|---|---|---|---|")
    L.append(
        f"| burnperf, CI settings (3-8 process rounds), shipped + synthetic | {n_full} | "
        f"{statistics.median(ours_full):.1f} s | {statistics.median(ours_full) / n_full:.2f} s |"
    )
    n_syn = len(a["bench_per"]) or 1
    if h.timing:
        syn_w = statistics.median(h.timing)
        L.append(
            f"| burnperf, CI settings, synthetic only | {n_syn} | {syn_w:.1f} s | "
            f"{syn_w / n_syn:.2f} s |"
        )
    bw = statistics.median(bench_w)
    L.append(
        f"| pytest-benchmark defaults, synthetic only | {n_syn} | {bw:.1f} s | {bw / n_syn:.2f} s |"
    )
    if asv:
        L.append(
            f"| asv continuous (both commits), synthetic only | {n_syn} | {asv['wall']:.1f} s | "
            f"{asv['wall'] / n_syn:.2f} s |"
        )
    rounds = [len(v["n"]) for s in h.sessions for v in s["ours"]["verdicts"].values() if v["n"]]
    if rounds:
        hist = Counter(rounds)
        L.append("")
        L.append(
            "Process rounds per benchmark and session (adaptive): "
            + ", ".join(f"{r} rounds: {hist[r]}" for r in sorted(hist))
            + f" (mean {statistics.fmean(rounds):.1f})."
        )
    L.append("")
    L.extend(targets(h, a, total_k, total_n, vals, bw))
    return "\n".join(L) + "\n"


def targets(
    h: Harness, a: dict[str, Any], fa_k: int, fa_n: int, mds_shipped: list[float], bench_wall: float
) -> list[str]:
    """The issue's targets, each with the measured figure and whether it is met."""
    det = a["det"]

    def rate(pair: list[int]) -> float | None:
        return None if pair[1] == 0 else pair[0] / pair[1]

    def row(what: str, figure: str, ok: bool | None) -> str:
        verdict = "not measured" if ok is None else ("met" if ok else "NOT met")
        return f"| {what} | {figure} | {verdict} |"

    g10, g20 = rate(det[1.10]["ours"]), rate(det[1.20]["ours"])
    sess = a["ours_session_fail"] / max(1, a["aa_sessions"])
    med = statistics.median(mds_shipped) if mds_shipped else None
    noise = [v for k, v in a["noise_mds"].items() if v is not None and not _ours_synthetic(k)]
    noise_note = (
        f" (never below the 5% threshold; the noise alone: {pct(statistics.median(noise))})"
        if noise
        else ""
    )
    ratio = statistics.median(h.timing) / bench_wall if h.timing else None
    out = ["## Targets", "", "| target | measured | |", "|---|---|---|"]
    out.append(
        row("A/A false alarms per benchmark <= 0.5%", f"{fa_k}/{fa_n}", fa_k / fa_n <= 0.005)
    )
    out.append(
        row(
            "A/A false fails per session <= 5% (>= 20 sessions)",
            f"{a['ours_session_fail']}/{a['aa_sessions']}",
            sess <= 0.05 and a["aa_sessions"] >= 20,
        )
    )
    out.append(
        row(
            "planted +20% detected >= 99% (all workloads)",
            "/".join(map(str, det[1.20]["ours"])),
            None if g20 is None else g20 >= 0.99,
        )
    )
    out.append(
        row(
            "planted +10% detected >= 90% (all workloads)",
            "/".join(map(str, det[1.10]["ours"])),
            None if g10 is None else g10 >= 0.90,
        )
    )
    every = [v["status"] for s in h.sessions for v in s["ours"]["verdicts"].values()]
    left = sum(st not in JUDGED for st in every)
    out.append(
        row(
            "undecided (no-baseline, incomparable, inconclusive) <= 5% of benchmark-sessions",
            f"{left}/{len(every)}",
            None if not every else left / len(every) <= 0.05,
        )
    )
    out.append(
        row("planted -10% never fails", f"{det[0.90]['ours'][0]} failed", det[0.90]["ours"][0] == 0)
    )
    out.append(
        row(
            "median min. detectable slowdown over the shipped CPU suite <= 4%",
            pct(med) + noise_note,
            None if med is None else med <= 0.04,
        )
    )
    out.append(
        row(
            "wall time <= 3x pytest-benchmark's defaults (same synthetic workloads)",
            "-" if ratio is None else f"{ratio:.2f}x",
            None if ratio is None else ratio <= 3.0,
        )
    )
    asv = a["asv"]
    if asv is None or not h.timing:
        out.append(row("wall time <= asv continuous", "asv not run (--asv)", None))
    else:
        syn = statistics.median(h.timing)
        out.append(
            row(
                "wall time <= asv continuous (same synthetic workloads, same run)",
                f"{syn:.1f} s against {asv['wall']:.1f} s ({syn / asv['wall']:.2f}x)",
                syn <= asv["wall"],
            )
        )
    out.append("")
    return out


# ------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--aa-sessions", type=int, default=20)
    ap.add_argument("--planted-sessions", type=int, default=15)
    ap.add_argument("--timing-sessions", type=int, default=3)
    ap.add_argument(
        "--shipped-k",
        default=SHIPPED_K,
        help="-k expression choosing the shipped CPU benchmarks to include",
    )
    ap.add_argument(
        "--work", type=Path, default=None, help="scratch directory (default: a temp dir)"
    )
    ap.add_argument("--out", type=Path, default=None, help="Markdown report to write")
    ap.add_argument(
        "--asv",
        action="store_true",
        help="also run `asv continuous` on the synthetic workloads in every session "
        "(validation/asv_compare.py; needs asv and virtualenv installed)",
    )
    ap.add_argument(
        "--load",
        type=float,
        default=0.0,
        metavar="DUTY",
        help="run every session (all tools, and its timing run) beside validation/load.py at "
        "this busy share of one core (0.33: light and bursty); the baselines are recorded "
        "without it, as on a quiet runner",
    )
    ap.add_argument("--command", default="nox -s validate", help="command named in the report")
    ap.add_argument(
        "--rejudge",
        type=Path,
        default=None,
        help="with --from-json: judge the samples kept in this work directory again with this "
        "checkout's decision rule",
    )
    ap.add_argument(
        "--rejudge-fastest",
        type=float,
        default=None,
        metavar="SHARE",
        help="with --rejudge: cut every round of both sides to its fastest SHARE of samples "
        "(0 < SHARE <= 1) before judging",
    )
    ap.add_argument(
        "--from-json",
        type=Path,
        default=None,
        help="re-render the report from the raw JSON of an earlier run instead of measuring",
    )
    args = ap.parse_args(argv)
    if not 0.0 <= args.load < 1.0:
        ap.error(f"--load must be in [0, 1), got {args.load}")
    if args.from_json is not None:
        raw = json.loads(args.from_json.read_text())
        h = Harness(Path("."))
        h.sessions, h.timing = raw["sessions"], raw["timing"]
        if args.rejudge_fastest is not None and not 0.0 < args.rejudge_fastest <= 1.0:
            ap.error(f"--rejudge-fastest must be in (0, 1], got {args.rejudge_fastest}")
        if args.rejudge_fastest is not None and args.rejudge is None:
            ap.error("--rejudge-fastest needs --rejudge WORKDIR")
        if args.rejudge is not None:
            rejudge(args.rejudge, h.sessions, args.rejudge_fastest)
        text = report(h, analyse(h, raw["baseline_bench"]), args, raw["started"], raw["machine"])
        print(text)
        if args.out:
            write_section(args.out, text)
        return 0
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    work = args.work or Path(tempfile.mkdtemp(prefix="burnperf-validate-"))
    h = Harness(work)
    h.shipped_k = args.shipped_k
    h.setup()
    from validation.synthetic.workloads import NAMES

    names = list(NAMES)
    log(f"work directory {work}; recording baselines")
    rec = h.ours("record", {}, update=True)
    log(f"burnperf baselines recorded in {rec['wall']:.0f} s (exit {rec['rc']})")
    for line in rec["noisy"]:
        log(line)
    base_bench = h.bench("record", {}, save=True)
    log(f"pytest-benchmark run saved in {base_bench['wall']:.0f} s")
    asv_run = start_asv(work) if args.asv else None

    schedule: list[tuple[str, int]] = []
    a_i = p_i = 0
    while a_i < args.aa_sessions or p_i < args.planted_sessions:
        if a_i < args.aa_sessions:
            schedule.append(("aa", a_i))
            a_i += 1
        if p_i < args.planted_sessions:
            schedule.append(("planted", p_i))
            p_i += 1
    # the timing runs (synthetic workloads alone) spread over the sessions, not all at the end
    timing_after = {
        max(1, round((k + 1) * len(schedule) / max(1, args.timing_sessions)))
        for k in range(args.timing_sessions)
    }
    for n, (kind, i) in enumerate(schedule, 1):
        knobs = {} if kind == "aa" else planted_knobs(i, names)
        tag = f"{kind}{i}"
        background = None
        if args.load > 0:
            from validation.load import start as start_load

            background = start_load(args.load, seed=n)
        try:
            ours = h.ours(tag, knobs)
            bench = h.bench(tag, knobs)
            h.sessions.append(
                {
                    "kind": kind,
                    "i": i,
                    "knobs": knobs,
                    "ours": ours,
                    "bench": bench,
                    "load": args.load,
                }
            )
            if asv_run is not None:
                h.sessions[-1]["asv"] = asv_run(tag, knobs)
            if n in timing_after:
                _rc, wall, _ = h._pytest(["-p", "no:benchmark", *OURS_CI, "-q", SYNTH_PERF], {})
                h.timing.append(wall)
        finally:
            if background is not None:
                background.kill()
                background.wait()
        statuses = Counter(v["status"] for v in ours["verdicts"].values())
        log(
            f"session {n}/{len(schedule)} {tag}: burnperf {dict(statuses)} in {ours['wall']:.0f} s;"
            f" pytest-benchmark exit {bench['rc']} in {bench['wall']:.0f} s"
            + (f"; asv in {h.sessions[-1]['asv']['wall']:.0f} s" if asv_run else "")
        )
        if n in timing_after:
            log(
                f"timing run {len(h.timing)}: burnperf on the synthetic workloads alone, {wall:.0f} s"
            )
        if args.out:  # kept after every session: an interrupted run can still be rendered
            save_raw(args.out, started, base_bench, h)

    if args.out:
        save_raw(args.out, started, base_bench, h)
    text = report(h, analyse(h, base_bench), args, started, machine())
    print(text)
    if args.out:
        write_section(args.out, text)
        log(f"wrote {args.out} and {args.out.with_suffix('.json')}")
    return 0


def save_raw(out: Path, started: str, base_bench: dict[str, Any], h: Harness) -> None:
    """The raw verdicts next to the report (``--from-json`` renders them again)."""
    raw = {
        "started": started,
        "machine": machine(),
        "baseline_bench": base_bench,
        "sessions": h.sessions,
        "timing": h.timing,
    }
    out.with_suffix(".json").write_text(json.dumps(raw, indent=1) + "\n")


def write_section(path: Path, text: str) -> None:
    """The harness's report between START and END of ``path``: the notes around them stay."""
    block = f"{START}\n{text}{END}"
    doc = path.read_text() if path.exists() else ""
    if START in doc and END in doc:
        doc = doc[: doc.index(START)] + block + doc[doc.index(END) + len(END) :]
    else:
        doc = block + "\n" + doc
    path.write_text(doc)


def start_asv(work: Path) -> Any:
    """asv's repository and environment (built once, validation/asv_compare.py); returns
    ``(tag, knobs) -> session record`` for one ``asv continuous`` session."""
    from validation import asv_compare

    exe = asv_compare.find_asv()
    repo = asv_compare.make_repo(work / "asv")
    asv_compare.prepare(exe, repo)

    def run(tag: str, knobs: dict[str, float]) -> dict[str, Any]:
        # an A/A commit must differ from the base to be compared: it names the session
        got = asv_compare.session(exe, repo, tag, {"_session": tag, **knobs})
        return {"wall": got["wall"], "marks": got["marks"], "rc": got["rc"]}

    return run


if __name__ == "__main__":
    raise SystemExit(main())
