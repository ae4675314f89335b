"""Where a benchmark's history shifted: change points of the log medians of its runs, found by
ruptures' PELT (exact penalised segmentation, least-squares cost), run as its C
kernel search with the linear kernel (``KernelCPD(kernel="linear")``: the same cost and the same
segmentation as ``Pelt(model="l2")``, a few hundred times faster; a test checks they agree).

The penalty is ``PENALTY * sigma^2 * log(n)`` (a BIC-like penalty scaled by the series' own noise),
with ``sigma`` the robust sd of the run-to-run differences over sqrt 2 (1.4826 x their median
absolute deviation): a step moves one difference only, so it barely moves ``sigma``, and a noisy
benchmark needs a larger shift to count. Segments have at least :data:`MIN_SIZE` runs, so one
slow run is not a shift. ``validation/changepoints.py`` measures how often a planted step is found
at its run and how often a steady series reports one.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

#: Multiplier of the penalty (chosen with validation/changepoints.py, see docs/validation.md).
PENALTY = 4.0
#: Fewest runs in a segment.
MIN_SIZE = 3
#: A noise floor for sigma (0.2%), so a series of identical values does not make every wiggle
#: a change point.
MIN_SIGMA = 0.002


@dataclass(frozen=True)
class ChangePoint:
    """The series shifted at ``index``: runs ``index..`` differ from the runs before."""

    index: int
    #: After over before, of the segments' geometric means (1.10: 10% slower).
    ratio: float


def noise(logs: Sequence[float]) -> float:
    """Robust sd of one run's log median: 1.4826 x MAD of the successive differences / sqrt 2."""
    if len(logs) < 3:
        return MIN_SIGMA
    diffs = [b - a for a, b in itertools.pairwise(logs)]
    mid = statistics.median(diffs)
    mad = statistics.median(abs(d - mid) for d in diffs)
    return max(1.4826 * mad / math.sqrt(2.0), MIN_SIGMA)


def find(medians: Sequence[float], *, penalty: float = PENALTY) -> list[ChangePoint]:
    """Change points of a series of run medians (seconds), oldest first."""
    n = len(medians)
    if n < 2 * MIN_SIZE:
        return []
    import numpy as np
    import ruptures

    logs = [math.log(m) for m in medians]
    sigma = noise(logs)
    signal = np.asarray(logs, dtype=float).reshape(-1, 1)
    algo = ruptures.KernelCPD(kernel="linear", min_size=MIN_SIZE, jump=1).fit(signal)
    ends = algo.predict(pen=penalty * sigma * sigma * math.log(n))
    out: list[ChangePoint] = []
    start = 0
    bounds = [b for b in ends if b < n]
    for i, b in enumerate(bounds):
        nxt = bounds[i + 1] if i + 1 < len(bounds) else n
        before = statistics.fmean(logs[start:b])
        after = statistics.fmean(logs[b:nxt])
        out.append(ChangePoint(b, math.exp(after - before)))
        start = b
    return out
