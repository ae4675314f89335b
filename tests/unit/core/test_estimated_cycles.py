"""core/counting/estimated_cycles.py: the cycle estimate from a call's events, and whether the events
come from a run that simulated the caches."""

from __future__ import annotations

from pytest_burnperf.core.counting.estimated_cycles import estimated_cycles, simulated


def test_estimated_cycles_weights_misses() -> None:
    events = {"Ir": 1000, "I1mr": 1, "D1mr": 2, "D1mw": 3, "ILmr": 1, "DLmr": 1, "DLmw": 0}
    assert estimated_cycles(events) == 1000 + 10 * 6 + 100 * 2
    assert estimated_cycles({"Ir": 7}) == 7


def test_simulated_only_where_the_dump_lists_every_miss_event() -> None:
    with_caches = {
        "Ir": 10,
        "Dr": 4,
        "Dw": 2,
        "I1mr": 0,
        "D1mr": 0,
        "D1mw": 0,
        "ILmr": 0,
        "DLmr": 0,
        "DLmw": 0,
    }
    assert simulated(with_caches)  # a call with no misses still simulated them
    assert not simulated({"Ir": 10})
    assert not simulated({"Ir": 10, "interpreter": 0.5})
