"""One self-contained HTML file (``burnperf report ... -o report.html``): the results table and
plots a person would rather look at than read; plotly.js is embedded once, so the file works
offline and needs no CDN. No pytest here.

From a results document: per benchmark the distribution of its samples before and now (the
baseline's, or the reference's in a same-session comparison), the versions of a
``--perf-versions`` run as bars with their intervals, and the share of peak of the benchmarks
that declared their work (roofline). From the results store: each series over time with its
95% intervals, change points marked at the run where the shift begins, and each verdict
judged beside (memory per call) over the runs that measured it.

Every name that comes from a test or a file is escaped (``html.escape``) before it reaches the
page or a plot's labels.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from pytest_burnperf import json_fields as jf
from pytest_burnperf.core import measures
from pytest_burnperf.core.sides.side_registry import SIDES
from pytest_burnperf.core.text import escape as visible
from pytest_burnperf.report.table_row import TableRow, change_text

if TYPE_CHECKING:
    from pytest_burnperf.storage.history.query import Series

_COLORS = {
    "regressed": "#c62828",
    "failed": "#c62828",
    "improved": "#2e7d32",
    "inconclusive": "#ef6c00",
    "unchanged": "#455a64",
}
_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25em 0.6em; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.why { font-size: 0.85em; color: #555; max-width: 40em; }
.status { font-weight: 600; }
.plot { max-width: 1000px; }
.meta { color: #555; }
"""


def _e(text: object) -> str:
    """HTML's escaping, every renderer's text goes through it: control characters shown as
    ``\\x1b``, markup characters as entities."""
    return html.escape(visible(str(text)), quote=True)


class _Plots:
    """Figures to HTML fragments, plotly.js embedded with the first (``embed``; a site's pages
    load its one plotly.min.js instead)."""

    def __init__(self, embed: bool = True) -> None:
        self.count = 0
        self.embed = embed

    def html(self, fig: Any) -> str:
        import plotly.io as pio

        first = self.count == 0
        self.count += 1
        fragment: str = pio.to_html(
            fig,
            include_plotlyjs=first and self.embed,
            full_html=False,
            config={"displaylogo": False, "responsive": True},
            default_height=360,
        )
        return f'<div class="plot">{fragment}</div>'


def _results_table(results: Sequence[Mapping[str, object]]) -> str:
    rows = []
    for r in results:
        row = TableRow.of(r)  # the row model every table shares (table_row.py)
        rows.append(
            "<tr>"
            f"<td>{_e(row.name)}</td>"
            f"<td>{_e(row.where)}</td>"
            f"<td>{_e(row.dtype)}</td>"
            f'<td class="num">{_e(row.median)}</td>'
            f'<td class="num">{_e(row.baseline)}</td>'
            f'<td class="num">{_e(row.change)}</td>'
            f'<td class="num">{_e(row.detects)}</td>'
            + "".join(f'<td class="num">{_e(row.sides[side.field])}</td>' for side in SIDES)
            + f'<td class="status" style="color:{_COLORS.get(row.verdict, "#222")}">'
            f"{_e(row.verdict)}</td>"
            f'<td class="why">{_e(row.reason)}</td>'
            "</tr>"
        )
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "benchmark",
            "device",
            "dtype",
            "median",
            "before",
            "change [95% CI]",
            "detects",
            *(_e(side.column) for side in SIDES),
            "verdict",
            "why",
        )
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _axis(measure: measures.Judged) -> tuple[float, str, str]:
    """How a chart shows a measure's values: their scale, unit and axis title (seconds in
    microseconds, instructions as counted)."""
    if measure.counted:
        return 1.0, "instructions", "instructions per call"
    return 1e6, "us", "microseconds per call"


def _distribution(r: Mapping[str, object], plots: _Plots) -> str | None:
    import plotly.graph_objects as go

    base = jf.mapping(r.get("baseline"))
    before = [v for run in jf.rounds(base.get("runs")) for v in run]
    now = [v for run in jf.rounds(r.get("runs")) for v in run] or jf.floats(r.get("samples"))
    if not now:
        return None
    label = "reference " + _e(base["reference"]) if base.get("reference") else "baseline"
    scale, _, axis = _axis(measures.of_field(r.get("measure", r.get("timer"))))
    fig = go.Figure()
    if before:
        fig.add_trace(go.Box(x=[scale * v for v in before], name=label, boxpoints="outliers"))
    fig.add_trace(go.Box(x=[scale * v for v in now], name="now", boxpoints="outliers"))
    v = jf.mapping(r.get("verdict"))
    fig.update_layout(
        title=f"{_e(r.get('name', '?'))}: {_e(v.get('status', '?'))} {_e(change_text(v, r.get('measure')))}",
        xaxis_title=axis,
        showlegend=False,
        height=260,
        margin={"l": 140, "r": 20, "t": 50, "b": 40},
    )
    return plots.html(fig)


def _versions(r: Mapping[str, object], plots: _Plots) -> str | None:
    import plotly.graph_objects as go

    vs = jf.mappings(r.get("versions"))
    if len(vs) < 2:
        return None
    mids = [jf.number(x.get("median")) or 0.0 for x in vs]
    cis = [jf.floats(x.get("ci95")) for x in vs]
    med = [1e6 * m for m in mids]
    up = [1e6 * (ci[1] - m) if len(ci) == 2 else 0 for m, ci in zip(mids, cis, strict=True)]
    down = [1e6 * (m - ci[0]) if len(ci) == 2 else 0 for m, ci in zip(mids, cis, strict=True)]
    fig = go.Figure(
        go.Bar(
            x=[_e(x["label"]) for x in vs],
            y=med,
            error_y={"type": "data", "array": up, "arrayminus": down},
        )
    )
    fig.update_layout(
        title=f"{_e(r.get('name', '?'))}: versions",
        yaxis_title="microseconds per call",
        height=300,
    )
    return plots.html(fig)


def _profiles(results: Sequence[Mapping[str, object]]) -> str | None:
    """--perf-profile: each profiled benchmark's note of what grew and links to its profiles
    (the reference environment's first in a same-session comparison; relative to the run's
    directory, where the report is usually written)."""
    items = []
    for r in results:
        prof = r.get("profile")
        if not isinstance(prof, Mapping) or not isinstance(prof.get("file"), str):
            continue
        status = jf.mapping(r.get("verdict")).get("status", "?")
        files = [f for f in (prof.get("against_file"), prof["file"]) if isinstance(f, str)]
        links = ", ".join(f'<a href="{_e(quote(f))}">{_e(f)}</a>' for f in files)
        items.append(
            f"<li><b>{_e(r.get('name', r.get('test', '?')))}</b> ({_e(status)}): "
            f"{_e(prof.get('note', ''))} {links}</li>"
        )
    return f"<ul>{''.join(items)}</ul>" if items else None


def _roofline(results: Sequence[Mapping[str, object]], plots: _Plots) -> str | None:
    import plotly.graph_objects as go

    rows = [
        (_e(r.get("name", "?")), jf.mapping(r.get("roofline")))
        for r in results
        if isinstance(r.get("roofline"), Mapping)
    ]
    rows = [
        (n, x) for n, x in rows if x.get("arith_pct") is not None or x.get("mem_pct") is not None
    ]
    if not rows:
        return None
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            name="% of peak GFLOP/s",
            y=[n for n, _ in rows],
            x=[x.get("arith_pct") for _, x in rows],
            orientation="h",
        )
    )
    fig.add_trace(
        go.Bar(
            name="% of peak GB/s",
            y=[n for n, _ in rows],
            x=[x.get("mem_pct") for _, x in rows],
            orientation="h",
        )
    )
    fig.update_layout(
        title="Roofline: share of the measured peaks",
        barmode="group",
        xaxis_title="% of peak",
        height=120 + 40 * len(rows),
        margin={"l": 260},
    )
    return plots.html(fig)


def _runs_axis(runs: int) -> dict[str, object]:
    """The x axis of a chart over a series' runs: whole runs only (about ten ticks at most),
    never 0.2 of a run."""
    return {"title": "run (oldest first)", "tick0": 0, "dtick": max(1, math.ceil(runs / 10))}


def _values_axis(title: str, values: Sequence[float], counted: bool) -> dict[str, object]:
    """The y axis of a series' chart: a flat series (within 1% of its middle, as counts mostly
    are) gets a span of +-1% around it, so its ticks read as values and a later step shows to
    scale; instructions read with SI prefixes (``10.84M``)."""
    out: dict[str, object] = {"title": title}
    if counted:
        out["tickformat"] = ".4s"
    finite = [v for v in values if math.isfinite(v)]
    if finite:
        low, high = min(finite), max(finite)
        middle = (low + high) / 2
        if middle > 0 and high - low < 0.02 * middle:
            out["range"] = [middle * 0.99, middle * 1.01]
    return out


def _history(s: Series, plots: _Plots) -> str:
    import plotly.graph_objects as go

    x = list(range(len(s.points)))
    mids = [jf.number(p.get("median")) or 0.0 for p in s.points]
    highs = [jf.number(p.get("high")) for p in s.points]
    lows = [jf.number(p.get("low")) for p in s.points]
    scale, unit, axis = _axis(s.measure)
    med = [scale * m for m in mids]
    up = [scale * (h - m) if h is not None else 0 for m, h in zip(mids, highs, strict=True)]
    down = [scale * (m - lo) if lo is not None else 0 for m, lo in zip(mids, lows, strict=True)]
    hover = [
        f"{_e(str(p.get('commit') or '-')[:10])} {_e(p.get('branch') or '')} "
        f"{_e(str(p.get('created') or '')[:16])}"
        for p in s.points
    ]
    fig = go.Figure(
        go.Scatter(
            x=x,
            y=med,
            mode="lines+markers",
            text=hover,
            error_y={"type": "data", "array": up, "arrayminus": down},
            hovertemplate=f"%{{text}}<br>%{{y:.4g}} {unit}<extra></extra>",
        )
    )
    for c in s.changes:
        commit = _e(str(s.points[c.index].get("commit") or "?")[:10])
        fig.add_vline(
            x=c.index - 0.5,
            line_dash="dash",
            line_color="#c62828",
            annotation_text=f"{100 * (c.ratio - 1):+.1f}% at {commit}",
        )
    spread = [m + u for m, u in zip(med, up, strict=True)]
    spread += [m - d for m, d in zip(med, down, strict=True)]
    fig.update_layout(
        title=f"{_e(s.name)} [{_e(s.device)} {_e(s.dtype)}, {_e(s.hardware_class)}]",
        xaxis=_runs_axis(len(s.points)),
        yaxis=_values_axis(axis, spread, s.measure.counted),
        height=320,
    )
    return plots.html(fig)


def _side_histories(s: Series, plots: _Plots) -> list[str]:
    """A series' chart of each verdict judged beside (memory per call: peak and bytes
    allocated) over the runs that measured it (core/sides/side_kind.SideHistory); none for a
    side none of its runs measured."""
    import plotly.graph_objects as go

    charts = []
    for side in SIDES:
        h = side.history
        measured = h.charted(s.points)
        if not measured:
            continue
        fig = go.Figure()
        for figure in h.figures:
            if not figure.charted:
                continue
            fig.add_trace(
                go.Scatter(
                    x=[i for i, _ in measured],
                    y=[p.get(figure.column) for _, p in measured],
                    mode="lines+markers",
                    name=_e(figure.name),
                    text=[_e(str(p.get("commit") or "-")[:10]) for _, p in measured],
                    hovertemplate=f"%{{text}}<br>%{{y:,}} {_e(h.unit)}"
                    f"<extra>{_e(figure.name)}</extra>",
                )
            )
        fig.update_layout(
            title=f"{_e(h.title)}: {_e(s.name)} [{_e(s.device)} {_e(s.dtype)}, "
            f"{_e(s.hardware_class)}]",
            xaxis=_runs_axis(len(s.points)),
            yaxis={"title": _e(h.axis), "rangemode": "tozero"},  # sizes and counts: never < 0
            height=280,
        )
        charts.append(plots.html(fig))
    return charts


#: In the head of every page this module writes: what ``burnperf report`` may replace.
GENERATOR = '<meta name="generator" content="pytest-burnperf">'


def written_by_us(head: bytes) -> bool:
    """Whether a file starting with ``head`` is a report this module wrote."""
    return head.startswith(b"<!DOCTYPE html>") and GENERATOR.encode() in head


def render(
    doc: Mapping[str, object] | None = None,
    history: Sequence[Series] = (),
    *,
    title: str = "pytest-burnperf report",
) -> str:
    """The whole page."""
    plots = _Plots()
    parts = [f"<h1>{_e(title)}</h1>"]
    if doc is not None:
        results = jf.mappings(doc.get("results"))
        machine = jf.mapping(doc.get("machine"))
        git = jf.mapping(doc.get("git"))
        parts.append(
            f'<p class="meta">{_e(doc.get("created", ""))}; machine {_e(machine.get("id", "?"))}'
            f" (class {_e(machine.get('hardware_class', '?'))}); commit "
            f"{_e(str(git.get('commit') or '-')[:12])}; {len(results)} benchmarks</p>"
        )
        parts.append("<h2>Results</h2>")
        parts.append(_results_table(results))
        profiled = _profiles(results)
        if profiled:
            parts += ["<h2>Profiles: what grew</h2>", profiled]
        roof = _roofline(results, plots)
        if roof:
            parts += ["<h2>Roofline</h2>", roof]
        figs = [f for r in results for f in (_versions(r, plots), _distribution(r, plots)) if f]
        if figs:
            parts += ["<h2>Samples, before and now</h2>", *figs]
    if history:
        parts.append("<h2>History</h2>")
        shifts = sum(len(s.changes) for s in history)
        parts.append(f'<p class="meta">{len(history)} series, {shifts} shift(s) found</p>')
        for s in history:
            parts.append(_history(s, plots))
            parts.extend(_side_histories(s, plots))
    if plots.count == 0:
        parts.append("<p>Nothing to plot.</p>")
    body = "\n".join(parts)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">{GENERATOR}'
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head>\n<body>\n{body}\n"
        f'<script>document.body.dataset.figures = "{plots.count}";</script>\n</body></html>\n'
    )
