"""The profiled processes of a same-session comparison (runs/profiled.py): what one wrote, read
back strictly, and a process that writes nothing or garbage (fake interpreters, no pytest); a
side process that writes nothing, profiled or tracking (runs/round_launcher.side_pass)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_burnperf.core.records.profiles import summarize
from pytest_burnperf.runs import profiled, tracked_sides
from pytest_burnperf.storage.jsonfile import FileFormatError

SUMMARY = summarize("cProfile", 5, [("work (pkg.py)", 1e-3, 5, 2e-3)]).as_json()


def test_profiles_and_the_reasons_for_none_are_read_back(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(
        json.dumps(
            {
                "t.py::a": {"profile": {"file": "/p/a.main.pstats", "summary": SUMMARY}},
                "t.py::b": {"profile_error": "torch.profiler is missing"},
            }
        )
    )
    got, errors = profiled.read_profiles(path)
    assert got["t.py::a"].path == Path("/p/a.main.pstats")
    assert got["t.py::a"].summary.entries[0].name == "work (pkg.py)"
    assert errors == {"t.py::b": "torch.profiler is missing"}


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ([], "document"),
        ({"t.py::a": {"profile": {"summary": SUMMARY}}}, '["t.py::a"].profile.file'),
        (
            {"t.py::a": {"profile": {"file": "x", "summary": {**SUMMARY, "calls": 0}}}},
            '["t.py::a"].profile.summary.calls',
        ),
        ({"t.py::a": {"profile_error": 3}}, '["t.py::a"].profile_error'),
    ],
)
def test_a_bad_file_names_its_field(tmp_path: Path, doc: object, field: str) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(FileFormatError) as info:
        profiled.read_profiles(path)
    assert field in str(info.value)


def _fake_python(tmp_path: Path, body: str) -> str:
    """An 'interpreter' that runs ``body`` with the profiled process's arguments."""
    script = tmp_path / "fake.py"
    script.write_text(body)
    runner = tmp_path / "python"
    runner.write_text(f'#!/bin/sh\nexec {sys.executable} {script} "$@"\n')
    runner.chmod(0o755)
    return str(runner)


@pytest.mark.parametrize(("side", "what"), [(profiled, "profiled"), (tracked_sides, "tracking")])
def test_a_side_process_that_writes_nothing_leaves_every_benchmark_without_a_record(
    tmp_path: Path, side: Any, what: str
) -> None:
    python = _fake_python(tmp_path, "import sys; print('boom'); sys.exit(3)\n")
    run = side.run(
        python=python, args=[], label="main", wanted=["t.py::a"], cwd=tmp_path, say=lambda n: None
    )
    assert run.found == {}
    assert run.missing == {"t.py::a": f"its {what} process failed (exit 3)"}
    assert "boom" in run.problems[0]


def run_side_writing_one(tmp_path: Path, side: Any, record: str) -> Any:
    """``side.run`` (profiled, tracked_sides) over ``t.py::a`` and ``t.py::b`` in a fake process
    that writes ``record`` (a Python expression; ``label`` is the side's label it was given)
    for ``t.py::a`` alone."""
    body = (
        "import json, sys\n"
        "out = next(a.split('=', 1)[1] for a in sys.argv if a.startswith('--perf-round-process-out='))\n"
        f"label = next(a.split('=', 1)[1] for a in sys.argv if a.startswith({side.SIDE_OPTION + '='!r}))\n"
        f"json.dump({{'t.py::a': {record}}}, open(out, 'w'))\n"
    )  # fmt: skip
    python = _fake_python(tmp_path, body)
    wanted = ["t.py::a", "t.py::b"]
    return side.run(
        python=python, args=[], label="main", wanted=wanted, cwd=tmp_path, say=lambda n: None
    )


def test_a_benchmark_the_process_did_not_write_is_said_missing(tmp_path: Path) -> None:
    record = f"{{'profile': {{'file': label + '.pstats', 'summary': {SUMMARY!r}}}}}"
    run = run_side_writing_one(tmp_path, profiled, record)
    assert run.found["t.py::a"].path == Path("main.pstats")
    assert run.missing == {"t.py::b": "it failed or was skipped in the profiled process"}
