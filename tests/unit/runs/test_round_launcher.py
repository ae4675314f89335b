"""Progress lines of process rounds, on a fake clock and a fake process."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_burnperf.core.text import clock
from pytest_burnperf.runs.round_launcher import (
    count_done,
    last_done,
    note_finished,
    pooled,
    progress_line,
    watch,
)


def test_clock_and_line() -> None:
    assert clock(0) == "0:00" and clock(72.9) == "1:12" and clock(3725) == "1:02:05"
    assert progress_line(2, 3, 41, 125, 72) == "burnperf: round 2/3: 41/125 done, 1:12 elapsed"


def test_the_line_estimates_the_time_left_in_the_round_and_names_the_last_benchmark(
    tmp_path: Path,
) -> None:
    line = progress_line(2, 3, 40, 120, 300, round_s=60, last="t.py::test_x[numpy-cpu-f32]")
    # 40 done in 60 s: 80 more at that pace take 2:00
    assert line == (
        "burnperf: round 2/3: 40/120 done, 5:00, ~2:00 left, last test_x[numpy-cpu-f32]"
    )
    # a long test id is shortened in the middle: the line fits 80 columns, the parameters stay
    long = progress_line(
        2, 3, 40, 120, 300, round_s=60, last="t.py::test_kernels_" + "x" * 60 + "[mylib-nansum]"
    )
    assert len(long) <= 80 and long.endswith("…[mylib-nansum]")
    # nothing done yet: no estimate; all done: neither
    assert "left" not in progress_line(1, 3, 0, 10, 5, round_s=5)
    done = progress_line(1, 3, 10, 10, 50, round_s=50, last="t.py::test_y")
    assert done == "burnperf: round 1/3: 10/10 done, 0:50 elapsed"
    assert progress_line(1, 3, 1, 2, 5, where=" in v1.0").startswith(
        "burnperf: round 1/3 in v1.0: 1/2"
    )
    progress = tmp_path / "p"
    assert last_done(progress) is None
    note_finished(progress, "t.py::a")
    note_finished(progress, "t.py::b")
    assert last_done(progress) == "t.py::b"


def test_count_done_counts_each_wanted_test_once(tmp_path: Path) -> None:
    progress = tmp_path / "p"
    assert count_done(progress, {"a"}) == 0  # not written yet
    for nodeid in ("a", "b", "a", "skipped-one"):
        note_finished(progress, nodeid)
    assert count_done(progress, {"a", "b", "c"}) == 2
    note_finished(tmp_path / "missing-dir" / "p", "a")  # best effort: never raises


class _FakeProc:
    """Exits after ``polls`` polls; each poll writes one more finished test."""

    def __init__(self, polls: int, progress: Path) -> None:
        self.left, self.progress, self.n = polls, progress, 0

    def poll(self) -> int | None:
        if self.left == 0:
            return 0
        self.left -= 1
        self.n += 1
        note_finished(self.progress, f"t{self.n}")
        return None


def test_watch_speaks_every_interval_only_when_the_count_moved(tmp_path: Path) -> None:
    t = [0.0]
    progress = tmp_path / "p"
    said: list[int] = []
    proc = _FakeProc(polls=10, progress=progress)
    wanted = {f"t{i}" for i in range(1, 5)}  # t5.. are not benchmarks (skips, other tests)

    def sleep(s: float) -> None:
        t[0] += s

    watch(
        lambda: proc.poll() is None,
        progress,
        wanted,
        said.append,
        every_s=3,
        poll_s=1,
        now=lambda: t[0],
        wait=sleep,
    )
    # at t=3 three are done, at t=6 four, at t=9 still four: said once each time it moved
    assert said == [3, 4]


def test_a_child_python_is_started_with_the_interpreter_options_that_change_what_runs() -> None:
    """Issue 74: ``python -O -m pytest --perf`` counted its child without -O (asserts kept), and
    -X dev likewise; -W filters too. The defaults add nothing."""
    from types import SimpleNamespace

    from pytest_burnperf.runs.round_launcher import interpreter_args

    plain = interpreter_args(SimpleNamespace(optimize=0), {}, [])
    assert plain == []
    assert interpreter_args(SimpleNamespace(optimize=1), {}, []) == ["-O"]
    assert interpreter_args(SimpleNamespace(optimize=2), {}, []) == ["-OO"]
    got = interpreter_args(
        SimpleNamespace(optimize=0), {"dev": True, "int_max_str_digits": "640"}, ["error"]
    )
    assert got == ["-X", "dev", "-X", "int_max_str_digits=640", "-W", "error"]


def test_the_wait_between_two_looks_ends_when_the_process_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The parent sees a process's end at once, not at its next look (0.5 s apart): on Linux a
    process that exits at once ends a wait of a minute far sooner; a platform without pidfds
    sleeps its interval as before (no wake-ups beside a round that measures)."""
    import os
    import subprocess
    import sys
    import time

    from pytest_burnperf.runs.round_launcher import exit_waiter

    naps: list[float] = []
    proc = subprocess.Popen([sys.executable, "-c", "pass"], text=True)
    try:
        with exit_waiter(proc, sleep=naps.append) as wait:
            started = time.monotonic()
            wait(60.0)
            assert time.monotonic() - started < 30.0
        try:  # a kernel (or a sandbox) without pidfds sleeps here too
            os.close(os.pidfd_open(os.getpid()))
            assert naps == []  # waited on the process, not slept
        except (AttributeError, OSError):
            assert naps == [60.0]
        monkeypatch.delattr(os, "pidfd_open", raising=False)
        with exit_waiter(proc, sleep=naps.append) as wait:
            wait(0.5)
        assert naps[-1] == 0.5
    finally:
        proc.wait()


def test_processes_watched_at_once_say_one_line_per_interval_with_their_sum() -> None:
    """Two counted processes each told their count every 15 s, and each told gave a line: two
    lines at the same elapsed time (`counted 2/448 (0:15)`, `counted 4/448 (0:15)`). Pooled,
    one line per interval says their sum."""
    t = [0.0]
    said: list[int] = []
    a, b = pooled(2, said.append, every_s=15.0, now=lambda: t[0])
    t[0] = 15.0
    a(2)
    t[0] = 15.2
    b(4)  # the same moment: no second line
    assert said == [2]
    t[0] = 30.0
    b(9)
    t[0] = 30.1
    a(6)
    assert said == [2, 11]  # 2 + 9: a's 6, told just after, waits for the next interval
    t[0] = 45.0
    a(10)
    assert said == [2, 11, 19]
