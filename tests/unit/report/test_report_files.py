"""`burnperf report`: HTML (structure and escaping; tests/test_report_browser.py renders it in
Chromium), CSV and the CLI's choice of format, from results documents and a store."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("plotly")
pytest.importorskip("sqlalchemy")

from pytest_burnperf.cli import main
from pytest_burnperf.report.csv import history_csv, results_csv
from pytest_burnperf.report.html import render
from pytest_burnperf.storage.history.query import series

EVIL = "test_x[<script>alert(1)</script>]"


def results_doc(name: str = "test_a[numpy-cpu-f32]") -> dict[str, Any]:
    return {
        "schema": "pytest-burnperf-results",
        "version": 1,
        "created": "2026-11-22T14:00:00+00:00",
        "machine": {"id": "linux-test", "hardware_class": "x86-64-v3-f25m1"},
        "git": {"commit": "ab" * 20, "dirty": False, "branch": "main"},
        "settings": {"threshold": 0.05, "alpha": 0.01},
        "results": [
            {
                "test": f"t.py::{name}",
                "name": name,
                "backend": "numpy",
                "kind": "cpu",
                "dtype": "f32",
                "samples": [1.2e-3] * 5,
                "runs": [[1.2e-3, 1.21e-3, 1.19e-3], [1.22e-3, 1.2e-3, 1.18e-3]],
                "stats": {"median": 1.2e-3},
                "baseline": {"median": 1e-3, "runs": [[1e-3, 1.01e-3, 0.99e-3]]},
                "roofline": {"arith_pct": 12.5, "mem_pct": 40.0},
                "versions": [
                    {"label": "v1", "median": 1e-3, "ci95": [0.9e-3, 1.1e-3], "runs": 3},
                    {"label": "current", "median": 1.2e-3, "ci95": None, "runs": 3},
                ],
                "verdict": {
                    "status": "regressed",
                    "ratio": 1.2,
                    "ratio_ci95": [1.15, 1.25],
                    "p_slower": 1e-5,
                    "min_detectable_slowdown": 0.06,
                },
            }
        ],
    }


def history_points(name: str) -> list[dict[str, Any]]:
    return [
        {
            "test": f"t.py::{name}",
            "name": name,
            "backend": "numpy",
            "kind": "cpu",
            "dtype": "f32",
            "hardware_class": "x86-64-v3-f25m1",
            "median": 1e-3 * (1.2 if i >= 10 else 1.0) * (1 + 0.003 * ((i * 7) % 5 - 2)),
            "low": None,
            "high": None,
            "created": f"2026-11-{i + 1:02d}",
            "commit": f"{i:040x}",
            "branch": "main",
            "status": "unchanged",
        }
        for i in range(20)
    ]


def test_html_has_every_plot_and_escapes_names() -> None:
    doc = results_doc(EVIL)
    page = render(doc, series(history_points(EVIL)))
    assert page.startswith("<!DOCTYPE html>")
    assert "<script>alert(1)" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    # roofline, versions, distribution, history: 4 figures, plotly.js embedded once
    assert 'document.body.dataset.figures = "4"' in page
    assert page.count("Plotly.newPlot") == 4
    assert "<script src=" not in page  # plotly.js is inline: nothing to fetch
    assert "shift(s) found" in page


def test_html_draws_memory_per_call_where_runs_tracked_it() -> None:
    doc = results_doc()
    doc["results"][0]["memory"] = {
        "status": "unchanged",
        "figures": {"allocated_bytes": 3 << 20, "allocations": 2, "peak_bytes": 2 << 20},
    }
    points = history_points("test_a[numpy-cpu-f32]")
    for p in points[5:]:
        p.update(memory_peak=2 << 20, memory_allocated=3 << 20, memory_allocations=2)
    page = render(doc, series(points))
    assert "<th>memory/call</th>" in page and '<td class="num">2.0 MiB</td>' in page
    assert 'document.body.dataset.figures = "5"' in page  # the memory history beside the time's
    assert "bytes per call" in page


def test_html_gives_the_reason_of_each_verdict() -> None:
    doc = results_doc()
    doc["results"][0]["verdict"] = {
        "status": "inconclusive",
        "reason": "host busy while it ran: <b>x</b>; run again on a quiet host",
    }
    page = render(doc, None)
    assert "<th>why</th>" in page
    assert '<td class="why">host busy while it ran: &lt;b&gt;x&lt;/b&gt;; run again' in page


def test_csv_of_results_and_of_history() -> None:
    rows = list(csv.DictReader(io.StringIO(results_csv(results_doc("=cmd|' /C calc'!A0")))))
    (row,) = rows
    assert row["name"].startswith("'=")  # a spreadsheet formula is not run
    assert float(row["change_pct"]) == pytest.approx(20.0)
    assert row["status"] == "regressed" and row["rounds"] == "2" and row["samples"] == "6"
    hist = list(csv.DictReader(io.StringIO(history_csv(history_points("test_a")))))
    assert len(hist) == 20 and hist[0]["branch"] == "main"
    assert row["memory_status"] == row["memory_peak_bytes"] == ""  # not tracked
    assert hist[0]["memory_peak_bytes"] == ""


def test_csv_carries_memory_per_call() -> None:
    doc = results_doc()
    doc["results"][0]["memory"] = {
        "status": "unchanged",
        "figures": {"allocated_bytes": 3000, "allocations": 2, "peak_bytes": 2048},
    }
    (row,) = csv.DictReader(io.StringIO(results_csv(doc)))
    assert (row["memory_status"], row["memory_peak_bytes"], row["memory_allocated_bytes"]) == (
        "unchanged",
        "2048",
        "3000",
    )
    points = history_points("test_a")
    points[0].update(memory_peak=2048, memory_allocated=3000, memory_allocations=2)
    first = next(csv.DictReader(io.StringIO(history_csv(points))))
    assert (first["memory_peak_bytes"], first["memory_allocations"]) == ("2048", "2")


def counted(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``points`` as a counted benchmark's: instructions per call."""
    return [dict(p, measure="counts", median=p["median"] * 1e10) for p in points]


def test_csv_puts_each_figure_in_the_column_of_its_unit() -> None:
    """A counted benchmark's medians are instructions: never in the ``_s`` columns."""
    doc = results_doc()
    doc["results"].append(
        dict(
            doc["results"][0],
            test="t.py::test_c[numpy-cpu-f32]",
            measure="counts",
            timer="counts",
            verdict={"status": "unchanged", "median": 10838669.0, "baseline_median": 10838669.0},
        )
    )
    timed, count = csv.DictReader(io.StringIO(results_csv(doc)))
    assert (timed["measure"], timed["median_instructions"]) == ("time", "")
    assert float(timed["median_s"]) == pytest.approx(1.2e-3)
    assert (count["measure"], count["median_s"], count["baseline_median_s"]) == ("counts", "", "")
    assert count["median_instructions"] == count["baseline_median_instructions"] == "10838669.0"
    points = history_points("test_a")[:1] + counted(history_points("test_a"))[:1]
    t, c = csv.DictReader(io.StringIO(history_csv(points)))
    assert t["measure"] == "time" and t["median_instructions"] == "" and float(t["median_s"]) > 0
    assert (
        c["measure"] == "counts" and c["median_s"] == "" and float(c["median_instructions"]) > 1e6
    )


def test_a_csv_written_before_the_measure_columns_is_ours_to_replace() -> None:
    from pytest_burnperf.report.csv import RESULT_COLUMNS, written_by_us

    earlier = ",".join(c for c in RESULT_COLUMNS if "instructions" not in c and c != "measure")
    assert written_by_us(earlier.encode() + b"\nt,x\n")
    assert not written_by_us(b"name,value\n")


def test_html_charts_a_counted_series_in_instructions() -> None:
    page = render(results_doc(), series(counted(history_points("test_a[numpy-cpu-f32]"))))
    # the results file's versions and distribution charts are timed; the history is counted
    assert "instructions per call" in page and page.count("microseconds per call") == 2
    doc = results_doc()
    doc["results"][0].update(measure="counts", runs=[[1e7, 1e7]], samples=[1e7])
    doc["results"][0]["baseline"] = {"median": 1e7, "runs": [[1e7]]}
    page = render(doc, None)  # its distribution: instructions, as counted
    assert page.count("instructions per call") == 1


def test_a_series_chart_counts_whole_runs_and_shows_a_flat_series_to_scale() -> None:
    from pytest_burnperf.report.html import _runs_axis, _values_axis

    assert _runs_axis(2)["dtick"] == 1 and _runs_axis(95)["dtick"] == 10
    flat = _values_axis("instructions per call", [10_838_669.0, 10_838_670.0], counted=True)
    assert flat["tickformat"] == ".4s"
    low, high = flat["range"]  # type: ignore[misc]
    assert low == pytest.approx(0.99 * 10_838_669.5) and high == pytest.approx(1.01 * 10_838_669.5)
    stepped = _values_axis("microseconds per call", [100.0, 120.0], counted=False)
    assert "range" not in stepped and "tickformat" not in stepped  # plotly's own range


def test_cli_report_picks_the_format_by_suffix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    res = tmp_path / "r.json"
    res.write_text(json.dumps(results_doc()))
    store = f"sqlite:///{tmp_path / 'h.sqlite'}"
    assert main(["import-results", str(res), "--store", store]) == 0
    for name in ("out.html", "out.md", "out.csv"):
        assert main(["report", str(res), "-o", str(tmp_path / name)]) == 0
    assert (tmp_path / "out.md").read_text().startswith("## pytest-burnperf: 1 regressed")
    assert main(["report", "-o", str(tmp_path / "hist.html"), "--store", store]) == 0
    assert "History" in (tmp_path / "hist.html").read_text()
    assert main(["report", str(res), "-o", str(tmp_path / "out.txt")]) == 2
    assert "the file's suffix picks the format" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "something-else"}')
    assert main(["report", str(bad), "-o", str(tmp_path / "x.html")]) == 2
    assert "not a pytest-burnperf results file" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["README.md", "index.html", "data.csv"])
def test_report_never_replaces_a_file_it_did_not_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    import json

    res = tmp_path / "r.json"
    res.write_text(json.dumps(results_doc()))
    theirs = tmp_path / name
    theirs.write_text("the user's own file\n")
    assert main(["report", str(res), "-o", str(theirs)]) == 2
    err = capsys.readouterr().err
    assert f"-o {theirs}: exists and was not written by pytest-burnperf" in err
    assert theirs.read_text() == "the user's own file\n"
    # its own earlier report is replaced, and --force replaces theirs when the user says so
    ours = tmp_path / f"ours{theirs.suffix}"
    assert main(["report", str(res), "-o", str(ours)]) == 0
    assert main(["report", str(res), "-o", str(ours)]) == 0
    assert main(["report", str(res), "-o", str(theirs), "--force"]) == 0
    assert theirs.read_text() != "the user's own file\n"
