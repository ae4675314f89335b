"""The terminal table of a run's results (columns, widths, sorting, grouping, wrapping) and the notes
printed under it. The header lines are in run_header.py, the results JSON in results_json.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_burnperf.core.judging.outcome import sides_fail
from pytest_burnperf.core.judging.stats import summarize
from pytest_burnperf.core.judging.verdict import (
    FAILED,
    IMPROVED,
    INCOMPARABLE,
    INCONCLUSIVE,
    NO_BASELINE,
    REGRESSED,
    VERDICTS,
)
from pytest_burnperf.core.options.run_options import COLUMN_KEYS
from pytest_burnperf.core.records.results import Result
from pytest_burnperf.core.records.versions import VersionSummary
from pytest_burnperf.core.sides.side_registry import SIDES, side
from pytest_burnperf.core.text import (
    QUOTE,
    escape,
    format_count,
    format_time,
    shorten,
)
from pytest_burnperf.report.side_verdicts import moved
from pytest_burnperf.report.table_row import TableRow

#: Headers of the table's columns where they differ from their --perf-columns key.
_HEADER_TEXT = {
    "iqr": "IQR %",
    "change": "change [95% CI]",
    "time": "time change",
    "peak_mem": "peak mem",
    "bandwidth": "mem",
    **{side.field: side.column for side in SIDES},
}
COLUMNS = tuple(_HEADER_TEXT.get(k, k) for k in COLUMN_KEYS)


def row(r: Result) -> tuple[str, ...]:
    """The table's cells of ``r``, in COLUMN_KEYS order: the row model every table shares
    (table_row.py), built from the entry the results document holds for it."""
    return _row_of(r.as_json())


def _row_of(entry: dict[str, Any]) -> tuple[str, ...]:
    return TableRow.of(entry).cells(COLUMN_KEYS)


HEADERS = dict(zip(COLUMN_KEYS, COLUMNS, strict=True))
#: Shown at normal verbosity (the rest with -v or --perf-columns).
ESSENTIAL: tuple[str, ...] = (
    "benchmark",
    "backend",
    "device",
    "dtype",
    "median",
    "baseline",
    "change",
    "detects",
    "verdict",
)
#: Never dropped to fit the terminal; the others go in this order until the table fits. The
#: rates (``-v``: GFLOP/s, GB/s and % of peak) go after the baseline's median and what the
#: run detects, which the change and the verdict say in short.
KEEP: tuple[str, ...] = ("benchmark", "dtype", "median", "change", "time", "verdict")
DROP_ORDER: tuple[str, ...] = (
    "shape",
    "clock",
    "iqr",
    "p",
    "peak_mem",
    "baseline",
    "detects",
    *(side.field for side in SIDES),
    "bandwidth",
    "arith",
    # the device before the library: where neither tells rows apart, the library says more
    # (``numpy`` over ``cpu``); where the device does (torch on the CPU and on a GPU), it stays
    "device",
    "backend",
)
#: The rates of a benchmark that declares its work: kept over its name on the row (-v).
_RATES = ("arith", "bandwidth")
_RIGHT = {
    "median",
    "iqr",
    "baseline",
    "change",
    "time",
    "p",
    "detects",
    "peak_mem",
    *(side.field for side in SIDES),
    "arith",
    "bandwidth",
}
_MIN_NAME = 16
#: How much of a parametrised test's function name a shortened id keeps, at least.
_NAME_KEPT = 12


def _sort_key(key: str) -> Any:
    order = {v: i for i, v in enumerate(VERDICTS)}
    keys: dict[str, object] = {
        "benchmark": lambda r: r.label,
        "device": lambda r: r.device_id,
        "dtype": lambda r: r.dtype,
        "median": lambda r: r.verdict.current_median,
        "change": lambda r: -(r.verdict.ratio if r.verdict.ratio is not None else 0.0),
        "verdict": lambda r: order.get(r.verdict.status, len(order)),
    }
    return keys[key]


def _group_key(key: str) -> Any:
    keys: dict[str, object] = {
        "benchmark": lambda r: r.benchmark,
        "device": lambda r: r.device_id,
        "dtype": lambda r: r.dtype,
        "module": lambda r: r.module,
    }
    return keys[key]


#: The columns that tell two rows apart: never dropped where two rows would then read the same.
IDENTITY: tuple[str, ...] = ("benchmark", "shape", "backend", "device", "dtype", "clock")


def _distinct(rows: list[dict[str, str]], cols: Sequence[str]) -> bool:
    """Whether the identity columns among ``cols`` still tell every pair of distinct rows apart."""
    ids = [c for c in IDENTITY if c in cols]
    full = {tuple(r[c] for c in IDENTITY) for r in rows}
    return len({tuple(r[c] for c in ids) for r in rows}) == len(full)


def headers_for(rows: Sequence[dict[str, str]]) -> dict[str, str]:
    """The column headers of a table of ``rows``: "change" where its changes are shown without
    an interval (counted rows), else "change [95% CI]"."""
    headers = dict(HEADERS)
    changes = [r["change"] for r in rows]
    if any("%" in c for c in changes) and not any("[" in c for c in changes):
        headers["change"] = "change"
    return headers


def _layout(
    rows: list[dict[str, str]], columns: Sequence[str], width: int | None, fit: bool
) -> tuple[list[str], dict[str, int], bool]:
    """The columns that fit ``width``, each column's width, and whether the benchmark's name goes
    on a line of its own. Columns are dropped in DROP_ORDER, but never one that tells two rows
    apart; then names are shortened in the middle (their parameters kept) to no less than
    _MIN_NAME; where that would make two names read the same, each row's full name is printed on
    a line of its own above the row's figures."""
    cols = list(columns)
    headers = headers_for(rows)

    def widths_of(cs: Sequence[str]) -> dict[str, int]:
        return {c: max(len(headers[c]), *(len(r[c]) for r in rows)) for c in cs}

    def total(ws: dict[str, int]) -> int:
        return sum(ws.values()) + 2 * (len(ws) - 1)

    ws = widths_of(cols)
    if not fit or width is None:
        return cols, ws, False

    def droppable(c: str, cs: list[str]) -> bool:
        return c in cs and c not in KEEP and _distinct(rows, [x for x in cs if x != c])

    dropped: list[str] = []
    for i, c in enumerate(DROP_ORDER):
        if total(ws) <= width:
            break
        if c in cols and c in _RATES and any(r[c] != "-" for r in rows):
            # rates asked for (-v) and shown: kept with the names on lines of their own, where
            # the columns after them that tell no rows apart make room
            trial = [x for x in cols if x != "benchmark"]
            for later in DROP_ORDER[i + 1 :]:
                if 2 + total(widths_of(trial)) <= width:
                    break
                if later not in _RATES and droppable(later, [*trial, "benchmark"]):
                    trial.remove(later)
            if "benchmark" in cols and 2 + total(widths_of(trial)) <= width:
                return trial, widths_of(trial), True
        if c in cols and c not in KEEP and _distinct(rows, [x for x in cols if x != c]):
            cols.remove(c)
            dropped.append(c)
            ws = widths_of(cols)
    if total(ws) > width and "benchmark" in ws:
        # shortened to fit, never below _MIN_NAME, and never widened
        name = max(min(_MIN_NAME, ws["benchmark"]), ws["benchmark"] - (total(ws) - width))
        labels = {r["benchmark"] for r in rows}
        # parameters longer than the column: shortened, an id keeps neither its name nor its
        # parameters (``test_rgb…at32--128-128-3-1]``); parameters that leave the name less
        # than _NAME_KEPT of itself (``test…[float32-hw]``): neither reads; on a line of its
        # own the id reads whole
        cut_both = any(
            "[" in x
            and len(x) <= width
            and name - (len(x) - x.index("[")) - 1 < min(_NAME_KEPT, x.index("["))
            for x in labels
            if len(x) > name
        )
        if cut_both or len({shorten(x, name) for x in labels}) < len(labels):
            cols.remove("benchmark")
            # the names' room is free: what was dropped to fit comes back while it fits (the
            # last dropped first), the figures indented under each name
            for c in reversed(dropped):
                trial = [x for x in columns if x in cols or x == c]
                if 2 + total(widths_of(trial)) <= width:
                    cols = trial
            return cols, widths_of(cols), True
        ws["benchmark"] = name
    return cols, ws, False


def _cell(text: str, n: int, right: bool) -> str:
    text = escape(text)  # a newline in a test id must not start a line of its own
    if len(text) > n:
        text = shorten(text, n)
    return text.rjust(n) if right else text.ljust(n)


def table_rows(
    results: Sequence[Result],
    *,
    columns: Sequence[str] | None = None,
    width: int | None = None,
    sort: str | None = None,
    group_by: str | None = None,
    verbose: bool = False,
) -> list[tuple[str, str | None]]:
    """The results table, each line with the verdict of its row (None: a header line).
    ``columns`` (keys of COLUMN_KEYS) is shown as asked; otherwise the essential columns (all
    with ``verbose``; with --perf-measure both the time change beside the counts), fitted to
    ``width`` (_layout). ``sort`` orders the rows, ``group_by``
    splits them into one titled block per benchmark, device, dtype or module."""
    chosen = list(columns) if columns else list(COLUMN_KEYS if verbose else ESSENTIAL)
    if not columns and any(r.time is not None for r in results):
        if "time" not in chosen:  # --perf-measure both: the clock beside the counts
            chosen.insert(chosen.index("change") + 1, "time")
    elif not columns and "time" in chosen:
        chosen.remove("time")
    fit = not columns  # -v too: every column that fits COLUMNS, then the narrowest names
    ordered = list(results)
    if sort:
        ordered.sort(key=_sort_key(sort))
    entries = [r.as_json() for r in ordered]
    if not columns:  # what a side verdict judged, where it moved (memory per call)
        for side in SIDES:
            if side.field not in chosen and any(side in moved(e) for e in entries):
                chosen.insert(chosen.index("verdict"), side.field)
    rows = [dict(zip(COLUMN_KEYS, _row_of(e), strict=True)) for e in entries]
    cols, ws, stacked = _layout(rows, chosen, width, fit)
    indent = "  " if stacked else ""

    def fmt(rw: dict[str, str]) -> str:
        return indent + "  ".join(_cell(rw[c], ws[c], c in _RIGHT) for c in cols).rstrip()

    def lines_of(r: Result, rw: dict[str, str]) -> list[tuple[str, str | None]]:
        status = row_status(r)
        if not stacked:
            return [(fmt(rw), status)]
        return [(escape(rw["benchmark"]), status), (fmt(rw), status)]

    head: list[tuple[str, str | None]] = [
        (fmt(headers_for(rows)), None),
        (indent + "  ".join("-" * ws[c] for c in cols), None),
    ]
    if stacked:  # the names on their own lines: say so above the figures
        head.insert(0, ("benchmark (its figures on the line below)", None))
    if not group_by:
        body = [line for r, rw in zip(ordered, rows, strict=True) for line in lines_of(r, rw)]
        return [*head, *body]
    key = _group_key(group_by)
    groups: dict[str, list[tuple[Result, dict[str, str]]]] = {}
    for r, rw in zip(ordered, rows, strict=True):
        groups.setdefault(str(key(r)), []).append((r, rw))
    lines: list[tuple[str, str | None]] = []
    for name, members in groups.items():
        lines.append((f"{group_by} {name}:", None))
        lines.extend(head)
        for r, rw in members:
            lines.extend(lines_of(r, rw))
        lines.append(("", None))
    return lines[:-1]


def row_status(r: Result) -> str:
    """What colours ``r``'s row: its verdict's status, or ``regressed`` where a verdict judged
    beside it (memory per call's) failed beside a verdict that passes."""
    if r.verdict.status != FAILED and sides_fail(r.sides):
        return REGRESSED
    return r.verdict.status


#: How a table row is coloured on a terminal that takes colour (pytest's ``--color``): a failure
#: red, a speed-up green, a benchmark not judged yellow, an unchanged one plain.
VERDICT_MARKUP: dict[str, dict[str, bool]] = {
    REGRESSED: {"red": True, "bold": True},
    FAILED: {"red": True, "bold": True},
    IMPROVED: {"green": True},
    INCONCLUSIVE: {"yellow": True},
    NO_BASELINE: {"yellow": True},
    INCOMPARABLE: {"yellow": True},
}


def wrap(lines: Sequence[str], width: int | None) -> list[str]:
    """Long note lines wrapped to ``width``, continuation lines indented."""
    import textwrap

    if width is None or width < 40:
        return list(lines)
    out: list[str] = []
    for text in lines:
        for line in text.split("\n"):  # a message's own lines stay lines
            # a process's output quoted in it (core.text.quoted) stays quoted where it folds
            quote = line.startswith(QUOTE)
            out.extend(
                textwrap.wrap(
                    line,
                    width=width,
                    subsequent_indent=QUOTE + "  " if quote else "    ",
                    break_on_hyphens=False,
                    break_long_words=False,  # a test id or a path stays whole, to copy
                )
                or [line]
            )
    return out


#: Host time at least this many times the device time: the report calls the benchmark
#: launch-bound.
LAUNCH_BOUND = 3.0


#: The line under a brief list of notes: where the rest is.
DETAILS = "details of each verdict: -v, or the results JSON (--perf-json)"


#: In a brief note, the benchmark's name is shortened (in the middle) to this many characters.
BRIEF_NAME = 40


def brief(line: str, width: int | None) -> str:
    """``line`` cut to ``width`` at the end of a clause (``; ``), or failing that at a word,
    with `` …`` where it was cut: the first clauses of a reason say what happened, the later
    ones what to do about it."""
    if width is None or len(line) <= width:
        return line
    clauses = line.split("; ")
    out = clauses[0]
    for clause in clauses[1:]:
        if len(out) + 2 + len(clause) + 2 > width:
            break
        out += "; " + clause
    if len(out) + 2 > width:  # the first clause alone is too long: cut it at a word
        cut = out[: width - 1].rfind(" ")
        out = out[: cut if cut > width // 2 else width - 2]
    return out + " …"


def notes(
    results: Sequence[Result], *, verbose: bool = True, width: int | None = None
) -> list[str]:
    """The lines under the table. ``verbose``: every reason and note of every benchmark (-v);
    otherwise one line per benchmark at most, its verdict's reason cut to ``width`` at a clause
    (``brief``), and a last line saying where the rest is."""
    lines: list[str] = []
    bound: list[str] = []
    left_out = False
    for r in results:
        v = r.verdict
        if v.reason and v.status not in ("no-baseline",):
            name = r.key if verbose else shorten(r.key, BRIEF_NAME)
            line = f"{name}: {v.status}: {v.reason}"
            cut = line if verbose else brief(line, width)
            left_out = left_out or cut != line
            lines.append(cut)
        for field, beside in r.sides.items():
            if beside.status in side(field).quiet and not verbose:
                continue
            name = r.key if verbose else shorten(r.key, BRIEF_NAME)
            line = f"{name}: {beside.line()}"
            cut = line if verbose else brief(line, width)
            left_out = left_out or cut != line
            lines.append(cut)
        sampling = r.sampling_note()
        if not verbose:
            left_out = left_out or bool(v.notes or sampling)
        else:
            if v.notes:
                lines.append(f"{r.key}: note: {'; '.join(v.notes)}")
            if sampling:
                lines.append(f"{r.key}: note: {sampling}")
        if r.sample.host_values is not None:
            host = summarize(r.sample.host_values).median
            dev = summarize(r.sample.values).median
            if dev < 0.01 * host:
                lines.append(
                    f"{r.key}: device time ({format_time(dev)}) is under 1% of host time "
                    f"({format_time(host)}): does the benchmark queue its work on the device "
                    "(device.queue / device.kernel)?"
                )
            elif host >= LAUNCH_BOUND * dev:
                bound.append(f"{r.key} {host / dev:.1f}x")
    if bound:  # one line: on a fast GPU most small benchmarks are
        lines.append(
            f"launch-bound, host time {LAUNCH_BOUND:g}x device time or more (the device waits for "
            "the host between calls; the verdict judges device time, so a slower host side shows "
            f"only with timer='host'): {', '.join(bound)}"
        )
    if left_out:
        lines.append(DETAILS)
    return lines


def speedups(results: Sequence[Result]) -> list[str]:
    """What compilation buys: one line per benchmark measured both ``eager`` and ``compiled``
    (parameters of that name) on the same device and dtype, as burn's release tables show fusion."""
    by_key = {(r.label, r.device_id, r.dtype): r for r in results}
    lines: list[str] = []
    for (label, device_id, dtype), eager in by_key.items():
        if "eager" not in label:
            continue
        compiled = by_key.get((label.replace("eager", "compiled"), device_id, dtype))
        if compiled is None:
            continue
        name = label.replace("[eager]", "").replace("-eager", "").replace("eager-", "")
        timed_e, timed_c = eager.timed(), compiled.timed()
        if timed_e is not None and timed_c is not None:
            t_e = summarize(timed_e.sample.values).median
            t_c = summarize(timed_c.sample.values).median
            said = f"{format_time(t_e)} -> compiled {format_time(t_c)}"
        elif eager.judged_by.counted and compiled.judged_by.counted:
            # both counted, no time beside: what each call executes, never read as a speed-up
            # (compiled code counted on callgrind's simulated CPU runs other kernels than the
            # host's: "0.14x" read as compilation being 7x slower)
            i_e = summarize(eager.sample.values).median
            i_c = summarize(compiled.sample.values).median
            lines.append(
                f"{name} on {device_id} {dtype}: eager {format_count(i_e)} -> compiled "
                f"{format_count(i_c)} instructions, counted, not timed: no speed-up is read from "
                "counts (--perf-measure both times them)"
            )
            continue
        else:
            continue  # one timed, one counted: no ratio means anything
        if t_c > 0:
            lines.append(f"{name} on {device_id} {dtype}: eager {said} ({t_e / t_c:.2f}x)")
    if lines:
        lines.insert(0, "eager vs torch.compile (medians of this run):")
    return lines


def versions_table(key: str, rows: Sequence[VersionSummary], verdict_line: str) -> list[str]:
    """One benchmark's versions table, as printed after the run."""

    if not rows:
        return []
    cells = [("version", "median", "95% interval", "runs", f"vs {rows[0].label}")]
    for s in rows:
        interval = (
            "-"
            if s.low is None or s.high is None
            else f"[{format_time(s.low)}, {format_time(s.high)}]"
        )
        if s is rows[0]:
            vs = "1.00x"
        elif s.speedup >= 1.0:
            vs = f"{s.speedup:.2f}x faster"
        else:
            vs = f"{1 / s.speedup:.2f}x slower"
        cells.append((s.label, format_time(s.median), interval, str(s.runs), vs))
    widths = [max(len(c[i]) for c in cells) for i in range(5)]
    lines = [key]
    for c in cells:
        lines.append(
            "  "
            + "  ".join(
                c[i].ljust(widths[i]) if i in (0, 2) else c[i].rjust(widths[i]) for i in range(5)
            ).rstrip()
        )
    lines.append("  " + verdict_line)
    return lines
