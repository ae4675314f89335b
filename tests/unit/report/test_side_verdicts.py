"""The verdicts judged beside the time or counts verdict, as the reports read them."""

from __future__ import annotations

from pytest_burnperf.core.memory.memory_side import MEMORY
from pytest_burnperf.core.sides.side_registry import SIDES
from pytest_burnperf.report import side_verdicts


def _entry(verdict: str, memory: str | None) -> dict[str, object]:
    out: dict[str, object] = {"verdict": {"status": verdict}}
    if memory is not None:
        out["memory"] = {"status": memory}
    return out


def test_a_side_fails_alone_only_where_the_time_or_counts_passed() -> None:
    results = [
        _entry("unchanged", "regressed"),  # fails on its memory alone
        _entry("regressed", "regressed"),  # failed by its time already: not counted twice
        _entry("improved", "over-limit"),  # over max_memory: fails alone
        _entry("unchanged", "unchanged"),
        _entry("inconclusive", None),  # memory not tracked
        {"verdict": "not a mapping", "memory": ["not", "one"]},  # a damaged entry: no status
    ]
    assert side_verdicts.failed_beside(results) == [(MEMORY, [0, 2])]
    assert side_verdicts.failed_beside_text(results) == ["2 memory regressed"]
    assert MEMORY.status(results[4]) is None and MEMORY.status(results[5]) is None
    assert [side_verdicts.main_failed(r) for r in results] == [
        False, True, False, False, False, False,
    ]  # fmt: skip


def test_each_sides_summary_counts_the_benchmarks_that_have_it() -> None:
    results = [_entry("unchanged", "regressed"), _entry("unchanged", None)]
    results.append(_entry("unchanged", "no-baseline"))
    (said,) = side_verdicts.summaries(results)
    assert said.startswith("memory per call: 1 regressed") and "1 no memory baseline" in said
    assert side_verdicts.summaries([_entry("unchanged", None)]) == []
    assert side_verdicts.failed_beside([_entry("unchanged", None)]) == []


def test_every_side_reads_its_own_field_and_fails_on_its_own_statuses() -> None:
    assert MEMORY in SIDES and len({s.field for s in SIDES}) == len(SIDES)
    for side in SIDES:
        assert side.failing and side.failed_text
        assert side.fails({side.field: {"status": sorted(side.failing)[0]}})
        assert not side.fails({side.field: {"status": "unchanged"}})


def test_a_table_reads_each_sides_cell_column_and_verdict_words_from_the_registry() -> None:
    regressed = _entry("unchanged", "regressed")
    regressed["memory"] = {
        "status": "regressed",
        "figures": {"peak_bytes": 2048},
        "baseline": {"peak_bytes": 1024},
        "where": "grew at copy (b.py:4)",
    }
    plain = _entry("regressed", None)
    assert side_verdicts.cells(regressed) == {"memory": "2.0 KiB +100%"}
    assert side_verdicts.cells(plain) == {"memory": "-"}
    assert side_verdicts.verdict_text(regressed) == "memory regressed"
    assert side_verdicts.verdict_text(plain) == "regressed"  # no side decides it
    assert side_verdicts.verdict_text({}) == "?"
    assert side_verdicts.tracked([plain, regressed]) == (MEMORY,)
    assert side_verdicts.tracked([plain]) == ()
    assert side_verdicts.moved(regressed) == (MEMORY,)
    assert side_verdicts.moved(_entry("unchanged", "unchanged")) == ()
    assert side_verdicts.grew(regressed) == [(MEMORY, "grew at copy (b.py:4)")]
    assert side_verdicts.grew(plain) == []
    # every side has a column of its own, named by its field (its --perf-columns key)
    assert len({s.field for s in SIDES}) == len(SIDES) and all(s.column for s in SIDES)


def test_the_summary_line_says_which_benchmarks_a_side_did_not_measure_and_why() -> None:
    """A benchmark measured without a side (memory on a device that does not tell, a pedantic
    benchmark with rounds=) is counted in that side's line with why: from the run's results and
    from a results document (``not_measured``) alike."""
    from dataclasses import replace

    from pytest_burnperf.core.judging.verdict import UNCHANGED
    from pytest_burnperf.core.memory.memory_verdict import MemoryVerdict
    from pytest_burnperf.core.records.results import Result
    from pytest_burnperf.report.run_header import side_lines

    from .test_table import result

    base = result("test_a", "numpy-cpu", "f32", 1e-3, UNCHANGED, 1.0)
    tracked = replace(base, sides={"memory": MemoryVerdict(status="unchanged", figures=None)})
    pedantic = "perf.pedantic(rounds=4) makes no calls beyond its rounds"
    device = "memory per call is not tracked on opencl-pocl-cpu0: its API does not say"

    def gap(why: str) -> Result:
        return replace(base, not_measured={"memory": why})

    assert side_lines([tracked]) == ["memory per call: 1 unchanged"]
    assert side_lines([tracked, gap(pedantic)]) == [
        f"memory per call: 1 unchanged, 1 not measured ({pedantic})"
    ]
    several = [gap(pedantic), gap(device), gap(device)]
    expected = [f"memory per call: 3 not measured (2: {device}; 1: {pedantic})"]
    assert side_lines(several) == expected
    docs = [r.as_json() for r in several]
    assert docs[0]["not_measured"] == {"memory": pedantic} and "not_measured" not in base.as_json()
    assert side_verdicts.summaries(docs) == expected
