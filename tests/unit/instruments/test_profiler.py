"""The profile instrument (instruments/profiler.py): the first call's result goes back to the
test, the profile's file and summary (or why there is none) go to the parent's record."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pytest_burnperf.instruments.profiler import profile_side


class CpuDevice:
    id = "cpu:0"
    kind = "cpu"
    library = "numpy"

    def __init__(self) -> None:
        self.syncs = 0

    def sync(self) -> None:
        self.syncs += 1

    @contextlib.contextmanager
    def threads(self, n: int) -> Iterator[None]:
        yield


def _work() -> int:
    return sum(i * i for i in range(2000))


def _prepare() -> tuple[Any, Any]:
    return _work, None


def test_a_profiled_side_keeps_its_file_and_summary_and_returns_the_first_result(
    tmp_path: Path,
) -> None:
    device = CpuDevice()
    record, first = profile_side(
        device,
        1,
        _prepare,
        library="numpy",
        kind="cpu",
        nodeid="test_m.py::test_sum[cpu-f64]",
        side="reference",
        repeat=True,
        out_dir=tmp_path / "profiles",
    )
    assert first == _work()
    path = Path(record["profile"]["file"])
    assert path.parent == tmp_path / "profiles" and path.name.endswith("reference.pstats")
    assert any("_work" in f for f in str(record["profile"]["summary"]).split("'"))
    assert device.syncs >= 2  # after the first call and after the profiled ones


def test_a_folder_it_must_not_write_is_the_records_error_not_a_traceback(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("not a profile\n")
    record, first = profile_side(
        CpuDevice(),
        1,
        _prepare,
        library="numpy",
        kind="cpu",
        nodeid="t.py::t",
        side="current",
        repeat=False,
        out_dir=theirs,
    )
    assert first == _work() and "profile" not in record
    assert str(theirs) in record["profile_error"]
    assert (theirs / "notes.txt").read_text() == "not a profile\n"
