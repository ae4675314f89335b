"""What the GitHub Action publishes (report/github.py): counts, a comment within GitHub's limit,
and whether a job may comment, from results documents and event payloads, without pytest runs."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_burnperf.report import github

from .test_markdown import DOC, result


def many(n: int, regressed: int = 3) -> dict[str, object]:
    rows = [result(f"test_r{i}[numpy-cpu-f32]", "regressed", 1.3) for i in range(regressed)]
    rows += [
        result(f"test_case_with_a_long_name_{i}[numpy-cpu-f32]", "unchanged", 1.0) for i in range(n)
    ]
    return {**DOC, "results": rows}


def test_counts_by_verdict_and_coverage() -> None:
    got = github.counts(DOC)
    assert (got["regressed"], got["improved"], got["unchanged"], got["inconclusive"]) == (
        1,
        1,
        1,
        1,
    )
    assert got["total"] == 4 and got["judged"] == 3 and got["not-judged"] == 1
    # the run's own coverage wins where the document has it
    doc = {**DOC, "coverage": {"judged": 2, "total": 4}}
    assert github.counts(doc)["not-judged"] == 2
    assert github.counts(None) == {**{k: 0 for k in github.counts(None)}}


def test_a_comment_that_fits_is_left_whole() -> None:
    body = github.comment(DOC, label="cpu", exit_code=1, link="https://x.invalid/a")
    assert body.startswith("<!-- burnperf:cpu -->\n**pytest-burnperf on cpu** (pytest exited 1)")
    assert "### Regressions (1)" in body and "left out" not in body
    assert body.rstrip().endswith("[Results, summary and output](https://x.invalid/a)")


def test_a_long_comment_loses_rows_of_its_longest_table_first() -> None:
    doc = many(3000)
    full = github.comment(doc, label="cpu", exit_code=1, limit=10**9)
    assert len(full) > github.COMMENT_LIMIT
    body = github.comment(doc, label="cpu", exit_code=1, link="https://x.invalid/a")
    assert len(body) <= github.COMMENT_LIMIT
    # the regressions are all there; the folded table of all results was cut, and says so
    regress = body.split("### Regressions (3)", 1)[1].split("<details>", 1)[0]
    assert all(f"test\\_r{i}\\[" in regress for i in range(3))
    note = [ln for ln in body.splitlines() if "left out to fit GitHub's comment limit" in ln]
    assert len(note) == 1 and "[the full summary](https://x.invalid/a)" in note[0]
    dropped = int(note[0].split("| ", 1)[1].split(" ", 1)[0])
    kept = sum(1 for ln in body.split("<details>", 1)[1].splitlines() if ln.startswith("| test"))
    assert kept + dropped == 3003
    assert body.rstrip().endswith("</details>") or "[Results, summary" in body


def test_prose_beyond_the_limit_is_cut_at_a_line() -> None:
    text = "\n".join(f"line {i} " + "x" * 50 for i in range(2000))
    cut = github.fit(text, 5000, None)
    assert len(cut) <= 5000 and cut.endswith("artifacts)_\n")
    assert github.fit("short", 5000) == "short"


def test_names_from_tests_are_escaped_in_the_comment() -> None:
    doc = {**DOC, "results": [result("test_x[<img src=x onerror=alert(1)>|a]", "regressed", 1.3)]}
    body = github.comment(doc, label="gpu (h100)", exit_code=1)
    assert "<img" not in body and "&lt;img" in body
    assert body.startswith("<!-- burnperf:gpu--h100- -->\n**pytest-burnperf on gpu (h100)**")


def test_a_run_without_results_shows_its_output() -> None:
    body = github.comment(None, label="cpu", exit_code=4, output_tail="ERROR: ```bad``` option")
    assert "No results to show" in body and "'''bad'''" in body and "```bad" not in body


def event(tmp: Path, head: object, event_name: str = "pull_request") -> dict[str, str]:
    path = tmp / "event.json"
    path.write_text(json.dumps({"pull_request": {"head": {"repo": head}}}))
    return {
        "GITHUB_EVENT_NAME": event_name,
        "GITHUB_EVENT_PATH": str(path),
        "GITHUB_REPOSITORY": "us/p",
    }


def test_who_may_comment(tmp_path: Path) -> None:
    ok, why = github.may_comment(event(tmp_path, {"full_name": "us/p", "fork": False}))
    assert ok, why
    ok, why = github.may_comment(event(tmp_path, {"full_name": "them/p", "fork": True}))
    assert not ok and "fork them/p" in why
    ok, why = github.may_comment(event(tmp_path, {"full_name": "us/p"}, "schedule"))
    assert not ok and "not a pull request (event schedule)" in why
    ok, why = github.may_comment(event(tmp_path, None))
    assert not ok and "no pull request head" in why
    env = event(tmp_path, {"full_name": "us/p"})
    Path(env["GITHUB_EVENT_PATH"]).write_text("{not json")
    ok, why = github.may_comment(env)
    assert not ok and "cannot be read" in why


def test_outputs_are_one_line_each(tmp_path: Path) -> None:
    out = tmp_path / "out"
    github.write_outputs(out, {"a": 1, "why": "two\nlines"})
    assert out.read_text() == "a=1\nwhy=two lines\n"
