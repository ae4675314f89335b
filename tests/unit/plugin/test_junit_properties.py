"""plugin/measuring/result_record.junit_properties: each median's property names its unit."""

from __future__ import annotations

from dataclasses import replace

from pytest_burnperf.core.judging.verdict import UNCHANGED
from pytest_burnperf.plugin.measuring.result_record import junit_properties

from ..report.test_table import result


def test_a_timed_verdicts_medians_are_seconds_and_a_counted_ones_instructions() -> None:
    timed = result("test_a", "numpy-cpu", "f32", 1.5e-3, UNCHANGED, 1.0)
    props = dict(junit_properties(timed))
    assert props["perf_measure"] == "time"
    assert props["perf_median_s"] == "0.0015" and "perf_median_instructions" not in props
    assert float(props["perf_baseline_median_s"]) == 1.5e-3
    count = replace(timed, measure="counts")
    count = replace(count, verdict=replace(count.verdict, current_median=10_838_669.0))
    props = dict(junit_properties(count))
    assert props["perf_measure"] == "counts"
    assert props["perf_median_instructions"] == "1.08387e+07"
    assert "perf_median_s" not in props and "perf_baseline_median_s" not in props
    assert "perf_baseline_median_instructions" in props
