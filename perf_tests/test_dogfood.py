"""The plugin guards itself: its own decision path timed and gated like any benchmark."""

from __future__ import annotations

import numpy as np
import pytest
from _suite import pick

from pytest_burnperf.core.judging.verdict import Policy, judge


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_verdict(perf, perf_size):
    """The full decision on three baseline runs against three current runs (a few hundred
    samples): Mann-Whitney both ways, the Hodges-Lehmann ratio and interval, the noise floor."""
    n = pick(perf_size, tiny=10, small=100)
    rng = np.random.default_rng(0)
    base = [list(1e-3 * (1.0 + 0.02 * rng.standard_normal(n))) for _ in range(3)]
    cur = [list(1e-3 * (1.0 + 0.02 * rng.standard_normal(n))) for _ in range(3)]
    policy = Policy(alpha=0.01, threshold=0.05, comparisons=100)
    verdict = perf(judge, base, cur, policy)
    assert verdict.status in ("unchanged", "inconclusive")
    assert verdict.n_baseline == verdict.n_current == 3 * n
