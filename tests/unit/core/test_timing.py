from __future__ import annotations

import gc
import itertools

import pytest

from pytest_burnperf.core.clocks import (
    SETTLE_CALLS,
    SETTLE_SHARE,
    Sample,
    calibrate_loops,
    settled,
    settles,
)
from pytest_burnperf.core.timing import measure, measure_pedantic


class FakeClock:
    """Each call of the benchmarked function advances time by ``cost`` ns."""

    def __init__(self, cost: int) -> None:
        self.now = 0
        self.cost = cost

    def __call__(self) -> int:
        return self.now

    def work(self) -> str:
        self.now += self.cost
        return "result"


def test_calibration_reaches_min_time() -> None:
    assert calibrate_loops(1e-6, 5e-3) == 5000
    assert calibrate_loops(0.01, 5e-3) == 1
    assert calibrate_loops(1e-6, 0.0) == 1


def test_measure_with_fake_clock() -> None:
    clock = FakeClock(cost=1000)  # 1 us per call
    syncs = itertools.count()
    result, sample = measure(
        clock.work,
        samples=7,
        warmup=0.001,
        min_time=0.0001,
        sync=lambda: next(syncs),
        clock=clock,
    )
    assert result == "result"
    assert sample.loops == 100
    assert sample.warmup_calls == 1 + 1000  # the untimed first call, then 1 ms at 1 us a call
    assert sample.values == (1e-6,) * 7
    # after the first call; before and after every timed warm-up call and every sample
    assert next(syncs) == 1 + 2 * (1000 + 7)


def test_a_slow_first_call_does_not_size_the_loop() -> None:
    """A first call that compiles or autotunes (here 3 s, longer than the whole warm-up) is
    untimed and the warm-up starts after it: the loop is sized from the 200 us calls after."""
    clock = FakeClock(cost=200_000)
    first = [True]

    def fn() -> None:
        clock.now += 3_000_000_000 if first[0] else 0
        first[0] = False
        clock.work()

    _, sample = measure(fn, samples=3, warmup=0.2, min_time=0.005, clock=clock)
    assert sample.loops == 25  # 5 ms / 200 us, not 1
    assert sample.warmup_calls == 1 + 1000  # 0.2 s of warm-up at 200 us a call
    assert sample.values == pytest.approx((2e-4,) * 3)
    # the same function with its slow call already behind it sizes the same loop: the order of
    # the tests in a process no longer decides `loops`
    _, again = measure(fn, samples=3, warmup=0.2, min_time=0.005, clock=clock)
    assert again.loops == sample.loops


def test_settled_needs_two_windows_and_no_more_speed_up() -> None:
    k = SETTLE_CALLS
    assert not settled([1.0] * (2 * k - 1))  # too few calls to tell
    assert settled([1.0] * (2 * k))
    assert settled([1.0] * k + [1.05] * k)  # slower is settled (noise, not warming)
    assert settled([1.0] * k + [0.99] * k)  # within the 2% tolerance
    assert not settled([1.0] * k + [0.9] * k)  # still getting faster
    # only the last two windows count: an early speed-up that has ended is settled
    assert settled([5.0] * k + [1.0] * (2 * k))


def test_settling_warmup_ends_early_for_steady_calls() -> None:
    """A steady function warms up for SETTLE_SHARE of the warm-up, not all of it."""
    clock = FakeClock(cost=100_000)  # 100 us a call
    _, sample = measure(clock.work, samples=3, warmup=0.2, min_time=0.001, clock=clock, settle=True)
    settle_calls = round(0.2 * SETTLE_SHARE / 1e-4)
    assert sample.warmup_calls == 1 + settle_calls  # the untimed first call, then 50 ms
    _, full = measure(clock.work, samples=3, warmup=0.2, min_time=0.001, clock=clock)
    assert full.warmup_calls == 1 + 2000  # without settle: the whole 0.2 s
    assert sample.loops == full.loops == 10


def test_settling_warmup_runs_on_while_calls_get_faster() -> None:
    """A function that speeds up through the warm-up (a JIT, caches filling) gets all of it."""
    clock = FakeClock(cost=0)
    cost = [400_000.0]

    def fn() -> None:
        clock.now += int(cost[0])
        cost[0] = max(100_000.0, cost[0] * 0.995)  # 0.5% faster a call until 100 us

    _, sample = measure(fn, samples=3, warmup=0.2, min_time=0.001, clock=clock, settle=True)
    # it settles only once the calls stop speeding up (~280 calls, ~0.1 s), after the 50 ms floor
    assert clock.now > 0  # ran
    assert sample.warmup_calls > 1 + 250
    assert sample.loops == 10  # sized on the settled 100 us calls


def test_slow_calls_get_the_whole_warmup() -> None:
    """Too few calls fit in the warm-up to compare two windows: the warm-up runs its time."""
    clock = FakeClock(cost=30_000_000)  # 30 ms a call: 7 calls in 0.2 s
    _, sample = measure(clock.work, samples=2, warmup=0.2, min_time=0.001, clock=clock, settle=True)
    assert sample.warmup_calls == 1 + 7


def test_settles_only_the_default_warmup_on_cpu_devices() -> None:
    assert settles("cpu", 0.2)
    assert not settles("cpu", 0.5)  # a warm-up that was set runs its whole time
    assert not settles("cuda", 0.2)  # GPU clocks ramp up over the warm-up
    assert not settles("opencl", 0.2)  # an OpenCL or Vulkan device may be a GPU


def test_measure_runs_at_least_one_warmup_call_and_restores_gc() -> None:
    clock = FakeClock(cost=10_000_000)
    assert gc.isenabled()
    _, sample = measure(clock.work, samples=3, warmup=0.0, min_time=0.0, clock=clock)
    assert sample.warmup_calls == 2 and sample.loops == 1  # the untimed first and one timed
    assert gc.isenabled()

    def boom() -> None:
        if not gc.isenabled():
            raise RuntimeError("stop")

    with pytest.raises(RuntimeError):
        measure(boom, samples=3, warmup=0.0, min_time=0.0)
    assert gc.isenabled()


def test_pedantic_calls_setup_every_round_untimed() -> None:
    clock = FakeClock(cost=500)
    seen: list[int] = []

    def setup() -> tuple[tuple[int], dict[str, object]]:
        clock.now += 10**9  # expensive setup must not be timed
        seen.append(len(seen))
        return (len(seen),), {}

    def fn(x: int) -> int:
        clock.work()
        return x

    result, sample = measure_pedantic(fn, setup=setup, rounds=4, warmup_rounds=2, clock=clock)
    assert seen == [0, 1, 2, 3, 4, 5]
    assert result == 6
    assert sample.values == pytest.approx((5e-7,) * 4)
    assert sample.mode == "pedantic"


def test_sample_is_validated_and_immutable() -> None:
    with pytest.raises(ValueError, match=r"> 0\.0"):
        Sample(values=(1.0, 0.0), loops=1, warmup_calls=0)
    with pytest.raises(ValueError, match="loops"):
        Sample(values=(1.0,), loops=0, warmup_calls=0)
    s = Sample(values=(1.0,), loops=1, warmup_calls=0)
    with pytest.raises(AttributeError):
        s.loops = 2  # type: ignore[misc]
