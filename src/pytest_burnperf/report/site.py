"""A static benchmarks site from the results store (``burnperf publish -o site/``), as ``asv
publish`` makes one: open ``index.html`` from the disk or host the folder (GitHub Pages). No pytest
here; plotly.js is written once into the folder, so the site works offline and needs no CDN.

* ``index.html``: every series (benchmark x device x dtype x hardware class x measure) with its
  latest median (seconds or instructions, as its measure reads) and verdict, runs and shifts
  found; a filter box (also ``#filter=TEXT`` in the address).
* ``b/<name>.html``: one page per benchmark: each of its series over time with 95% intervals,
  its change points marked, and the commits around each change; each verdict judged beside
  (memory per call: peak and bytes allocated) over the runs that measured it.
* ``compare.html``: the backends side by side on each hardware class (burn-bench's "which backend
  for this workload"): per benchmark and dtype the latest median of each device, fastest first.

Every name that comes from the store is escaped (:func:`report.html._e`) before it reaches a page
or a plot's labels.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_burnperf import json_fields as jf
from pytest_burnperf.core.sides.side_registry import SIDES
from pytest_burnperf.report.html import _STYLE, GENERATOR, _e
from pytest_burnperf.storage.paths import folder_problem

if TYPE_CHECKING:
    from pytest_burnperf.storage.history.query import Series

#: The file that marks a folder as a site this module wrote (what a later publish may replace).
MARK = ".burnperf-site"
_FILTER_JS = """
function burnperfFilter(text) {
  const words = text.toLowerCase().split(/\\s+/).filter(Boolean);
  let shown = 0;
  for (const row of document.querySelectorAll("tbody tr")) {
    const hit = words.every((w) => row.textContent.toLowerCase().includes(w));
    row.style.display = hit ? "" : "none";
    shown += hit ? 1 : 0;
  }
  document.getElementById("shown").textContent = String(shown);
  document.body.dataset.shown = String(shown);
}
const box = document.getElementById("filter");
box.addEventListener("input", () => burnperfFilter(box.value));
const given = new URLSearchParams(location.hash.slice(1)).get("filter");
if (given) { box.value = given; }
burnperfFilter(box.value);
"""


class SiteError(ValueError):
    """The output folder cannot take the site; ``str()`` says why."""


def target_problem(out: Path) -> str | None:
    """Why the site must not be written to ``out``: a file, or a folder with other things in it
    than a site this module wrote."""
    return folder_problem(out, MARK, "site of burnperf publish")


def slug(test: str) -> str:
    """A file name for a benchmark: its readable part and a short hash (unique, never a path)."""
    base = re.sub(r"[^A-Za-z0-9_.-]+", "_", test.split("::")[-1])[:60].strip("._") or "benchmark"
    return f"{base}-{hashlib.sha256(test.encode('utf-8', 'surrogateescape')).hexdigest()[:10]}"


def _benchmark(s: Series) -> str:
    """The benchmark a series belongs to: its test without the parameters (module::function)."""
    return s.test.split("[", 1)[0]


def _page(title: str, body: str, *, depth: int = 0, plots: bool = False) -> str:
    up = "../" * depth
    script = f'<script src="{up}plotly.min.js"></script>' if plots else ""
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">{GENERATOR}'
        f"<title>{_e(title)}</title><style>{_STYLE}</style>{script}</head>\n<body>\n"
        f'<p class="meta"><a href="{up}index.html">benchmarks</a> · '
        f'<a href="{up}compare.html">backends compared</a></p>\n{body}\n</body></html>\n'
    )


def _latest(s: Series) -> Mapping[str, object]:
    return s.points[-1] if s.points else {}


def _median(s: Series) -> float:
    """The median of the series' latest run (0 where the store has none)."""
    return jf.number(_latest(s).get("median")) or 0.0


def _index(all_series: Sequence[Series], title: str) -> str:
    rows = []
    for s in all_series:
        last = _latest(s)
        status = str(last.get("status") or "-")
        rows.append(
            "<tr>"
            f'<td><a href="b/{slug(_benchmark(s))}.html">{_e(s.name)}</a></td>'
            f"<td>{_e(s.device)}</td><td>{_e(s.dtype)}</td><td>{_e(s.hardware_class)}</td>"
            f"<td>{_e(s.measure.name)}</td>"
            f'<td class="num">{len(s.points)}</td>'
            f'<td class="num">{_e(s.measure.format(_median(s)) if last else "-")}</td>'
            f'<td class="status">{_e(status)}</td><td class="num">{len(s.changes)}</td>'
            + "".join(f'<td class="num">{_e(side.history.latest(last))}</td>' for side in SIDES)
            + "</tr>"
        )
    body = (
        f"<h1>{_e(title)}</h1>\n"
        f'<p><input id="filter" type="search" placeholder="filter: matmul cuda f32" size="40"> '
        f'<span class="meta"><span id="shown">{len(rows)}</span> of {len(rows)} series</span></p>\n'
        "<table><thead><tr><th>benchmark</th><th>device</th><th>dtype</th><th>hardware class</th>"
        "<th>measure</th>"
        "<th>runs</th><th>latest median</th><th>latest verdict</th><th>shifts</th>"
        + "".join(f"<th>{_e(side.history.latest_header)}</th>" for side in SIDES)
        + "</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>\n<script>{_FILTER_JS}</script>"
    )
    return _page(title, body)


def _benchmark_page(name: str, group: Sequence[Series], title: str) -> tuple[str, int]:
    from pytest_burnperf.report.html import _history, _Plots, _side_histories

    parts = [f"<h1>{_e(name)}</h1>"]
    figures = 0
    for s in group:
        parts.append(
            f"<h2>{_e(s.device)} {_e(s.dtype)} on {_e(s.hardware_class)}"
            f"{', instructions counted' if s.measure.counted else ''}</h2>"
            f'<p class="meta">{len(s.points)} runs, {len(s.changes)} shift(s)</p>'
        )
        parts.append(_history(s, _Plots(embed=False)))
        figures += 1
        beside = _side_histories(s, _Plots(embed=False))
        parts.extend(beside)
        figures += len(beside)
        if s.changes:
            items = []
            for c in s.changes:
                before = s.points[c.index - 1] if c.index > 0 else {}
                at = s.points[c.index]
                items.append(
                    f"<li>{100 * (c.ratio - 1):+.1f}% from run {c.index + 1}: between "
                    f"<code>{_e(str(before.get('commit') or '?')[:12])}</code> "
                    f"({_e(str(before.get('created') or '')[:16])}) and "
                    f"<code>{_e(str(at.get('commit') or '?')[:12])}</code> "
                    f"({_e(str(at.get('created') or '')[:16])})</li>"
                )
            parts.append(f"<ul>{''.join(items)}</ul>")
    body = "\n".join(parts) + f'\n<script>document.body.dataset.figures = "{figures}";</script>'
    return _page(f"{name} - {title}", body, depth=1, plots=True), figures


def _compare(all_series: Sequence[Series], title: str) -> str:
    """Per hardware class, benchmark, dtype and measure: each device's latest median, fastest
    (or fewest instructions) first. Times and instruction counts are never ranked together."""
    groups: dict[tuple[str, str, str, str], list[Series]] = {}
    for s in all_series:
        if s.points:
            key = (s.hardware_class, _benchmark(s), s.dtype, s.measure.name)
            groups.setdefault(key, []).append(s)
    parts = [f"<h1>Backends compared - {_e(title)}</h1>"]
    for (hw, bench, dtype, _), group in sorted(groups.items()):
        if len(group) < 2:
            continue
        counted = group[0].measure.counted
        ranked = sorted(group, key=_median)
        best = _median(ranked[0])
        rows = []
        for s in ranked:
            med = _median(s)
            width = max(2, min(100, round(100 * best / med))) if med > 0 else 0
            rows.append(
                f"<tr><td>{_e(s.device)}</td><td class='num'>{_e(s.measure.format(med))}</td>"
                f"<td class='num'>{med / best if best > 0 else float('nan'):.2f}x</td>"
                f'<td><div style="background:#455a64;height:0.8em;width:{width * 3}px"></div>'
                "</td></tr>"
            )
        parts.append(
            f"<h2>{_e(bench.split('::')[-1])} {_e(dtype)} on {_e(hw)}"
            f"{', instructions counted' if counted else ''}</h2>"
            "<table><thead><tr><th>device</th><th>latest median</th>"
            f"<th>{'vs fewest' if counted else 'vs fastest'}</th>"
            f"<th></th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        )
    if len(parts) == 1:
        parts.append("<p>No benchmark ran on two devices of one hardware class.</p>")
    return _page(f"Backends compared - {title}", "\n".join(parts))


#: What a site of this module holds at its top level; anything else there is the user's (a
#: CNAME, a folder of their own) and is carried into the next site.
OWN = frozenset({MARK, "index.html", "compare.html", "site.json", "plotly.min.js", "b"})
#: Seconds a publish waits for another publishing into the same folder.
LOCK_TIMEOUT_S = 300.0


def _siblings(out: Path, kind: str) -> list[Path]:
    return sorted(out.parent.glob(f".{out.name}.{kind}-*"))


def publish(
    all_series: Sequence[Series], out: Path, *, title: str = "Benchmarks"
) -> dict[str, int]:
    """Write the site into ``out`` (new, empty, or an earlier site, which it replaces); what
    it wrote. Raises :class:`SiteError`.

    The site is built in a temporary folder beside ``out`` and swapped in under a lock
    (``.NAME.burnperf-lock`` beside it): two publishes at once take turns, and a reader, or a
    publish killed half-way, never finds half a site. Files and folders in an earlier site that
    this module did not write (``OWN``: a CNAME, a folder of the user's) are carried into the
    new one."""
    from filelock import FileLock, Timeout

    out = out.absolute()
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(out.parent / f".{out.name}.burnperf-lock", timeout=LOCK_TIMEOUT_S)
        lock.acquire()
    except Timeout:
        raise SiteError(
            f"{out}: another burnperf publish has held it for {LOCK_TIMEOUT_S:g} s"
        ) from None
    try:
        for stale in _siblings(out, "new") + _siblings(out, "old"):  # a killed publish's
            shutil.rmtree(stale, ignore_errors=True)
        problem = target_problem(out)
        if problem:
            raise SiteError(f"{out}: {problem}")
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
        try:
            mask = os.umask(0)
            os.umask(mask)
            os.chmod(tmp, 0o777 & ~mask)  # a site's folder as mkdir makes it, not private
            summary = _write(all_series, tmp, title)
            if out.is_dir():
                for entry in out.iterdir():  # what the user added to the site
                    if entry.name not in OWN:
                        if entry.is_dir() and not entry.is_symlink():
                            shutil.copytree(entry, tmp / entry.name, symlinks=True)
                        else:
                            shutil.copy2(entry, tmp / entry.name, follow_symlinks=False)
                old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
                os.rename(out, old / "site")
                os.rename(tmp, out)
                shutil.rmtree(old, ignore_errors=True)
            else:
                if out.exists() or out.is_symlink():
                    raise SiteError(f"{out}: is not a folder")
                os.rename(tmp, out)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    finally:
        lock.release()
    return summary


def _write(all_series: Sequence[Series], out: Path, title: str) -> dict[str, int]:
    """The site's files into the (new, empty) folder ``out``."""
    import plotly.offline

    (out / "b").mkdir(parents=True, exist_ok=True)
    (out / MARK).write_text("written by burnperf publish; the folder is replaced on the next\n")
    (out / "plotly.min.js").write_text(plotly.offline.get_plotlyjs(), encoding="utf-8")
    by_benchmark: dict[str, list[Series]] = {}
    for s in all_series:
        by_benchmark.setdefault(_benchmark(s), []).append(s)
    figures = 0
    for name, group in sorted(by_benchmark.items()):
        page, n = _benchmark_page(name, group, title)
        figures += n
        (out / "b" / f"{slug(name)}.html").write_text(page, encoding="utf-8")
    (out / "index.html").write_text(_index(all_series, title), encoding="utf-8")
    (out / "compare.html").write_text(_compare(all_series, title), encoding="utf-8")
    summary = {"series": len(all_series), "benchmarks": len(by_benchmark), "figures": figures}
    (out / "site.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return summary
