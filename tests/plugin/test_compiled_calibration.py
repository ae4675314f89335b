"""A real torch.compile benchmark: its first call compiles (seconds, far longer than the warm-up),
and the loop must still be sized from the compiled calls after it (issue 17: ``loops`` was 1,
and depended on which test ran first in the process). Skipped without torch or a C++ compiler."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.slow,  # torch.compile for real: the slow tier
    pytest.mark.skipif(
        shutil.which("c++") is None and shutil.which("g++") is None,
        reason="torch.compile on the CPU needs a C++ compiler",
    ),
]

MODULE = """
import pytest
import torch


@pytest.mark.perf(backends=["torch"], dtypes=["f32"])
def test_compiled_add(perf, device, dtype):
    x = device.random((64,), dtype)
    fn = torch.compile(lambda a: a * 2.0 + 1.0)
    perf(fn, x)
"""


def test_the_compiling_first_call_does_not_make_loops_one(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bench=MODULE)
    # in a process of its own: torch.compile registers operator libraries once per process, and
    # an in-process run's sys.modules cleanup would make a later compile register them twice
    result = pytester.runpytest_subprocess(
        "--perf",
        "--perf-backends",
        "torch-cpu",
        "--perf-json",
        "r.json",
        "--perf-warmup",
        "0.05",
        "--perf-min-time",
        "0.02",
        "--perf-samples",
        "3",
        "--perf-max-samples",
        "3",
        "-p",
        "no:randomly",
    )
    result.assert_outcomes(passed=1)
    (r,) = json.loads(Path(pytester.path, "r.json").read_text())["results"]
    # one compiled call of a 64-element add takes microseconds, so 20 ms needs many of them; the
    # compile itself (seconds) is the first, untimed call
    assert r["loops"] > 1, r["loops"]
    assert r["warmup_calls"] >= 2
