"""What the harnesses share: the planted work sizes, the log line, the exact binomial interval,
and the machine line every report names."""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path

from pytest_burnperf.host.hardware import hardware_class

SIZES = (1.05, 1.10, 1.20, 1.50, 0.90)


#: pytest arguments for a fast perf run of the reliability experiments: one round of a few samples.
QUICK = [
    "-p",
    "no:cacheprovider",
    "-p",
    "no:randomly",
    "--perf-rounds",
    "1",
    "--perf-samples",
    "5",
    "--perf-max-samples",
    "5",
    "--perf-warmup",
    "0.001",
    "--perf-min-time",
    "0.0005",
]


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def planted_knobs(i: int, names: list[str]) -> dict[str, float]:
    return {name: SIZES[(i + j) % len(SIZES)] for j, name in enumerate(names)}


def cp(k: int, n: int) -> str:
    """``k/n = p% [low%, high%]`` with the exact (Clopper-Pearson) 95% interval."""
    from scipy.stats import binomtest

    if n == 0:
        return "-"
    ci = binomtest(k, n).proportion_ci(0.95, method="exact")
    return f"{k}/{n} = {100 * k / n:.1f}% [{100 * ci.low:.1f}%, {100 * ci.high:.1f}%]"


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.1f}%"


def ms(x: float) -> str:
    return f"{1e3 * x:.3g} ms"


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import numpy

    try:
        import torch

        tv = torch.__version__
    except ImportError:
        tv = "not installed"
    try:
        import pytest_benchmark

        pbv = pytest_benchmark.__version__
    except ImportError:
        pbv = "not installed"
    return (
        f"{platform.system()} {platform.machine()}, {model} (hardware class {hardware_class()}), "
        f"{os.cpu_count()} logical CPUs; Python {platform.python_version()}, numpy "
        f"{numpy.__version__}, torch {tv}, pytest-benchmark {pbv}"
    )
