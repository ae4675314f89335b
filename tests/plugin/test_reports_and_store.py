"""--perf-markdown and --perf-store as a user meets them: the Markdown file after a run with a
planted slowdown, GitHub Actions' job summary, a target that is not a Markdown file, and runs
recorded in a SQLite results store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ._helpers import FAST, use_virtual_clock


@pytest.mark.slow
def test_markdown_summary_puts_the_regression_first_and_fills_the_job_summary(
    loop_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    opts = ("--perf-rounds", "2", *FAST)
    loop_project.runpytest("--perf", "--perf-update", *opts).assert_outcomes(passed=2)
    summary = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("BURNPERF_TEST_WORK", "2.0")
    slow = loop_project.runpytest("--perf", "--perf-markdown", "perf.md", *opts)
    slow.assert_outcomes(passed=1, failed=1)
    slow.stdout.fnmatch_lines(
        ["Markdown summary written to perf.md and appended to $GITHUB_STEP_SUMMARY"]
    )
    text = (loop_project.path / "perf.md").read_text()
    assert text.startswith("## pytest-burnperf: 1 regressed, ")
    regressions = text.split("### Regressions (1)", 1)[1].split("<details>", 1)[0]
    assert "| test\\_loop\\[numpy-cpu-f64\\] |" in regressions
    assert "test\\_steady" not in regressions
    assert "<summary>All 2 results</summary>" in text
    assert summary.read_text() == text + ("" if text.endswith("\n") else "\n")


def test_markdown_target_must_be_a_markdown_file(loop_project: pytest.Pytester) -> None:
    result = loop_project.runpytest("--perf", "--perf-markdown", "summary.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --perf-markdown summary.json: must be a Markdown file ending in .md or .markdown*"]
    )


def test_markdown_target_that_is_a_users_file_is_refused(loop_project: pytest.Pytester) -> None:
    readme = loop_project.path / "README.md"
    readme.write_text("# My project\n")
    result = loop_project.runpytest("--perf", "--perf-markdown", "README.md")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --perf-markdown README.md: exists and was not written by pytest-burnperf*"]
    )
    assert readme.read_text() == "# My project\n"


def test_perf_store_records_the_run_once_per_run(
    loop_project: pytest.Pytester, tmp_path: Path
) -> None:
    pytest.importorskip("sqlalchemy")
    from pytest_burnperf.storage.history.store import Store

    db = tmp_path / "runs.sqlite"
    opts = ("--perf-store", str(db), *FAST)
    first = loop_project.runpytest("--perf", *opts)
    first.assert_outcomes(passed=2)
    first.stdout.fnmatch_lines(
        ["run recorded in the results store sqlite:///*runs.sqlite (2 results*"]
    )
    loop_project.runpytest("--perf", *opts).assert_outcomes(passed=2)
    with Store(f"sqlite:///{db}") as store:
        assert store.counts() == (2, 4)
        points = store.points()
    assert {p["test"].split("::")[1] for p in points} == {
        "test_loop[numpy-cpu-f64]",
        "test_steady[numpy-cpu-f64]",
    }
    assert all(p["hardware_class"] and p["median"] > 0 for p in points)


def test_perf_store_that_cannot_be_opened_is_reported_and_fails_the_run(
    loop_project: pytest.Pytester,
) -> None:
    pytest.importorskip("sqlalchemy")
    result = loop_project.runpytest("--perf", "--perf-store", "nosuchdb://x", *FAST)
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    result.stdout.fnmatch_lines(["--perf-store: this run was NOT recorded: nosuchdb://x: *"])


def test_an_interrupted_run_is_never_stored_as_a_whole_one(
    pytester: pytest.Pytester, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C between benchmarks (a KeyboardInterrupt in the second of three): the results so far
    are written and marked, the store gets no run, and importing the file later is refused."""
    pytest.importorskip("sqlalchemy")
    from pytest_burnperf.cli import main
    from pytest_burnperf.storage.history.store import Store

    use_virtual_clock(pytester)
    pytester.makepyfile(
        test_three=(
            "import pytest\nfrom virtual_clock import spin\n\n"
            "@pytest.mark.perf(backends=['numpy'], dtypes=['f64'])\n"
            "def test_a(perf):\n    perf(spin, 1e-4)\n\n"
            "def test_b():\n    raise KeyboardInterrupt\n\n"
            "@pytest.mark.perf(backends=['numpy'], dtypes=['f64'])\n"
            "def test_c(perf):\n    perf(spin, 1e-4)\n"
        )
    )
    db = tmp_path / "runs.sqlite"
    result = pytester.runpytest(
        "--perf",
        "--perf-store",
        str(db),
        "--perf-json",
        "r.json",
        "-p",
        "no:randomly",
        *FAST,
        no_reraise_ctrlc=True,
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*--perf-store: this run was NOT recorded: it was interrupted*"])
    doc = json.loads((pytester.path / "r.json").read_text())
    assert doc["interrupted"] is True and [r["name"] for r in doc["results"]] == [
        "test_a[numpy-cpu-f64]"
    ]
    if db.exists():
        with Store(f"sqlite:///{db}") as store:
            assert store.counts() == (0, 0)
    assert main(["import-results", str(pytester.path / "r.json"), "--store", str(db)]) == 2
    assert "the run was interrupted" in capsys.readouterr().err


def test_no_store_password_is_printed_or_written(pytester: pytest.Pytester) -> None:
    """No baselines here, so the summary suggests commands that repeat the run's arguments: the
    store URL's password never appears in them, in the messages, the JSON or the Markdown."""
    use_virtual_clock(pytester)
    pytester.makepyfile(
        test_one=(
            "import pytest\nfrom virtual_clock import spin\n\n"
            "@pytest.mark.perf(backends=['numpy'], dtypes=['f64'])\n"
            "def test_a(perf):\n    perf(spin, 1e-4)\n"
        )
    )
    url = "postgresql+psycopg://alice:S3CRET-pw@127.0.0.1:1/db"
    result = pytester.runpytest(
        "--perf", "--perf-store", url, "--perf-json", "r.json", "--perf-markdown", "s.md", *FAST
    )
    out = result.stdout.str() + result.stderr.str()
    assert "--perf-store" in out and "alice:***@127.0.0.1:1/db" in out, out
    assert "S3CRET" not in out
    for name in ("r.json", "s.md"):
        assert "S3CRET" not in (pytester.path / name).read_text()
