"""--perf-shard K/N and `burnperf merge`: N shards run one after another give the verdicts of one
unsharded run (on the virtual clock, so exactly), each benchmark once, at the alpha of the whole
selection; shards of different runs, a missing shard and a retried one are handled."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_burnperf.cli import main
from validation.hostile_fleet import EDITS

from ._helpers import FAST, RecordedOnce, use_virtual_clock

SUITE = """
import os

import pytest

from virtual_clock import spin

WORK = float(os.environ.get("BURNPERF_TEST_WORK", "1.0"))

{tests}
"""
ONE = """
@pytest.mark.perf(backends=["numpy"], dtypes=["f32", "f64"])
def test_{name}(perf):
    perf(spin, {seconds} * ({work}))
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, recorded_once: RecordedOnce) -> pytest.Pytester:
    # each benchmark's wobble starts afresh: its samples do not depend on which benchmarks ran
    # before it in its process, so a shard replays the unsharded run's samples exactly
    use_virtual_clock(
        pytester,
        conftest="""
        def pytest_runtest_setup(item):
            virtual_clock._calls = 0
        """,
    )
    tests = "".join(
        ONE.format(name=f"b{i}", seconds=(i + 1) * 1e-4, work="WORK" if i == 2 else "1.0")
        for i in range(6)
    )
    pytester.makepyfile(test_suite=SUITE.format(tests=tests))
    # recorded by the module's first test, copied into the others' projects (the same samples)
    recorded_once.into(
        pytester.path,
        lambda: pytester.runpytest("--perf", "--perf-update", *FAST).assert_outcomes(passed=12),
    )
    # each baseline keeps the wall time its benchmark took: what the split deals out by
    [path] = (pytester.path / "baselines").rglob("test_suite.json")
    entries = json.loads(path.read_text())["benchmarks"].values()
    assert all(e["seconds"] > 0 for e in entries)
    return pytester


def statuses(path: Path) -> dict[str, str]:
    doc = json.loads(path.read_text())
    return {r["test"]: r["verdict"]["status"] for r in doc["results"]}


@pytest.mark.slow
def test_shards_merged_give_the_verdicts_of_one_unsharded_run(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BURNPERF_TEST_WORK", "1.5")  # test_b2 planted 50% slower
    whole = suite.runpytest("--perf", "--perf-json", "whole.json", *FAST)
    assert whole.ret == 1
    kept: list[int] = []
    for k in (1, 2, 3):
        part = suite.runpytest(
            "--perf", "--perf-shard", f"{k}/3", "--perf-json", f"s{k}.json", *FAST
        )
        out = part.stdout.str()
        assert "family-wise over 12 comparison(s)" in out, out  # the whole selection's alpha
        assert f"perf: shard {k}/3:" in out
        doc = json.loads((suite.path / f"s{k}.json").read_text())
        shard = doc["settings"]["shard"]
        assert shard["comparisons"] == 12 and shard["count"] == 3
        kept.append(shard["benchmarks"])
        # a benchmark's cases stay together
        names = {r["test"].split("[")[0] for r in doc["results"]}
        assert all(sum(r["test"].startswith(n + "[") for r in doc["results"]) == 2 for n in names)
    assert sum(kept) == 12 and all(n > 0 for n in kept)
    monkeypatch.chdir(suite.path)
    code = main(
        ["merge", "s1.json", "s2.json", "s3.json", "-o", "merged.json",
         "--markdown", "merged.md", "--junit", "merged.xml"]
    )  # fmt: skip
    assert code == 1  # the planted regression, as the unsharded run
    merged = statuses(suite.path / "merged.json")
    assert merged == statuses(suite.path / "whole.json")
    assert sum(s == "regressed" for s in merged.values()) == 2  # test_b2's two dtypes
    assert "merged 3 shard(s)" in capsys.readouterr().out
    assert (suite.path / "merged.md").read_text().startswith("## pytest-burnperf: 2 regressed")
    assert (suite.path / "merged.xml").read_text().count("<failure") == 2


@pytest.mark.slow
def test_merge_refuses_what_is_not_one_run_and_keeps_a_retried_shard_once(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for k in (1, 2):
        suite.runpytest("--perf", "--perf-shard", f"{k}/2", "--perf-json", f"s{k}.json", *FAST)
    suite.runpytest("--perf", "--perf-shard", "2/2", "--perf-json", "s2-retry.json", *FAST)
    suite.runpytest("--perf", "--perf-shard", "1/3", "--perf-json", "other.json", *FAST)
    suite.runpytest("--perf", "--perf-json", "whole.json", *FAST)
    monkeypatch.chdir(suite.path)
    assert main(["merge", "s1.json", "-o", "m.json"]) == 2
    assert "shard(s) 2 of 2 missing" in capsys.readouterr().err
    assert main(["merge", "s1.json", "other.json", "-o", "m.json"]) == 2
    assert "not shards of one run: the shard count differs" in capsys.readouterr().err
    assert main(["merge", "s1.json", "whole.json", "-o", "m.json"]) == 2
    assert "whole.json: not a shard's results" in capsys.readouterr().err
    before = (suite.path / "s1.json").read_bytes()
    assert main(["merge", "s1.json", "s2.json", "-o", "s1.json"]) == 2
    assert "-o s1.json: is an input of this command (s1.json)" in capsys.readouterr().err
    assert (suite.path / "s1.json").read_bytes() == before
    # issue 42: two outputs on one path left only the JUnit XML
    assert main(["merge", "s1.json", "s2.json", "-o", "same.json", "--junit", "same.json"]) == 2
    assert "--junit same.json: is also -o's path" in capsys.readouterr().err
    assert not (suite.path / "same.json").exists()
    assert main(["merge", "missing.json", "s2.json", "-o", "m.json"]) == 2
    assert "missing.json: no such file" in capsys.readouterr().err
    code = main(["merge", "s1.json", "s2.json", "s2-retry.json", "-o", "m.json"])
    out = capsys.readouterr().out
    assert code in (0, 1) and "shard 2 given twice" in out
    doc = json.loads((suite.path / "m.json").read_text())
    tests = [r["test"] for r in doc["results"]]
    assert len(tests) == len(set(tests)) == 12
    # hand-edited shard metadata: a clear error naming the field, never a hang or a traceback
    good = json.loads((suite.path / "s2.json").read_text())
    for what, (edit, named) in EDITS.items():
        bad = json.loads(json.dumps(good))
        edit(bad)
        (suite.path / "bad.json").write_text(json.dumps(bad))
        assert main(["merge", "s1.json", "bad.json", "-o", "m2.json"]) == 2, what
        assert named in capsys.readouterr().err, what
    # a shard holding a test of another selection: more benchmarks than the selection claims
    extra = json.loads(json.dumps(good))
    extra["results"].append(dict(extra["results"][0], test="test_suite.py::test_other[x]"))
    (suite.path / "bad.json").write_text(json.dumps(extra))
    assert main(["merge", "s1.json", "bad.json", "-o", "m2.json"]) == 2
    assert "more than the 12 of the selection they claim" in capsys.readouterr().err
    assert not (suite.path / "m2.json").exists()
    (suite.path / "README.md").write_text("mine\n")
    assert main(["merge", "s1.json", "s2.json", "-o", "m.json", "--markdown", "README.md"]) == 2
    assert (suite.path / "README.md").read_text() == "mine\n"


def test_a_bad_shard_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    for bad in ("3/2", "0/2", "two", "1/0"):
        result = pytester.runpytest("--perf", "--perf-shard", bad)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*--perf-shard*K/N*"])


@pytest.mark.slow
def test_shards_recorded_in_one_store_carry_runner_shard_and_ci_run(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytest.importorskip("sqlalchemy")
    import sqlalchemy as sa

    monkeypatch.setenv("BURNPERF_RUNNER", "cpu-large")
    monkeypatch.setenv("GITHUB_RUN_ID", "4242")
    db = tmp_path / "fleet.sqlite"
    ran = 0
    for k in (1, 2):
        # in a subprocess: pytester's in-process runs would load parts of SQLAlchemy afresh
        result = suite.runpytest_subprocess(
            "--perf", "--perf-shard", f"{k}/2", f"--perf-store={db}", *FAST
        )
        # how many each shard holds follows the recorded wall times, which vary with the host
        assert result.ret == 0 and result.parseoutcomes()["passed"] > 0
        ran += result.parseoutcomes()["passed"]
    assert ran == 12
    engine = sa.create_engine(f"sqlite:///{db}")
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT machine, settings FROM burnperf_runs")).all()
        n_results = conn.execute(sa.text("SELECT count(*) FROM burnperf_results")).scalar_one()
    engine.dispose()
    assert len(rows) == 2 and n_results == 12
    seen = set()
    for machine, settings in rows:
        machine, settings = json.loads(machine), json.loads(settings)
        assert machine["ci"] == {"runner": "cpu-large", "github_run_id": "4242"}
        seen.add((settings["shard"]["index"], settings["shard"]["count"]))
    assert seen == {(1, 2), (2, 2)}


@pytest.mark.slow
def test_four_shards_recorded_merged_published_and_opened_in_chromium(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The fleet end to end, as CI runs it: 4 shards record into one store, merge, publish the
    store as a site, and the site opens in headless Chromium (where one is installed)."""
    pytest.importorskip("plotly")
    pytest.importorskip("ruptures")
    pytest.importorskip("sqlalchemy")
    db = tmp_path / "fleet.sqlite"
    for k in (1, 2, 3, 4):
        # --perf-store=PATH, not --perf-store PATH: pytest takes an existing path among the
        # arguments of options it does not know yet for a test path when it picks the rootdir
        # in a subprocess: pytester's in-process runs would load parts of SQLAlchemy afresh
        suite.runpytest_subprocess(
            "--perf", "--perf-shard", f"{k}/4", f"--perf-store={db}", "--perf-json", f"s{k}.json",
            *FAST,
        )  # fmt: skip
    monkeypatch.chdir(suite.path)
    assert main(["merge", *(f"s{k}.json" for k in (1, 2, 3, 4)), "-o", "merged.json"]) in (0, 1)
    assert len(json.loads((suite.path / "merged.json").read_text())["results"]) == 12
    site = tmp_path / "site"
    published = subprocess.run(  # a process of its own, as CI runs it
        [
            sys.executable,
            "-m",
            "pytest_burnperf.cli",
            "publish",
            "-o",
            str(site),
            "--store",
            str(db),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert published.returncode == 0, published.stderr
    index = (site / "index.html").read_text()
    assert index.count("<tr>") == 13  # the header and the 12 series
    from tests.test_report_browser import CHROMIUM, chromium, console

    if CHROMIUM is None:
        pytest.skip("no Chromium installed: the site was written, not opened")
    dom = chromium("--dump-dom", (site / "index.html").as_uri() + "#filter=test_b3")
    assert dom.returncode == 0 and 'data-shown="2"' in dom.stdout, dom.stderr[-2000:]
    assert console(dom.stderr) == []
    page = next((site / "b").glob("test_b3-*.html"))
    shown = chromium("--dump-dom", page.as_uri())
    assert shown.returncode == 0 and console(shown.stderr) == []
    assert shown.stdout.count('class="main-svg"') >= 2


@pytest.mark.slow
def test_baselines_recorded_by_shards_merge_into_one_directory(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for k in (1, 2):  # each job records into its own, empty folder (so the split is by count)
        suite.runpytest(
            "--perf", "--perf-update", "--perf-shard", f"{k}/2", f"--perf-baselines-dir=b{k}",
            *FAST,
        ).assert_outcomes(passed=6)  # fmt: skip
    monkeypatch.chdir(suite.path)
    assert main(["merge-baselines", "b1", "b2", "--baselines", "merged"]) == 0
    assert "12 benchmark(s) merged into 1 file(s)" in capsys.readouterr().out
    [path] = (suite.path / "merged").rglob("test_suite.json")
    assert len(json.loads(path.read_text())["benchmarks"]) == 12
    # issue 42: merged again over baselines that differ: each one replaced is named
    [first] = (suite.path / "b1").rglob("test_suite.json")
    changed = json.loads(first.read_text())
    name = sorted(changed["benchmarks"])[0]
    changed["benchmarks"][name]["seconds"] = 99.0
    first.write_text(json.dumps(changed))
    assert main(["merge-baselines", "b1", "b2", "--baselines", "merged"]) == 0
    out = capsys.readouterr().out
    assert f"note: test_suite.py::{name} (" in out and "was replaced by the shard's" in out
    assert out.count("was replaced") == 1
    # a file as --baselines: refused, not "merged into 0 file(s)"
    (suite.path / "afile").write_text("x")
    assert main(["merge-baselines", "b1", "b2", "--baselines", "afile"]) == 2
    assert "--baselines afile: is a file, not a baselines folder" in capsys.readouterr().err
    # the same benchmark recorded differently by two shards: refused, nothing written
    [other] = (suite.path / "b1").rglob("test_suite.json")
    [theirs] = (suite.path / "b2").rglob("test_suite.json")
    doc, mine = json.loads(theirs.read_text()), json.loads(other.read_text())
    key = next(iter(mine["benchmarks"]))
    doc["benchmarks"][key] = dict(mine["benchmarks"][key], samples=[1.0, 1.0, 1.0])
    theirs.write_text(json.dumps(doc))
    assert main(["merge-baselines", "b1", "b2", "--baselines", "again"]) == 2
    assert "differently: a benchmark belongs to one shard" in capsys.readouterr().err
    assert not (suite.path / "again").exists()


@pytest.mark.slow
def test_shards_running_at_once_record_into_one_store(
    suite: pytest.Pytester, tmp_path: Path
) -> None:
    """Two shard processes started together, recording into one SQLite store: both runs land
    whole (the store waits for the other writer's lock)."""
    pytest.importorskip("sqlalchemy")
    import os
    import sqlite3

    db = tmp_path / "shared.sqlite"
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                "--perf",
                "--perf-shard",
                f"{k}/2",
                f"--perf-store={db}",
                *FAST,
            ],
            cwd=suite.path,
            env=dict(os.environ),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for k in (1, 2)
    ]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    # the end of each run's output (the summary names what failed), not pytest's cut repr
    assert [p.returncode for p in procs] == [0, 0], "\n\n".join(o[-3000:] for o in outs)
    con = sqlite3.connect(db)
    runs = con.execute("SELECT count(*) FROM burnperf_runs").fetchone()[0]
    results = con.execute("SELECT count(*) FROM burnperf_results").fetchone()[0]
    con.close()
    assert (runs, results) == (2, 12)


@pytest.mark.slow
def test_an_empty_shard_passes_with_a_note(suite: pytest.Pytester) -> None:
    # issue 42: a matrix wider than the suite failed its empty shard's job (pytest's exit 5)
    result = suite.runpytest("--perf", "--perf-shard", "50/100", "--perf-json", "s.json", *FAST)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        ["shard 50/100 holds none of the selection's 12 benchmark(s) (more shards than *"]
    )
    doc = json.loads((suite.path / "s.json").read_text())
    assert doc["results"] == [] and doc["settings"]["shard"]["index"] == 50
