"""Deprecated location of the roofline helpers: import them from :mod:`pytest_burnperf` itself
(``from pytest_burnperf import matmul_work``). Kept so that benchmarks written against 0.x keep
working; removed in the next minor release."""

from __future__ import annotations

from pytest_burnperf.core.records.roofline_figures import (
    Peaks,
    Work,
    WorkError,
    elementwise_work,
    matmul_work,
    reduction_work,
)

__all__ = ["Peaks", "Work", "WorkError", "elementwise_work", "matmul_work", "reduction_work"]
