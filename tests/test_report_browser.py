"""The HTML report in a real headless Chromium (Debian's package; `.ci/run` installs it): the
page loads from the file alone, every plot renders, the console has no error, and a screenshot is
kept under the test's tmp dir. Skipped where no Chromium is installed."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("plotly")
pytest.importorskip("ruptures")

from tests.unit.report.test_report_files import EVIL, history_points, results_doc

CHROMIUM = next(
    (p for n in ("chromium", "chromium-browser", "google-chrome") if (p := shutil.which(n))), None
)
pytestmark = [
    pytest.mark.slow,  # a real browser: the slow tier
    pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed"),
]


def chromium(*args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [
            CHROMIUM,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=20000",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def console(stderr: str) -> list[str]:
    """The page's console messages, as Chromium's --enable-logging writes them."""
    return [ln for ln in stderr.splitlines() if ":CONSOLE" in ln]


def test_console_messages_are_seen(tmp_path: Path) -> None:
    """The check below is not vacuous: an error on a page shows in what console() reads."""
    page = tmp_path / "bad.html"
    page.write_text('<script>console.error("canary"); throw new Error("uncaught");</script>')
    seen = console(chromium("--dump-dom", page.as_uri()).stderr)
    assert any("canary" in ln for ln in seen) and any("Uncaught" in ln for ln in seen), seen


def test_the_report_renders_offline_without_console_errors(tmp_path: Path) -> None:
    from pytest_burnperf.report.html import render
    from pytest_burnperf.storage.history.query import series

    page = tmp_path / "report.html"
    page.write_text(render(results_doc(EVIL), series(history_points(EVIL))))
    dom = chromium("--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    # plotly drew each of the 4 figures as an SVG
    assert len(re.findall(r'class="main-svg"', dom.stdout)) >= 4, dom.stderr[-2000:]
    assert 'data-figures="4"' in dom.stdout
    # the page logs nothing at all (plotly logs nothing when it draws without trouble)
    assert console(dom.stderr) == []
    assert "<script>alert(1)" not in dom.stdout  # the name stayed text
    shot = tmp_path / "report.png"
    done = chromium(f"--screenshot={shot}", "--window-size=1280,2400", page.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    assert shot.stat().st_size > 20_000  # a page with plots, not a blank one


def test_the_published_site_renders_offline_filters_and_shows_the_change_point(
    tmp_path: Path,
) -> None:
    from pytest_burnperf.report.site import publish, slug
    from pytest_burnperf.storage.history.query import series
    from tests.unit.report.test_site import fleet_points

    out = tmp_path / "site"
    publish(series(fleet_points()), out)
    index = chromium("--dump-dom", (out / "index.html").as_uri() + "#filter=torch")
    assert index.returncode == 0, index.stderr[-2000:]
    assert 'data-shown="1"' in index.stdout  # the filter from the address kept one series
    assert console(index.stderr) == []
    page = out / "b" / f"{slug('t.py::test_a')}.html"
    dom = chromium("--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert len(re.findall(r'class="main-svg"', dom.stdout)) >= 2, dom.stderr[-2000:]
    assert "+20.0% at" in dom.stdout  # the planted change point, drawn on the chart
    assert console(dom.stderr) == []
    compare = chromium("--dump-dom", (out / "compare.html").as_uri())
    assert compare.returncode == 0 and console(compare.stderr) == []
