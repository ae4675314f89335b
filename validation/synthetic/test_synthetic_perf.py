"""The synthetic workloads as pytest-burnperf benchmarks (numpy on the CPU, one thread)."""

from __future__ import annotations

import pytest
from workloads import NAMES, prepare


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
@pytest.mark.parametrize("workload", NAMES)
def test_synthetic(perf, workload):  # type: ignore[no-untyped-def]
    fn, args = prepare(workload)
    perf(fn, *args)
