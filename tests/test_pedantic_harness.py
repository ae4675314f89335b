"""validation/pedantic_suite.py's summary, on made-up sessions: what its report counts (judged,
caught, flagged controls) and that a table's medians are found as the run printed them. The
summary runs after every session, so a fault there used to lose a whole run's data."""

from __future__ import annotations

from typing import Any

from validation.pedantic_suite import summary

TABLE = """benchmark        median  change  verdict
test_score    1.51 M instr  +1.40%  regressed
test_control_sum  12.5 us  +0.1%  unchanged
"""


def _session(kind: str, plant: float, rows: list[tuple[str, str, float]]) -> dict[str, Any]:
    results = [{"test": t, "status": s, "median": m} for t, s, m in rows]
    return {"kind": kind, "plant": plant, "wall_s": 1.0, "results": results, "stdout": TABLE}


def test_the_summary_counts_caught_flagged_and_the_printed_medians() -> None:
    planted = _session(
        "counts planted",
        0.015,
        [("test_score[200]", "regressed", 1_514_847.0), ("test_control_sum", "unchanged", 12.5e-6)],
    )
    unchanged = _session(
        "counts unchanged",
        0.0,
        [("test_score[200]", "inconclusive", 1_514_847.0), ("test_control_sum", "regressed", None)],
    )
    got = summary([planted, unchanged])
    assert got["counts planted"]["caught"] == 1 and got["counts planted"]["planted"] == 1
    assert got["counts planted"]["controls_flagged"] == 0
    assert got["counts planted"]["medians_match"] == 1  # "1.51 M instr" and "12.5 us" printed
    assert got["counts unchanged"]["flagged"] == 1 and got["counts unchanged"]["judged"] == 1
    missing = _session("counts planted", 0.015, [("test_score[200]", "regressed", 2_000_000.0)])
    assert summary([missing])["counts planted"]["medians_match"] == 0
