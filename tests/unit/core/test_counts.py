"""The counted measure without valgrind: estimated cycles, how many calls are counted, the
counting loop with a fake counter, the key, and the verdict from injected counts."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_burnperf.core.counting import counted_calls, counts, counts_key
from pytest_burnperf.core.judging.abstention import Cause
from pytest_burnperf.core.judging.stats import min_attainable_p
from pytest_burnperf.core.judging.verdict import (
    IMPROVED,
    INCONCLUSIVE,
    NO_BASELINE,
    REGRESSED,
    UNCHANGED,
    Verdict,
)


@pytest.mark.parametrize("alpha_each", [0.05, 0.01, 0.001, 1e-4, 1e-9])
def test_calls_reach_the_alpha_or_the_cap(alpha_each: float) -> None:
    n = counted_calls.calls_for(alpha_each)
    assert counted_calls.MIN_CALLS <= n <= counted_calls.MAX_CALLS
    if n < counted_calls.MAX_CALLS:
        assert min_attainable_p(n, n) < alpha_each
        assert n == counted_calls.MIN_CALLS or min_attainable_p(n - 1, n - 1) >= alpha_each


class FakeCounter:
    """Records the requests; a call counted while collection is on adds its cost."""

    def __init__(self, caches: bool = True) -> None:
        self.caches = caches  # the cache simulation on: its miss events are in every dump
        self.log: list[str] = []
        self.collecting = True  # --collect-atstart=yes: the calling thread too, until it toggles
        self.instrumented = False
        self.cost = 0

    def start(self) -> None:
        self.log.append("start")
        self.instrumented = True

    def stop(self) -> None:
        self.log.append("stop")
        self.instrumented = False

    def zero(self) -> None:
        self.log.append("zero")
        self.cost = 0

    def toggle(self) -> None:
        self.log.append("toggle")
        self.collecting = not self.collecting

    def dump(self, label: str) -> dict[str, int]:
        self.log.append(f"dump {label}")
        if not self.caches:
            return {"Ir": self.cost}
        return {"Ir": self.cost, "I1mr": 0, "D1mr": 1, "D1mw": 0, "ILmr": 0, "DLmr": 0, "DLmw": 0}


def test_count_calls_counts_only_the_call() -> None:
    counter = FakeCounter()
    seen: list[str] = []

    def make_call() -> tuple[Any, Any]:
        seen.append(f"setup collecting={counter.collecting}")

        def call() -> int:
            on = counter.collecting and counter.instrumented
            seen.append(f"call collecting={on}")
            if on:
                counter.cost += 100 + len(seen)
            return 42

        def after() -> None:
            seen.append(f"teardown collecting={counter.collecting}")

        return call, after

    got, first = counted_calls.count_calls(
        make_call,
        counter,
        lambda d: d,
        calls=3,
        label="t",
        warm=2,
        first_calls=3,
        settle=lambda instructions: 0,
    )
    assert first == 42
    assert len(got.instructions) == 3
    assert got.cycles == tuple(i + 10 for i in got.instructions)
    # one call before instrumentation, two warm calls, three counted: 6 setups, none counted
    assert seen.count("setup collecting=False") == 5  # the first one: not instrumented yet
    assert seen.count("teardown collecting=False") == 5
    assert seen[0] == "setup collecting=True" and seen[1] == "call collecting=False"
    assert seen.count("call collecting=True") == 5  # the warm-up calls are collected, dropped
    assert counter.log[:2] == ["start", "toggle"] and counter.log[-2:] == ["toggle", "stop"]
    # the first warm-up call on its own (how large a call is), then one more and three counted
    assert counter.log.count("start") == 2
    assert counter.log.count("toggle") == 14 and counter.collecting  # as it was at the start
    assert [e for e in counter.log if e.startswith("dump")] == [
        "dump t first call",
        "dump t warm-up 2",
        "dump t #1",
        "dump t #2",
        "dump t #3",
    ]
    # every counted call was zeroed before and dumped after, with only itself in its window
    window = counter.log[counter.log.index("dump t warm-up 2") + 1 :]
    assert window[:4] == ["zero", "toggle", "toggle", "dump t #1"]


def test_without_the_cache_simulation_only_instructions_are_counted() -> None:
    counter = FakeCounter(caches=False)
    # the first instrumented call (apart from the next: dropped), two counted that disagree,
    # a warm-up call, one more counted
    costs = iter([900, 300, 100, 150, 200])

    def make_call() -> tuple[Any, Any]:
        def call() -> None:
            if counter.collecting and counter.instrumented:
                counter.cost += next(costs, 0)

        return call, None

    got, _ = counted_calls.count_calls(
        make_call,
        counter,
        lambda d: d,
        calls=3,
        label="t",
        warm=1,
        first_calls=3,
        settle=lambda instructions: 0,
    )
    assert got.instructions == (300, 100, 200)
    assert got.cycles == ()  # no estimate made up from instructions alone
    assert got.events == {"Ir": 200}  # the median call's
    assert counts.Counted.from_json(got.as_json()) == got


def test_a_small_call_settles_uninstrumented_and_is_counted_afresh() -> None:
    counter = FakeCounter()
    done = [0]

    def make_call() -> tuple[Any, Any]:
        def call() -> int:
            done[0] += 1
            if counter.collecting and counter.instrumented:
                # the interpreter's warm-up: dearer on the first calls, steady from the 20th
                counter.cost += 1000 + max(0, 20 - done[0]) * 50
            return 7

        return call, None

    asked: list[float] = []

    def settle(instructions: float) -> int:
        asked.append(instructions)
        return 30

    got, _ = counted_calls.count_calls(
        make_call, counter, lambda d: d, calls=8, label="t", warm=2, settle=settle
    )
    assert asked == [1000 + 18 * 50]  # the first warm-up call's size: the second call
    assert got.instructions == (1000, 1000)  # counted once settled: they agree
    assert done[0] == 1 + 1 + 30 + 1 + 2
    # the settling calls are made as counted ones, requests included, with instrumentation
    # off (the plugin's code around each call settles too) and nothing dumped
    probe_end = counter.log.index("stop")
    settling = counter.log[probe_end + 1 : counter.log.index("start", probe_end)]
    assert settling == ["zero", "toggle", "toggle"] * 30
    assert counted_calls.settle_calls(10_000) == counted_calls.SETTLE_MAX_CALLS
    # 5 M instructions' worth of calls of the power of two at or under the call's size: a call
    # whose size moves a little between processes settles alike in each
    assert counted_calls.settle_calls(50_000) == counted_calls.SETTLE_INSTRUCTIONS // 32_768
    assert counted_calls.settle_calls(90_126) == counted_calls.settle_calls(90_930) == 76
    assert counted_calls.settle_calls(65_535) == 152 and counted_calls.settle_calls(65_536) == 76
    assert counted_calls.settle_calls(0) == 0
    # a larger call still settles a few calls (its wrappers' bytecode: thousands of
    # instructions), up to the size where those are far under the floor
    assert (
        counted_calls.settle_calls(counted_calls.SETTLE_INSTRUCTIONS)
        == counted_calls.SETTLE_MIN_CALLS
    )
    assert counted_calls.settle_calls(862_000) == 9  # 5 M over 524,288
    assert counted_calls.settle_calls(counted_calls.SETTLE_UP_TO) == counted_calls.SETTLE_MIN_CALLS
    assert counted_calls.settle_calls(counted_calls.SETTLE_UP_TO + 1) == 0


def test_a_small_calls_settling_follows_its_counted_instructions_not_its_raw_ones() -> None:
    """The first call's raw instructions hold what follows the process's memory layout (its
    type cache misses, its allocators' paths); the number of settling calls follows its
    counted ones, which do not, so every process settles a call alike."""
    asked: list[float] = []
    for raw_extra in (0, 3_000):  # two processes: one with 3 k instructions of cache misses
        counter = FakeCounter()

        def make_call(counter: FakeCounter = counter) -> tuple[Any, Any]:
            def call() -> None:
                if counter.collecting and counter.instrumented:
                    counter.cost += 90_000

            return call, None

        def settle(instructions: float) -> int:
            asked.append(instructions)
            return counted_calls.settle_calls(instructions)

        counted_calls.count_calls(
            make_call, counter, lambda d: d, calls=8, label="t", settle=settle,
            size=lambda d, extra=raw_extra: counted_calls.CallSize(d["Ir"] + extra, d["Ir"]),
        )  # fmt: skip
    assert asked == [90_000, 90_000]


def test_each_dump_is_read_once_whatever_the_call_size() -> None:
    """A reader that removes each dump it reads (the counted process's, and
    validation/counts_history's) is given each dump once, also the first instrumented call's,
    whose size and settling both come from it."""
    for cost in (90_000, 30_000_000):  # settled first, and too large to settle
        counter = FakeCounter()
        seen: list[int] = []

        def make_call(counter: FakeCounter = counter, cost: int = cost) -> tuple[Any, Any]:
            def call() -> None:
                if counter.collecting and counter.instrumented:
                    counter.cost += cost

            return call, None

        def read(dump: dict[str, int], seen: list[int] = seen) -> dict[str, int]:
            assert id(dump) not in seen, "a dump read twice"
            seen.append(id(dump))
            return dump

        got, _ = counted_calls.count_calls(make_call, counter, read, calls=8, label="t")
        assert got.instructions == (cost, cost)


def test_count_calls_stops_instrumentation_when_the_call_raises() -> None:
    counter = FakeCounter()
    calls = iter([lambda: 1, lambda: 1, lambda: 1, lambda: 1 / 0])

    with pytest.raises(ZeroDivisionError):
        counted_calls.count_calls(
            lambda: (next(calls), None), counter, lambda d: d, calls=3, label="t"
        )
    assert counter.collecting and not counter.instrumented  # the switch back as it started


def _key(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = dict(
        arch="x86_64",
        valgrind="3.19.0",
        cache="I1=32768,8,64 D1=32768,8,64 LL=8388608,16,64",
        counting="the rule",
        cpuid="GenuineIntel 'Intel(R) Core(TM) i7-4910MQ CPU @ 2.90GHz' 0x306c3 #3364e50afd6e",
        simulated_cpu="numpy=X86_V3",
        python="CPython 3.11.7",
        python_build="GCC 12.2.0; main May  9 2026 07:35:25",
        interpreter_settings="default",
        libc="glibc 2.36",
        libraries={"numpy": "2.4.6"},
        threads=1,
    )
    base.update(changes)
    return counts_key.counts_key(**base)


def test_key_names_what_differs() -> None:
    assert counts_key.key_difference(_key(), _key()) is None
    assert "numpy 2.4.6, this run has 2.3.0" in str(
        counts_key.key_difference(_key(), _key(libraries={"numpy": "2.3.0"}))
    )
    assert "torch (absent), this run has 2.13.0" in str(
        counts_key.key_difference(_key(), _key(libraries={"numpy": "2.4.6", "torch": "2.13.0"}))
    )
    assert "threads 1, this run has 4" in str(counts_key.key_difference(_key(), _key(threads=4)))
    assert "simulated_cpu" in str(
        counts_key.key_difference(_key(), _key(simulated_cpu="numpy=X86_V2"))
    )
    assert "no key" in str(counts_key.key_difference(None, _key()))
    # the simulated caches decide the estimated cycles only, never which instructions run
    assert counts_key.key_difference(_key(), _key(cache="none")) is None
    assert counts_key.same_caches(_key(), _key()) and not counts_key.same_caches(
        _key(), _key(cache="none")
    )
    assert not counts_key.same_caches(None, _key())
    # the same Python version built elsewhere, another C library: other instructions run
    assert "python_build" in str(
        counts_key.key_difference(
            _key(), _key(python_build="GCC 11.4.0; main Dec  6 2023 23:10:48")
        )
    )
    assert "libc 'glibc 2.36', this run has 'glibc 2.39'" in str(
        counts_key.key_difference(_key(), _key(libc="glibc 2.39"))
    )
    other = "AuthenticAMD 'AMD EPYC 7B13' 0xa00f11 #0123456789ab"
    assert "cpuid" in str(counts_key.key_difference(_key(), _key(cpuid=other)))
    older = {k: v for k, v in _key().items() if k != "cpuid"}
    assert "key has no cpuid (recorded by an older pytest-burnperf)" in str(
        counts_key.key_difference(older, _key())
    )


def test_the_libraries_a_benchmark_calls_into_are_compared_where_both_keys_name_them() -> None:
    """``calls_into``: scipy's version decides a benchmark that runs scipy's code; a key
    recorded before the field existed, or one that did not run in it, compares."""
    scipy = _key(calls_into={"scipy": "1.17.1"})
    assert "scipy 1.17.1 (the benchmark's calls run in it), this run has 1.18.0" in str(
        counts_key.key_difference(scipy, _key(calls_into={"scipy": "1.18.0"}))
    )
    assert counts_key.key_difference(scipy, scipy) is None
    older = {k: v for k, v in scipy.items() if k != "calls_into"}
    assert counts_key.key_difference(older, scipy) is None
    assert counts_key.key_difference(scipy, _key(calls_into={"ruptures": "1.1"})) is None


def test_a_library_not_loaded_in_one_counted_process_is_no_difference() -> None:
    """``simulated_cpu`` names a library's dispatch only where it was loaded: a numpy benchmark
    counted in a process that did not import torch compares with one that did; the parts both
    name must agree."""
    with_torch = "blas=Haswell numpy=X86_V3 numpy:AVX,AVX2 torch:AVX2"
    without = "blas=Haswell numpy=X86_V3 numpy:AVX,AVX2"
    assert (
        counts_key.key_difference(_key(simulated_cpu=with_torch), _key(simulated_cpu=without))
        is None
    )
    assert (
        counts_key.key_difference(_key(simulated_cpu=without), _key(simulated_cpu=with_torch))
        is None
    )
    other_torch = "blas=Haswell numpy=X86_V3 numpy:AVX,AVX2 torch:AVX512"
    assert "simulated_cpu" in str(
        counts_key.key_difference(_key(simulated_cpu=with_torch), _key(simulated_cpu=other_torch))
    )
    assert "simulated_cpu" in str(
        counts_key.key_difference(
            _key(simulated_cpu=without), _key(simulated_cpu="blas=SkylakeX numpy=X86_V3")
        )
    )
    assert counts_key.same_simulated_cpu("", "") and not counts_key.same_simulated_cpu("a", "b")


def test_torchs_mkl_and_onednn_kernels_are_part_of_the_key_where_both_name_them() -> None:
    """With torch loaded the key names the caps on MKL's and oneDNN's kernels: recorded with
    another cap, the same matmul ran other kernels; a key recorded before they were named
    compares."""
    portable = "blas=Sandybridge torch:DEFAULT mkl:AVX onednn:AVX"
    assert counts_key.same_simulated_cpu(portable, portable)
    assert not counts_key.same_simulated_cpu(portable, portable.replace("mkl:AVX", "mkl:AVX2"))
    assert not counts_key.same_simulated_cpu(
        portable, portable.replace("onednn:AVX", "onednn:default")
    )
    assert counts_key.same_simulated_cpu("blas=Sandybridge torch:DEFAULT", portable)


def test_the_process_names_the_kernel_caps_only_with_torch_loaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from types import SimpleNamespace

    from pytest_burnperf.host import callgrind

    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert "mkl:" not in callgrind.simulated_cpu()
    cpu = SimpleNamespace(get_cpu_capability=lambda: "DEFAULT")
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(backends=SimpleNamespace(cpu=cpu)))
    monkeypatch.setenv("MKL_ENABLE_INSTRUCTIONS", "AVX")
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    assert callgrind.simulated_cpu().endswith("torch:DEFAULT mkl:AVX onednn:default")


def test_the_interpreters_settings_are_in_the_key() -> None:
    """-O, -X options and the GIL change which instructions the same code runs; a recording
    from before the field existed ran with the defaults."""
    assert counts_key.interpreter_settings({"optimize": 0, "dev_mode": False}, {}) == "default"
    text = counts_key.interpreter_settings(
        {"optimize": 1, "int_max_str_digits": -1}, {"frozen_modules": "off", "dev": True}
    )
    assert text == "optimize=1, -X dev, -X frozen_modules=off"
    assert counts_key.interpreter_settings({}, {}, gil=False) == "gil=off"
    assert counts_key.interpreter_settings({}, {}, gil=True) == "default"
    optimised = _key(interpreter_settings="optimize=1")
    assert "interpreter_settings 'default', this run has 'optimize=1'" in str(
        counts_key.key_difference(_key(), optimised)
    )
    older = {k: v for k, v in _key().items() if k != "interpreter_settings"}
    assert counts_key.key_difference(older, _key()) is None
    assert "interpreter_settings 'default', this run has 'optimize=1'" in str(
        counts_key.key_difference(older, optimised)
    )


def test_store_name_has_no_cpu_model() -> None:
    assert counts_key.store_name("Linux", "x86_64") == "counts-linux-x86_64"


def test_another_valgrind_is_noted_not_refused() -> None:
    assert counts_key.key_difference(_key(), _key(valgrind="3.22.0")) is None
    (note,) = counts_key.key_notes(_key(), _key(valgrind="3.22.0"))
    assert "valgrind 3.19.0, this run has 3.22.0" in note
    assert counts_key.key_notes(_key(), _key()) == []


BASE = [1_000_000, 1_000_120, 999_950, 1_000_040, 1_000_010, 1_000_060, 999_990]


def test_unchanged_counts_are_unchanged() -> None:
    cur = [v + 15 for v in BASE]
    v = counts.judge_counts(BASE, cur, alpha_each=0.001)
    assert v.status == UNCHANGED
    assert v.effect == pytest.approx(counts.COUNTS_FLOOR)


def test_five_percent_more_work_regresses() -> None:
    cur = [int(v * 1.05) for v in BASE]
    v = counts.judge_counts(BASE, cur, alpha_each=0.001)
    assert v.status == REGRESSED
    assert v.change_pct == pytest.approx(5.0, abs=0.01)
    assert "minimum effect" in counts.counts_failure("t", v)


def test_less_work_improves() -> None:
    cur = [int(v * 0.9) for v in BASE]
    assert counts.judge_counts(BASE, cur, alpha_each=0.001).status == IMPROVED


def test_a_threshold_the_user_set_gates_counts_too() -> None:
    """--perf-threshold 10% (or the ini file's, or the marker's) is the smallest slowdown that
    fails under counts as under the clock (issue 76): +5% counted is seen and said, not failed;
    +12% fails, naming the threshold; the same +5% with no threshold set fails at the counts'
    own minimum effect."""
    five = [int(v * 1.05) for v in BASE]
    within = counts.judge_counts(BASE, five, alpha_each=0.001, threshold=0.10)
    assert within.status == UNCHANGED and within.cause is None
    assert within.reason.startswith("counts +5.00% (p=")
    assert within.reason.endswith(
        "beyond their 0.5% minimum effect) is within the 10% threshold set: not failed"
    )
    assert within.threshold == 0.10 and within.min_detectable == 0.10
    beyond = counts.judge_counts(
        BASE, [int(v * 1.12) for v in BASE], alpha_each=0.001, threshold=0.1
    )
    assert beyond.status == REGRESSED
    assert counts.counts_failure("t", beyond).endswith("exceeds the 10% threshold set")
    faster = counts.judge_counts(
        BASE, [int(v * 0.95) for v in BASE], alpha_each=0.001, threshold=0.1
    )
    assert faster.status == UNCHANGED and "within the 10% threshold set" in faster.reason
    default = counts.judge_counts(BASE, five, alpha_each=0.001)
    assert default.status == REGRESSED and default.threshold is None
    assert counts.counts_failure("t", default).endswith("exceeds the 0.5% minimum effect of counts")
    # a threshold below the counts' own minimum effect leaves that effect to gate
    low = counts.judge_counts(BASE, [v + 1000 for v in BASE], alpha_each=0.001, threshold=0.001)
    assert low.status == UNCHANGED and low.effect == pytest.approx(counts.COUNTS_FLOOR)


def test_counts_that_spread_still_judge_at_a_larger_threshold_set() -> None:
    """Counts spreading 8% cannot tell +5% apart at the default (left to the clock), but a
    threshold set at 10% asks only what they can see: +3% is unchanged, +25% regressed."""
    noisy = [1_000_000, 1_020_000, 990_000, 1_010_000, 1_000_000, 1_005_000, 995_000]
    three = [int(v * 1.03) for v in noisy]
    left = counts.judge_counts(noisy, three, alpha_each=0.001)
    assert left.status == INCONCLUSIVE and counts.undecidable(left)
    set_ = counts.judge_counts(noisy, three, alpha_each=0.001, threshold=0.10)
    assert set_.status == UNCHANGED and not counts.undecidable(set_)
    big = counts.judge_counts(
        noisy, [int(v * 1.25) for v in noisy], alpha_each=0.001, threshold=0.1
    )
    assert big.status == REGRESSED


def test_the_minimum_effect_follows_the_measured_spread() -> None:
    noisy = [1_000_000, 1_020_000, 990_000, 1_010_000, 1_000_000, 1_005_000, 995_000]
    cur = [int(v * 1.05) for v in noisy]
    v = counts.judge_counts(noisy, cur, alpha_each=0.001)
    spread = counts.relative_spread(noisy)
    assert v.effect == pytest.approx(
        counts.SPREAD_FACTOR * max(spread, counts.relative_spread(cur))
    )
    assert v.effect is not None and v.effect > counts.MAX_EFFECT
    # +5% is inside what these counts can tell apart: not "unchanged", but not judged
    assert v.status == INCONCLUSIVE and "judge it by time" in v.reason
    assert v.cause is Cause.COUNTS_SPREAD


def test_cycles_that_move_without_instructions_are_named() -> None:
    v = counts.judge_counts(BASE, [v + 10 for v in BASE], alpha_each=0.001)
    base_cycles = [1_500_000.0] * 5
    note = counts.cycles_note(base_cycles, [1_650_000.0] * 5, v)
    assert note is not None and "+10.00%" in note and "more cache misses" in note
    assert counts.cycles_note(base_cycles, [1_501_000.0] * 5, v) is None


def test_the_cycles_note_says_how_far_the_instructions_moved() -> None:
    """Instructions +0.8% under a 0.9% minimum effect are judged unchanged; the cycles note
    said "with instructions unchanged" beside such a change."""
    cur = [round(v * 1.008) for v in BASE]
    v = counts.judge_counts(BASE, cur, alpha_each=0.001, interpreter=0.9)
    assert v.status == UNCHANGED and v.ratio is not None and v.ratio > 1.007, v
    note = counts.cycles_note([1_500_000.0] * 5, [1_650_000.0] * 5, v)
    assert note is not None and "instructions unchanged" not in note
    assert "with instructions +0.80% (judged unchanged: under their" in note
    # cycles that moved no further than the instructions did: no cache-miss story to tell
    assert counts.cycles_note([1_500_000.0] * 5, [1_512_000.0] * 5, v) is None


def test_calls_that_agree_are_decided_by_their_separation() -> None:
    """Two calls a side whose counts agree: no rank test can reach alpha with 2 and 2, and none is
    needed; every call beyond every baseline call by more than the minimum effect decides."""
    base = [1_000_000, 1_000_120]
    v = counts.judge_counts(base, [int(x * 1.05) for x in base], alpha_each=0.001)
    assert v.status == REGRESSED and "decided by their separation" in v.reason
    assert v.p_slower is None and v.p_value is None  # no p shown for a test that did not judge
    assert "every call apart" in counts.counts_failure("t", v) and "p=" not in v.reason
    assert counts.judge_counts(base, [995_000, 995_100], alpha_each=0.001).status == IMPROVED
    same = counts.judge_counts(base, [1_000_040, 1_000_200], alpha_each=0.001)
    assert same.status == UNCHANGED
    # the floor holds: +0.4% is under the 0.5% minimum effect, whatever the separation
    small = counts.judge_counts(base, [1_004_200, 1_004_300], alpha_each=0.001)
    assert small.status == UNCHANGED and small.effect == pytest.approx(counts.COUNTS_FLOOR)


def test_an_older_baseline_of_many_calls_judges_two_agreeing_calls() -> None:
    v = counts.judge_counts(BASE, [1_020_000, 1_020_050], alpha_each=0.001)
    assert v.status == REGRESSED and v.n_baseline == 7 and v.n_current == 2
    assert counts.judge_counts(BASE, [1_000_030, 1_000_060], alpha_each=0.001).status == UNCHANGED
    # where the rank test can reach alpha, it judges as before
    ranked = counts.judge_counts(BASE, [int(x * 1.05) for x in BASE], alpha_each=0.001)
    assert ranked.status == REGRESSED and ranked.p_slower is not None and not ranked.reason


def test_counting_stops_after_the_first_calls_where_they_agree() -> None:
    counter = FakeCounter()

    def make_call() -> tuple[Any, Any]:
        def call() -> None:
            if counter.collecting and counter.instrumented:
                counter.cost += 5_000  # the same work every call

        return call, None

    got, _ = counted_calls.count_calls(
        make_call, counter, lambda d: d, calls=9, label="t", settle=lambda i: 0
    )
    assert got.instructions == (5_000,) * counted_calls.FIRST_CALLS
    # the first warm-up call on its own, then one pass
    assert counter.log.count("start") == 2 and counter.log.count("stop") == 2


def test_counting_goes_on_to_the_calls_a_rank_test_needs_where_they_spread() -> None:
    counter = FakeCounter()
    costs = iter([7_000, 7_000, 5_000, 6_000] + [5_500] * 20)  # warm-ups, then calls apart

    def make_call() -> tuple[Any, Any]:
        def call() -> None:
            if counter.collecting and counter.instrumented:
                counter.cost += next(costs)

        return call, None

    got, _ = counted_calls.count_calls(
        make_call, counter, lambda d: d, calls=9, label="t", settle=lambda i: 0
    )
    assert got.instructions[:2] == (5_000, 6_000) and len(got.instructions) == 9
    # a second instrumented pass, after one more warm-up call whose counts are dropped
    assert counter.log.count("start") == 3 and counter.log.count("stop") == 3
    dumps = [e for e in counter.log if e.startswith("dump")]
    assert dumps[:4] == ["dump t first call", "dump t warm-up 2", "dump t #1", "dump t #2"]
    assert dumps[4] == "dump t warm-up 1" and dumps[5:] == [f"dump t #{k}" for k in range(3, 10)]
    assert counter.collecting and not counter.instrumented  # as it was at the start


def test_agreeing_counts() -> None:
    assert counted_calls.agree([1_000_000, 1_001_000]) and not counted_calls.agree(
        [1_000_000, 1_002_000]
    )
    assert not counted_calls.agree([5]) and not counted_calls.agree([0, 0])


def test_no_baseline() -> None:
    v = counts.judge_counts(None, BASE, alpha_each=0.01)
    assert v.status == NO_BASELINE and v.current_median == pytest.approx(1_000_010)
    assert v.cause is Cause.NO_COUNTS


def test_counted_round_trips_through_json() -> None:
    got = counts.Counted(instructions=(1, 2), cycles=(3, 4), events={"Ir": 2})
    assert counts.Counted.from_json(got.as_json()) == got


def test_a_first_call_over_the_guard_is_too_slow_and_nothing_is_counted() -> None:
    """A first call over ten times the guard is not run again; one over it, but not that far,
    gets a second uninstrumented call (its first may import): that one decides."""
    counter = FakeCounter()
    ticks = iter([0.0, 12.0])
    with pytest.raises(counted_calls.TooSlow) as info:
        counted_calls.count_calls(
            lambda: (lambda: "r", None), counter, lambda d: d, calls=3, label="t", guard_s=1.0,
            clock=lambda: next(ticks),
        )  # fmt: skip
    assert info.value.seconds == 12.0 and counter.log == []
    ticks = iter([0.0, 1.5, 0.0, 0.2])  # slow first call (imports), then a fast one: counted
    got, _ = counted_calls.count_calls(
        lambda: (lambda: "r", None), counter, lambda d: {"Ir": 1000.0}, calls=3, label="t",
        guard_s=1.0, clock=lambda: next(ticks), settle=lambda _i: 0,
    )  # fmt: skip
    assert got.instructions[0] == 1000
    counter = FakeCounter()
    ticks = iter([0.0, 1.5, 0.0, 2.5])
    with pytest.raises(counted_calls.TooSlow) as info:
        counted_calls.count_calls(
            lambda: (lambda: "r", None),
            counter,
            lambda d: d,
            calls=3,
            label="t",
            guard_s=1.0,
            clock=lambda: next(ticks),
        )
    assert info.value.seconds == 2.5 and info.value.result == "r"
    assert counter.log == []


def test_a_call_over_the_instruction_limit_is_too_slow_whatever_the_host() -> None:
    """The first instrumented call's instructions decide: the same call is counted or not on
    every host, however fast or loaded (the clock here says every call took an hour)."""
    hour = iter(float(i) * 3600 for i in range(100))

    def run(limit: int | None, cost: int) -> tuple[Any, FakeCounter]:
        counter = FakeCounter(caches=False)

        def make_call() -> tuple[Any, Any]:
            def call() -> str:
                if counter.collecting and counter.instrumented:
                    counter.cost += cost
                return "r"

            return call, None

        try:
            got, _ = counted_calls.count_calls(
                make_call, counter, lambda d: d, calls=3, label="t", limit=limit,
                guard_s=None, clock=lambda: next(hour), settle=lambda _i: 0,
            )  # fmt: skip
        except counted_calls.TooSlow as exc:
            return exc, counter
        return got, counter

    over, counter = run(1_000_000, 1_000_001)
    assert isinstance(over, counted_calls.TooSlow)
    assert over.instructions == 1_000_001 and over.seconds is None and over.result == "r"
    assert [e for e in counter.log if e.startswith("dump")] == ["dump t first call"]  # only it
    assert over.blocks == 1_000_001  # a fake's dump has no blocks: its instructions stand in
    under, _ = run(1_000_000, 1_000_000)
    assert isinstance(under, counts.Counted) and under.instructions[0] == 1_000_000
    unlimited, _ = run(None, 10**12)
    assert isinstance(unlimited, counts.Counted)


def test_allocator_pads_differ_from_call_to_call() -> None:
    sizes = {len(counted_calls.allocator_pad(i)) for i in range(1, 13)}
    assert len(sizes) >= 6


def test_interpreter_work_gets_the_interpreter_floor() -> None:
    cur = [v * 1.008 for v in BASE]  # +0.8%: four times what unchanged pure-Python code moved
    assert counts.judge_counts(BASE, cur, alpha_each=0.001).status == REGRESSED
    v = counts.judge_counts(BASE, cur, alpha_each=0.001, interpreter=1.0)
    assert v.status == UNCHANGED and v.effect == pytest.approx(counts.INTERPRETER_FLOOR)
    more = [v * 1.015 for v in BASE]  # a +1.5% change in pure-Python code is caught
    assert counts.judge_counts(BASE, more, alpha_each=0.001, interpreter=1.0).status == REGRESSED


def test_counted_values_read_as_instructions() -> None:
    from pytest_burnperf.core import measures
    from pytest_burnperf.core.text import format_count

    assert measures.of_field("counts").format(1_514_847.0) == "1.51 M instr"
    assert measures.of_field("counts").format(677_000.0) == "677 k instr"
    assert measures.of_field("host").format(0.00125) == "1.25 ms"
    assert format_count(float("nan")) == "-" and format_count(12.0) == "12"


def test_compare_reads_counted_results_as_instructions(tmp_path: Path) -> None:
    import json

    from pytest_burnperf.cli import main
    from pytest_burnperf.core.records.results import RESULTS_SCHEMA, RESULTS_VERSION

    def doc(values: list[int]) -> dict[str, Any]:
        return {
            "schema": RESULTS_SCHEMA,
            "version": RESULTS_VERSION,
            "results": [{"test": "t.py::test_x", "timer": "counts", "samples": values}],
        }

    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(doc([1_000_000 + i for i in range(20)])))
    new.write_text(json.dumps(doc([1_300_000 + i for i in range(20)])))
    assert main(["compare", str(old), str(new)]) == 1


def test_compare_output_names_instructions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    test_compare_reads_counted_results_as_instructions(tmp_path)
    out = capsys.readouterr().out
    assert "1.00 M instr -> 1.30 M instr" in out


def test_a_small_interpreted_call_gets_a_floor_in_instructions() -> None:
    """A 30 k-instruction call, a quarter of it interpreted, counted 200 instructions more in one
    default run than in its recording (two calls each side, every call apart; a specialisation
    retry lands in each of its two calls): unchanged under its state term, though beyond 0.5%."""
    base, cur = [30_200.0 - 200] * 2, [30_200.0] * 2
    v = counts.judge_counts(base, cur, alpha_each=0.001, interpreter=0.25)
    assert v.status == UNCHANGED
    assert v.effect == pytest.approx(counts.INTERPRETER_STATE / (30_200 - 200))
    assert v.effect > counts.COUNTS_FLOOR
    slower = counts.judge_counts(base, [v * 1.05 for v in base], alpha_each=0.001, interpreter=0.25)
    assert slower.status == REGRESSED
    # compiled code (no interpreter share) keeps the plain floor
    assert counts.judge_counts(base, cur, alpha_each=0.001).status == REGRESSED


def test_a_call_too_small_for_counts_names_its_size_not_a_spread() -> None:
    """A 4 k-instruction interpreted call whose calls agree (spread 0.25%): the interpreter's
    state alone may move it by 6.2%, so counts cannot decide at 5%; the reason names the call's
    size and that state, not the calls' spread, and the verdict is one counts cannot decide."""
    base, cur = [4_077.0, 4_077.0], [4_077.0, 4_087.0]
    v = counts.judge_counts(base, cur, alpha_each=0.001, interpreter=0.85)
    assert v.status == INCONCLUSIVE and counts.undecidable(v)
    assert v.effect == pytest.approx(counts.INTERPRETER_STATE / 4_077)
    assert v.reason.startswith("a call of 4.08 k instructions running interpreted code, whose")
    assert "spread" not in v.reason and v.reason.endswith("apart; judge it by time")
    said = counts.undecided_text(v)  # what the run says where the clock judges it instead
    assert said.startswith("counts +0.12%, but a call of 4.08 k instructions") and said.endswith(
        "cannot tell changes under 6.1% apart"
    )
    # a 6 k-instruction call is judged by counts (4.2%), as cattrs's smallest calls are now
    judged = counts.judge_counts([6_021.0] * 2, [6_031.0] * 2, alpha_each=0.001, interpreter=0.92)
    assert judged.status == UNCHANGED and judged.effect == pytest.approx(250 / 6_021)
    # calls that spread keep the spread as the reason
    spread = counts.judge_counts([1e6, 1.06e6], [1e6, 1.06e6], alpha_each=0.001)
    assert counts.undecidable(spread) and spread.reason.startswith("its counts spread 5.8%")
    # a change beyond even that floor is decided; a large call is judged at 5%
    assert counts.judge_counts(base, [30_000.0] * 2, alpha_each=0.001, interpreter=0.85).status in (
        REGRESSED,
    )
    big = counts.judge_counts([1e6] * 2, [1e6] * 2, alpha_each=0.001, interpreter=0.85)
    assert big.status == UNCHANGED and not counts.undecidable(big)


def test_the_limit_judges_the_counted_instructions_not_the_threads_waits() -> None:
    """A probe whose raw total is over the limit only by what its threads spent waiting (left
    out of every count: how long a wait spins depends on the host) is counted."""

    def run(limit: int) -> Any:
        counter = FakeCounter(caches=False)

        def make_call() -> tuple[Any, Any]:
            def call() -> None:
                if counter.collecting and counter.instrumented:
                    counter.cost += 900

            return call, None

        def read(dump: Any) -> dict[str, float]:
            return {"Ir": dump["Ir"] - 200}  # the waits left out

        return counted_calls.count_calls(
            make_call, counter, read, calls=3, label="t", limit=limit, guard_s=None,
            size=lambda dump: counted_calls.CallSize(dump["Ir"], dump["Ir"]), settle=lambda _i: 0,
        )[0]  # fmt: skip

    assert run(800).instructions == (700, 700)  # raw 900, over 800 only by its waits
    with pytest.raises(counted_calls.TooSlow) as info:
        run(600)
    assert info.value.instructions == 700 and info.value.blocks == 700


def _large_call(costs: list[int], *, caches: bool = False, limit: int | None = None) -> Any:
    """count_calls over a call too large to settle, each instrumented call costing the next of
    ``costs``; its size: those instructions in a tenth as many blocks."""
    counter = FakeCounter(caches=caches)
    left = iter(costs)

    def make_call() -> tuple[Any, Any]:
        def call() -> None:
            if counter.collecting and counter.instrumented:
                counter.cost += next(left)

        return call, None

    got, _ = counted_calls.count_calls(
        make_call, counter, lambda d: d, calls=6, label="t", guard_s=None, limit=limit,
        size=lambda d: counted_calls.CallSize(d["Ir"], d["Ir"] / 10), settle=lambda _i: 0,
    )  # fmt: skip
    return got, [e for e in counter.log if e.startswith("dump")]


def test_a_large_call_counts_from_its_first_instrumented_call_where_the_next_agrees() -> None:
    """Without the cache simulation nothing needs warming: the call the limit measured is the
    first counted where the next one agrees with it (two instrumented calls, not four)."""
    got, dumps = _large_call([50_000_000, 50_000_010, 7, 7])
    assert got.instructions == (50_000_000, 50_000_010)
    assert dumps == ["dump t first call", "dump t #2"]
    # where it disagrees (its first run did more), it is dropped and the calls go on
    got, dumps = _large_call(
        [
            50_500_000,
            50_000_000,
            50_000_001,
            50_000_002,
            50_000_001,
            50_000_000,
            50_000_003,
            50_000_002,
        ]
    )
    assert 50_500_000 not in got.instructions and len(got.instructions) == 6
    assert dumps[:3] == ["dump t first call", "dump t #2", "dump t warm-up 1"]
    # with the caches simulated the first calls only warm them
    got, dumps = _large_call([50_000_000] * 6, caches=True)
    assert dumps == ["dump t first call", "dump t warm-up 2", "dump t #1", "dump t #2"]


def test_the_limit_is_in_basic_blocks_not_instructions() -> None:
    """Blocks are what counting costs: a BLAS call of many instructions in few blocks is counted
    where a call of as many blocks as the limit is not."""
    got, _ = _large_call([5_000_000_000, 5_000_000_000], limit=600_000_000)  # 500 M blocks
    assert got.instructions == (5_000_000_000,) * 2
    with pytest.raises(counted_calls.TooSlow) as info:
        _large_call([5_000_000_000], limit=400_000_000)
    assert info.value.blocks == 500_000_000 and info.value.instructions == 5_000_000_000


# --------------------------------------------------------------------------------------------
# counts that follow the counted process's memory layout: several processes pooled


def _one_process(median: int, interpreter: float = 0.9) -> counts.Counted:
    return counts.Counted(
        instructions=(median, median + 10),
        cycles=(),
        events={"Ir": median},
        interpreter=interpreter,
    )


def _judged(recorded: counts.Counted, current: counts.Counted) -> Verdict:
    """The verdict a judging run gives ``current`` against ``recorded`` (interpreted code)."""
    return counts.judge_counts(
        [float(v) for v in recorded.instructions],
        [float(v) for v in current.instructions],
        alpha_each=0.001,
        process_spread=counts.between_processes(recorded, current),
        interpreter=0.9,
    )


def test_a_small_call_whose_processes_barely_moved_is_judged_beyond_its_state() -> None:
    """A call of 4.17 k instructions (an empty pytest-benchmark call and the plugin's own
    around it), its three recording processes a few instructions apart: the interpreter's
    state makes a change under 6% undecidable, not one six times that. A loop planted in it
    (+36%) is regressed; unchanged, it is left to the clock, and the reason says it cannot tell
    changes under 6% apart, not that the processes moved. snecs's ``create_empty_entities``
    (8.67 k instructions) is judged by counts."""
    recorded = counts.pooled([_one_process(m) for m in (4_162, 4_172, 4_167)])
    planted = _judged(recorded, _one_process(5_667))
    assert planted.status == REGRESSED, planted
    unchanged = _judged(recorded, _one_process(4_172))
    assert unchanged.status == INCONCLUSIVE and counts.undecidable(unchanged)
    assert "cannot tell changes under 6% apart" in unchanged.reason, unchanged.reason
    assert unchanged.reason.startswith("a call of 4.17 k instructions running interpreted code")
    snecs = counts.pooled([_one_process(m) for m in (8_662, 8_672, 8_667)])
    assert _judged(snecs, _one_process(8_672)).status == UNCHANGED
    assert _judged(snecs, _one_process(11_842)).status == REGRESSED


def test_pooled_processes_keep_every_call_and_each_processes_median() -> None:
    parts = [_one_process(1_000_000), _one_process(1_060_000), _one_process(1_030_000, 0.8)]
    got = counts.pooled(parts)
    assert len(got.instructions) == 6 and got.process_medians == (1_000_005, 1_060_005, 1_030_005)
    assert got.events == {"Ir": 1_030_000}  # the median process's
    assert got.interpreter == 0.9
    assert got.process_spread() == pytest.approx(60_000 / 1_030_005)
    # pooled again (a recount at judging of a recorded pool): every process's median kept
    again = counts.pooled([got, _one_process(1_010_000)])
    assert again.process_medians == (1_000_005, 1_060_005, 1_030_005, 1_010_005)
    assert counts.pooled([parts[0]]) is parts[0] and parts[0].process_spread() == 0.0
    with pytest.raises(ValueError, match="no counts"):
        counts.pooled([])
    # the processes' medians travel through the baseline's JSON; one process writes none
    assert counts.Counted.from_json(got.as_json()) == got
    assert "process_medians" not in parts[0].as_json()


def test_a_process_whose_layout_moved_its_counts_does_not_call_a_change() -> None:
    """pint's shape: three recording processes agree, and the judging run's one process
    counts 3% more (its memory layout, not the code). One process calls it regressed; pooled
    with a second process that counts as the recording did, the change is within how far the
    two processes moved apart, and the reason names the processes, not the calls."""
    recorded = counts.pooled([_one_process(m) for m in (1_000_000, 1_001_000, 999_000)])
    shifted = _one_process(1_030_000)
    one = _judged(recorded, shifted)
    assert one.status == REGRESSED
    assert counts.needs_another_process(one, shifted)
    assert not counts.needs_another_process(one, _one_process(1_030_000, interpreter=0.01))
    both = counts.pooled([shifted, _one_process(1_000_500)])
    assert not counts.needs_another_process(one, both)  # already counted in two
    again = _judged(recorded, both)
    assert again.status == INCONCLUSIVE and counts.undecidable(again)
    assert again.reason.startswith("its counts moved 2.9% between the counted processes")
    assert again.spread_source == counts.LAYOUT_SOURCE
    # the lookups module in CI: recorded in three processes 30% apart, checked in two that both
    # counted 40% less: processes that far apart call no change, whatever its size
    wide = counts.pooled([_one_process(m) for m in (400_000, 488_000, 520_000)])
    low = counts.pooled([_one_process(295_000), _one_process(296_000)])
    far = _judged(wide, low)
    assert far.status == INCONCLUSIVE and counts.undecidable(far), far.reason
    assert far.reason.endswith("so counts call no change; judge it by time")
    # a real change shows in both processes: still called, beyond their small spread
    slower = counts.pooled([_one_process(1_100_000), _one_process(1_101_000)])
    real = _judged(recorded, slower)
    assert real.status == REGRESSED and real.change_pct == pytest.approx(10.0, abs=0.2)


def test_a_recording_whose_processes_moved_apart_widens_the_minimum_effect() -> None:
    """Recorded in three processes 2% apart: a 2.5% move in the judging run's process is within
    twice that spread, and the reason says the processes set it."""
    recorded = counts.pooled([_one_process(m) for m in (1_000_000, 1_020_000, 1_010_000)])
    v = _judged(recorded, counts.Counted(instructions=(1_035_000, 1_035_010), cycles=()))
    assert v.status == UNCHANGED and v.effect == pytest.approx(2 * 0.02, rel=0.01)
    assert "how far its counted processes moved apart" in v.reason
    assert counts.between_processes(None, _one_process(5)) == counts.PROCESS_SPREAD
