"""The tracking processes of a same-session comparison (runs/tracked_sides.py): what one wrote,
each side's record read back strictly by its side, and a process that writes nothing or leaves a
benchmark out (fake interpreters, no pytest)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_burnperf.core.memory.recorded_memory import RecordedMemory
from pytest_burnperf.runs import tracked_sides
from pytest_burnperf.storage.jsonfile import FileFormatError

from .test_profiled import run_side_writing_one

MEMORY = {
    "figures": {"allocated_bytes": 8192, "allocations": 2, "peak_bytes": 4096},
    "key": {"meter": "allocator (memray)", "threads": 1},
    "reason": "",
    "sites": {"work (pkg.py:3) [t = a.copy()]": 4096},
    "max_memory_bytes": None,
}


def test_memory_and_the_reasons_for_none_are_read_back(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text(
        json.dumps(
            {
                "t.py::a": {"memory": MEMORY},
                "t.py::b": {"memory_error": "memory per call is not tracked on opencl-x"},
            }
        )
    )
    got, errors = tracked_sides.read_tracked(path)
    assert errors == {}  # nothing marks a whole benchmark: each side says why it has none
    record = got["t.py::a"].records["memory"]
    assert isinstance(record, RecordedMemory) and got["t.py::a"].gaps == {}
    figures = record.figures
    assert figures is not None and (figures.peak, figures.allocated) == (4096, 8192)
    assert record.key == {"meter": "allocator (memray)", "threads": 1}
    assert got["t.py::b"].records == {}
    assert got["t.py::b"].gaps == {"memory": "memory per call is not tracked on opencl-x"}


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ([], "document"),
        ({"t.py::a": {"memory": {**MEMORY, "figures": {"peak_bytes": 1}}}}, "allocated_bytes"),
        ({"t.py::a": {"memory": {**MEMORY, "key": 3}}}, '["t.py::a"].memory.key'),
        ({"t.py::a": {"memory_error": 3}}, '["t.py::a"].memory_error'),
    ],
)
def test_a_bad_file_names_its_field(tmp_path: Path, doc: object, field: str) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(FileFormatError) as info:
        tracked_sides.read_tracked(path)
    assert field in str(info.value) and str(path) in str(info.value)


def test_a_benchmark_the_process_did_not_write_is_said_missing(tmp_path: Path) -> None:
    run = run_side_writing_one(
        tmp_path, tracked_sides, f"{{'memory': {MEMORY!r}}} if label == 'main' else {{}}"
    )
    assert set(run.found) == {"t.py::a"}
    assert run.missing == {"t.py::b": "it failed or was skipped in the tracking process"}
