"""The one round scheduler (runs/scheduler.py) with fake round processes: which benchmarks each
round measures, the order of the sides, pairing, the budget and what a failed round does, for a
stored-baseline run (one side, this process measuring the last round) and a same-session
comparison (two sides). Nothing is timed and no process starts."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from pytest_burnperf.runs.scheduler import Measured, Schedule, Side, run

WANTED = ["t.py::a", "t.py::b", "t.py::c"]


class FakeRounds:
    """Writes a round's samples file as a round's process would; ``fail`` maps (side, round) to
    an exit status for a round that writes nothing; ``skip`` maps (side, round) to node ids a
    side leaves out."""

    def __init__(
        self,
        fail: dict[tuple[str, int], int] | None = None,
        skip: dict[tuple[str, int], set[str]] | None = None,
    ) -> None:
        self.calls: list[tuple[str, int, list[str]]] = []
        self.fail = fail or {}
        self.skip = skip or {}

    def __call__(self, side: Side, r: int, out: Path, group: list[str]) -> tuple[int, str]:
        self.calls.append((side.label, r, list(group)))
        if (side.label, r) in self.fail:
            return self.fail[(side.label, r)], f"round {r} of {side.label} crashed"
        left = self.skip.get((side.label, r), set())
        doc = {n: {"values": [float(r)], "host": {}, "probe": {}} for n in group if n not in left}
        out.write_text(json.dumps(doc))
        return 0, ""


def _run(sides: list[Side], schedule: Schedule, fake: FakeRounds, more=None) -> Measured:  # type: ignore[no-untyped-def]
    lines: list[str] = []
    got = run(
        sides,
        schedule,
        args=[],
        cwd=Path("."),
        wanted=WANTED,
        more=more or (lambda n, got: n == "t.py::b"),
        write=lines.append,
        rng=random.Random(1),
        launch=fake,
    )
    got.envs = {"lines": lines}  # type: ignore[dict-item]
    return got


ONE = [Side("current", "python")]
TWO = [Side("base", "python-base", detail="base in a cached overlay"), Side("current", "python")]


def test_fixed_rounds_measure_everything_then_only_the_undecided() -> None:
    fake = FakeRounds()
    got = _run(ONE, Schedule(fixed=2, most=4, own_rounds=1), fake)
    assert [(r, g) for _, r, g in fake.calls] == [
        (1, WANTED),
        (2, WANTED),
        (3, ["t.py::b"]),
        (4, ["t.py::b"]),
    ]
    assert got.of("current", "t.py::b") == [[1.0], [2.0], [3.0], [4.0]]
    assert got.of("current", "t.py::a") == [[1.0], [2.0]]
    assert got.rounds == 4
    lines = got.envs["lines"]
    # numbered as the session's rounds, this process's own round included
    assert lines[0].startswith("burnperf: round 1/3: 3 benchmarks in a fresh process")
    assert all(len(x) <= 80 for x in lines), lines
    assert any(
        x.startswith("burnperf: adaptive round 3 (at most 5): 1 of 3 undecided") for x in lines
    )


def test_more_sees_what_the_rounds_measured_so_far() -> None:
    seen: list[tuple[str, int]] = []

    def more(nodeid: str, got: Measured) -> bool:
        seen.append((nodeid, len(got.of("current", nodeid))))
        return False

    fake = FakeRounds()
    got = _run(ONE, Schedule(fixed=2, most=5), fake, more)
    assert seen == [("t.py::a", 2), ("t.py::b", 2), ("t.py::c", 2)]  # asked once, then done
    assert got.rounds == 2


def test_every_side_measures_each_round_in_an_order_drawn_per_round() -> None:
    fake = FakeRounds()
    got = _run(TWO, Schedule(fixed=3, most=3), fake)
    assert len(got.orders) == 3 and all(sorted(o) == ["base", "current"] for o in got.orders)
    assert len({tuple(o) for o in got.orders}) >= 1
    for r, order in enumerate(got.orders, 1):  # the sides ran in the order recorded
        assert [label for label, rr, _ in fake.calls if rr == r] == order
    assert got.of("base", "t.py::a") == got.of("current", "t.py::a") == [[1.0], [2.0], [3.0]]
    assert f"benchmarks in {', '.join(got.orders[0])} (" in got.envs["lines"][0]


def test_a_benchmark_keeps_a_round_only_where_every_side_measured_it() -> None:
    fake = FakeRounds(skip={("base", 2): {"t.py::c"}})
    got = _run(TWO, Schedule(fixed=3, most=3), fake)
    assert got.of("current", "t.py::c") == [[1.0], [3.0]]  # round 2 unpaired: dropped on both
    assert got.of("base", "t.py::c") == [[1.0], [3.0]]
    assert got.of("current", "t.py::a") == [[1.0], [2.0], [3.0]]


def test_a_failed_round_ends_a_same_session_comparison() -> None:
    fake = FakeRounds(fail={("base", 2): 3})
    got = _run(TWO, Schedule(fixed=3, most=5), fake)
    assert max(r for _, r, _ in fake.calls) == 2
    assert got.failures == {
        "base": "round 2 in base (base in a cached overlay): its process failed (exit 3):\n"
        "    | round 2 of base crashed"
    }
    assert len(got.orders) == 2


def test_a_failed_fixed_round_of_stored_baselines_is_reported_and_the_rounds_go_on() -> None:
    fake = FakeRounds(fail={("current", 1): 4, ("current", 3): 5})
    got = _run(ONE, Schedule(fixed=2, most=5, failure_ends_all=False, own_rounds=1), fake)
    # round 1 failed and the fixed round 2 still ran; the adaptive round 3 failed and ended them
    assert [r for _, r, _ in fake.calls] == [1, 2, 3]
    assert got.problems[0].startswith(
        "round 1 in a fresh process failed (exit 4); its samples are missing from the verdicts"
    )
    assert len(got.problems) == 2 and not got.failures
    assert got.of("current", "t.py::a") == [[2.0]]


def test_an_unreadable_samples_file_is_a_failed_round() -> None:
    class Garbage(FakeRounds):
        def __call__(self, side: Side, r: int, out: Path, group: list[str]) -> tuple[int, str]:
            out.write_text("{not json")
            return 0, ""

    got = _run(TWO, Schedule(fixed=2, most=2), Garbage())
    (why,) = got.failures.values()  # the first side of the drawn order
    assert "its samples file is unusable" in why


def test_no_adaptive_round_starts_once_the_budget_is_spent() -> None:
    fake = FakeRounds()
    got = _run(ONE, Schedule(fixed=1, most=6, budget_s=1e-9), fake)
    assert [r for _, r, _ in fake.calls] == [1]
    assert got.budget_stopped == 1  # t.py::b was still undecided


@pytest.mark.parametrize(
    ("fixed", "most", "start"), [(3, 2, "fresh"), (-1, 2, "fresh"), (1, 2, "spawn")]
)
def test_a_schedule_is_checked(fixed: int, most: int, start: str) -> None:
    with pytest.raises(ValueError):
        Schedule(fixed=fixed, most=most, start=start)
