"""The Markdown summary (markdown.py) from results documents, without pytest runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_burnperf.report import markdown


def result(name: str, status: str, ratio: float | None, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "backend": "numpy",
        "kind": "cpu",
        "dtype": "f32",
        "stats": {"median": 1.2e-3},
        "baseline": {"median": 1.0e-3},
        "verdict": {
            "status": status,
            "ratio": ratio,
            "ratio_ci95": None if ratio is None else [ratio - 0.01, ratio + 0.01],
            "p_slower": 1e-6,
            "min_detectable_slowdown": 0.061,
            "reason": extra.get("reason", ""),
        },
    }


DOC = {
    "created": "2026-11-22T14:00:00Z",
    "machine": {"id": "linux-x86-64-test"},
    "settings": {"threshold": 0.05, "alpha": 0.01, "baselines": "baselines/linux-x86-64-test"},
    "results": [
        result("test_ok[numpy-cpu-f32]", "unchanged", 1.001),
        result("test_fast[numpy-cpu-f32]", "improved", 0.8),
        result("test_slow[numpy-cpu-f32]", "regressed", 1.2),
        result("test_maybe[numpy-cpu-f32]", "inconclusive", 1.06, reason="inside the floor"),
    ],
}


def test_regressions_first_then_improvements_then_the_folded_table() -> None:
    text = markdown.render(DOC)
    assert text.startswith(
        "## pytest-burnperf: 1 regressed, 1 improved, 1 inconclusive, 1 unchanged"
    )
    heads = [ln for ln in text.splitlines() if ln.startswith("### ")]
    assert heads == ["### Regressions (1)", "### Improvements (1)", "### Inconclusive (1)"]
    regress = text.split("### Regressions (1)", 1)[1].split("###", 1)[0]
    # escaped as text (a code span would show the backslashes)
    assert "| test\\_slow\\[numpy-cpu-f32\\] |" in regress
    assert "+20.0% [+19.0%, +21.0%]" in regress and "1.00 ms" in regress and "1.20 ms" in regress
    assert "inside the floor" in text
    details = text.split("<details><summary>All 4 results</summary>", 1)[1]
    rows = [ln for ln in details.splitlines() if ln.startswith("| test")]
    assert [r.split("|")[-2].strip() for r in rows] == [
        "regressed",
        "improved",
        "inconclusive",
        "unchanged",
    ]
    assert details.rstrip().endswith("</details>")
    assert "baselines in `baselines/linux-x86-64-test`" in text


def test_names_from_tests_are_escaped() -> None:
    doc = dict(DOC, results=[result("test_x[<script>|a`b\nc]", "regressed", 1.5)])
    text = markdown.render(doc)
    assert "<script>" not in text
    assert "&lt;script&gt;" in text
    row = next(ln for ln in text.splitlines() if "script" in ln)
    # the name's | is escaped, so the row keeps its 7 cells
    assert row.replace("\\|", "").count("|") == 8
    assert "\n c]" not in text


def test_code_spans_carry_no_escapes() -> None:
    """Inside a code span a backslash escape shows as typed: paths go in verbatim."""
    doc = dict(DOC, settings=dict(DOC["settings"], baselines="perf_baselines/[x]"))
    assert "baselines in `perf_baselines/[x]`" in markdown.render(doc)
    assert markdown.code("a`b\nc") == "`a'b c`"


def test_same_session_and_empty_runs() -> None:
    same = dict(
        DOC,
        settings={
            "threshold": 0.05,
            "alpha": 0.01,
            "same_session": {"reference": "main", "candidate": "current"},
        },
    )
    assert "same-session comparison of current against main" in markdown.render(same)
    empty = markdown.render({"results": []})
    assert empty.startswith("## pytest-burnperf: no benchmark ran")
    assert "<details>" not in empty


def test_write_appends_to_the_job_summary(tmp_path: Path) -> None:
    summary = tmp_path / "step-summary.md"
    summary.write_text("earlier step\n")
    out = tmp_path / "perf.md"
    done = markdown.write(out, "## hello", {markdown.STEP_SUMMARY: str(summary)})
    assert done == [str(out), str(summary)]
    assert out.read_text() == "## hello"
    assert summary.read_text() == "earlier step\n## hello\n"
    assert markdown.write(out, "## again", {}) == [str(out)]


@pytest.mark.parametrize(
    ("name", "words"), [("out.json", "must be a Markdown file"), ("dir.md", "is a directory")]
)
def test_bad_targets(tmp_path: Path, name: str, words: str) -> None:
    (tmp_path / "dir.md").mkdir()
    problem = markdown.target_problem(tmp_path / name)
    assert problem is not None and words in problem
    assert markdown.target_problem(tmp_path / "ok.md") is None


def test_the_summary_names_a_device_kernels_own_threshold() -> None:
    doc = {**DOC, "results": [dict(r) for r in DOC["results"]]}  # type: ignore[arg-type]
    gpu = result("test_mm[torch-cuda0-f32]", "unchanged", 1.001)
    gpu["verdict"]["threshold"] = 0.015
    doc["results"] = [*doc["results"], gpu]  # type: ignore[misc]
    assert "threshold 5% (1.5% on 1 device-bound GPU kernel), alpha" in markdown.render(doc)
    assert "threshold 5%, alpha" in markdown.render(DOC)


def test_the_summary_says_what_judged_the_counted_benchmarks() -> None:
    """A counted benchmark is judged by its minimum effect, not the time threshold: the line
    says so; the threshold is named for the timed ones, or where the user set it."""

    def counted(name: str, effect: float) -> dict[str, Any]:
        r = result(name, "unchanged", 1.0)
        r["measure"] = "counts"
        r["verdict"]["min_effect"] = effect
        return r

    only = {**DOC, "results": [counted("test_a[numpy-cpu-f32]", 0.015)]}
    line = markdown.render(only).splitlines()[2]
    assert "; 1 judged by counted instructions (minimum effect 1.5%), alpha 0.01" in line
    assert "threshold" not in line
    mixed = {
        **DOC,
        "results": [
            *DOC["results"],  # type: ignore[misc]
            counted("test_a[numpy-cpu-f32]", 0.005),
            counted("test_b[numpy-cpu-f32]", 0.015),
        ],
    }
    said = "threshold 5% (timed), 2 judged by counted instructions (minimum effect 0.5-1.5%), alpha"
    assert said in markdown.render(mixed)
    given = {**only, "settings": {**DOC["settings"], "threshold": 0.1, "threshold_given": True}}  # type: ignore[dict-item]
    assert "; threshold 10%, 1 judged by counted instructions" in markdown.render(given)


def test_a_memory_regression_is_listed_with_its_figure_where_it_grew_and_the_counts() -> None:
    """A benchmark whose time is unchanged and whose memory per call regressed is a regression
    of the summary, with its memory cell and where it grew; the memory verdicts are counted."""
    grown = result("test_copy[numpy-cpu-f32]", "unchanged", 1.0)
    grown["memory"] = {
        "status": "regressed",
        "figures": {"allocated_bytes": 16 << 20, "allocations": 2, "peak_bytes": 16 << 20},
        "baseline": {"allocated_bytes": 8 << 20, "allocations": 1, "peak_bytes": 8 << 20},
        "where": "grew at copy (b.py:4) [t = a.copy()] +8.0 MiB (new)",
    }
    same = result("test_ok[numpy-cpu-f32]", "unchanged", 1.0)
    same["memory"] = {
        "status": "unchanged",
        "figures": {"allocated_bytes": 1 << 20, "allocations": 1, "peak_bytes": 1 << 20},
    }
    text = markdown.render({**DOC, "results": [grown, same, result("t[x]", "unchanged", 1.0)]})
    assert text.startswith("## pytest-burnperf: 3 unchanged, 1 memory regressed")
    assert "Memory per call: 1 regressed, 1 unchanged." in text
    regress = text.split("### Regressions (1)", 1)[1].split("###", 1)[0]
    row = next(ln for ln in regress.splitlines() if ln.startswith("| test\\_copy"))
    assert row.endswith("| 16.0 MiB +100% | memory regressed |")
    assert "- test\\_copy\\[numpy-cpu-f32\\]: memory grew at copy (b.py:4)" in text
    assert "| memory/call | verdict |" in text.split("<details>", 1)[1]
    plain = markdown.render(DOC)  # no memory tracked: no memory column
    assert "memory/call" not in plain and "Memory per call" not in plain
