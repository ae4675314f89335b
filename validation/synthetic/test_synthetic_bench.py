"""The same workloads as pytest-benchmark benchmarks, run with its defaults."""

from __future__ import annotations

import pytest
from threadpoolctl import threadpool_limits
from workloads import NAMES, prepare


@pytest.mark.parametrize("workload", NAMES)
def test_synthetic(benchmark, workload):  # type: ignore[no-untyped-def]
    fn, args = prepare(workload)
    with threadpool_limits(1):  # the same single BLAS thread the burnperf run uses
        benchmark(fn, *args)
