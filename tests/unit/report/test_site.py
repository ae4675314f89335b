"""The static benchmarks site (report/site.py, `burnperf publish`): pages, escaping, the compare
view, and the folder rule. Rendered in Chromium by tests/test_report_browser.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("plotly")
pytest.importorskip("ruptures")
pytest.importorskip("sqlalchemy")

from pytest_burnperf.cli import main
from pytest_burnperf.report.site import MARK, SiteError, publish, slug
from pytest_burnperf.storage.history.query import series

from .test_report_files import EVIL, counted, history_points


def torch_points() -> list[dict[str, Any]]:
    """test_a on torch: twice numpy's median, the same +20% step."""
    return [
        dict(p, test="t.py::test_a[torch-cpu-f32]", name="test_a[torch-cpu-f32]",
             backend="torch", median=2 * p["median"])
        for p in history_points("test_a[torch-cpu-f32]")
    ]  # fmt: skip


def fleet_points() -> list[dict[str, Any]]:
    """A planted +20% step in test_a on numpy (run 10 on), test_a also on torch (slower), and
    a benchmark whose name tries to inject markup."""
    return history_points("test_a[numpy-cpu-f32]") + torch_points() + history_points(EVIL)


def test_the_site_has_an_index_a_page_per_benchmark_and_the_backends_compared(
    tmp_path: Path,
) -> None:
    out = tmp_path / "site"
    done = publish(series(fleet_points()), out, title="nightly <b>")
    assert done == {"series": 3, "benchmarks": 2, "figures": 3}
    index = (out / "index.html").read_text()
    assert index.count("<tr>") == 4 and 'id="filter"' in index  # header + 3 series
    assert "nightly &lt;b&gt;" in index and "<script>alert(1)" not in index
    page = (out / "b" / f"{slug('t.py::test_a')}.html").read_text()
    assert '<script src="../plotly.min.js"></script>' in page
    assert "+20.0% from run 11: between" in page  # the planted change with its commits
    assert page.count('class="plot"') == 2  # numpy and torch
    compare = (out / "compare.html").read_text()
    numpy_row = compare.index(">numpy<") if ">numpy<" in compare else compare.index("numpy")
    assert numpy_row < compare.index("torch") and "2.00x" in compare
    assert (out / "plotly.min.js").stat().st_size > 1_000_000
    assert json.loads((out / "site.json").read_text())["series"] == 3
    # a later publish replaces its own site; another folder with files is refused
    (out / "b" / "old.html").write_text("stale")
    publish(series(fleet_points()), out)
    assert not (out / "b" / "old.html").exists() and (out / MARK).is_file()
    other = tmp_path / "docs"
    other.mkdir()
    (other / "guide.md").write_text("mine")
    with pytest.raises(SiteError, match="holds other files"):
        publish(series(fleet_points()), other)
    assert (other / "guide.md").read_text() == "mine"


def test_burnperf_publish_from_a_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from .test_report_files import results_doc

    store = f"sqlite:///{tmp_path / 'h.sqlite'}"
    for i in range(3):
        res = tmp_path / f"r{i}.json"
        res.write_text(json.dumps(dict(results_doc(), created=f"2026-11-2{i}T00:00:00Z")))
        assert main(["import-results", str(res), "--store", store]) == 0
    capsys.readouterr()
    assert main(["publish", "-o", str(tmp_path / "site"), "--store", store]) == 0
    assert "published 1 series of 1 benchmark(s) from 3 results" in capsys.readouterr().out
    (tmp_path / "x.txt").write_text("x")
    assert main(["publish", "-o", str(tmp_path / "x.txt"), "--store", store]) == 2
    assert "is not a folder" in capsys.readouterr().err


def _site_whole(out: Path) -> bool:
    """Every page the index links is there (no half-written site)."""
    import re

    index = (out / "index.html").read_text()
    pages = re.findall(r'href="(b/[^"]+\.html)"', index)
    return bool(pages) and all((out / p).is_file() for p in pages)


def test_a_wrong_or_empty_store_never_replaces_a_site(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # issue 42: `--store typo.sqlite` (or no $BURNPERF_STORE) wiped a 17-page site
    out = tmp_path / "site"
    publish(series(fleet_points()), out)
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BURNPERF_STORE", raising=False)
    for store in (["--store", str(tmp_path / "typo.sqlite")], []):
        capsys.readouterr()
        assert main(["publish", "-o", str(out), *store]) == 2
        err = capsys.readouterr().err
        assert "no results store at " in err and "nothing was written to" in err
    assert not (tmp_path / "typo.sqlite").exists() and not (tmp_path / ".burnperf").exists()
    # a store that exists and holds no runs: refused too
    empty = f"sqlite:///{tmp_path / 'empty.sqlite'}"
    from pytest_burnperf.storage.history.store import Store

    with Store(empty):
        pass
    assert main(["publish", "-o", str(out), "--store", empty]) == 2
    assert "holds no results: the site at " in capsys.readouterr().err
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before


def test_publish_keeps_what_the_user_added_to_the_site(tmp_path: Path) -> None:
    # issue 42: a CNAME and an extra folder were deleted by the next publish
    out = tmp_path / "site"
    publish(series(fleet_points()), out)
    (out / "CNAME").write_text("bench.example.org\n")
    (out / "extra").mkdir()
    (out / "extra" / "notes.md").write_text("mine")
    (out / "b" / "stale.html").write_text("an old page of ours")
    publish(series(fleet_points()), out)
    assert (out / "CNAME").read_text() == "bench.example.org\n"
    assert (out / "extra" / "notes.md").read_text() == "mine"
    assert not (out / "b" / "stale.html").exists() and _site_whole(out)
    assert not list(tmp_path.glob(".site.new-*")) and not list(tmp_path.glob(".site.old-*"))


def _publish_in_a_process(out: str) -> None:
    publish(series(fleet_points()), Path(out))


def test_two_publishes_at_once_leave_one_whole_site(tmp_path: Path) -> None:
    # issue 42: two at once left 6 or 14 of 17 pages and an index linking the missing ones
    import multiprocessing

    out = tmp_path / "site"
    publish(series(fleet_points()), out)
    ctx = multiprocessing.get_context("spawn")
    for _ in range(3):
        procs = [ctx.Process(target=_publish_in_a_process, args=(str(out),)) for _ in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(120)
        assert [p.exitcode for p in procs] == [0, 0]
        assert _site_whole(out)
    assert sorted(x.name for x in tmp_path.iterdir() if x.name != "site") == [".site.burnperf-lock"]


def test_a_publish_killed_half_way_leaves_the_old_site(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pytest_burnperf.report.site as site

    out = tmp_path / "site"
    publish(series(fleet_points()), out)
    before = (out / "index.html").read_text()

    def dies(*args: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(site, "_compare", dies)  # after the pages, before the swap
    with pytest.raises(KeyboardInterrupt):
        publish(series(fleet_points()), out)
    assert (out / "index.html").read_text() == before and _site_whole(out)
    assert not list(tmp_path.glob(".site.new-*"))


def test_memory_per_call_has_its_figure_and_its_column_where_runs_tracked_it(
    tmp_path: Path,
) -> None:
    """Runs that tracked memory per call: the benchmark's page draws it over the runs, the index
    gives the latest peak; a series never tracked has neither, and names in it stay escaped."""
    pts = fleet_points()
    mib = 1 << 20
    for i, p in enumerate(pts):
        if p["test"].endswith("[numpy-cpu-f32]") and i >= 3:
            p.update(memory_peak=8 * mib, memory_allocated=12 * mib, memory_allocations=3)
        if "alert" in str(p["test"]):
            p.update(memory_peak=mib, memory_allocated=mib, memory_allocations=1)
    out = tmp_path / "site"
    done = publish(series(pts), out)
    assert done == {"series": 3, "benchmarks": 2, "figures": 5}  # + numpy's and the evil one's
    page = (out / "b" / f"{slug('t.py::test_a')}.html").read_text()
    assert page.count('class="plot"') == 3 and "memory per call: test_a[numpy-cpu-f32]" in page
    index = (out / "index.html").read_text()
    assert "<th>latest peak/call</th>" in index
    rows = index.split("<tr>")[2:]  # after the header's
    numpy_row = next(r for r in rows if ">numpy " in r)
    torch_row = next(r for r in rows if ">torch " in r)
    assert numpy_row.split("</tr>")[0].endswith('<td class="num">8.0 MiB</td>')
    assert torch_row.split("</tr>")[0].endswith('<td class="num">-</td>')
    assert "<script>alert(1)" not in index


def test_counted_series_read_in_instructions_and_are_never_ranked_against_times(
    tmp_path: Path,
) -> None:
    """A benchmark counted on numpy and torch and timed on another runner: the index and the
    pages read instructions, and the backends compared rank the counts apart from the times."""
    numpy = history_points("test_a[numpy-cpu-f32]")
    out = tmp_path / "site"
    publish(series(counted(numpy) + counted(torch_points()) + numpy[:3]), out)
    index = (out / "index.html").read_text()
    assert "M instr</td>" in index and index.count(" ms</td>") == 1  # the timed series
    assert index.count("<td>counts</td>") == 2 and index.count("<td>time</td>") == 1
    page = (out / "b" / f"{slug('t.py::test_a')}.html").read_text()
    assert page.count("instructions counted</h2>") == 2
    compare = (out / "compare.html").read_text()
    assert compare.count("<h2>") == 1  # the timed series has no second device to rank against
    assert "instructions counted</h2>" in compare and "<th>vs fewest</th>" in compare
    assert "2.00x" in compare
