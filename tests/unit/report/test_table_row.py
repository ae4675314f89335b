"""The row model every table shares (report/table_row.py): the terminal, Markdown and HTML show
one benchmark's figures from one construction, the results document's entry."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pytest_burnperf.core.clocks import Sample
from pytest_burnperf.core.judging.verdict import IMPROVED, REGRESSED, Verdict
from pytest_burnperf.core.options.settings import Settings
from pytest_burnperf.core.records.results import Result
from pytest_burnperf.report.html import _results_table
from pytest_burnperf.report.markdown import _row
from pytest_burnperf.report.table_row import TableRow, label
from pytest_burnperf.report.terminal import row


def _result(verdict: Verdict, *, timer: str = "host", measure: str = "time") -> Result:
    return Result(
        nodeid="t.py::test_k[opencl-pocl-cpu0-f32-big]",
        module="t.py",
        key="test_k[opencl-pocl-cpu0-f32-big]",
        benchmark="test_k",
        device_id="opencl-pocl-cpu0",
        kind="opencl",
        library="opencl",
        dtype="f32",
        fingerprint={},
        settings=Settings(),
        sample=Sample(values=(1.0e-3, 1.1e-3, 1.2e-3), loops=1, warmup_calls=1, timer=timer),
        verdict=verdict,
        baseline=None,
        measure=measure,
    )


def _cells(r: Result) -> dict[str, str]:
    from pytest_burnperf.core.options.run_options import COLUMN_KEYS

    return dict(zip(COLUMN_KEYS, row(r), strict=True))


def test_the_terminal_markdown_and_html_show_the_same_figures() -> None:
    v = Verdict(
        REGRESSED,
        1.2e-3,
        baseline_median=1.0e-3,
        ratio=1.2,
        ratio_low=1.15,
        ratio_high=1.25,
        p_slower=1e-6,
        min_detectable=0.031,
    )
    r = _result(v)
    doc = r.as_json()
    term = _cells(r)
    assert term["benchmark"] == "test_k[big]" and term["device"] == "pocl-cpu0"
    assert (term["median"], term["baseline"]) == ("1.20 ms", "1.00 ms")
    assert term["change"] == "+20.0% [+15.0%, +25.0%]" and term["detects"] == "+3.1%"
    md = _row(doc, ["device", "current", "baseline", "change", "p", "detects", "verdict"])
    assert md == (
        "| opencl pocl-cpu0 | 1.20 ms | 1.00 ms | +20.0% [+15.0%, +25.0%] | 1e-06 | +3.1% | "
        "regressed |"
    )
    html = _results_table([doc])
    for cell in ("1.20 ms", "1.00 ms", "+20.0% [+15.0%, +25.0%]", "+3.1%", "regressed"):
        assert f">{cell}</td>" in html, cell


def test_a_speed_up_shows_the_p_value_of_the_way_it_moved_everywhere() -> None:
    """Markdown showed p_slower (near 1 for a speed-up) where the terminal showed p_faster."""
    v = Verdict(IMPROVED, 0.8e-3, baseline_median=1.0e-3, ratio=0.8, p_slower=0.999, p_faster=2e-5)
    r = _result(v)
    assert _cells(r)["p"] == "2e-05"
    assert _row(r.as_json(), ["p"]) == "| 2e-05 |"


def test_a_counted_change_has_two_decimals_and_instructions_in_every_medium() -> None:
    v = Verdict(REGRESSED, 1.0502e6, baseline_median=1.0e6, ratio=1.0502)
    r = _result(v, timer="counts", measure="counts")
    term = _cells(r)
    assert term["change"] == "+5.02%" and term["median"].endswith("instr")
    doc = r.as_json()
    assert _row(doc, ["change", "current"]) == f"| +5.02% | {term['median']} |"
    assert ">+5.02%</td>" in _results_table([doc])


def test_a_results_file_of_an_older_version_and_odd_values_read_as_dashes() -> None:
    old: dict[str, Any] = {
        "name": "test_a[numpy-cpu-f64]",
        "backend": "numpy",
        "kind": "cpu",
        "dtype": "f64",
        "stats": {"median": 2e-3},
        "baseline": {"median": 1e-3},
        "verdict": {"status": "regressed", "ratio": True, "p_slower": "x"},
    }
    got = TableRow.of(old)
    assert (got.median, got.baseline) == ("2.00 ms", "1.00 ms")  # before verdict kept them
    assert (got.change, got.p, got.detects, got.iqr) == ("-", "-", "-", "-")
    assert got.where == "numpy cpu" and got.benchmark.startswith("test_a")
    assert TableRow.of({}).verdict == "?"


def test_the_label_drops_only_the_device_and_dtype() -> None:
    assert label("test_k[numpy-cpu-f32-square]", "test_k", "cpu", "f32") == "test_k[numpy-square]"
    assert label("test_k[cpu-f32]", "test_k", "cpu", "f32") == "test_k"
    assert label("test_k", "test_k", "cpu", "f32") == "test_k"
    r = _result(Verdict(REGRESSED, 1e-3))
    assert label(r.key, r.benchmark, r.device_id, r.dtype) == r.label
    assert replace(r, key="test_k[x]").label == label("test_k[x]", "test_k", r.device_id, "f32")
