"""Where users really run the gate: the measurements behind docs/validation.md's section
"Where users run it".

Four experiments on the validation harness's workloads (the shipped CPU benchmarks it selects and
the nine synthetic pure-Python, numpy and BLAS workloads), each pytest session a fresh process:

1. **another class** -- baselines recorded here, their fingerprints rewritten to an AVX-512 CPU of
   the same name (x86-64-v4, family 25 model 17, numpy AVX512_SKX, OpenBLAS SkylakeX, torch
   AVX512) and judged under ``--perf-machine`` (so the directory cannot keep them apart), with a
   planted +30% in every synthetic workload: how many regressed, how many incomparable with the
   difference named;
2. **one process** -- ``pytest --perf --perf-update --perf-quick`` (3 process rounds), then
   ``--default-sessions`` sessions of ``pytest --perf --perf-quick`` (one process; the defaults
   until 3-8 rounds became them) on unchanged code;
3. **busy** -- ``--busy-sessions`` plain sessions while a CPU-bound process spins on this machine;
4. **planted** -- at the CI settings (``--perf-rounds 3``) against 3-round baselines, sessions in
   which the synthetic workloads do 10% or 20% more work (rotated), to check that detection
   holds with the host-state and probe rules in place.

    python -m validation.hosts --out docs/validation.md

writes the section between the markers ``<!-- hosts:start -->`` and ``<!-- hosts:end -->`` of
``--out`` (appending them if absent) and the raw verdicts in ``data/validation-hosts.json`` beside it.
Run it on an otherwise idle machine (the busy experiment makes its own load).
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from validation.common import cp, log, machine
from validation.run import SHIPPED, SHIPPED_K, SYNTH_PERF, Harness

HERE = Path(__file__).resolve().parent


START, END = "<!-- hosts:start -->", "<!-- hosts:end -->"
SELECT = ["-k", f"{SHIPPED_K} or test_synthetic"]
BASE = ["-p", "no:benchmark", "--perf", "--perf-backends", "cpu", "-q", SHIPPED, SYNTH_PERF]


def session(h: Harness, tag: str, extra: list[str], knobs: dict[str, float]) -> dict[str, Any]:
    out = h.work / f"{tag}.json"
    rc, wall, text = h._pytest([*BASE, *SELECT, "--perf-json", str(out), *extra], knobs)
    if not out.exists():
        raise SystemExit(f"session {tag} wrote no results (exit {rc}):\n{text[-3000:]}")
    doc = json.loads(out.read_text())
    verdicts = {}
    for r in doc["results"]:
        v = r["verdict"]
        verdicts[f"{r['module']}::{r['name']}"] = {
            "status": v["status"],
            "ratio": v["ratio"],
            "mds": v["min_detectable_slowdown"],
            "reason": v["reason"],
            "busy": r.get("host_disturbed"),
            "probe": r.get("host_probe"),
        }
    header = [ln for ln in text.splitlines() if ln.startswith(("host ", "machine "))]
    return {"tag": tag, "rc": rc, "wall": wall, "verdicts": verdicts, "header": header}


def synthetic_names() -> list[str]:
    from validation.synthetic.workloads import NAMES

    return list(NAMES)


def rewrite_class(root: Path, target: Path) -> None:
    """Copy the baselines under ``root`` to ``target`` as if a CPU of the other level had recorded
    them (AVX-512 for baselines from an AVX2 CPU, AVX2 for ones from an AVX-512 CPU)."""
    (src,) = [p for p in root.iterdir() if p.is_dir()]
    shutil.copytree(src, target)
    for f in target.rglob("*.json"):
        doc = json.loads(f.read_text())
        for entry in doc["benchmarks"].values():
            fp = entry["device"]
            if fp["cpu"]["level"] == "x86-64-v4":  # recorded on AVX-512: pretend an AVX2 CPU
                fp["cpu"].update(level="x86-64-v3", model=f"{fp['cpu']['model']}0")
                other = {"numpy": "X86_V3", "blas": "Haswell", "torch": "AVX2"}
            else:
                fp["cpu"].update(level="x86-64-v4", model="17")
                fp["cpu"]["features"] = sorted({*fp["cpu"]["features"], "avx512f", "avx512bw"})
                other = {"numpy": "AVX512_SKX", "blas": "SkylakeX", "torch": "AVX512"}
            fp["dispatch"] = {k: other[k] for k in fp["dispatch"]}
        f.write_text(json.dumps(doc))


def statuses(sessions: list[dict[str, Any]]) -> Counter[str]:
    return Counter(v["status"] for s in sessions for v in s["verdicts"].values())


def failed(s: dict[str, Any]) -> bool:
    return any(v["status"] == "regressed" for v in s["verdicts"].values())


def median(xs: list[float]) -> float | None:
    xs = sorted(x for x in xs if x is not None)
    return xs[len(xs) // 2] if xs else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--default-sessions", type=int, default=20)
    ap.add_argument("--busy-sessions", type=int, default=5)
    ap.add_argument("--planted-sessions", type=int, default=6)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--command", default="python -m validation.hosts --out docs/validation.md")
    args = ap.parse_args(argv)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    work = Path(tempfile.mkdtemp(prefix="burnperf-hosts-"))
    h = Harness(work)
    h.setup()
    names = synthetic_names()
    raw: dict[str, Any] = {"started": started, "machine": machine()}

    # 2. defaults: a default recording (3 rounds), then one-process sessions
    base_dir = work / "baselines"
    # --perf-quick: the one-process check this experiment measures (the default before 3-8
    # rounds became it); the recording's 3 rounds, no adaptive ones, as the defaults then were
    rec = session(
        h,
        "record",
        ["--perf-update", "--perf-quick", "--perf-baselines-dir", str(base_dir)],
        {},
    )
    log(f"default recording (3 rounds) in {rec['wall']:.0f} s")
    defaults = []
    for i in range(args.default_sessions):
        s = session(h, f"default{i}", ["--perf-quick", "--perf-baselines-dir", str(base_dir)], {})
        defaults.append(s)
        log(
            f"default session {i + 1}: {dict(Counter(v['status'] for v in s['verdicts'].values()))}"
        )
    raw["defaults"] = defaults

    # 1. another class, same directory name, planted +30% everywhere synthetic
    other = work / "other-class"
    rewrite_class(base_dir, other / "ci-runner")
    knobs30 = {n: 1.3 for n in names}
    cls = session(
        h,
        "other-class",
        ["--perf-baselines-dir", str(other), "--perf-machine", "ci-runner"],
        knobs30,
    )
    log(f"another class: {dict(Counter(v['status'] for v in cls['verdicts'].values()))}")
    raw["other_class"] = cls

    # 3. busy host: a CPU-bound process spins while plain sessions run
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    busy = []
    try:
        time.sleep(1.0)
        for i in range(args.busy_sessions):
            s = session(h, f"busy{i}", ["--perf-quick", "--perf-baselines-dir", str(base_dir)], {})
            busy.append(s)
            log(
                f"busy session {i + 1}: {dict(Counter(v['status'] for v in s['verdicts'].values()))}"
            )
    finally:
        hog.kill()
        hog.wait()
    raw["busy"] = busy

    # 4. planted at the CI settings against 3-round baselines
    planted = []
    sizes = (1.10, 1.20)
    for i in range(args.planted_sessions):
        knobs = {n: sizes[(i + j) % 2] for j, n in enumerate(names)}
        s = session(
            h, f"planted{i}", ["--perf-baselines-dir", str(base_dir), "--perf-rounds", "3"], knobs
        )
        s["knobs"] = knobs
        planted.append(s)
        log(
            f"planted session {i + 1}: {dict(Counter(v['status'] for v in s['verdicts'].values()))}"
        )
    raw["planted"] = planted
    shutil.rmtree(work, ignore_errors=True)

    text = report(raw, args)
    print(text)
    if args.out:
        (args.out.parent / "data" / "validation-hosts.json").write_text(
            json.dumps(raw, indent=1) + "\n"
        )
        doc = args.out.read_text() if args.out.exists() else ""
        block = f"{START}\n{text}\n{END}"
        if START in doc and END in doc:
            doc = doc[: doc.index(START)] + block + doc[doc.index(END) + len(END) :]
        else:
            doc = doc.rstrip("\n") + "\n\n" + block + "\n"
        args.out.write_text(doc)
    return 0


def report(raw: dict[str, Any], args: argparse.Namespace) -> str:
    d, b, p, c = raw["defaults"], raw["busy"], raw["planted"], raw["other_class"]
    n_d = sum(len(s["verdicts"]) for s in d)
    fa_d = sum(v["status"] == "regressed" for s in d for v in s["verdicts"].values())
    mds = median([v["mds"] for s in d for v in s["verdicts"].values()])
    cls_status = Counter(v["status"] for v in c["verdicts"].values())
    named = sum(
        "CPU level" in v["reason"] and "dispatches" in v["reason"] for v in c["verdicts"].values()
    )
    busy_named = sum(any(ln.startswith("host BUSY") for ln in s["header"]) for s in b)
    n_b = sum(len(s["verdicts"]) for s in b)
    fa_b = sum(v["status"] == "regressed" for s in b for v in s["verdicts"].values())
    probes = [v["probe"] for s in d for k, v in s["verdicts"].items() if k.endswith("python-1ms]")]
    probe_line = ""
    if probes and all(pr for pr in probes):
        import math
        import statistics

        parts = sorted(set(probes[0]) - {"version"})
        sds = {k: statistics.stdev(math.log(pr[k]) for pr in probes) for k in parts}
        gms = [math.exp(statistics.fmean(math.log(pr[k]) for k in parts)) for pr in probes]
        gm_sd = statistics.stdev(math.log(g) for g in gms)
        probe_line = (
            f"- Reference probe, process to process over the {len(probes)} default sessions (sd of "
            f"log): {', '.join(f'{k} {100 * v:.1f}%' for k, v in sds.items())}; geometric mean "
            f"{100 * gm_sd:.1f}% (a host is called slower or faster beyond 10%)."
        )
    rows = []
    for size in (1.10, 1.20):
        caught = total = caught_g = total_g = 0
        for s in p:
            for key, v in s["verdicts"].items():
                name = key.split("[", 1)[1].rstrip("]").removeprefix("numpy-cpu-f64-")
                if not key.startswith(SYNTH_PERF) or s["knobs"].get(name) != size:
                    continue
                total += 1
                caught += v["status"] == "regressed"
                if v["mds"] is not None and v["mds"] <= 0.07:
                    total_g += 1
                    caught_g += v["status"] == "regressed"
        rows.append(f"| +{100 * (size - 1):.0f}% | {cp(caught, total)} | {cp(caught_g, total_g)} |")
    fa_p = sum(
        v["status"] == "regressed"
        for s in p
        for k, v in s["verdicts"].items()
        if not k.startswith(SYNTH_PERF)
    )
    n_p = sum(1 for s in p for k in s["verdicts"] if not k.startswith(SYNTH_PERF))
    walls = sorted(s["wall"] for s in d)
    return "\n".join(
        [
            "## Where users run it (hardware class, one process, busy host)",
            "",
            f"Measured {raw['started']} UTC on {raw['machine']} with `{args.command}` "
            "(validation/hosts.py). Workloads: the harness's shipped CPU benchmarks and nine "
            "synthetic ones, each session a fresh `pytest --perf` process.",
            "",
            "- **Baselines from another CPU class behind the same name** (this machine's "
            "baselines rewritten to an AVX-512 EPYC: x86-64-v4, model 17, numpy AVX512_SKX, "
            "OpenBLAS SkylakeX, torch AVX512; judged under `--perf-machine` so the directory "
            "cannot keep them apart; +30% planted in every synthetic workload): "
            f"{dict(cls_status)}; {named} of {len(c['verdicts'])} name the level and dispatch "
            "difference.",
            f"- **Default `pytest --perf` (one process) after a default `--perf-update` "
            f"(3 rounds)**, unchanged code, idle host, {len(d)} sessions: per-benchmark false "
            f"alarms {cp(fa_d, n_d)}; failed sessions {cp(sum(map(failed, d)), len(d))}; median "
            f"minimum detectable slowdown {'-' if mds is None else f'+{100 * mds:.1f}%'}; "
            f"session wall time {walls[len(walls) // 2]:.1f} s (median).",
            f"- **Busy host** (a CPU-bound process spinning beside the run), {len(b)} sessions: "
            f"failed sessions {cp(sum(map(failed, b)), len(b))}; per-benchmark "
            f"false alarms {cp(fa_b, n_b)}; the header named the busy host in {busy_named} of "
            f"{len(b)}; verdicts {dict(statuses(b))}.",
            probe_line,
            "",
            f"**Planted slowdowns at the CI settings** (`--perf-rounds 3` against 3-round "
            f"baselines), {len(p)} sessions, synthetic workloads; shipped benchmarks unchanged in "
            f"the same sessions: false alarms {cp(fa_p, n_p)}.",
            "",
            "| planted | caught, all workloads | caught, min. detectable <= 7% |",
            "|---|---|---|",
            *rows,
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main())
