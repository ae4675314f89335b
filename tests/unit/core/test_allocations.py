"""A call's memory figures and their JSON (core/memory/allocations.py)."""

from __future__ import annotations

import pytest

from pytest_burnperf.core.memory.allocations import Allocations, AllocationsError

MiB = 2**20
BASE = Allocations(allocated=8 * MiB, count=1, peak=8 * MiB)


def test_stored_figures_round_trip_and_bad_ones_name_where() -> None:
    assert Allocations.from_json(BASE.to_json(), "x") == BASE
    for doc, field in (
        ({"allocated_bytes": 1, "allocations": 1}, "peak_bytes"),
        ({"allocated_bytes": -1, "allocations": 1, "peak_bytes": 1}, "allocated_bytes"),
        ({"allocated_bytes": 1, "allocations": True, "peak_bytes": 1}, "allocations"),
    ):
        with pytest.raises(AllocationsError, match=f"^b.json: test_x: {field} must be"):
            Allocations.from_json(doc, "b.json: test_x")
    with pytest.raises(AllocationsError, match="must be an object"):
        Allocations.from_json([1, 2], "b.json")
