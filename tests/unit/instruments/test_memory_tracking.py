"""The memory instrument (instruments/memory_tracking.py): where it measures, and what it
makes of a device's tracked calls; devices faked, no tracker started."""

from __future__ import annotations

import pytest

from pytest_burnperf.core.memory.allocations import Allocations
from pytest_burnperf.core.memory.call_figures import MemoryCalls
from pytest_burnperf.instruments.instrument import Situation
from pytest_burnperf.instruments.memory_tracking import (
    BUDGET_S,
    CALLS_BEFORE,
    MEMORY_TRACKING,
    RULE,
    TRACKED_CALLS,
    Taken,
    Tracked,
)
from pytest_burnperf.instruments.registry import BESIDE

FINGERPRINT = {
    "library": "numpy",
    "versions": {"numpy": "2.1.0"},
    "dispatch": {"numpy": "X86_V3", "blas": "Haswell"},
}


class _Device:
    """Gives back what a device's memory_per_call would; keeps what was asked of it, in
    order (``sync`` after a call, ``track 3`` for three tracked calls)."""

    def __init__(self, got: object) -> None:
        self.got = got
        self.asked: list[int] = []
        self.log: list[str] = []

    def sync(self) -> None:
        self.log.append("sync")

    def memory_per_call(self, make_call: object, calls: int = 3) -> object:
        self.asked.append(calls)
        self.log.append(f"track {calls}")
        return self.got


class _Clock:
    """A fake clock, moved on by the fake calls."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


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
    threads = more.pop("threads", None)
    taken = MEMORY_TRACKING.take(
        device,  # type: ignore[arg-type]
        lambda: (lambda: device.log.append("call"), None),
        threads=threads,  # type: ignore[arg-type]
    )
    if isinstance(taken, str):
        return taken
    given: dict[str, object] = {"threshold": None, **more}
    return MEMORY_TRACKING.judged(
        taken,
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
    from pytest_burnperf.instruments.memory_tracking import interpreter_allocation

    return memory_key(fingerprint, "allocator (test)", interpreter_allocation(), rule=RULE)


def test_the_tracked_calls_come_after_a_fixed_number_of_untracked_calls() -> None:
    """The first calls are made untracked (a compilation, a cache's first filling), always
    CALLS_BEFORE of them, each synchronised, then the tracked ones: the same calls of the
    benchmark's history in every run; the memory key says so."""
    calls = [Allocations(allocated=1 << 20, count=1, peak=1 << 20)] * 3
    device = _Device(MemoryCalls(calls, "allocator (test)", {}))
    tracked = _track(device)
    assert device.log == ["call", "sync"] * CALLS_BEFORE + [f"track {TRACKED_CALLS}"]
    assert isinstance(tracked, Tracked) and tracked.key["rule"] == RULE
    assert f"after {CALLS_BEFORE} untracked" in RULE


def test_long_calls_get_two_tracked_calls_by_the_faster_untracked_call() -> None:
    """A first call that compiles for seconds does not make a fast benchmark "long": the
    faster of the untracked calls decides; the clock is faked."""
    calls = [Allocations(allocated=1 << 20, count=1, peak=1 << 20)] * 3
    budget_per_call = BUDGET_S / TRACKED_CALLS
    for seconds, asked in (([30.0, 0.001], 3), ([0.01, 0.01], 3), ([budget_per_call * 2] * 2, 2)):
        device = _Device(MemoryCalls(calls, "allocator (test)", {}))
        clock = _Clock()
        taken = MEMORY_TRACKING.take(
            device,  # type: ignore[arg-type]
            _calls_lasting(clock, seconds),
            clock=clock,
        )
        assert isinstance(taken, Taken), seconds
        assert device.asked == [asked], seconds
        assert taken.seconds == sum(seconds)  # what judging memory cost, the calls before too


def _calls_lasting(clock: _Clock, seconds: list[float]) -> object:
    """A make_call whose calls move ``clock`` on by each of ``seconds`` in turn."""
    durations = iter(seconds)

    def make_call() -> tuple[object, None]:
        def call() -> None:
            clock.now += next(durations)

        return call, None

    return make_call


def test_a_baseline_tracked_after_the_clocks_calls_is_of_another_key() -> None:
    """A memory baseline recorded before this rule (tracked after the clock's calls, its key
    without ``rule``) is said to be of another key, not compared."""
    calls = [Allocations(allocated=1 << 20, count=1, peak=1 << 20)] * 3
    old_key = {k: v for k, v in memory_key_of(FINGERPRINT).items() if k != "rule"}
    tracked = _track(_Device(MemoryCalls(calls, "allocator (test)", {})), calls[0], old_key)
    assert isinstance(tracked, Tracked) and tracked.verdict.status == "incomparable"
    assert f"rule: None -> {RULE!r}" in tracked.verdict.reason


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


class _CompilingCalls:
    """A benchmark's calls, numbered from 1 as they are made, and a fake compiler's count that
    the calls numbered in ``compiling`` move on; the device below makes its tracked calls
    through ``make_call`` as the device meters do."""

    def __init__(self, compiling: set[int]) -> None:
        self.compiling = compiling
        self.made = 0
        self.count = 0

    def make_call(self) -> tuple[object, None]:
        def call() -> None:
            self.made += 1
            if self.made in self.compiling:
                self.count += 2

        return call, None


class _CallingDevice(_Device):
    def memory_per_call(self, make_call: object, calls: int = 3) -> object:
        self.asked.append(calls)
        for _ in range(calls):
            call, _after = make_call()  # type: ignore[operator]
            call()
        return self.got


def _take_compiling(
    monkeypatch: pytest.MonkeyPatch, compiling: set[int]
) -> tuple[Tracked, _CompilingCalls, _CallingDevice]:
    from pytest_burnperf.instruments import memory_tracking

    calls = _CompilingCalls(compiling)
    monkeypatch.setattr(memory_tracking, "compiled_frames", lambda: calls.count)
    figures = [Allocations(allocated=1 << 20, count=1, peak=1 << 20)] * 3
    device = _CallingDevice(MemoryCalls(figures, "allocator (test)", {}))
    taken = MEMORY_TRACKING.take(device, calls.make_call)  # type: ignore[arg-type]
    assert isinstance(taken, Taken)
    kept = {**figures[0].to_json(), "key": memory_key_of(FINGERPRINT), "sites": {}}
    tracked = MEMORY_TRACKING.judged(taken, fingerprint=FINGERPRINT, kept=kept, threshold=None)
    return tracked, calls, device


def test_a_compilation_in_the_first_tracked_call_alone_changes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tracked, calls, device = _take_compiling(monkeypatch, {1, 2, 3})  # 3: the left-out call
    assert tracked.verdict.status == "unchanged" and "calls_before" not in tracked.key
    assert calls.made == CALLS_BEFORE + TRACKED_CALLS and device.asked == [TRACKED_CALLS]


def test_judged_calls_that_compiled_are_tracked_again_once_the_compiler_settles(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """torch.compile compiles again on each of a benchmark's first calls (up to its recompile
    limit): untracked calls until one compiles nothing, then the tracked ones again. How many
    ran before them follows the compiler, not the host: the key says it where it is not the
    rule's."""
    # calls 1-2 untracked, 3-5 tracked (4 and 5 compile), 6-7 compile, 8 does not
    tracked, calls, device = _take_compiling(monkeypatch, {1, 4, 5, 6, 7})
    assert device.asked == [TRACKED_CALLS, TRACKED_CALLS]
    assert calls.made == 8 + TRACKED_CALLS
    assert tracked.key["calls_before"] == 8
    # a baseline tracked by the rule's own calls is of another key, not compared
    assert tracked.verdict.status == "incomparable" and "calls_before: None -> 8" in (
        tracked.verdict.reason
    )


def test_a_compiler_that_compiles_now_and_then_is_let_settle_until_the_judged_calls_do_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Calls that compile intermittently (a recompilation where a drawn parameter is new): a
    call that compiles nothing is not yet enough; the tracked calls are made again until the
    judged ones compile nothing."""
    # 3-5 tracked (4 compiles); 6 settles; 7-9 tracked (9 compiles); 10 settles; 11-13 tracked
    tracked, calls, device = _take_compiling(monkeypatch, {4, 7, 9})
    assert device.asked == [TRACKED_CALLS] * 3
    assert calls.made == 13 and tracked.key["calls_before"] == 10


def test_calls_that_compile_on_and_on_are_said_not_judged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What a compilation allocates follows the compiler's caches: judged calls that compiled,
    also after SETTLE_CALLS more, are said (``varies``, with why), never compared or kept."""
    from pytest_burnperf.instruments.memory_tracking import SETTLE_CALLS

    tracked, calls, _ = _take_compiling(monkeypatch, set(range(1, 100)))
    assert tracked.verdict.status == "varies" and tracked.verdict.kept() is None
    assert "torch.compile compiled 4 frame(s) during its judged calls" in tracked.verdict.reason
    assert f"also after up to {SETTLE_CALLS} more calls" in tracked.verdict.reason
    assert calls.made == CALLS_BEFORE + TRACKED_CALLS + SETTLE_CALLS
    assert "calls_before" not in tracked.key  # the calls judged were the rule's own
