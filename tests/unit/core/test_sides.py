"""core/sides/: a verdict judged beside the time or counts verdict (memory per call's) carried
through the layers that name no side: the result and its JSON, the baseline entry it records,
the stored baseline read back and checked, the instrument's reading of what was kept, and the
one outcome rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_burnperf.core.judging.outcome import outcome, side_fails, sides_fail
from pytest_burnperf.core.judging.verdict import UNCHANGED, Verdict
from pytest_burnperf.core.memory.allocations import Allocations
from pytest_burnperf.core.memory.memory_side import MEMORY
from pytest_burnperf.core.memory.memory_verdict import MemoryVerdict, judge
from pytest_burnperf.core.memory.recorded_memory import kept_memory
from pytest_burnperf.core.records.results import Result
from pytest_burnperf.core.records.stored_baseline import StoredBaseline
from pytest_burnperf.core.sides.side_kind import SideVerdict
from pytest_burnperf.core.sides.side_registry import SIDES, side
from pytest_burnperf.storage.baselines import check_entry
from pytest_burnperf.storage.jsonfile import Fields, FileFormatError

from .._results import numpy_result

MIB = 1 << 20
KEY: dict[str, object] = {"meter": "allocator (test)", "threads": 1}
SITES = {"add (b.py:9)": MIB}


def _memory(peak: int, base: int | None = None) -> MemoryVerdict:
    now = Allocations(allocated=peak, count=1, peak=peak)
    before = None if base is None else Allocations(allocated=base, count=1, peak=base)
    verdict = judge([now], before, key=KEY, baseline_key=KEY, threshold=None)
    return MemoryVerdict(**{**verdict.__dict__, "sites": SITES})


def _result(sides: dict[str, SideVerdict]) -> Result:
    return numpy_result(Verdict(UNCHANGED, 3e-3, ratio=1.0), sides=sides)


def test_memory_is_the_registered_side_and_is_found_by_its_field() -> None:
    assert SIDES == (MEMORY,)
    assert side("memory") is MEMORY
    with pytest.raises(ValueError, match="no verdict is judged beside under 'watts'"):
        side("watts")


def test_a_side_verdict_goes_into_the_results_document_and_the_baseline_entry_by_its_field() -> (
    None
):
    m = _memory(2 * MIB, MIB)
    assert m.status == "regressed" and m.key == KEY
    r = _result({"memory": m})
    assert r.as_json()["memory"] == m.as_json()
    assert m.as_json()["key"] == KEY and m.as_json()["status"] == "regressed"
    entry = r.baseline_entry({"date": "2026-11-30"})
    assert entry["memory"] == {**m.figures.to_json(), "key": KEY, "sites": SITES}  # type: ignore[union-attr]
    # calls that varied keep nothing: no figures to judge a later run by
    varied = MemoryVerdict("varies", None, reason="its calls allocate differently")
    assert varied.kept() is None
    assert "memory" not in _result({"memory": varied}).baseline_entry({})
    assert "memory" not in _result({}).as_json() and "memory" not in _result({}).baseline_entry({})


def test_what_a_baseline_kept_is_checked_read_back_and_judged_by() -> None:
    m = _memory(MIB)
    entry = _result({"memory": m}).baseline_entry({"date": "2026-11-30"})
    checked = check_entry(Fields(Path("b.json")), "test_k[numpy-cpu-f64]", entry)
    stored = StoredBaseline.from_entry(checked)
    assert stored.sides == {"memory": entry["memory"]}
    before = kept_memory(stored.sides["memory"])
    assert before is not None
    assert before.figures == m.figures and before.key == KEY and before.sites == SITES
    again = judge([Allocations(3 * MIB, 1, 3 * MIB)], before.figures, key=KEY,
                  baseline_key=before.key, threshold=None)  # fmt: skip
    assert again.status == "regressed"
    assert StoredBaseline.from_entry({"samples": [1.0]}).sides == {}
    assert kept_memory(None) is None and kept_memory({"peak_bytes": -1}) is None


@pytest.mark.parametrize(
    ("kept", "field", "problem"),
    [
        ([], ".memory", "must be an object"),
        ({"allocated_bytes": 1, "allocations": 1}, ".memory.peak_bytes", "must be a whole number"),
        (
            {"allocated_bytes": 1, "allocations": 1, "peak_bytes": 1, "key": 3},
            ".memory.key",
            "must be an object or null",
        ),
        (
            {"allocated_bytes": 1, "allocations": 1, "peak_bytes": 1, "sites": {"a": "8"}},
            '.memory.sites["a"]',
            "must be a whole number of bytes",
        ),
    ],
)
def test_a_bad_kept_field_names_the_file_and_the_field(
    kept: object, field: str, problem: str
) -> None:
    entry = {"samples": [1.0], "memory": kept}
    with pytest.raises(FileFormatError) as err:
        check_entry(Fields(Path("b.json")), "t", entry)
    text = str(err.value)
    assert "b.json" in text and f'benchmarks["t"]{field}' in text and problem in text, text


def test_the_outcome_fails_on_a_side_by_its_sides_statuses() -> None:
    regressed, same = _memory(2 * MIB, MIB), _memory(MIB, MIB)
    over = MemoryVerdict(**{**same.__dict__, "status": "over-limit", "reason": "over"})
    assert side_fails("memory", regressed) and side_fails("memory", over)
    assert not side_fails("memory", same) and not side_fails("memory", None)
    assert not side_fails("memory", regressed, records=True)  # recording fails nothing
    assert sides_fail({"memory": regressed}) and not sides_fail({"memory": same})
    got = outcome(
        Verdict(UNCHANGED, 1.0),
        test_id="t[x]",
        strict=False,
        records=False,
        regression=lambda: "slower",
        sides={"memory": regressed},
    )
    assert got.fails and got.message == f"t[x]: {regressed.line()}"
    assert "memory regressed: peak +1.0 MiB (+100.0%)" in got.message
    passes = outcome(
        Verdict(UNCHANGED, 1.0), test_id="t", strict=True, records=False,
        regression=lambda: "slower", sides={"memory": same},
    )  # fmt: skip
    assert not passes.fails
    # recording accepts a regression of memory, not a call over max_memory
    assert "regressed" in MEMORY.accepted_by_recording
    assert "over-limit" not in MEMORY.accepted_by_recording


def test_a_recorded_run_is_read_back_and_judged_again_by_its_side() -> None:
    """``burnperf compare``: a results entry's field read back by its side and judged against
    another run's by the rule a run judges by."""
    now = MEMORY.read_recorded(_result({"memory": _memory(2 * MIB, MIB)}).as_json()["memory"], "x")
    before = MEMORY.read_recorded(_result({"memory": _memory(MIB)}).as_json()["memory"], "x")
    again = MEMORY.rejudge(now, before, None, "old.json")
    assert again.status == "regressed" and side_fails("memory", again)
    assert MEMORY.rejudge(before, before, None, "old.json").status == "unchanged"
    missing = MEMORY.rejudge(now, None, None, "old.json")
    assert missing.status == "no-baseline" and "old.json kept no memory figures" in missing.line()
    with pytest.raises(ValueError, match=r"results\[2\]\.memory\.key: must be an object"):
        MEMORY.read_recorded({"figures": None, "key": 3}, "results[2].memory")
    with pytest.raises(TypeError, match="RecordedMemory"):
        MEMORY.rejudge({"peak_bytes": 1}, None, None, "old.json")


def test_a_side_says_its_store_columns_and_what_a_stored_series_shows_of_it() -> None:
    assert MEMORY.figure_columns == ("memory_peak", "memory_allocated", "memory_allocations")
    assert [n for n, kind in MEMORY.stored_columns if kind == "json"] == ["memory"]
    record = MEMORY.read_recorded(_result({"memory": _memory(2 * MIB)}).as_json()["memory"], "x")
    row = MEMORY.stored_values(record)
    assert set(row) == {n for n, _ in MEMORY.stored_columns}
    assert (row["memory_peak"], row["memory_allocated"], row["memory_allocations"]) == (
        2 * MIB,
        2 * MIB,
        1,
    )
    assert MEMORY.read_recorded(row["memory"], "store") == record  # the record, read back
    assert MEMORY.stored_values(None) == dict.fromkeys(row)  # not tracked: all null
    history = MEMORY.history
    assert history.line(row) == "  peak 2.0 MiB/call"
    assert history.line({"memory_peak": None}) == ""
    assert (history.latest(row), history.latest({})) == ("2.0 MiB", "-")
    # every figure a stored series shows is one of its store columns; the chart draws bytes
    assert {f.column for f in history.figures} == set(MEMORY.figure_columns)
    assert [f.name for f in history.figures if f.charted] == ["peak", "allocated"]
    points = [row, {"memory_peak": None}, {"memory_allocated": 5}, {"memory_peak": True}]
    assert [i for i, _ in history.charted(points)] == [0, 2]  # a bool is no figure


def test_a_side_that_cannot_be_stored_or_shown_as_it_says_is_refused_at_its_registration() -> None:
    from dataclasses import replace

    from pytest_burnperf.core.sides.side_kind import HistoryFigure

    with pytest.raises(ValueError, match="no json store column named 'memory'"):
        replace(MEMORY, stored_columns=MEMORY.stored_columns[:-1])
    ghost = replace(MEMORY.history, figures=(HistoryFigure("memory_ghost", "ghost", "ghost"),))
    with pytest.raises(ValueError, match=r"its history shows \['memory_ghost'\]"):
        replace(MEMORY, history=ghost)
