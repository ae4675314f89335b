"""A new measure judged beside is its module and one registration line: the example's energy
per call (energy_side_example.py, a measure the product does not have) registered in one line
(new_side_walk.py, in a fresh interpreter) is carried by every layer that carries a side, with
no edit to any of them: the result and the baseline it records, the baseline file's check, the
outcome, the run's reports (terminal, Markdown, HTML, CSV, GitHub outputs, a merged run and its
JUnit file), the results store (its columns added to a store written before, its views: history
lines, CSV, charts, the site), a same-session comparison's tracking files and verdict, and
``burnperf compare`` / ``compare-history``. (Measuring it is its instrument's: one module of
instruments/ and its line in instruments/registry.BESIDE.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("sqlalchemy")
pytest.importorskip("plotly")
pytest.importorskip("ruptures")  # the history views find change points

WALK = Path(__file__).with_name("new_side_walk.py")


@pytest.fixture(scope="module")
def walked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("energy")
    done = subprocess.run(
        [sys.executable, str(WALK), str(work)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    said: dict[str, Any] = json.loads(done.stdout)
    return said


def test_the_registration_comes_before_every_module_that_carries_the_sides(
    walked: dict[str, Any],
) -> None:
    assert walked["carriers_loaded_before"] == []
    assert "pytest_burnperf.storage.history.store" in walked["carriers"]
    assert "pytest_burnperf.report.terminal" in walked["carriers"]


def test_the_result_baseline_and_outcome_carry_it(walked: dict[str, Any]) -> None:
    assert walked["result_json"] == {"status": "regressed", "joules": 2.0, "before": 1.0}
    assert walked["kept"] == {"joules": 2.0} and walked["stored_baseline"] == {
        "energy": {"joules": 2.0}
    }
    assert walked["bad_kept"] == (
        'b.json: benchmarks["t"].energy.joules: must be a number of at least 0, got -1'
    )
    assert walked["outcome"] == [True, "t[x]: energy regressed: 2 J/call (baseline 1 J)"]
    assert walked["recording_fails"] is False


def test_the_reports_of_a_run_carry_it(walked: dict[str, Any]) -> None:
    assert walked["side_lines"] == ["energy per call: 1 regressed"]
    header, _, row = walked["terminal"]
    assert "energy/call" in header and row.endswith("2 J  energy regressed")
    assert walked["github_energy_regressed"] == 1
    md = walked["markdown"]
    assert "1 energy regressed" in md.splitlines()[0] and "| energy/call |" in md
    assert walked["html_results_column"] is True
    header, row = walked["csv"]
    assert header.endswith("energy_status,energy_joules") and row.endswith("regressed,2.0")
    assert (
        walked["merged_verdict"][0] == 1
        and "energy per call: 1 regressed" in (walked["merged_verdict"][1])
    )
    assert 'failures="1"' in walked["merged_junit"]
    assert "energy regressed: 2.0 J/call, baseline 1.0 J</failure>" in walked["merged_junit"]


def test_the_results_store_and_its_views_carry_it(walked: dict[str, Any]) -> None:
    assert walked["stored_figures"] == [1000, 2000]
    assert walked["stored_records"] == [{"joules": 1.0}, {"joules": 2.0}]
    assert walked["history_text"][2].endswith("energy 2000 mJ/call")
    header, *rows = walked["history_csv"]
    assert header.endswith(",energy_millijoules") and [r.rsplit(",", 1)[1] for r in rows] == [
        "1000",
        "2000",
    ]
    assert walked["history_html_chart"] is True
    assert walked["site_index"] == [True, True]


def test_a_same_session_comparison_judges_the_candidates_against_the_references(
    walked: dict[str, Any],
) -> None:
    """A tracking process's file is read back by each side; the candidate's record is judged
    against the reference's by the side's own rule (``between``)."""
    assert walked["tracked_read"] == [{"energy": 2.0}, {"memory": "not tracked on opencl-x"}]
    assert walked["compared"] == {"energy": {"status": "regressed", "joules": 2.0, "before": 1.0}}


def test_compare_and_compare_history_judge_it_again(walked: dict[str, Any]) -> None:
    for name, where in (("compare", ""), ("compare_history", "(each against the newest")):
        rc, said = walked[name]
        assert rc == 1, said  # the energy regression fails the comparison
        assert "energy regressed: 2 J/call (baseline 1 J)" in said
        assert f"energy per call: 1 regressed {where}".strip() in said
