"""Host-state windows from fake kernel counters: what counts as a busy host, and what does not."""

from __future__ import annotations

import pytest

from pytest_burnperf.host import activity
from pytest_burnperf.host.activity import Snapshot, Window, parse_proc_stat, window

PROC_STAT = """cpu  300 0 100 1000 5 0 2 7 0 0
cpu0 100 0 50 500 5 0 1 3 0 0
cpu1 200 0 50 500 0 0 1 4 0 0
intr 12345
"""


def test_proc_stat_counts_only_this_processs_cpus() -> None:
    busy, steal, n = parse_proc_stat(PROC_STAT, None, 100.0)
    assert (busy, steal, n) == pytest.approx((4.02, 0.07, 2))
    busy, steal, n = parse_proc_stat(PROC_STAT, {1}, 100.0)
    assert (busy, steal, n) == pytest.approx((2.51, 0.04, 1))
    assert parse_proc_stat("garbage\ncpuX 1 2\n", None, 100.0)[2] == 0


def snap(wall: float, own: float, busy: float, **kw: float) -> Snapshot:
    return Snapshot(wall=wall, own_cpu=own, busy=busy, cpus=2, **kw)  # type: ignore[arg-type]


def test_quiet_host() -> None:
    w = window(snap(0.0, 0.0, 10.0), snap(1.0, 0.98, 11.0))
    assert w.own_cpus == pytest.approx(0.98) and w.others_cpus == pytest.approx(0.02)
    assert w.disturbed() is None


def test_a_competing_cpu_bound_process_is_named() -> None:
    w = window(snap(0.0, 0.0, 10.0), snap(1.0, 1.0, 12.0))
    assert w.others_cpus == pytest.approx(1.0)
    assert w.disturbed() == "other processes used 1.00 of 2 CPUs"


def test_a_turn_taking_side_sees_the_host_only_while_it_held_the_turn() -> None:
    """Two 1 s windows of this side, the other side of the pair busy for 1 s between them:
    summed over the windows, nobody else ran; over the whole span, a CPU seemed taken."""
    marks = [
        snap(0.0, 0.0, 10.0),  # this side's first window: 0-1 s
        snap(1.0, 1.0, 11.0),
        snap(2.0, 1.0, 12.0),  # (1-2 s: the other side's turn, one CPU busy) second: 2-3 s
        snap(3.0, 2.0, 13.0),
    ]
    quiet = window(*activity.spans(marks))
    assert quiet.seconds == pytest.approx(2.0) and quiet.others_cpus == pytest.approx(0.0)
    assert quiet.disturbed() is None
    whole = window(marks[0], marks[-1])
    assert whole.others_cpus == pytest.approx(1 / 3)
    assert activity.spans(marks[:2]) == (marks[0], marks[1])
    with pytest.raises(ValueError, match="a start and an end"):
        activity.spans(marks[:1])
    missing = activity.spans([*marks[:2], Snapshot(2.0, 1.0), Snapshot(3.0, 2.0)])
    assert missing[1].busy is None and missing[1].wall == pytest.approx(2.0)


def test_short_windows_do_not_read_clock_ticks_as_load() -> None:
    """Over 20 ms one 10 ms tick of someone else is half a CPU: not judged."""
    w = window(snap(0.0, 0.0, 10.0), snap(0.02, 0.02, 10.03))
    assert w.others_cpus is None and w.disturbed() is None


def test_steal_pressure_throttling_and_descheduled_samples() -> None:
    before = snap(0.0, 0.0, 0.0, steal=0.0, pressure_us=0.0, throttled_us=0.0)
    after = snap(1.0, 1.0, 1.0, steal=0.2, pressure_us=300_000.0, throttled_us=100_000.0)
    w = window(before, after, [1.0, 0.5, 0.99, 0.4, 1.0])
    assert w.steal_share == pytest.approx(0.1) and w.pressure_share == pytest.approx(0.3)
    assert w.throttle_share == pytest.approx(0.1) and (w.descheduled, w.samples) == (2, 5)
    why = w.disturbed()
    assert why is not None
    for part in ("stole 10%", "waited for a CPU 30%", "throttled it 10%", "2 of 5 samples"):
        assert part in why


def test_windows_round_trip_through_json_dicts() -> None:
    w = window(snap(0.0, 0.0, 10.0), snap(1.0, 1.0, 12.0), [1.0, 0.2])
    again = Window.from_dict(w.as_dict())
    assert again is not None and again.disturbed() == w.disturbed()
    assert Window.from_dict({"bogus": 1}) is None


def test_the_headers_host_state_names_the_busy_benchmarks(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_burnperf.report.run_header import host_state

    monkeypatch.setattr(activity, "load_average", lambda: (1.5, 1.0, 0.5))
    monkeypatch.setattr(activity, "cpufreq", lambda: None)
    quiet = window(snap(0.0, 0.0, 10.0), snap(1.0, 1.0, 11.0))
    busy = window(snap(0.0, 0.0, 10.0), snap(1.0, 1.0, 12.0))
    assert host_state([quiet, quiet], 2) == "host quiet (load 1.50 on 2 CPUs)"
    text = host_state([quiet, busy], 2)
    assert text.startswith("host BUSY during 1 of 2 benchmark(s) (worst: other processes used")
    # a window too short to see other processes is never called quiet (issue 76: "host quiet"
    # beside a CPU-bound process, each benchmark timed one short round beside its counts)
    brief = window(snap(0.0, 0.0, 10.0), snap(0.05, 0.05, 10.1))
    assert brief.others_cpus is None and brief.disturbed() is None
    assert host_state([brief, brief], 2).startswith(
        "host state unknown: every benchmark's timed window was under 0.25 s"
    )
    assert host_state([quiet, brief], 2).startswith(
        "host quiet during 1 of 2 benchmark(s) (the other 1 timed under 0.25 s, too short"
    )
    assert host_state([busy, brief], 2).startswith("host BUSY during 1 of 2")
    # one benchmark timed in two rounds: its rounds are counted, not called benchmarks
    assert host_state([quiet, brief], 2, benchmarks=1).startswith(
        "host quiet during 1 of 2 timed round(s) (the other 1"
    )
    assert host_state([busy, quiet], 2, benchmarks=1).startswith(
        "host BUSY during 1 of 2 timed round(s)"
    )
    assert host_state([busy, quiet], 2, benchmarks=2).startswith(
        "host BUSY during 1 of 2 benchmark(s)"
    )


def test_real_snapshot_reads_this_machine() -> None:
    a = activity.snapshot()
    b = activity.snapshot()
    w = window(a, b)
    assert w.cpus >= 1 and w.seconds > 0


@pytest.mark.parametrize(
    "doc",
    [
        "busy",
        {"seconds": 1.0, "cpus": 2, "own_cpus": 1.0, "others_cpus": "lots"},
        {"seconds": 1.0, "cpus": 2, "own_cpus": 1.0, "others_cpus": float("nan")},
        {"seconds": 1.0, "cpus": True, "own_cpus": 1.0},
        {"seconds": 1.0, "cpus": 2, "own_cpus": 1.0, "descheduled": -1},
        {"seconds": 1.0, "cpus": 2, "own_cpus": 1.0, "gpu_slowdown": 3},
        {"cpus": 2},
    ],
)
def test_a_bad_window_in_a_file_is_ignored_not_a_crash(doc: object) -> None:
    assert Window.from_dict(doc) is None


def test_shares_of_a_window_never_pass_the_whole_window() -> None:
    """A PSI total read late after a short window's end said tasks waited 979% of the time;
    every share of the window is bounded to 100%."""
    from pytest_burnperf.host.activity import Snapshot, window

    before = Snapshot(wall=0.0, own_cpu=0.0, steal=0.0, pressure_us=0.0, throttled_us=0.0, cpus=2)
    after = Snapshot(
        wall=0.002, own_cpu=0.002, steal=0.5, pressure_us=19_580.0, throttled_us=9e3, cpus=2
    )
    w = window(before, after)
    assert w.pressure_share == 1.0 and w.throttle_share == 1.0 and w.steal_share == 1.0
    assert "waited for a CPU 100% of the time" in str(w.disturbed())
