"""The files a round process imports: those its node ids name, whatever their parameters."""

from __future__ import annotations

import os
from pathlib import Path

from pytest_burnperf.plugin.collection import round_files


def test_each_node_id_names_its_file_under_the_root() -> None:
    root = Path("/project")
    files = round_files(
        root,
        [
            "perf_tests/test_mm.py::test_mm[numpy-cpu-f32]",
            "perf_tests/test_mm.py::TestClass::test_x[a::b]",
            "perf_tests/../top_test.py::test_y",
            "test_plain.py",
        ],
    )
    assert files == {
        os.path.normpath(p)
        for p in (
            "/project/perf_tests/test_mm.py",
            "/project/top_test.py",
            "/project/test_plain.py",
        )
    }


def test_no_node_ids_name_no_files() -> None:
    assert round_files(Path("/project"), []) == frozenset()
