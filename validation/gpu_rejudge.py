"""Judge a GPU gate session's saved results again with this checkout's rules (issue 72): every
round as measured, the host windows and reference probes each round recorded, the stored
baselines the session compared with. What changes between the rule a session ran under and
this checkout's is the host evidence (``assess.HostEvidence``): a device-bound kernel, judged
on its device's clock, is excused only by the GPU's side of the windows, and another process's
kernels seen in one round stand for the whole run. The rounds are not cut (the adaptive rounds
ran under a rule whose round decisions this does not change).

    python -m validation.gpu_rejudge --baselines DIR --results s3.json [s0.json ...] --json OUT
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pytest_burnperf.core.judging.assess import HostEvidence, assess
from pytest_burnperf.core.judging.between_runs import DEVICE_PRIOR
from pytest_burnperf.core.judging.verdict import DEVICE_THRESHOLD, Policy
from pytest_burnperf.core.records.stored_baseline import StoredBaseline
from pytest_burnperf.host.activity import Window


def windows(docs: Any) -> tuple[Window, ...]:
    return tuple(w for d in docs or () if (w := Window.from_dict(d)) is not None)


def rejudge(
    baselines: dict[str, Any], doc: dict[str, Any], device_threshold: float | None = None
) -> list[dict[str, Any]]:
    """One row per result: the status it got and the one this checkout gives (a device-bound
    kernel at ``device_threshold`` where given, else at this checkout's default)."""
    rows = []
    comparisons = len(doc["results"])
    for r in doc["results"]:
        entry = baselines.get(r["name"])
        if entry is None:
            continue
        old = r["verdict"]
        # the session's own verdict names the prior that judged it: the device's, or the host's
        device_bound = DEVICE_PRIOR.source in (old.get("prior") or "")
        chosen = device_bound and device_threshold is not None
        policy = Policy(
            alpha=0.01,
            threshold=device_threshold if chosen and device_threshold else 0.05,
            threshold_given=chosen,
            comparisons=comparisons,
        ).for_noise("device" if device_bound else "host")
        assert (policy.prior is DEVICE_PRIOR) == device_bound
        v = assess(
            StoredBaseline.from_entry(entry),
            r["runs"],
            fingerprint=r["device"],
            timer=r["timer"],
            l2_flush=bool(r.get("l2_flush")),
            policy=policy,
            host=HostEvidence(
                windows=windows(r.get("host")),
                baseline_windows=windows(entry.get("host")),
                probe=r.get("host_probe"),
                baseline_probe=entry.get("host_probe"),
                device_bound=device_bound,
            ),
        )
        rows.append(
            {
                "name": r["name"],
                "device_bound": device_bound,
                "then": {"status": old["status"], "change_pct": old["change_pct"]},
                "now": {
                    "threshold": v.threshold,
                    "status": v.status,
                    "change_pct": v.change_pct,
                    "min_detectable_slowdown": v.min_detectable,
                    "reason": v.reason,
                    "notes": list(v.notes),
                },
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baselines", required=True, help="the session's baselines JSON file")
    ap.add_argument("--results", nargs="+", required=True, help="--perf-json files of sessions")
    ap.add_argument(
        "--device-threshold",
        type=float,
        help=f"a device-bound kernel's threshold (default: {DEVICE_THRESHOLD}, the plugin's)",
    )
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args(argv)
    baselines = json.loads(Path(args.baselines).read_text())["benchmarks"]
    out = {}
    for f in args.results:
        rows = rejudge(baselines, json.loads(Path(f).read_text()), args.device_threshold)
        out[f] = rows
        for row in rows:
            now = row["now"]
            print(
                f"{f}: {row['name']}: {row['then']['status']} -> {now['status']} "
                f"({now['change_pct']:+.2f}%, detects {100 * now['min_detectable_slowdown']:.2f}% "
                f"at {100 * now['threshold']:g}%) {now['reason'][:100]}"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
