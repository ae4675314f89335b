"""A run's results as Markdown for a pull-request comment or a CI job summary
(``--perf-markdown FILE``, and appended to ``$GITHUB_STEP_SUMMARY`` where that is set).

Made from the results document (``report.json_document``, the ``--perf-json`` format), so a
results file from any run renders the same way. Regressions come first with their intervals,
then improvements, then the inconclusive ones with their reasons, then the full table folded
in a ``<details>`` block. Every name that comes from a test or a file is escaped. No pytest here.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_burnperf import json_fields as jf
from pytest_burnperf.core import measures
from pytest_burnperf.core.text import escape as visible
from pytest_burnperf.report.side_verdicts import (
    failed_beside,
    failed_beside_text,
    grew,
    summaries,
    tracked,
)
from pytest_burnperf.report.table_row import TableRow
from pytest_burnperf.storage import paths
from pytest_burnperf.storage.jsonfile import atomic_write_text

#: Environment variable GitHub Actions sets to the job summary file.
STEP_SUMMARY = "GITHUB_STEP_SUMMARY"
SUFFIXES = (".md", ".markdown")
_ORDER = ("regressed", "failed", "improved", "inconclusive", "unchanged", "incomparable")


#: A zero-width space: after ``@`` it keeps GitHub from turning ``@name`` into a mention (a
#: comment would notify that user), inside ``://`` and ``www.`` from linking a bare URL.
_ZWSP = "\u200b"


def escape(text: object) -> str:
    """Markdown's escaping, every renderer's text goes through it: safe inside a table cell (no
    HTML, no table or line breaks, no emphasis or links), control characters shown as ``\\x1b``,
    and no ``@mention`` or bare URL that GitHub would act on."""
    s = visible(" ".join(str(text).split()))
    for a, b in (
        ("\\", "\\\\"),
        ("&", "&amp;"),
        ("<", "&lt;"),
        (">", "&gt;"),
        ("|", "\\|"),
        ("`", "\\`"),
        ("*", "\\*"),
        ("_", "\\_"),
        ("[", "\\["),
        ("]", "\\]"),
    ):
        s = s.replace(a, b)
    s = s.replace("@", "@" + _ZWSP).replace("://", ":" + _ZWSP + "//")
    s = s.replace("www.", "www" + _ZWSP + ".")
    return " ".join(s.split())


def code(text: object) -> str:
    """``text`` as a code span: backslash escapes and entities would show literally inside one,
    so only what could end the span or the line goes (backticks, line breaks)."""
    return "`" + visible(" ".join(str(text).split())).replace("`", "'") + "`"


def _row(r: Mapping[str, object], cells: Sequence[str]) -> str:
    """One Markdown table row from the row model every table shares (table_row.py)."""
    row = TableRow.of(r)
    got = {
        # plain text, not a code span: inside one, the escapes would show as backslashes
        "benchmark": escape(row.name),
        "device": escape(row.where),
        "dtype": escape(row.dtype),
        "baseline": row.baseline,
        "current": row.median,
        "change": row.change,
        "p": row.p,
        "detects": row.detects,
        "verdict": escape(row.verdict),
        "reason": escape(row.reason) or "-",
        **{key: escape(cell) for key, cell in row.sides.items()},
    }
    return "| " + " | ".join(got[c] for c in cells) + " |"


def _what_grew(results: Sequence[Mapping[str, object]]) -> list[str]:
    """Each regressed benchmark's note of what grew (--perf-profile) and where a side verdict's
    regression grew (memory per call)."""
    lines = []
    for r in results:
        name = escape(r.get("name", r.get("test", "?")))
        prof = r.get("profile")
        if isinstance(prof, Mapping) and isinstance(prof.get("note"), str):
            lines.append(f"- {name}: {escape(prof['note'])}")
        for side, where in grew(r):
            lines.append(f"- {name}: {escape(side.field)} {escape(where)}")
    return ["**Where it grew**", "", *lines, ""] if lines else []


def _table(
    rows: Sequence[Mapping[str, object]], cells: Sequence[str], labels: Sequence[str]
) -> list[str]:
    out = ["| " + " | ".join(labels) + " |", "|" + "---|" * len(labels)]
    out.extend(_row(r, cells) for r in rows)
    return out


def render(doc: Mapping[str, object]) -> str:
    """The Markdown summary of one results document."""
    results = jf.mappings(doc.get("results"))
    status = [str(jf.mapping(r.get("verdict")).get("status", "?")) for r in results]
    counts = Counter(status)
    parts = [f"{counts[s]} {s}" for s in (*_ORDER, "no-baseline") if counts[s]]
    # benchmarks whose time or counts passed and whose memory per call (a side) failed
    failed_alone = sorted({i for _, places in failed_beside(results) for i in places})
    parts += failed_beside_text(results)
    title = ", ".join(parts) if parts else "no benchmark ran"
    machine = jf.mapping(doc.get("machine"))
    settings = jf.mapping(doc.get("settings"))
    same = settings.get("same_session")
    lines = [f"{TITLE}: {escape(title)}", ""]
    what = (
        f"same-session comparison of {escape(same.get('candidate'))} against "
        f"{escape(same.get('reference'))}"
        if isinstance(same, Mapping)
        else f"baselines in {code(settings.get('baselines', '?'))}"
    )
    threshold = jf.number(settings.get("threshold", 0.05)) or 0.0
    own = Counter(
        t
        for r in results
        if (t := jf.number(jf.mapping(r.get("verdict")).get("threshold"))) is not None
        and abs(t - threshold) > 1e-12
    )
    others = "".join(
        f" ({100 * t:g}% on {n} device-bound GPU kernel{'s' if n > 1 else ''})"
        for t, n in sorted(own.items())
    )
    lines.append(
        f"Machine {code(machine.get('id', machine.get('machine_id', '?')))}; {what}; "
        f"{_rules(results, settings, f'threshold {100 * threshold:g}%{others}')}, alpha "
        f"{jf.number(settings.get('alpha', 0.01)) or 0.0:g} over the run; {escape(doc.get('created', ''))}."
    )
    lines.append("")
    for said in summaries(results):
        lines += [f"{escape(said[0].upper() + said[1:])}.", ""]
    lines += _coverage_lines(doc.get("coverage"), settings.get("reference"))
    by = {s: [r for r, st in zip(results, status, strict=True) if st == s] for s in counts}
    slow = by.get("regressed", []) + by.get("failed", []) + [results[i] for i in failed_alone]
    # the verdicts judged beside the time (memory per call), where any was
    beside = tracked(results)
    side_keys = tuple(side.field for side in beside)
    side_labels = tuple(side.column for side in beside)
    mem: tuple[tuple[str, ...], tuple[str, ...]] = (
        ((*side_keys, "verdict"), (*side_labels, "verdict")) if beside else ((), ())
    )
    if slow:
        lines += [f"### Regressions ({len(slow)})", ""]
        lines += _table(
            slow,
            ("benchmark", "device", "dtype", "baseline", "current", "change", "p", *mem[0]),
            ("benchmark", "device", "dtype", "before", "now", "change [95% CI]", "p", *mem[1]),
        )
        lines.append("")
        lines += _what_grew(slow)
    if by.get("improved"):
        lines += [f"### Improvements ({len(by['improved'])})", ""]
        lines += _table(
            by["improved"],
            ("benchmark", "device", "dtype", "baseline", "current", "change"),
            ("benchmark", "device", "dtype", "before", "now", "change [95% CI]"),
        )
        lines.append("")
    if by.get("inconclusive"):
        lines += [f"### Inconclusive ({len(by['inconclusive'])})", ""]
        lines += _table(
            by["inconclusive"],
            ("benchmark", "device", "dtype", "change", "reason"),
            ("benchmark", "device", "dtype", "change [95% CI]", "why"),
        )
        lines.append("")
    if results:
        rank = {s: i for i, s in enumerate((*_ORDER, "no-baseline"))}
        ordered = [
            r
            for _, r in sorted(zip(status, results, strict=True), key=lambda p: rank.get(p[0], 99))
        ]
        lines += [f"<details><summary>All {len(results)} results</summary>", ""]
        lines += _table(
            ordered,
            (
                "benchmark",
                "device",
                "dtype",
                "current",
                "baseline",
                "change",
                "detects",
                *side_keys,
                "verdict",
            ),
            (
                "benchmark",
                "device",
                "dtype",
                "median",
                "before",
                "change [95% CI]",
                "detects",
                *side_labels,
                "verdict",
            ),
        )
        lines += ["", "</details>", ""]
    return "\n".join(lines)


def _rules(
    results: Sequence[Mapping[str, object]], settings: Mapping[str, object], threshold: str
) -> str:
    """What judged the run's benchmarks: the threshold (the timed ones', or the user's, which
    every measure takes) and, for those judged by counted instructions, their minimum effects
    (``1 judged by counted instructions (minimum effect 0.5-1.5%)``)."""
    counted = [r for r in results if measures.of_field(r.get("measure", r.get("timer"))).counted]
    said = []
    if len(counted) < len(results) or settings.get("threshold_given") or not counted:
        said.append(threshold + (" (timed)" if counted and len(counted) < len(results) else ""))
    if counted:
        effects = sorted(
            e
            for r in counted
            if (e := jf.number(jf.mapping(r.get("verdict")).get("min_effect"))) is not None
        )
        span = (
            "?"
            if not effects
            else f"{100 * effects[0]:.2g}%"
            if f"{100 * effects[0]:.2g}" == f"{100 * effects[-1]:.2g}"
            else f"{100 * effects[0]:.2g}-{100 * effects[-1]:.2g}%"
        )
        said.append(f"{len(counted)} judged by counted instructions (minimum effect {span})")
    return ", ".join(said)


def _coverage_lines(cov: object, reference: object) -> list[str]:
    """**Judged 10 of 12 (83%)**, what the rest lacked and what would judge them."""
    lines: list[str] = []
    if isinstance(reference, Mapping):
        text = reference.get("problem") or reference.get("why")
        lines += [f"Reference (`--perf-against auto`): {escape(text)}.", ""]
    if not isinstance(cov, Mapping):
        return lines
    try:
        judged, total = int(cov.get("judged", 0)), int(cov.get("total", 0))
        share, minimum = float(cov.get("share", 1.0)), cov.get("min_share")
    except (TypeError, ValueError):
        return lines
    mark = ""
    if isinstance(minimum, (int, float)) and minimum > 0:
        mark = " (below the minimum: run failed)" if share < minimum else ""
        mark = f"; minimum {100 * float(minimum):.0f}%{mark}"
    lines.append(f"**Judged {judged} of {total} benchmarks ({100 * share:.0f}%)**{escape(mark)}")
    missed = cov.get("missed")
    if isinstance(missed, Mapping) and missed:
        lines.append("")
        for text in cov.get("advice") or []:
            lines.append(f"- {escape(text)}")
    lines.append("")
    return lines


#: How every summary this module renders begins: what a later run may replace.
TITLE = "## pytest-burnperf"


def written_by_us(head: bytes) -> bool:
    """Whether a file starting with ``head`` is a summary this module rendered."""
    return head.startswith(TITLE.encode())


def target_problem(path: Path, *, force: bool = False) -> str | None:
    """Why ``--perf-markdown`` (or ``burnperf report -o``) must not write ``path``, or None: not
    a Markdown name, a directory, or an existing file that is not one of our summaries."""
    if path.suffix.lower() not in SUFFIXES:
        return f"must be a Markdown file ending in {' or '.join(SUFFIXES)}, got {path.name!r}"
    return paths.target_problem(path, written_by_us, force=force)


class StepSummaryError(OSError):
    """The Markdown file was written, the job summary could not be appended to."""


def write(path: Path, text: str, environ: Mapping[str, str] | None = None) -> list[str]:
    """Write ``text`` to ``path`` (atomically) and append it to the job summary where
    ``$GITHUB_STEP_SUMMARY`` names one; the files written. :class:`StepSummaryError` where
    only the append failed (``path`` is written then)."""

    env = os.environ if environ is None else environ
    atomic_write_text(path, text)
    done = [str(path)]
    summary = env.get(STEP_SUMMARY)
    if summary:
        try:
            with open(summary, "a", encoding="utf-8") as f:
                f.write(text if text.endswith("\n") else text + "\n")
        except OSError as exc:
            why = exc.strerror or str(exc)
            raise StepSummaryError(
                f"${STEP_SUMMARY} {summary}: cannot append to it: {why}"
            ) from None
        done.append(summary)
    return done
