"""core/judging/outcome: the one rule from a verdict to its test's outcome, for every status."""

from __future__ import annotations

import pytest

from pytest_burnperf.core.judging.abstention import BY_STATUS
from pytest_burnperf.core.judging.outcome import STRICT_FAILS, fails, outcome
from pytest_burnperf.core.judging.verdict import (
    FAILED,
    IMPROVED,
    INCOMPARABLE,
    INCONCLUSIVE,
    NO_BASELINE,
    REGRESSED,
    UNCHANGED,
    VERDICTS,
    Status,
    Verdict,
)


def _verdict(status: Status, reason: str = "why") -> Verdict:
    return Verdict(status=status, current_median=1.0, reason=reason, cause=BY_STATUS.get(status))


@pytest.mark.parametrize("status", VERDICTS)
@pytest.mark.parametrize("strict", [False, True])
def test_every_status_has_one_outcome(status: Status, strict: bool) -> None:
    expected = status == REGRESSED or (strict and status in (INCONCLUSIVE, NO_BASELINE))
    got = outcome(
        _verdict(status),
        test_id="t[x]",
        strict=strict,
        records=False,
        regression=lambda: "t[x]: slower",
    )
    assert got.fails is expected
    assert fails(status, strict=strict) is expected
    if status == REGRESSED:
        assert got.message == "t[x]: slower"
    elif expected:
        assert got.message == f"t[x]: {status} (why); --perf-strict fails it"
    else:
        assert got.message == ""


@pytest.mark.parametrize("status", VERDICTS)
def test_nothing_fails_while_a_run_records(status: Status) -> None:
    got = outcome(
        _verdict(status), test_id="t", strict=True, records=True, regression=lambda: "slower"
    )
    assert not got.fails and not fails(status, strict=True, records=True)


def test_a_regression_carries_what_grew_and_strict_names_no_empty_reason() -> None:
    got = outcome(
        _verdict(REGRESSED),
        test_id="t",
        strict=False,
        records=False,
        regression=lambda: "t: +9%",
        why="what grew: f",
    )
    assert got.message == "t: +9%\nwhat grew: f"
    bare = outcome(
        _verdict(NO_BASELINE, reason=""),
        test_id="t",
        strict=True,
        records=False,
        regression=lambda: "",
    )
    assert bare.message == "t: no-baseline; --perf-strict fails it"


def test_strict_fails_only_what_was_not_decided() -> None:
    assert frozenset({INCONCLUSIVE, NO_BASELINE}) == STRICT_FAILS
    for status in (IMPROVED, UNCHANGED, INCOMPARABLE, FAILED):
        assert not fails(status, strict=True)
