"""Turn-taking pairs (turns.py): the table hands the turn to one side at a time, alternating,
and never loses a run to a side that dies, hangs or never comes; measure() samples in the
windows it is given (timing.py, on a fake clock)."""

from __future__ import annotations

import random
import sys
import threading
import time
from collections.abc import Callable

import pytest

from pytest_burnperf.core import timing
from pytest_burnperf.runs.turns import (
    Seat,
    Side,
    Table,
    TurnError,
    asleep,
    shared_cpu,
    table_address,
)

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="abstract Unix sockets are Linux's"
)


def address() -> str:
    return f"\0burnperf-test-{random.getrandbits(64):016x}"


class Work:
    """What the sides did, in order; fails the test if two ever worked at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.holder: str | None = None
        self.log: list[str] = []
        self.overlaps = 0

    def do(self, label: str) -> None:
        with self.lock:
            if self.holder is not None:
                self.overlaps += 1
            self.holder = label
            self.log.append(label)
        time.sleep(0.002)
        with self.lock:
            self.holder = None


def side(addr: str, label: str, windows: int, work: Work, errors: list[BaseException]) -> None:
    try:
        me = Side(addr, label)
        me.wait()  # the first turn: set-up, warm-up
        work.do(label)
        for _ in range(windows):
            assert me.give_back() == pytest.approx(0.01)
            work.do(label)
        me.finish()
    except BaseException as exc:  # reported by the test
        errors.append(exc)


def start(addr: str, plan: dict[str, int], work: Work) -> tuple[list[threading.Thread], list]:
    errors: list[BaseException] = []
    threads = [
        threading.Thread(target=side, args=(addr, label, n, work, errors), name=label)
        for label, n in plan.items()
    ]
    for t in threads:
        t.start()
    return threads, errors


def alive_of(threads: list[threading.Thread]) -> Callable[[str], bool]:
    """A side's "process" is alive while its thread runs (a finished side's ends soon)."""
    by_name = {t.name: t for t in threads}
    return lambda label: label in by_name and by_name[label].is_alive()


def test_the_sides_take_turns_one_at_a_time_first_turns_in_the_given_order() -> None:
    addr = address()
    table = Table(addr, ["ref", "current"], window=0.01)
    work = Work()
    threads, errors = start(addr, {"ref": 5, "current": 3}, work)
    try:
        turns = table.run(alive_of(threads), random.Random(1), first=["current", "ref"])
    finally:
        table.close()
    for t in threads:
        t.join(10)
    assert not errors, errors
    assert work.overlaps == 0
    assert turns == {"ref": 6, "current": 4}  # the first turn and one per window
    assert table.log[:2] == ["current", "ref"]
    # while both work, every cycle gives each one turn: neither gets two windows ahead
    both = table.log[: 2 * 4]
    for k in range(0, len(both), 2):
        assert sorted(both[k : k + 2]) == ["current", "ref"]
    assert table.log[8:] == ["ref", "ref"]  # the rest, once the other has finished
    assert work.log == table.log


def test_a_side_that_never_connects_is_not_waited_for_once_its_process_ended() -> None:
    addr = address()
    table = Table(addr, ["ref", "current"], window=0.01)
    work = Work()
    threads, errors = start(addr, {"current": 2}, work)
    try:
        turns = table.run(alive_of(threads))
    finally:
        table.close()
    for t in threads:
        t.join(10)
    assert not errors and turns == {"ref": 0, "current": 3}


def test_a_side_that_dies_holding_the_turn_ends_its_part_not_the_run() -> None:
    addr = address()
    table = Table(addr, ["ref", "current"], window=0.01)
    work = Work()

    def dies() -> None:
        me = Side(addr, "ref")
        me.wait()
        me.sock.close()  # a crash: no "finished"

    killer = threading.Thread(target=dies, name="ref")
    killer.start()
    threads, errors = start(addr, {"current": 2}, work)
    try:
        turns = table.run(alive_of([killer, *threads]))
    finally:
        table.close()
    for t in [killer, *threads]:
        t.join(10)
    assert not errors and turns == {"ref": 1, "current": 3}


def test_a_side_that_hangs_holding_the_turn_is_reported() -> None:
    addr = address()
    table = Table(addr, ["ref"], window=0.01)
    release = threading.Event()

    def hangs() -> None:
        me = Side(addr, "ref")
        me.wait()
        release.wait(10)
        me.finish()

    t = threading.Thread(target=hangs)
    t.start()
    try:
        with pytest.raises(TurnError, match="side ref: no word for 0 s"):
            table.run(lambda label: True, stall=0.3)
    finally:
        release.set()
        table.close()
        t.join(10)


class FakeTurns:
    """A side that is handed windows of ``window`` seconds at once."""

    def __init__(self, window: float, most: int = 400) -> None:
        self.window, self.most, self.given = window, most, 0

    def give_back(self) -> float:
        self.given += 1
        return self.window

    def wants_more(self) -> bool:
        return self.given < self.most


def fake_clock(call_s: float) -> tuple[Callable[[], int], Callable[[], None]]:
    now = [0]

    def clock() -> int:
        return now[0]

    def fn() -> None:
        now[0] += int(call_s * 1e9)

    return clock, fn


def test_measure_samples_in_windows_until_its_rule_is_met() -> None:
    clock, fn = fake_clock(0.002)  # 2 ms a call; min_time 1 ms: one call a sample
    turns = FakeTurns(0.01)  # 10 ms windows: 5 samples each
    marks: list[int] = []
    _, sample = timing.measure(
        fn,
        samples=12,
        warmup=0.004,
        min_time=0.001,
        clock=clock,
        turns=turns,
        watch=lambda: marks.append(clock()),
    )
    assert sample.stopped == "fixed"
    # a fixed count: 5 and 5 in the first two windows, the last 2 in the third
    assert len(sample.values) == 12 and turns.given == 3
    assert all(v == pytest.approx(0.002) for v in sample.values)
    assert len(marks) == 6  # the host is read at both ends of every window


@pytest.mark.parametrize(
    ("samples", "most_windows", "precise", "max_samples", "max_time", "stopped", "count"),
    [
        (5, 400, lambda values: len(values) >= 20, 100, 10.0, "precise", 20),
        (5, 400, lambda values: False, 12, 10.0, "cap", 12),  # the cap ends a window early
        (5, 400, lambda values: False, 1000, 0.03, "budget", 15),  # this side's windows only
        (50, 2, None, 0, 0.0, "budget", 10),  # the table ends the turns
    ],
    ids=["precise", "cap", "time-budget", "table-ends"],
)
def test_measure_in_windows_keeps_the_adaptive_rules(
    samples: int,
    most_windows: int,
    precise: Callable[[object], bool] | None,
    max_samples: int,
    max_time: float,
    stopped: str,
    count: int,
) -> None:
    clock, fn = fake_clock(0.002)  # 2 ms a call, 10 ms windows: 5 samples a window
    got = timing.measure(
        fn,
        samples=samples,
        warmup=0.004,
        min_time=0.001,
        clock=clock,
        turns=FakeTurns(0.01, most=most_windows),
        precise=precise,
        max_samples=max_samples,
        max_time=max_time,
    )[1]
    assert got.stopped == stopped and len(got.values) == count


def test_a_seat_travels_as_json_and_the_shared_cpu_is_one_this_process_may_use() -> None:
    seat = Seat("\0burnperf-turns-1", "v1.0", 1)
    assert Seat.from_json(seat.as_json()) == seat
    assert Seat.from_json({"address": "a", "label": "b"}).cpu is None
    import os

    assert shared_cpu(random.Random(0)) in os.sched_getaffinity(0)


def test_asleep_reads_the_threads_state() -> None:
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        stat = os.path.join(tmp, "stat")
        with open(stat, "w") as f:
            f.write("123 (py (x)) S 1 2 3")
        assert asleep(0, stat=stat)
        with open(stat, "w") as f:
            f.write("123 (py) R 1 2 3")
        assert not asleep(0, most=0.01, stat=stat)
        assert not asleep(0, stat=os.path.join(tmp, "absent"))


def test_a_table_address_is_abstract_on_linux_and_a_removed_socket_file_elsewhere() -> None:
    import os

    assert table_address(random.Random(0)).startswith("\0burnperf-turns-")
    path = table_address(random.Random(0), platform="darwin")
    assert path.endswith(".sock") and not path.startswith("\0")
    table = Table(path, ["ref"])  # a path works on Linux too
    assert os.path.exists(path)
    table.close()
    assert not os.path.exists(path)
