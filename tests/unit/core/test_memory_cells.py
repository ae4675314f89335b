"""What the tables say of a memory verdict, from a results entry's ``memory`` field."""

from __future__ import annotations

import pytest

from pytest_burnperf.core.memory.memory_cells import (
    memory_cell,
    memory_grew,
    memory_verdict_words,
)

MiB = 1024 * 1024


def _memory(status: str, peak: int = 8 * MiB, base: int | None = None, **more: object) -> dict:
    out: dict[str, object] = {"status": status, "figures": {"peak_bytes": peak}, **more}
    if base is not None:
        out["baseline"] = {"peak_bytes": base}
    return out


@pytest.mark.parametrize(
    ("memory", "cell"),
    [
        (None, "-"),  # not tracked
        ({"status": 3}, "-"),  # a damaged entry
        (["not", "a", "mapping"], "-"),
        (_memory("unchanged", base=8 * MiB), "8.0 MiB"),
        (_memory("regressed", 16 * MiB, 8 * MiB), "16.0 MiB +100%"),
        (_memory("improved", 4 * MiB, 8 * MiB), "4.0 MiB -50%"),
        (_memory("regressed", 4 * MiB, 0), "4.0 MiB new"),
        (_memory("over-limit"), "8.0 MiB > max"),
        (_memory("varies"), "varies"),
        (_memory("no-baseline"), "8.0 MiB (no base)"),
        (_memory("incomparable", base=MiB), "8.0 MiB (other key)"),
    ],
)
def test_the_cell_shows_the_peak_judged_and_how_it_moved(memory: object, cell: str) -> None:
    assert memory_cell(memory) == cell


def test_where_the_peak_held_the_cell_shows_the_bytes_allocated_that_moved() -> None:
    memory = _memory("regressed", 8 * MiB, 8 * MiB)
    memory["figures"]["allocated_bytes"] = 12 * MiB  # type: ignore[index]
    memory["baseline"]["allocated_bytes"] = 8 * MiB  # type: ignore[index]
    assert memory_cell(memory) == "8.0 MiB +50% alloc"


@pytest.mark.parametrize(
    ("status", "main", "words"),
    [
        ("regressed", "unchanged", "memory regressed"),
        ("regressed", "improved", "memory regressed"),
        ("regressed", "regressed", None),  # the time's failure stands
        ("regressed", "failed", None),
        ("over-limit", "regressed", "over max_memory"),  # a ceiling broken says so
        ("over-limit", "failed", None),
        ("unchanged", "unchanged", None),
        ("improved", "inconclusive", None),
    ],
)
def test_memory_decides_the_verdict_cell_only_where_it_fails_alone(
    status: str, main: str, words: str | None
) -> None:
    assert memory_verdict_words({"status": status}, main) == words
    assert memory_verdict_words(None, main) is None


def test_where_it_grew_is_read_only_from_a_located_regression() -> None:
    assert memory_grew({"status": "regressed", "where": "grew at copy (b.py:4)"}) == (
        "grew at copy (b.py:4)"
    )
    assert memory_grew({"status": "regressed", "where": ""}) is None
    assert memory_grew({"status": "regressed", "where": 4}) is None
    assert memory_grew(None) is None


def test_the_csv_columns_hold_the_status_and_the_figures_judged() -> None:
    from pytest_burnperf.core.memory.memory_cells import CSV_COLUMNS, memory_csv

    memory = _memory("regressed", 16 * MiB, 8 * MiB)
    memory["figures"].update(allocated_bytes=32 * MiB, allocations=3)  # type: ignore[attr-defined]
    assert dict(zip(CSV_COLUMNS, memory_csv(memory), strict=True)) == {
        "memory_status": "regressed",
        "memory_peak_bytes": 16 * MiB,
        "memory_allocated_bytes": 32 * MiB,
        "memory_allocations": 3,
    }
    assert memory_csv(None) == (None, None, None, None)  # not tracked: empty cells
