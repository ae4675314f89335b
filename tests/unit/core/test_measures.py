"""core/measures.py: what a measure's name means, asked of one place (no pytest machinery)."""

from __future__ import annotations

import pytest

from pytest_burnperf.core import measures
from pytest_burnperf.core.options.run_options import parse_measure
from pytest_burnperf.core.options.settings import SettingsError


def test_a_judged_measure_reads_its_values_and_changes_in_its_unit() -> None:
    assert measures.judged("time") is measures.TIME and measures.judged(None) is measures.TIME
    assert measures.judged("counts") is measures.COUNTS
    assert measures.TIME.format(0.00125) == "1.25 ms"
    assert measures.COUNTS.format(1_514_847.0) == "1.51 M instr"
    assert measures.COUNTS.format(float("nan")) == "-"  # no "- instr"
    # counts resolve far finer than a clock: two decimals against one
    assert measures.TIME.change(1.05021) == "+5.0%" and measures.COUNTS.change(1.05021) == "+5.02%"
    assert measures.TIME.change(0.9) == "-10.0%"
    with pytest.raises(ValueError, match="'cycles' is none of time, counts"):
        measures.judged("cycles")


def test_a_documents_field_names_counts_or_seconds() -> None:
    """A sample's or entry's ``timer`` (a clock's name, or ``counts``) and a result's
    ``measure`` read alike; what no measure is called reads as seconds (documents are shown,
    never refused, here: their checks live in storage/ and report/)."""
    for clock in ("host", "device", "graph", "time", None, "???"):
        assert measures.of_field(clock) is measures.TIME
    assert measures.of_field("counts") is measures.COUNTS


def test_each_perf_measure_choice_says_what_it_asks_for() -> None:
    asked = {
        c.name: (c.needs_counts, c.per_benchmark, c.counts_alone, c.time_too)
        for c in measures.CHOICES
    }
    assert asked == {
        "auto": (False, True, False, False),
        "time": (False, False, False, False),
        "counts": (True, False, True, False),
        "both": (True, False, False, True),
    }
    assert measures.choice("both") is measures.BOTH
    with pytest.raises(ValueError, match="'cycles' is none of auto, time, counts, both"):
        measures.choice("cycles")


def test_the_option_parser_names_every_choice_with_what_it_means() -> None:
    assert parse_measure(" counts ", "--perf-measure") == "counts"
    with pytest.raises(SettingsError) as err:
        parse_measure("cycles", "--perf-measure")
    text = str(err.value)
    assert text.startswith("--perf-measure: measure must be one of auto, time, counts, both (")
    for c in measures.CHOICES:
        assert f"{c.name}: {c.says}" in text
    assert text.endswith("got 'cycles'")
