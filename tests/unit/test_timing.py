from __future__ import annotations

import gc
import itertools

import pytest

from pytest_burnperf.timing import Sample, calibrate_loops, measure, measure_pedantic


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
