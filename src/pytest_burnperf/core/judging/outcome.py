"""The one rule from a verdict to its test's outcome, for every measure (time, device time,
counts) and every mode (stored baselines, same-session comparisons): while a run records,
nothing fails; ``regressed`` fails; under ``--perf-strict``, ``inconclusive`` and
``no-baseline`` fail too; every other verdict passes. The plugin raises what this decides
(plugin/measuring/result_record.settle); nothing else maps a verdict to pass or fail."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from pytest_burnperf.core.judging.verdict import (
    INCONCLUSIVE,
    NO_BASELINE,
    REGRESSED,
    Status,
    Verdict,
)

#: What --perf-strict fails besides a regression: the benchmarks a run could not judge for
#: want of a decision (its samples or the host) or of a baseline.
STRICT_FAILS: Final[frozenset[Status]] = frozenset({INCONCLUSIVE, NO_BASELINE})


@dataclass(frozen=True)
class Outcome:
    """Whether the benchmark's test fails, and the message it fails with."""

    fails: bool
    message: str = ""


PASSES: Final = Outcome(False)


def fails(status: Status, *, strict: bool, records: bool = False) -> bool:
    """Whether a verdict of ``status`` fails its test."""
    if records:
        return False
    return status == REGRESSED or (strict and status in STRICT_FAILS)


def outcome(
    verdict: Verdict,
    *,
    test_id: str,
    strict: bool,
    records: bool,
    regression: Callable[[], str],
    why: str = "",
) -> Outcome:
    """The outcome of ``test_id``'s test from its ``verdict``: ``regression`` builds the line a
    regression fails with (the measure's own: time or counts), ``why`` follows it (what grew,
    from --perf-profile)."""
    if not fails(verdict.status, strict=strict, records=records):
        return PASSES
    if verdict.status == REGRESSED:
        return Outcome(True, regression() + (f"\n{why}" if why else ""))
    reason = f" ({verdict.reason})" if verdict.reason else ""
    return Outcome(True, f"{test_id}: {verdict.status}{reason}; --perf-strict fails it")
