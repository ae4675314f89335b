"""Do memory per call figures carry from one CPU to another (issue 75)? A memory baseline is
kept under a key (core/memory/allocations.memory_key) that holds, among others, the code path
numpy and torch chose on this CPU (their dispatch); a machine of another class with another
dispatch finds the baseline "of another key" and does not judge. This measures what that costs
and buys: the shipped CPU benchmarks (numpy, torch, Python) in separate pytest processes on
this one machine, the figures of each benchmark's tracked calls compared between

- ``default`` and ``default-again``: two processes alike (what must agree for any verdict);
- ``numpy-x86-v2``: numpy's X86_V3 kernels switched off (``NPY_DISABLE_CPU_FEATURES=X86_V3``),
  as on a CPU without AVX2;
- ``torch-default``: torch's ATen kernels without AVX2 (``ATEN_CPU_CAPABILITY=default``);
- ``threads-4``: four threads per benchmark (``--perf-threads 4``) instead of one.

Each pair is compared by the verdict's own rule (core/memory/memory_verdict.judge with the
keys made equal): how many benchmarks' figures would be ``unchanged``, and the ones that move.

    python -m validation.memory_portability --json docs/data/memory-portability.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_burnperf.core.memory.allocations import Allocations
from pytest_burnperf.core.memory.memory_verdict import judge
from pytest_burnperf.host.hardware import cpu_model, hardware_class

from .memory_gate import REPO, _log, _pytest

#: name: (environment, more pytest arguments)
VARIANTS: dict[str, tuple[dict[str, str], list[str]]] = {
    "default": ({}, []),
    "default-again": ({}, []),
    "numpy-x86-v2": ({"NPY_DISABLE_CPU_FEATURES": "X86_V3"}, []),
    "torch-default": ({"ATEN_CPU_CAPABILITY": "default"}, []),
    "threads-4": ({}, ["--perf-threads", "4"]),
}


def _figures(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per benchmark: its memory status, figures and key's dispatch."""
    out = {}
    for r in doc["results"]:
        memory = r.get("memory") or {}
        out[r["test"]] = {
            "status": memory.get("status"),
            "figures": memory.get("figures"),
            "dispatch": (memory.get("key") or {}).get("dispatch"),
        }
    return out


def compare(a: dict[str, dict[str, Any]], b: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The benchmarks both runs tracked, judged b against a as a baseline of the same key."""
    same, moved, untracked = 0, [], []
    for test in sorted(set(a) & set(b)):
        fa, fb = a[test]["figures"], b[test]["figures"]
        if fa is None or fb is None:
            untracked.append(test)
            continue
        before = Allocations.from_json(fa, test)
        now = Allocations.from_json(fb, test)
        v = judge([now], before, key={}, baseline_key={}, threshold=None)
        if v.status == "unchanged":
            same += 1
        else:
            moved.append({"test": test, "status": v.status, "change": v.change_text()})
    return {"unchanged": same, "moved": moved, "not_compared": untracked}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, required=True, help="where the raw data goes")
    ap.add_argument("-k", default="not opencl and not vulkan", help="the benchmarks (-k)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="burnperf-memory-portability-"))
    shutil.copytree(REPO / "perf_tests", work / "perf_tests")
    quick = ["--perf", "perf_tests", "-k", args.k, "--perf-measure", "time", "--perf-quick"]
    data: dict[str, Any] = {
        "machine": f"{cpu_model()} ({hardware_class()}), {os.cpu_count()} CPUs",
        "python": platform.python_version(),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(["python -m validation.memory_portability", *sys.argv[1:]]),
        "runs": {},
    }
    figures: dict[str, dict[str, dict[str, Any]]] = {}
    for name, (env, more) in VARIANTS.items():
        start = time.perf_counter()
        _, doc = _pytest(work, [*quick, *more], env)
        figures[name] = _figures(doc)
        data["runs"][name] = {"env": env, "args": more, "benchmarks": figures[name]}
        _log(f"{name}: {len(figures[name])} benchmarks in {time.perf_counter() - start:.0f} s")
    data["compared"] = {
        name: compare(figures["default"], figures[name]) for name in VARIANTS if name != "default"
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(data, indent=1) + "\n")
    for name, c in data["compared"].items():
        print(
            f"{name:<14} vs default: {c['unchanged']} unchanged, {len(c['moved'])} moved, "
            f"{len(c['not_compared'])} not compared"
        )
        for m in c["moved"]:
            print(f"  {m['status']:<10} {m['change']}  {m['test']}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
