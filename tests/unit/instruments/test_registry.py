"""Which instrument measures a benchmark (instruments/registry.py), and what every instrument
must say of itself."""

from __future__ import annotations

import importlib
import pkgutil
import typing

import pytest

import pytest_burnperf.instruments as package
from pytest_burnperf.instruments.instrument import Clock, InstrumentName, Measurement, Situation
from pytest_burnperf.instruments.registry import (
    BESIDE,
    INSTRUMENTS,
    RUN_STATE_MODULES,
    NoInstrument,
    choose,
    named,
)


def test_a_profiled_process_profiles_whatever_else_holds() -> None:
    s = Situation(profiling_round=True, counting_round=True, counts_judge=True, timer="graph")
    assert choose(s).name == "profile"


def test_a_memory_process_tracks_sides_and_nothing_tracks_it_beside() -> None:
    s = Situation(tracking_round=True, timing_round=True, counts_judge=True, timer="device")
    assert choose(s).name == "tracked-side"
    assert not any(b.applies(s) for b in BESIDE)  # not tracked twice


def test_a_counted_process_counts_and_counts_alone_judge_without_a_clock() -> None:
    assert choose(Situation(counting_round=True, counts_judge=True, timer="device")).name == (
        "counts"
    )
    assert choose(Situation(counts_judge=True, timer="host")).name == "counted"


@pytest.mark.parametrize("timer", ["host", "device", "graph"])
def test_otherwise_the_benchmarks_timer_setting_picks_its_clock(timer: str) -> None:
    assert choose(Situation(timer=timer)).name == timer


def test_a_timer_no_instrument_knows_is_said_with_the_instruments_there_are() -> None:
    with pytest.raises(NoInstrument, match="'host', 'device', 'graph'"):
        choose(Situation(timer="sundial"))
    with pytest.raises(NoInstrument, match="'sundial'"):
        named("sundial")
    assert named("counts").unit == "instructions"


def test_every_instrument_says_its_unit_what_it_records_and_what_it_cannot_see() -> None:
    every = (*INSTRUMENTS, *BESIDE)
    names = [i.name for i in every]
    assert len(set(names)) == len(names)
    assert set(names) == set(typing.get_args(InstrumentName))
    for instrument in every:
        # records: the tracking process's, each instrument beside's records in its own unit
        assert instrument.unit in ("s", "instructions", "profile", "bytes", "records"), instrument
        assert len(instrument.records) > 20 and len(instrument.blind_to) > 20, instrument


def test_every_instrument_module_registers_what_it_defines() -> None:
    """A new measure is one module of instruments/ and one line in registry.py: an instrument
    defined in a module but not registered would never measure anything."""
    registered = {id(i) for i in (*INSTRUMENTS, *BESIDE)}
    seen = 0
    for info in pkgutil.iter_modules(package.__path__):
        if info.name in ("instrument", "registry", *RUN_STATE_MODULES):
            continue
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        defined = [
            v
            for v in vars(module).values()
            if not isinstance(v, type) and callable(getattr(v, "applies", None))
        ]
        assert defined, f"instruments/{info.name}.py defines no instrument"
        for instrument in defined:
            seen += 1
            assert id(instrument) in registered, f"{info.name}: {instrument} not in the registry"
    assert seen == len(INSTRUMENTS) + len(BESIDE)


class _Steps:
    """A Measurement that writes down the steps an instrument asks for, in order; each step
    returns its own name as the call's result."""

    def __init__(self) -> None:
        self.steps: list[str] = []
        self.clock: object = None

    def call_once(self) -> object:
        self.steps.append("call_once")
        return "call_once"

    def time_calls(self, clock: Clock) -> object:
        self.steps.append("time_calls")
        self.clock = clock
        return "time_calls"

    def count_calls(self) -> object:
        self.steps.append("count_calls")
        return "count_calls"

    def judge_counts(self) -> None:
        self.steps.append("judge_counts")

    def profile_calls(self) -> object:
        self.steps.append("profile_calls")
        return "profile_calls"

    def track_sides(self) -> object:
        self.steps.append("track_sides")
        return "track_sides"


@pytest.mark.parametrize(
    ("name", "steps", "returned"),
    [
        ("profile", ["profile_calls"], "profile_calls"),
        ("tracked-side", ["track_sides"], "track_sides"),
        ("counts", ["count_calls"], "count_calls"),
        # the test's own checks see the call's result; its counts judge after it
        ("counted", ["call_once", "judge_counts"], "call_once"),
        ("host", ["time_calls"], "time_calls"),
        ("device", ["time_calls"], "time_calls"),
        ("graph", ["time_calls"], "time_calls"),
    ],
)
def test_each_instrument_measures_through_the_same_measurement(
    name: str, steps: list[str], returned: str
) -> None:
    calls = _Steps()
    instrument = named(name)
    assert instrument.measure(calls) == returned
    assert calls.steps == steps
    if calls.clock is not None:  # a clock hands itself to be opened in the benchmark's context
        assert calls.clock is instrument and isinstance(instrument, Clock)


def test_a_fake_measurement_is_what_the_protocol_asks() -> None:
    """The fake above has every step of instrument.Measurement, so the test above covers what
    an instrument may ask."""
    asked = {n for n in vars(Measurement) if not n.startswith("_")}
    assert asked == {n for n in vars(_Steps) if not n.startswith("_")}
