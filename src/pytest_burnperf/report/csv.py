"""CSV for spreadsheets: one row per benchmark of a results document, or one row per stored run
of each benchmark from the results store. No pytest here."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence

from pytest_burnperf import json_fields as jf
from pytest_burnperf.core import measures
from pytest_burnperf.core.text import escape
from pytest_burnperf.report import side_verdicts
from pytest_burnperf.report.table_row import baseline_median, judged_median

#: Each figure's column names its unit: a timed benchmark's medians are seconds (``median_s``),
#: a counted one's instructions (``median_instructions``); ``measure`` says which is filled.
RESULT_COLUMNS = (
    "test",
    "name",
    "backend",
    "kind",
    "dtype",
    "measure",
    "median_s",
    "baseline_median_s",
    "median_instructions",
    "baseline_median_instructions",
    "change_pct",
    "ci95_low_pct",
    "ci95_high_pct",
    "p_slower",
    "min_detectable_pct",
    "status",
    "rounds",
    "samples",
    *side_verdicts.csv_columns(),  # memory per call's: status, peak, allocated, allocations
)
HISTORY_COLUMNS = (
    "created",
    "commit",
    "branch",
    "hardware_class",
    "test",
    "backend",
    "kind",
    "dtype",
    "measure",
    "median_s",
    "ci95_low_s",
    "ci95_high_s",
    "median_instructions",
    "status",
    *side_verdicts.history_csv_columns(),  # memory per call's: peak, allocated, allocations
)


def written_by_us(head: bytes) -> bool:
    """Whether a file starting with ``head`` is a CSV file this module wrote (its header row)."""
    first = head.split(b"\n", 1)[0].rstrip(b"\r").decode("utf-8", "replace")
    ours = (RESULT_COLUMNS, HISTORY_COLUMNS, *_EARLIER)
    return first in (",".join(columns) for columns in ours)


def _without(columns: Sequence[str], *left_out: str) -> tuple[str, ...]:
    return tuple(c for c in columns if c not in left_out)


#: The header rows this module wrote before the measure had columns of its own: a file of
#: those is ours to overwrite too.
_EARLIER = (
    _without(RESULT_COLUMNS, "measure", "median_instructions", "baseline_median_instructions"),
    _without(HISTORY_COLUMNS, "measure", "median_instructions"),
)


def _by_measure(counted: bool, *values: object) -> tuple[object, ...]:
    """``values`` in the seconds columns and blanks in the instructions columns for a timed
    benchmark; the other way round for a counted one."""
    blank = (None,) * len(values)
    return (*blank, *values) if counted else (*values, *blank)


def _pct(ratio: object) -> float | str:
    return round(100 * (ratio - 1), 4) if isinstance(ratio, (int, float)) else ""


def _cell(value: object) -> object:
    """A spreadsheet cell, CSV's escaping: control characters (line breaks included) shown as
    ``\\x0d``, and text that a spreadsheet would run as a formula quoted with a leading ``'``."""
    if isinstance(value, str):
        value = escape(value)
        if value[:1] in ("=", "+", "-", "@", "\t", "\r"):
            return "'" + value
        return value
    return "" if value is None else value


def results_csv(doc: Mapping[str, object]) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(RESULT_COLUMNS)
    for r in jf.mappings(doc.get("results")):
        measure = measures.of_field(r.get("measure", r.get("timer")))
        v = jf.mapping(r.get("verdict"))
        ci: list[float | None] = [*jf.floats(v.get("ratio_ci95"))] or [None, None]
        runs = jf.sequence(r.get("runs"))
        mds = jf.number(v.get("min_detectable_slowdown"))
        w.writerow(
            _cell(x)
            for x in (
                r.get("test"),
                r.get("name"),
                r.get("backend"),
                r.get("kind"),
                r.get("dtype"),
                measure.name,
                *_by_measure(measure.counted, judged_median(r), baseline_median(r)),
                _pct(v.get("ratio")),
                _pct(ci[0]),
                _pct(ci[1]),
                v.get("p_slower"),
                _pct(None if mds is None else 1 + mds),
                v.get("status"),
                len(runs),
                sum(len(jf.sequence(x)) for x in runs) or len(jf.sequence(r.get("samples"))),
                *side_verdicts.csv_values(r),
            )
        )
    return out.getvalue()


def history_csv(points: Sequence[Mapping[str, object]]) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(HISTORY_COLUMNS)
    for p in points:
        measure = measures.of_field(p.get("measure"))
        seconds = (p.get("median"), p.get("low"), p.get("high"))
        w.writerow(
            _cell(x)
            for x in (
                p.get("created"),
                p.get("commit"),
                p.get("branch"),
                p.get("hardware_class"),
                p.get("test"),
                p.get("backend"),
                p.get("kind"),
                p.get("dtype"),
                measure.name,
                *(seconds if not measure.counted else (None, None, None)),
                p.get("median") if measure.counted else None,
                p.get("status"),
                *side_verdicts.history_csv_values(p),
            )
        )
    return out.getvalue()
