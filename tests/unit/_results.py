"""A numpy benchmark's result for the unit tests that need one: its verdict and what the test
sets beside it (``sides``, ``measure``...) given."""

from __future__ import annotations

from pytest_burnperf.core.clocks import Sample
from pytest_burnperf.core.judging.verdict import Verdict
from pytest_burnperf.core.options.settings import Settings
from pytest_burnperf.core.records.results import Result

NODE = "t.py::test_k[numpy-cpu-f64]"


def numpy_result(verdict: Verdict, **more: object) -> Result:
    """``t.py::test_k[numpy-cpu-f64]`` judged ``verdict``, three samples of 3 ms."""
    return Result(
        nodeid=NODE,
        module="t.py",
        key="test_k[numpy-cpu-f64]",
        benchmark="test_k",
        device_id="numpy-cpu",
        kind="cpu",
        library="numpy",
        dtype="f64",
        fingerprint={},
        settings=Settings(),
        sample=Sample(values=(3e-3,) * 3, loops=1, warmup_calls=1, timer="host"),
        verdict=verdict,
        baseline=None,
        **more,  # type: ignore[arg-type]
    )
