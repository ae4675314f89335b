"""The memory instrument (instruments/memory_tracking.py): where it measures, and what it
makes of a device's tracked calls; devices faked, no tracker started."""

from __future__ import annotations

from pytest_burnperf.core.memory.allocations import Allocations
from pytest_burnperf.core.memory.call_figures import MemoryCalls
from pytest_burnperf.instruments.instrument import Situation
from pytest_burnperf.instruments.memory_tracking import MEMORY_TRACKING, Tracked
from pytest_burnperf.instruments.registry import BESIDE

FINGERPRINT = {
    "library": "numpy",
    "versions": {"numpy": "2.1.0"},
    "dispatch": {"numpy": "X86_V3", "blas": "Haswell"},
}


class _Device:
    """Gives back what a device's memory_per_call would."""

    def __init__(self, got: object) -> None:
        self.got = got
        self.asked: list[int] = []

    def memory_per_call(self, make_call: object, calls: int = 3) -> object:
        self.asked.append(calls)
        return self.got


def _track(
    device: _Device,
    baseline: Allocations | None = None,
    baseline_key: dict[str, object] | None = None,
    baseline_sites: dict[str, int] | None = None,
    **more: object,
) -> Tracked | str:
    """Track through ``device`` against a baseline entry that kept ``baseline`` (with its key
    and sites); ``more``: the other keywords of MemoryTracking.track."""
    kept = (
        None
        if baseline is None
        else {**baseline.to_json(), "key": baseline_key or {}, "sites": baseline_sites or {}}
    )
    given: dict[str, object] = {"threshold": None, **more}
    return MEMORY_TRACKING.track(
        device,  # type: ignore[arg-type]
        lambda: (lambda: None, None),
        fingerprint=FINGERPRINT,
        kept=kept,
        **given,  # type: ignore[arg-type]
    )


def test_it_measures_beside_in_the_process_that_judges_only() -> None:
    assert MEMORY_TRACKING in BESIDE
    assert MEMORY_TRACKING.applies(Situation(timer="host"))
    assert MEMORY_TRACKING.applies(Situation(counts_judge=True))
    for busy in (
        Situation(profiling_round=True),
        Situation(counting_round=True),
        Situation(timing_round=True),
    ):
        assert not MEMORY_TRACKING.applies(busy)


def test_a_device_that_cannot_track_says_why_and_nothing_is_judged() -> None:
    assert _track(_Device("memory per call is not tracked on cuda0 yet")) == (
        "memory per call is not tracked on cuda0 yet"
    )


def test_the_first_tracked_call_is_left_out_and_the_key_names_the_meter_not_the_blas() -> None:
    first = Allocations(allocated=5 << 20, count=9, peak=5 << 20)  # it filled a cache
    later = Allocations(allocated=1 << 20, count=1, peak=1 << 20)
    tracked = _track(_Device(MemoryCalls([first, later, later], "allocator (test)", {})))
    assert isinstance(tracked, Tracked)
    assert tracked.verdict.status == "no-baseline" and tracked.verdict.figures == later
    assert tracked.key["meter"] == "allocator (test)"
    assert tracked.key["dispatch"] == {"numpy": "X86_V3"}
    assert tracked.key["versions"] == {"numpy": "2.1.0"}


def test_a_regression_names_where_it_grew_against_the_baselines_sites() -> None:
    base = Allocations(allocated=1 << 20, count=1, peak=1 << 20)
    grown = Allocations(allocated=2 << 20, count=2, peak=2 << 20)
    sites = {"add (b.py:9) [out = a * 2]": 1 << 20, "add (b.py:8) [t = a.copy()]": 1 << 20}
    got = MemoryCalls([grown] * 3, "allocator (test)", sites)
    key = memory_key_of(FINGERPRINT)
    before = {"add (b.py:8) [out = a * 2]": 1 << 20}  # one line up, before the edit
    tracked = _track(_Device(got), base, baseline_key=key, baseline_sites=before)
    assert isinstance(tracked, Tracked) and tracked.verdict.status == "regressed"
    assert tracked.verdict.where == "grew at add (b.py:8) [t = a.copy()] +1.0 MiB (new)"
    assert "; grew at add (b.py:8) [t = a.copy()] +1.0 MiB (new) (peak" in tracked.verdict.line()
    # no sites kept with the baseline: where the call allocated most
    alone = _track(_Device(got), base, baseline_key=key)
    assert isinstance(alone, Tracked)
    assert alone.verdict.where == (
        "allocated most at add (b.py:9) [out = a * 2] 1.0 MiB, add (b.py:8) [t = a.copy()] 1.0 MiB"
    )


def memory_key_of(fingerprint: dict[str, object]) -> dict[str, object]:
    from pytest_burnperf.core.memory.allocations import memory_key

    return memory_key(fingerprint, "allocator (test)")


def test_long_calls_get_two_tracked_calls_short_ones_three() -> None:
    calls = [Allocations(allocated=1 << 20, count=1, peak=1 << 20)] * 3
    for seconds, asked in ((None, 3), (0.01, 3), (0.5, 2)):
        device = _Device(MemoryCalls(calls, "allocator (test)", {}))
        _track(device, seconds_per_call=seconds)
        assert device.asked == [asked], seconds


def test_the_threads_a_benchmark_runs_with_are_in_its_memory_key() -> None:
    """OpenBLAS and torch keep a buffer per thread: figures tracked with 4 threads are of
    another key than a baseline of 1 (said, not a regression)."""
    calls = [Allocations(allocated=1 << 20, count=1, peak=1 << 20)] * 3
    one = _track(_Device(MemoryCalls(calls, "allocator (test)", {})), threads=1)
    assert isinstance(one, Tracked) and one.key["threads"] == 1
    more = [Allocations(allocated=3 << 19, count=2, peak=3 << 19)] * 3
    four = _track(
        _Device(MemoryCalls(more, "allocator (test)", {})),
        calls[0],
        baseline_key=one.key,
        threads=4,
    )
    assert isinstance(four, Tracked) and four.verdict.status == "incomparable"
    assert "threads: 1 -> 4" in four.verdict.reason
