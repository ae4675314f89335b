"""One escaping function per medium, used by every renderer: names from test ids and files
(hostile on purpose here) reach the terminal, Markdown, CSV and HTML only as inert text."""

from __future__ import annotations

import csv
import io
from typing import Any

from pytest_burnperf.report import csv as csv_report
from pytest_burnperf.report import markdown
from pytest_burnperf.report.terminal import table_rows

from .test_markdown import DOC, result
from .test_table import result as table_result

HOSTILE = (
    "test_x[@alice https://evil.example www.evil.example a\\|b \x1b[2J =1+1\r\nperf: 9 unchanged]"
)


def table(results: list[Any], **how: Any) -> list[str]:
    """The table's text lines, without each row's verdict."""
    return [line for line, _ in table_rows(results, **how)]


def test_markdown_names_ping_no_one_link_nothing_and_keep_the_table() -> None:
    doc = {**DOC, "results": [result(HOSTILE, "regressed", 1.3)]}
    text = markdown.render(doc)
    row = next(ln for ln in text.splitlines() if ln.startswith("| test"))
    assert "@alice" not in text and "@\u200balice" in row
    assert "https://evil" not in text and "www.evil" not in text
    assert "\x1b" not in text and "\\\\x1b" in row  # shown, not acted on
    # the table keeps its columns: every | inside a name is escaped, a backslash too
    cells = [c for c in row.replace("\\|", "").split("|")][1:-1]
    assert len(cells) == 7, row
    assert "\r" not in text and "\nperf: 9" not in text


def test_csv_cells_hold_no_line_break_or_formula() -> None:
    doc = {**DOC, "results": [{**result(HOSTILE, "regressed", 1.3), "test": "=1+1\r\nx"}]}
    rows = list(csv.reader(io.StringIO(csv_report.results_csv(doc))))
    assert len(rows) == 2  # the header and one row: no line break inside a cell
    assert rows[1][0] == "'=1+1\\x0d\\x0ax"
    assert "\x1b" not in csv_report.results_csv(doc)


def test_html_shows_control_characters() -> None:
    from pytest_burnperf.report.html import _e

    assert _e("a\x1b[2J<b>") == "a\\x1b[2J&lt;b&gt;"


def test_a_newline_in_a_test_id_cannot_forge_a_line_of_the_terminal_table() -> None:
    lines = table([table_result(HOSTILE, "numpy-cpu", "f32", 1e-3, "unchanged", 1.0)], width=200)
    assert not any(ln.startswith("perf:") for ln in lines)
    assert all("\n" not in ln and "\r" not in ln and "\x1b" not in ln for ln in lines)


def test_html_profile_links_of_both_sides_are_inert() -> None:
    from pytest_burnperf.report.html import _profiles

    prof = {
        "file": 'perf-profiles/x".current.pstats',
        "against_file": "perf-profiles/<script>.main.pstats",
        "note": "what grew (main -> current, per call): <img src=x onerror=alert(1)>",
    }
    html = _profiles([{"name": "test_x", "verdict": {"status": "regressed"}, "profile": prof}])
    assert html is not None
    assert "<script>" not in html and "<img" not in html
    # the reference's profile first, then the candidate's; quotes cannot end the attribute
    assert html.index("main.pstats") < html.index("current.pstats")
    assert 'href="perf-profiles/%3Cscript%3E.main.pstats"' in html
    assert 'x".current' not in html
