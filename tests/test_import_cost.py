"""Loading the plugin without --perf must not import any heavy library."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HEAVY = (
    "torch",
    "cupy",
    "pyopencl",
    "wgpu",
    "scipy",
    "numpy",
    "sqlalchemy",
    "ruptures",
    "plotly",
    "memray",
)


def test_importing_the_plugin_is_cheap() -> None:
    code = (
        "import sys, json, pytest_burnperf.plugin.hooks, pytest_burnperf.cli;"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_a_pytest_run_without_perf_or_smoke_imports_no_heavy_library(tmp_path: Path) -> None:
    (tmp_path / "test_bench.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.perf(backends=['cpu', 'cuda', 'opencl', 'vulkan'], dtypes=['f32'])\n"
        "def test_mm(perf, device):\n"
        "    perf(sum, [1])\n\n"
        "def test_heavy_modules():\n"
        "    import json, sys\n"
        f"    print('HEAVY=' + json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-s",
            "-p",
            "no:cacheprovider",
            "--no-perf-smoke",  # smoke mode would run the benchmark, and so import numpy
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    line = next(x for x in out.stdout.splitlines() if "HEAVY=" in x)
    assert json.loads(line.split("HEAVY=", 1)[1]) == []
    assert "4 skipped" in out.stdout
