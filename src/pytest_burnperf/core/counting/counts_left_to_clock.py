"""What counts measured of a benchmark they could not judge (counts.undecidable: a call so small,
or so spread, that they cannot tell a change of the threshold's size apart), kept in its result
beside the time verdict that judged it instead: the counted calls, how far their median moved
and the minimum effect that kept them from deciding. A reader sees the counts' change without
another run; nothing judges by it."""

from __future__ import annotations

from collections.abc import Mapping

from pytest_burnperf.core.counting.counts import Counted, undecided_text
from pytest_burnperf.core.judging.verdict import Verdict


def left_to_clock(
    got: Counted, verdict: Verdict, key: Mapping[str, object] | None
) -> dict[str, object]:
    """The results document's ``counts_not_judged`` of a benchmark whose counts ``got`` gave
    the undecidable ``verdict`` (against its counts baseline, or the reference's counts in a
    same-session comparison) under ``key`` (None where the two sides' keys differ)."""
    return {
        **got.as_json(),
        "key": None if key is None else dict(key),
        "median": verdict.current_median,
        "baseline_median": verdict.baseline_median,
        "change_pct": verdict.change_pct,
        "min_effect": verdict.effect,
        "spread_source": verdict.spread_source,
        "why": undecided_text(verdict),
    }
