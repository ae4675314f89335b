"""The one rule from a verdict to its test's outcome, for every measure (time, device time,
counts, memory) and every mode (stored baselines, same-session comparisons): while a run
records, nothing fails; ``regressed`` fails; under ``--perf-strict``, ``inconclusive`` and
``no-baseline`` of the time or counts verdict fail too; every other verdict passes. A verdict
judged beside them (core/sides/: memory per call's) fails its test where its side says its
status fails (memory: regressed, over max_memory); what it could not judge is said, never
failed (its abstentions do not decide whether the benchmark was judged). The plugin raises
what this decides (plugin/measuring/result_record.settle); nothing else maps a verdict to pass
or fail."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from pytest_burnperf.core.judging.verdict import (
    INCONCLUSIVE,
    NO_BASELINE,
    REGRESSED,
    Status,
    Verdict,
)
from pytest_burnperf.core.sides.side_kind import SideVerdict
from pytest_burnperf.core.sides.side_registry import side

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


def side_fails(field: str, verdict: SideVerdict | None, *, records: bool = False) -> bool:
    """Whether ``verdict``, judged beside a benchmark's verdict under ``field`` (memory per
    call's: ``memory``), fails its test: where its side says its status fails."""
    return not records and verdict is not None and verdict.status in side(field).failing


def sides_fail(sides: Mapping[str, SideVerdict], *, records: bool = False) -> bool:
    """Whether any verdict judged beside a benchmark's verdict fails its test."""
    return any(side_fails(f, v, records=records) for f, v in sides.items())


def outcome(
    verdict: Verdict,
    *,
    test_id: str,
    strict: bool,
    records: bool,
    regression: Callable[[], str],
    why: str = "",
    sides: Mapping[str, SideVerdict] | None = None,
) -> Outcome:
    """The outcome of ``test_id``'s test from its ``verdict`` and the verdicts judged beside it
    (``sides``, by field: memory per call's): ``regression`` builds the line a regression fails
    with (the measure's own: time or counts), ``why`` follows it (what grew, from
    --perf-profile)."""
    lines = []
    if fails(verdict.status, strict=strict, records=records):
        if verdict.status == REGRESSED:
            lines.append(regression() + (f"\n{why}" if why else ""))
        else:
            reason = f" ({verdict.reason})" if verdict.reason else ""
            lines.append(f"{test_id}: {verdict.status}{reason}; --perf-strict fails it")
    for field, beside in (sides or {}).items():
        if side_fails(field, beside, records=records):
            lines.append(f"{test_id}: {beside.line()}")
    return Outcome(True, "\n".join(lines)) if lines else PASSES
