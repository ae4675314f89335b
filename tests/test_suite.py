"""Every shipped benchmark runs as a correctness test: tiny shapes, two samples, no timing claims.

A benchmark whose result is wrong, or that crashes on a device found here, fails this test, so a
broken benchmark is caught by CI before anyone times it. Each (benchmark, device) pair that can
run here must have run: skips are only allowed for devices that are absent (never for OpenCL or
Vulkan where BURNPERF_REQUIRE_DEVICES says they are present) and for torch.compile without a
C++ compiler.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ._devices import present

REPO = Path(__file__).resolve().parents[1]
TINY = (
    "--perf-size",
    "tiny",
    "--perf-samples",
    "2",
    "--perf-max-samples",
    "2",
    "--perf-warmup",
    "0",
    "--perf-min-time",
    "0",
    "--perf-quick",  # one process: this checks the benchmarks, not the gate
)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    tmp = tmp_path_factory.mktemp("suite")
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "perf_tests",
        "--perf",
        *TINY,
        "--perf-baselines-dir",
        str(tmp / "baselines"),
        "--perf-json",
        str(tmp / "results.json"),
        "-p",
        "no:cacheprovider",
        "-q",
        "-rs",
    ]
    env = dict(os.environ, BURNPERF_CACHE_DIR=str(tmp / "cache"))
    # a plain run, also in CI (where --perf would default to --perf-against auto)
    for name in ("CI", "GITHUB_BASE_REF", "CI_MERGE_REQUEST_TARGET_BRANCH_NAME"):
        env.pop(name, None)
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    doc = json.loads((tmp / "results.json").read_text()) if (tmp / "results.json").exists() else {}
    return {"proc": proc, "doc": doc}


def test_every_benchmark_passes_its_checks_at_the_tiny_size(tiny_run: dict[str, object]) -> None:
    proc = tiny_run["proc"]
    assert isinstance(proc, subprocess.CompletedProcess)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]


def test_each_benchmark_ran_on_every_device_here(tiny_run: dict[str, object]) -> None:
    doc = tiny_run["doc"]
    assert isinstance(doc, dict) and doc, "the tiny run wrote no results"
    ran: dict[str, set[str]] = {}
    for r in doc["results"]:
        ran.setdefault(r["benchmark"], set()).add(r["device"]["kind"] + ":" + r["backend"])
    expected_cpu = {
        "test_unary",
        "test_binary",
        "test_elementwise_chain",
        "test_matmul",
        "test_fused_epilogue",
        "test_softmax",
        "test_reduce",
        "test_random_normal",
        "test_transfer",
        "test_vector_add",
        "test_sum",
        "test_conv2d",
        "test_max_pool2d",
        "test_gelu",
        "test_resnet_blocks",
        "test_transformer_inference",
        "test_transformer_training_step",
        "test_autodiff_overhead",
        "test_verdict",
    }
    assert expected_cpu <= set(ran), sorted(expected_cpu - set(ran))
    for name in expected_cpu - {"test_verdict"}:
        assert "cpu:torch" in ran[name], name
    if present("opencl"):
        for name in ("test_vector_add", "test_tiled_matmul"):
            assert "opencl:opencl" in ran.get(name, set()), name
    if present("vulkan"):
        for name in ("test_vector_add", "test_sum"):
            assert "vulkan:vulkan" in ran.get(name, set()), name
    for r in doc["results"]:  # every benchmark declares its work except the dogfood one
        if r["benchmark"] != "test_verdict":
            roof = r["roofline"]
            assert roof is not None and roof["shape"], r["name"]
            assert roof["gflops"] is not None or roof["gbps"] is not None, r["name"]
            # every device here has measured peaks, OpenCL and Vulkan included
            assert roof["arith_pct"] is not None or roof["mem_pct"] is not None, r["name"]
