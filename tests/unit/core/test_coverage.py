"""What a run judged: verdicts against abstentions, grouped by the cause each abstention
carries (core/judging/abstention.Cause, set where it is decided), what would judge them, and the minimum
share (core/judging/coverage.py)."""

from __future__ import annotations

import pytest

from pytest_burnperf.core.judging.abstention import Cause
from pytest_burnperf.core.judging.coverage import (
    CI_MIN_JUDGED,
    COUNTS_KEY,
    HOST,
    NO_COUNTS,
    NO_REFERENCE,
    NOISE,
    OTHER_MACHINE,
    Coverage,
    advice,
    coverage,
    default_min_share,
    in_ci,
    more_rounds,
    shortfall,
)
from pytest_burnperf.core.judging.verdict import INCOMPARABLE
from pytest_burnperf.core.options.pedantic_shape import PedanticShape
from pytest_burnperf.core.options.run_options import parse_share
from pytest_burnperf.core.options.settings import SettingsError
from pytest_burnperf.core.records.stored_baseline import StoredBaseline

RESULTS: list[tuple[str, str, Cause | None]] = [
    ("t[a]", "unchanged", None),
    ("t[b]", "regressed", None),
    ("t[c]", "improved", None),
    ("t[d]", "no-baseline", Cause.NO_REFERENCE),
    ("t[e]", "incomparable", Cause.OTHER_MACHINE),
    ("t[f]", "inconclusive", Cause.HOST),
    ("t[g]", "inconclusive", Cause.HOST),
    ("t[h]", "inconclusive", Cause.NOISE),
    ("t[i]", "failed", None),
]


def test_abstentions_are_counted_by_why() -> None:
    cov = coverage(RESULTS)
    assert (cov.judged, cov.failed, cov.not_judged, cov.total) == (3, 1, 5, 9)
    assert cov.missed == {
        NO_REFERENCE: ("t[d]",),
        OTHER_MACHINE: ("t[e]",),
        HOST: ("t[f]", "t[g]"),
        NOISE: ("t[h]",),
    }
    assert cov.share == pytest.approx(4 / 9)
    line = cov.line()
    assert line.startswith("judged 4 of 9 benchmarks (44%); NOT judged: 5")
    assert "1 no reference, 1 another machine, 2 host busy, 1 noise" in line


def test_every_group_gets_a_command_that_would_judge_it() -> None:
    lines = advice(coverage(RESULTS), same_session=False, command="-k mm", hardware_class="c-v3")
    assert len(lines) == 4
    assert "`pytest --perf --perf-against auto -k mm`" in lines[0] and "(c-v3)" in lines[0]
    assert "--perf-update -k mm" in lines[0]
    assert "another machine" in lines[1] and "--perf-against auto" in lines[1]
    assert "quieter host" in lines[2] and "same-session" in lines[2]
    assert "--perf-max-rounds" in lines[3]
    # a same-session run already has its reference: more interleaved rounds is the cure
    same = advice(coverage(RESULTS[5:8]), same_session=True, command="")
    assert all("--perf-against" not in line for line in same)


def test_counts_abstentions_name_a_command_that_counts_both_sides() -> None:
    # --perf-against auto would use the stored counts baselines again: the advice names a ref
    results = [
        ("t[a]", "incomparable", Cause.COUNTS_KEY),
        ("t[b]", "no-baseline", Cause.NO_COUNTS),
    ]
    cov = coverage(results)
    assert cov.missed == {COUNTS_KEY: ("t[a]",), NO_COUNTS: ("t[b]",)}
    lines = advice(cov, same_session=False, command="--perf-measure counts")
    assert len(lines) == 2
    for line in lines:
        assert "`pytest --perf --perf-against REF --perf-measure counts`" in line
        assert "--perf-against auto" not in line
    assert "another key" in lines[1] and "Python build" in lines[1]


def test_the_rounds_suggested_are_more_than_the_run_had() -> None:
    # issue 41: "more process rounds (--perf-rounds 3 --perf-max-rounds 8)" after a run with them
    lines = advice(coverage(RESULTS), same_session=False, command="", rounds=3, max_rounds=8)
    assert not any("--perf-rounds 3" in line or "--perf-max-rounds 8" in line for line in lines)
    assert "--perf-max-rounds 16" in lines[3]
    assert more_rounds(1, 1) == "--perf-rounds 3 --perf-max-rounds 8"
    assert more_rounds(3, 4) == "--perf-max-rounds 8"
    assert more_rounds(3, 8) == "--perf-max-rounds 16"


def test_a_run_below_the_minimum_share_fails_with_the_numbers() -> None:
    cov = coverage(RESULTS)
    message = shortfall(cov, 0.9)
    assert message is not None and "4 of 9" in message and "--perf-min-judged 0.9" in message
    assert shortfall(cov, 0.4) is None
    assert shortfall(cov, 0.0) is None
    assert shortfall(coverage([]), 1.0) is None  # nothing ran: nothing missed
    assert shortfall(coverage(RESULTS[:3]), 1.0) is None


def test_the_json_form_names_the_missed_benchmarks() -> None:
    doc = coverage(RESULTS).as_json(0.9, ["x"])
    assert doc["judged"] == 4 and doc["not_judged"] == 5 and doc["min_share"] == 0.9
    assert doc["missed"]["host busy"] == ["t[f]", "t[g]"] and doc["advice"] == ["x"]


@pytest.mark.parametrize(
    ("environ", "share"),
    [
        ({}, 0.0),
        ({"CI": "true"}, CI_MIN_JUDGED),
        ({"CI": "1"}, CI_MIN_JUDGED),
        ({"CI": "false"}, 0.0),
        ({"CI": ""}, 0.0),
    ],
)
def test_the_minimum_is_enforced_in_ci_only_by_default(
    environ: dict[str, str], share: float
) -> None:
    assert default_min_share(in_ci(environ)) == share


@pytest.mark.parametrize(("text", "value"), [("0.9", 0.9), ("90%", 0.9), ("0", 0.0), (1, 1.0)])
def test_share_values(text: object, value: float) -> None:
    assert parse_share(text, "--perf-min-judged") == pytest.approx(value)


@pytest.mark.parametrize("text", ["1.5", "-0.1", "110%", "most", ""])
def test_bad_share_values_name_the_option(text: str) -> None:
    with pytest.raises(SettingsError, match="--perf-min-judged"):
        parse_share(text, "--perf-min-judged")


def test_where_auto_found_nothing_its_reason_is_the_advice() -> None:
    cov = coverage(RESULTS[3:4])
    lines = advice(cov, same_session=False, command="", auto_problem="name one with --perf-base")
    assert lines == [
        "1 not judged, no baseline for this hardware class and no same-session reference: "
        "name one with --perf-base"
    ]


def test_undecided_counts_are_not_told_to_take_more_rounds() -> None:
    """A counted benchmark left inconclusive by its calls' spread: rounds and a quieter host do
    not move counts, so the advice is the clock or more work a call, never more rounds."""
    from pytest_burnperf.core.judging.coverage import COUNTS_SPREAD, advice, coverage

    cov = coverage(
        [("t.py::a", "inconclusive", Cause.COUNTS_SPREAD), ("t.py::b", "inconclusive", NOISE)]
    )
    assert list(cov.missed[COUNTS_SPREAD]) == ["t.py::a"]
    lines = advice(cov, same_session=False, command="-k a")
    (counted,) = [line for line in lines if line.startswith("1 not judged, their counts cannot")]
    assert "--perf-rounds" not in counted and "`pytest --perf -k a --perf-measure time`" in counted


def test_a_baseline_sampled_otherwise_is_its_own_group_not_another_machine() -> None:
    """A pedantic baseline recorded with rounds=20 and a run with rounds=1 were counted under
    'their baselines come from another machine or device' and told to record on this one."""
    from pytest_burnperf.core.judging.assess import assess
    from pytest_burnperf.core.judging.coverage import SAMPLED_OTHERWISE
    from pytest_burnperf.core.judging.verdict import Policy

    verdict = assess(
        StoredBaseline.from_entry(
            {
                "samples": [1.0, 1.1],
                "pedantic": {"rounds": 20, "iterations": 1, "warmup_rounds": 0, "setup": False},
            }
        ),
        [[1.0, 1.1]],
        fingerprint={},
        timer="host",
        l2_flush=False,
        policy=Policy(),
        pedantic=PedanticShape(rounds=1, iterations=1, warmup_rounds=0, setup=False),
    )
    assert verdict.status == INCOMPARABLE and "sampled with pedantic" in verdict.reason
    assert coverage([("t[a]", verdict.status, verdict.cause)]).missed == {
        SAMPLED_OTHERWISE: ("t[a]",)
    }
    lines = advice(
        Coverage(judged=1, missed={SAMPLED_OTHERWISE: ("t[a]",)}),
        same_session=False,
        command="-k t",
    )
    assert len(lines) == 1 and "sampled with other pedantic settings" in lines[0]
    assert "another machine" not in lines[0] and "pytest --perf --perf-update -k t" in lines[0]


def test_suggested_commands_carry_no_second_comparison_and_record_runnably() -> None:
    """In a --perf-versions run (whose suggested args keep it), the advice's recording commands
    leave the comparison out (``plain``: --perf-update refuses --perf-versions), the command
    naming its own comparison does not add a second one, and judging by time keeps the run's
    comparison and sets --perf-measure once."""
    from pytest_burnperf.core.judging.coverage import advice, coverage

    results = [
        ("t.py::a", "incomparable", Cause.COUNTS_KEY),
        ("t.py::b", "no-baseline", Cause.NO_COUNTS),
        ("t.py::c", "inconclusive", Cause.COUNTS_SPREAD),
    ]
    command = "--perf-versions a,b --perf-measure counts t.py"
    lines = advice(coverage(results), same_session=True, command=command, plain="t.py")
    text = " ".join(lines)
    assert text.count("--perf-versions") == 1, text  # only where it judges by time
    assert "`pytest --perf --perf-update t.py`" in text
    assert "`pytest --perf --perf-against REF t.py`" in text
    assert "`pytest --perf --perf-versions a,b t.py --perf-measure time`" in text


def test_the_cause_groups_an_abstention_never_its_text() -> None:
    """Structure 4: a reason that says "counts", "host" or "probe" moves nothing; the cause set
    where the abstention was decided does. A baseline without hardware class counts as one of
    another machine; every cause has its group's text and advice."""
    from pytest_burnperf.core.judging.coverage import GROUP, WHY_ORDER, why

    results = [
        ("t[a]", "inconclusive", Cause.NOISE),
        ("t[b]", "incomparable", Cause.LEGACY_BASELINE),
    ]
    assert coverage(results).missed == {NOISE: ("t[a]",), OTHER_MACHINE: ("t[b]",)}
    assert {why(c) for c in Cause} == set(WHY_ORDER)
    assert set(GROUP) | set(WHY_ORDER) == set(Cause)
    assert len(
        advice(Coverage(missed={w: ("t",) for w in WHY_ORDER}), same_session=False, command="")
    ) == len(WHY_ORDER)


def test_an_abstention_without_its_cause_is_refused_and_a_verdict_keeps_none() -> None:
    from dataclasses import replace

    from pytest_burnperf.core.judging.verdict import Verdict

    with pytest.raises(ValueError, match="inconclusive verdict needs its cause"):
        Verdict("inconclusive", 1.0)
    undecided = Verdict("inconclusive", 1.0, cause=Cause.HOST)
    assert replace(undecided, status="regressed").cause is None
    assert replace(undecided, status="failed").cause is None


def test_a_document_without_causes_is_grouped_by_status() -> None:
    from pytest_burnperf.core.judging import abstention

    assert abstention.parse("host busy", "inconclusive") is Cause.HOST
    assert abstention.parse(None, "inconclusive") is Cause.NOISE
    assert abstention.parse("a cause from the future", "incomparable") is Cause.OTHER_MACHINE
    assert abstention.parse(None, "no-baseline") is Cause.NO_REFERENCE
    assert abstention.parse("host busy", "unchanged") is None


def test_the_results_schema_names_every_cause() -> None:
    import json
    from pathlib import Path

    schema = json.loads(
        (Path(__file__).parents[3] / "schemas" / "results-v1.schema.json").read_text()
    )
    verdict = schema["$defs"]["result"]["properties"]["verdict"]
    assert set(verdict["properties"]["cause"]["enum"]) == {c.value for c in Cause} | {None}


def test_a_benchmark_that_failed_before_it_was_measured_is_a_miss_named_first() -> None:
    """Issue 74: under counts a benchmark whose counting process died (or any benchmark whose
    test failed before it left a result) was left out of "judged N of M"."""
    cov = coverage(
        [
            ("t::a", "unchanged", None),
            ("t::crashed", "not measured", Cause.NOT_MEASURED),
            ("t::b", "no-baseline", Cause.NO_REFERENCE),
        ]
    )
    assert cov.total == 3 and cov.judged == 1
    assert cov.line() == (
        "judged 1 of 3 benchmarks (33%); NOT judged: 2 (1 not measured, 1 no reference)"
    )
    (first, _) = advice(cov, same_session=False, command="")
    assert first.startswith("1 not judged, their test failed before they were measured")
    assert "fix what failed" in first
    assert cov.as_json()["missed"] == {"not measured": ["t::crashed"], "no reference": ["t::b"]}
