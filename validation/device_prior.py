"""The device clock's own prior, fitted and replayed on the raw rounds of a lent GPU.

Reads the raw rounds of ``validation.gpu_gate --mode same-session`` (each benchmark's samples,
round by round, on both sides: ``docs/data/gpu-same-session-h100.json``) and the device and host
medians of ``--mode stored`` (``docs/data/gpu-gate-h100.json``, which say which workloads kept
the GPU busy), then:

1. the between-process spreads of the device-bound benchmarks (sd of log round medians per
   side) and the maximum-likelihood scale of a scaled inverse chi-square prior on them;
2. every comparison judged again with this checkout's rule, the rounds cut where the rule
   would have stopped (``needs_more_rounds``, from 3), once with the host's prior for every
   clock (the rule the runs were made under: its verdicts must come back) and once with the
   prior of each benchmark's clock (``between_runs.noise_source``), at the default 5% threshold
   and at 1%;
3. the same for planted slowdowns added to the current side's device-bound rounds of the A/A
   session (+2%, +3%: device work, the rounds' own noise kept).

    python -m validation.device_prior --out docs/data/device-prior-replay.json

No GPU is needed: it replays what one measured.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pytest_burnperf.core.judging.between_runs import DEFAULT_PRIOR, noise_source
from pytest_burnperf.core.judging.more_rounds import needs_more_rounds
from pytest_burnperf.core.judging.verdict import Policy, Verdict, judge

DATA = Path(__file__).resolve().parents[1] / "docs" / "data"
SAME_SESSION = DATA / "gpu-same-session-h100.json"
STORED = DATA / "gpu-gate-h100.json"
FIRST_ROUNDS = 3
PLANTS = (1.02, 1.03)

Runs = list[list[float]]


def workload(name: str) -> tuple[str, str]:
    """``test_gpu[torch-cuda0-f32-matmul]`` -> (``matmul``, ``torch-cuda0``)."""
    inner = name[name.index("[") + 1 : -1].split("-")
    device = f"{inner[0]}-{inner[1]}"
    return ("chain-graph" if name.startswith("test_gpu_graph") else inner[-1]), device


def shares(stored: dict[str, Any]) -> dict[tuple[str, str], float]:
    """(workload, device) -> median device time over host wall time, from the stored runs."""
    seen: dict[tuple[str, str], list[float]] = {}
    for run in stored["gate_runs"]:
        for session in run["sessions"]:
            for v in session["verdicts"]:
                if v.get("host_median") and v.get("device_median"):
                    seen.setdefault((v["workload"], v["device"]), []).append(
                        v["device_median"] / v["host_median"]
                    )
    return {k: statistics.median(xs) for k, xs in seen.items()}


def source_of(result: dict[str, Any], share: dict[tuple[str, str], float]) -> str:
    ratio = share.get(workload(result["name"]))
    if ratio is None:
        return "host"
    # one sample standing for the medians: device time `ratio`, host time 1
    return noise_source(result["timer"], on_host=False, values=[ratio], host_values=[1.0])


def cut(ref: Runs, cur: Runs, more: Callable[[Runs, Runs], bool]) -> tuple[Runs, Runs]:
    """The paired rounds up to where ``more`` stops asking for another (from 3)."""
    n = min(len(ref), len(cur))
    for k in range(FIRST_ROUNDS, n):
        if not more(ref[:k], cur[:k]):
            return ref[:k], cur[:k]
    return ref[:n], cur[:n]


def verdict(ref: Runs, cur: Runs, policy: Policy) -> tuple[Verdict, int]:
    r, c = cut(ref, cur, lambda a, b: needs_more_rounds(a, b, policy))
    return judge(r, c, policy), len(r)


def spreads(doc: dict[str, Any], share: dict[tuple[str, str], float]) -> list[dict[str, Any]]:
    out = []
    for session in doc["sessions"]:
        for r in session["results"]:
            for side in ("base_rounds", "current_rounds"):
                meds = [math.log(statistics.median(x)) for x in r[side]]
                out.append(
                    {
                        "session": session["i"],
                        "name": r["name"],
                        "side": side,
                        "source": source_of(r, share),
                        "rounds": len(meds),
                        "sd": statistics.stdev(meds),
                    }
                )
    return out


def fit(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Maximum-likelihood scale at 2 degrees of freedom (and the free fit) of a scaled inverse
    chi-square prior on these spreads (validation.noise.fit_prior's model, rounds per row)."""
    import numpy as np
    from scipy import optimize
    from scipy.stats import f

    v = np.array([r["sd"] ** 2 for r in rows])
    n = np.array([r["rounds"] - 1 for r in rows])

    def nll(log_scale: float, log_dof: float) -> float:
        s0, dof = np.exp(log_scale), np.exp(log_dof)
        return float(-np.sum(f.logpdf(v / s0**2, n, dof) - 2 * log_scale))

    free = optimize.minimize(
        lambda p: nll(p[0], p[1]), [np.log(0.003), np.log(3.0)], method="Nelder-Mead"
    )
    two = optimize.minimize_scalar(
        lambda ls: nll(ls, np.log(2.0)), bounds=(-12, 0), method="bounded"
    )
    return {
        "scale": float(np.exp(free.x[0])),
        "dof": float(np.exp(free.x[1])),
        "scale_at_dof2": float(np.exp(two.x)),
    }


def planted(rounds: Runs, factor: float) -> Runs:
    return [[x * factor for x in r] for r in rounds]


def comparisons_of(session: dict[str, Any]) -> int:
    """The comparisons the session's family-wise alpha was split over: not in the raw data (the
    run counted the benchmarks it collected, skipped ones too), so recovered as the count whose
    verdicts on the measured rounds give back every recorded floor."""
    for c in range(len(session["results"]), 200):
        policy = Policy(alpha=0.01, threshold=0.05, comparisons=c, prior=DEFAULT_PRIOR, paired=True)
        if all(
            math.isclose(
                judge(r["base_rounds"], r["current_rounds"], policy).min_detectable or 0.0,
                r["verdict"]["min_detectable_slowdown"],
                rel_tol=1e-3,  # the raw rounds are kept to 5 significant digits
            )
            for r in session["results"]
        ):
            return c
    raise SystemExit(f"session {session['i']}: no count of comparisons gives its floors back")


def replay(doc: dict[str, Any], share: dict[tuple[str, str], float]) -> list[dict[str, Any]]:
    rows = []
    for session in doc["sessions"]:
        comparisons = comparisons_of(session)
        for r in session["results"]:
            source = source_of(r, share)
            ref, cur = r["base_rounds"], r["current_rounds"]
            cases = [("as measured", 1.0, cur)]
            if session["i"] == 0 and source == "device":
                cases += [(f"+{round(100 * (f - 1))}% planted", f, planted(cur, f)) for f in PLANTS]
            for case, factor, current in cases:
                row: dict[str, Any] = {
                    "session": session["i"],
                    "comparisons": comparisons,
                    "name": r["name"],
                    "timer": r["timer"],
                    "source": source,
                    "case": case,
                    "factor": factor,
                    "recorded": {
                        "status": r["verdict"]["status"],
                        "mds": r["verdict"]["min_detectable_slowdown"],
                    },
                }
                for label, threshold, per_clock in (
                    ("host prior, 5%", 0.05, False),
                    ("clock prior, 5%", 0.05, True),
                    ("host prior, 1%", 0.01, False),
                    ("clock prior, 1%", 0.01, True),
                ):
                    policy = Policy(
                        alpha=0.01,
                        threshold=threshold,
                        comparisons=comparisons,
                        prior=DEFAULT_PRIOR,
                        paired=True,
                    )
                    if per_clock:
                        policy = policy.for_noise(source)
                    v, n = verdict(ref, current, policy)
                    row[label] = {
                        "status": v.status,
                        "change_pct": v.change_pct,
                        "mds": v.min_detectable,
                        "rounds": n,
                    }
                rows.append(row)
    return rows


def summary(rows: Sequence[dict[str, Any]]) -> list[str]:
    lines = []
    for label in ("host prior, 5%", "clock prior, 5%", "host prior, 1%", "clock prior, 1%"):
        for source in ("device", "host"):
            mine = [r for r in rows if r["source"] == source]
            aa = [r for r in mine if r["factor"] == 1.0 and r["session"] == 0]
            plants = {f: [r for r in mine if r["factor"] == f] for f in PLANTS}
            mds = [r[label]["mds"] for r in aa if r[label]["mds"] is not None]
            flagged = sum(r[label]["status"] == "regressed" for r in aa)
            caught = ", ".join(
                f"+{round(100 * (f - 1))}% {sum(r[label]['status'] == 'regressed' for r in p)}"
                f" of {len(p)}"
                for f, p in plants.items()
                if p
            )
            lines.append(
                f"{label:16} {source:6}: A/A {flagged} of {len(aa)} flagged, median floor "
                f"{100 * statistics.median(mds):.1f}%"
                + (f", max {100 * max(mds):.1f}%" if mds else "")
                + (f"; caught {caught}" if caught else "")
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--same-session", type=Path, default=SAME_SESSION)
    ap.add_argument("--stored", type=Path, default=STORED)
    ap.add_argument("--out", type=Path, default=None, help="write the replay's raw rows here")
    args = ap.parse_args(argv)
    doc = json.loads(args.same_session.read_text())
    share = shares(json.loads(args.stored.read_text()))
    spread_rows = spreads(doc, share)
    device = [r for r in spread_rows if r["source"] == "device"]
    sds = sorted(r["sd"] for r in device)
    got = fit(device)
    shown = {f"{w} ({d})": round(v, 2) for (w, d), v in sorted(share.items())}
    print(f"device time share of the host wall time: {json.dumps(shown)}")
    print(
        f"{len(device)} device-bound spreads (sd of log round medians, 3-8 rounds): median "
        f"{100 * statistics.median(sds):.2f}%, 90th percentile "
        f"{100 * sds[int(0.9 * (len(sds) - 1))]:.2f}%, max {100 * sds[-1]:.2f}%; "
        f"maximum likelihood at 2 dof {100 * got['scale_at_dof2']:.3f}% "
        f"(free fit {100 * got['scale']:.3f}% with {got['dof']:.2f} dof)"
    )
    rows = replay(doc, share)
    same = sum(
        r["host prior, 5%"]["status"] == r["recorded"]["status"]
        and math.isclose(r["host prior, 5%"]["mds"], r["recorded"]["mds"], rel_tol=1e-3)
        for r in rows
        if r["factor"] == 1.0
    )
    measured = sum(r["factor"] == 1.0 for r in rows)
    print(f"the rule the runs were made under gives back {same} of {measured} recorded verdicts")
    kept = sum(
        r["clock prior, 5%"]["status"] == r["recorded"]["status"]
        for r in rows
        if r["factor"] == 1.0
    )
    print(
        f"each clock's prior at the default 5% threshold: {kept} of {measured} verdicts as recorded"
    )
    for line in summary(rows):
        print(line)
    if args.out is not None:
        args.out.write_text(
            json.dumps(
                {
                    "command": "python -m validation.device_prior"
                    + (f" --out {args.out.as_posix()}" if args.out else ""),
                    "inputs": [args.same_session.name, args.stored.name],
                    "shares": {f"{w} ({d})": v for (w, d), v in sorted(share.items())},
                    "spreads": spread_rows,
                    "fit": got,
                    "replayed_as_recorded": [same, measured],
                    "clock_prior_as_recorded": [kept, measured],
                    "rows": rows,
                },
                indent=1,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
