"""The hostile cases of validation/hostile_surfaces.py (import, store, reports, REFs, settings),
each in a real process as in the reliability harness: none writes outside its project, prints a
traceback or a planted password, replaces a user's file, stores a partial run or runs a command
no one asked for, and each ends in a clear error or inert output."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("sqlalchemy")

from validation.hostile_surfaces import surface_cases, totals

#: Real measurement: the slow tier (`nox -s tests -- -m slow`; .ci/run runs it).
pytestmark = pytest.mark.slow


def test_hostile_input_on_the_newer_surfaces(tmp_path: Path) -> None:
    rows = surface_cases(tmp_path, lambda _line: None)
    got = totals(rows)
    assert got["cases"] >= 30
    assert {k: v for k, v in got.items() if k not in ("cases", "clear")} == {
        "outside_writes": 0,
        "tracebacks": 0,
        "secrets_printed": 0,
        "user_files_overwritten": 0,
        "partial_runs_stored": 0,
        "commands_run": 0,
    }
    assert [r["case"] for r in rows if not r["clear"]] == []
