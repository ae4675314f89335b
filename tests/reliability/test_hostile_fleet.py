"""The fleet's hostile cases of validation/hostile_fleet.py (publish, merge, merge-baselines,
github, an empty shard, an unwritable job summary), each in a real process, and two of each
writer at once: nothing lost, nothing half-written, no traceback, a clear error or a sensible
result every time."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("sqlalchemy")
pytest.importorskip("plotly")

from validation.hostile_fleet import concurrent, fleet_cases
from validation.hostile_surfaces import totals

#: Real measurement: the slow tier (`nox -s tests -- -m slow`; .ci/run runs it).
pytestmark = pytest.mark.slow


def test_hostile_input_on_the_fleets_surfaces(tmp_path: Path) -> None:
    rows = fleet_cases(tmp_path, lambda _line: None)
    got = totals(rows)
    assert got["cases"] >= 23
    assert got["outside_writes"] == got["tracebacks"] == got["user_files_overwritten"] == 0
    assert [r["case"] for r in rows if not r["clear"]] == []


def test_two_writers_at_once_leave_whole_targets(tmp_path: Path) -> None:
    got = concurrent(tmp_path, 2, lambda _line: None)
    for kind in ("publish", "merge", "merge-baselines"):
        assert got[kind] == {"trials": 2, "runs": 4, "failed": 0, "tracebacks": 0, "not_whole": 0}
