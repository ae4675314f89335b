"""The run's mode (core/options/run_mode.py): one decision from the options, and the questions the
rest of the code asks it."""

from __future__ import annotations

import pytest

from pytest_burnperf.core.options.run_mode import Mode, decide


def _decide(**given: bool) -> Mode:
    options = dict(
        perf=True,
        smoke=False,
        update=False,
        same_session=False,
        round_process=False,
        counted=False,
        profiled=False,
        serves=False,
    )
    options.update(given)
    return decide(**options)


@pytest.mark.parametrize(
    ("given", "mode"),
    [
        ({"perf": False}, Mode.OFF),
        ({"perf": False, "smoke": True}, Mode.SMOKE),
        ({}, Mode.JUDGE),
        ({"update": True}, Mode.RECORD),
        ({"same_session": True}, Mode.COMPARE),
        ({"round_process": True}, Mode.ROUND),
        ({"round_process": True, "counted": True}, Mode.COUNT),
        ({"round_process": True, "profiled": True}, Mode.PROFILE),
        ({"round_process": True, "tracked": True}, Mode.TRACK),
        ({"round_process": True, "serves": True}, Mode.SERVE),
        # a round process's own update and comparison are its parent's business
        ({"round_process": True, "update": True, "same_session": True}, Mode.ROUND),
    ],
)
def test_each_process_is_one_mode(given: dict[str, bool], mode: Mode) -> None:
    assert _decide(**given) is mode


def test_every_round_of_a_parent_is_in_a_round_and_prints_nothing_of_its_own() -> None:
    rounds = {Mode.ROUND, Mode.COUNT, Mode.PROFILE, Mode.TRACK, Mode.SERVE}
    assert {m for m in Mode if m.in_round} == rounds
    assert not any(m.reports or m.records or m.compares for m in rounds)
    assert {m for m in Mode if m.counts_calls} == {Mode.COUNT}
    assert {m for m in Mode if m.profiles_calls} == {Mode.PROFILE}
    assert {m for m in Mode if m.tracks_sides} == {Mode.TRACK}
    assert {m for m in Mode if m.serves_rounds} == {Mode.SERVE}
    assert {m for m in Mode if m.reports} == {Mode.JUDGE, Mode.RECORD, Mode.COMPARE}
