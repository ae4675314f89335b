"""What counts measured of a benchmark they could not judge, kept beside the time verdict
(core/counting/counts_left_to_clock.py). Pure logic: injected counts, no valgrind."""

from __future__ import annotations

import json

import pytest

from pytest_burnperf.core.counting import counts
from pytest_burnperf.core.counting.counts import Counted
from pytest_burnperf.core.counting.counts_left_to_clock import left_to_clock


def test_a_small_calls_counts_are_kept_with_their_change_and_the_effect_it_could_not_see() -> None:
    """A 4 k-instruction interpreted call counted 10 instructions more: counts cannot decide at
    5%, so the clock judges it; its record keeps the calls, the change counts saw, the minimum
    effect that kept them from deciding and the same why the run's note says."""
    base = [4_077.0, 4_077.0]
    got = Counted(instructions=(4_077, 4_087), cycles=(), interpreter=0.85)
    v = counts.judge_counts(base, [float(i) for i in got.instructions], alpha_each=0.001,
                            interpreter=got.interpreter)  # fmt: skip
    assert counts.undecidable(v)
    kept = left_to_clock(got, v, {"python": "CPython 3.11.7"})
    assert kept["instructions"] == [4_077, 4_087] and kept["interpreter"] == 0.85
    assert kept["key"] == {"python": "CPython 3.11.7"}
    assert kept["median"] == pytest.approx(4_082) and kept["baseline_median"] == 4_077
    assert kept["change_pct"] == pytest.approx(100 * (4_082 / 4_077 - 1))
    assert kept["min_effect"] == pytest.approx(counts.INTERPRETER_STATE / 4_077)
    assert kept["why"] == counts.undecided_text(v)
    json.dumps(kept, allow_nan=False)  # what the results document writes as it is


def test_counts_that_spread_between_processes_keep_each_process_median() -> None:
    """Where the counted processes moved apart, each one's median is kept, and the key is
    absent (null) in a same-session comparison, where each side counted under its own."""
    medians = (1_000_000, 1_080_000, 1_040_000)
    got = Counted(instructions=(1_000_000, 1_080_000, 1_040_000), cycles=(),
                  interpreter=0.6, process_medians=medians)  # fmt: skip
    base = [1_040_000.0] * 3
    v = counts.judge_counts(base, [float(i) for i in got.instructions], alpha_each=0.001,
                            interpreter=0.6, process_spread=got.process_spread())  # fmt: skip
    assert counts.undecidable(v) and v.spread_source == counts.LAYOUT_SOURCE
    kept = left_to_clock(got, v, None)
    assert kept["process_medians"] == list(medians) and kept["key"] is None
    assert kept["spread_source"] == counts.LAYOUT_SOURCE and kept["min_effect"] > counts.MAX_EFFECT
