"""The merged run's verdict and JUnit (report/merge.py) judge memory per call by the rule each
shard's tests did: a memory regression beside a passing time fails the merged run too."""

from __future__ import annotations

from typing import Any

from pytest_burnperf.report import github
from pytest_burnperf.report.merge import junit, verdict

from .test_markdown import result


def grown(name: str, status: str = "regressed") -> dict[str, Any]:
    r = result(name, "unchanged", 1.0)
    r["test"] = f"t.py::{name}"
    r["memory"] = {
        "status": status,
        "figures": {"allocated_bytes": 16 << 20, "allocations": 2, "peak_bytes": 16 << 20},
        "reason": "a change is over 80.0 KiB of peak",
        "where": "grew at copy (t.py:4) [t = a.copy()] +8.0 MiB (new)",
    }
    return r


def test_a_memory_regression_fails_the_merged_run_and_its_junit_case() -> None:
    ok = grown("test_ok", "unchanged")
    doc = {"results": [grown("test_copy"), ok], "coverage": {"judged": 2, "total": 2}}
    code, line = verdict(doc)
    assert code == 1
    assert line == (
        "2 unchanged, 1 memory regressed; judged 2 of 2; memory per call: 1 regressed, 1 unchanged"
    )
    xml = junit(doc)
    assert 'failures="1"' in xml
    assert 'message="memory regressed: grew at copy (t.py:4) [t = a.copy()] +8.0 MiB (new);' in xml
    assert github.counts(doc)["memory-regressed"] == 1
    passing = {"results": [ok], "coverage": {"judged": 1, "total": 1}}
    assert verdict(passing) == (0, "1 unchanged; judged 1 of 1; memory per call: 1 unchanged")
    assert 'failures="0"' in junit(passing) and github.counts(passing)["memory-regressed"] == 0


def test_over_max_memory_fails_it_too_and_a_slower_benchmark_counts_once() -> None:
    slow_and_big = grown("test_both")
    slow_and_big["verdict"]["status"] = "regressed"
    doc = {"results": [grown("test_big", "over-limit"), slow_and_big]}
    code, line = verdict(doc)
    assert code == 1 and line.startswith("1 unchanged, 1 regressed, 1 memory regressed;")
    assert 'failures="2"' in junit(doc)
