"""One summary per version (environment) of a same-session comparison: the level of its runs and
its speed-up over the first version. Standard library only."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_burnperf.core.judging.between_runs import t_quantile


@dataclass(frozen=True)
class VersionSummary:
    """One environment's measurement of one benchmark: the geometric mean of its run medians,
    with a 95% Student's t interval over the runs (none with one run)."""

    label: str
    median: float
    low: float | None
    high: float | None
    runs: int
    #: How much faster than the first version: its median over this one's (> 1: faster).
    speedup: float

    def as_json(self) -> dict[str, object]:
        return {
            "label": self.label,
            "median": self.median,
            "ci95": None if self.low is None else [self.low, self.high],
            "runs": self.runs,
            "speedup_vs_first": self.speedup,
        }


def level(runs: Sequence[Sequence[float]]) -> tuple[float, float | None, float | None]:
    """(geometric mean of the run medians, 95% t interval low, high)."""
    logs = [math.log(statistics.median(r)) for r in runs if len(r)]
    if not logs:
        raise ValueError("no runs")
    mid = statistics.fmean(logs)
    if len(logs) < 2:
        return math.exp(mid), None, None
    q = t_quantile(0.975, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(mid), math.exp(mid - q), math.exp(mid + q)
