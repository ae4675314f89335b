"""Untrusted names as paths (storage/paths.py): everything stays under the root."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_burnperf.storage.paths import UnsafeName, inside, target_problem

HOSTILE = [
    "",
    "../../../../elsewhere/evil.py",
    "tests/../../outside.py",
    "/etc/passwd",
    "C:/x.py",
    "a//b.py",
    "./a.py",
    "a/./b.py",
    "a\\..\\b.py",
    "a\x00b.py",
    "a\nb.py",
    "a\x1b[31mb.py",
    "nul.py",
    "tests/CON",
    "a/b. ",
    "x|y.py",
]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(UnsafeName):
        inside(tmp_path / "root", name, ".json")


@pytest.mark.parametrize(
    ("name", "rel"),
    [("test_a.py", "test_a.json"), ("tests/sub/test_b.py", "tests/sub/test_b.json"),
     ("tests/..hidden/x.py", "tests/..hidden/x.json"), ("ünï/cödé.py", "ünï/cödé.json")],
)  # fmt: skip
def test_plain_names_stay_inside(tmp_path: Path, name: str, rel: str) -> None:
    root = tmp_path / "root"
    assert inside(root, name, ".json") == root / rel


def test_an_output_target_the_tool_did_not_write_is_refused(tmp_path: Path) -> None:
    def ours(head: bytes) -> bool:
        return head.startswith(b"## pytest-burnperf")

    readme = tmp_path / "README.md"
    readme.write_text("# My project\n")
    assert "not written by pytest-burnperf" in (target_problem(readme, ours) or "")
    assert target_problem(readme, ours, force=True) is None
    summary = tmp_path / "s.md"
    assert target_problem(summary, ours) is None  # new file
    summary.write_text("## pytest-burnperf: 1 unchanged\n")
    assert target_problem(summary, ours) is None  # one of ours
    assert target_problem(tmp_path, ours) == "is a directory"
    link = tmp_path / "l.md"
    link.symlink_to(summary)
    assert "not a regular file" in (target_problem(link, ours) or "")


def test_redact_hides_every_url_password() -> None:
    from pytest_burnperf.core.text import redact

    text = (
        "pytest --perf --perf-store postgresql+psycopg://u:p%40ss:w@db.example:5432/x "
        "and sqlite:////tmp/a.sqlite and https://tok@host/x and mysql://a:b@c/d"
    )
    got = redact(text)
    assert "p%40ss" not in got and ":b@" not in got
    assert "postgresql+psycopg://u:***@db.example:5432/x" in got
    assert "mysql://a:***@c/d" in got
    assert "sqlite:////tmp/a.sqlite" in got and "https://tok@host/x" in got
