"""What the GitHub Action (``.github/actions/burnperf``) publishes from a run: the verdict counts
as step outputs, a pull-request comment that fits GitHub's limit, and whether a comment can be
written at all (a pull request from a fork gets a read-only token). ``burnperf github`` runs it.
No pytest here.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_burnperf import json_fields as jf
from pytest_burnperf.core.sides.side_registry import SIDES
from pytest_burnperf.report.markdown import escape, render

#: GitHub refuses an issue comment longer than this many characters.
COMMENT_LIMIT = 65_536
#: The hidden line that marks this action's comment (one per label), so a later run updates it.
MARKER = "<!-- burnperf:{label} -->"
#: The verdicts counted as outputs, in the order the action lists them.
VERDICTS = ("regressed", "failed", "improved", "unchanged", "inconclusive", "no-baseline")


def counts(doc: Mapping[str, object] | None) -> dict[str, int]:
    """Benchmarks per verdict, ``judged``/``not-judged``/``total`` from the run's coverage (the
    results document of ``--perf-json``; None: the run wrote none), and ``memory-regressed``."""
    results = jf.mappings((doc or {}).get("results"))
    seen = Counter(str(jf.mapping(r.get("verdict")).get("status", "?")) for r in results)
    out = {v: seen.get(v, 0) for v in VERDICTS}
    out["incomparable"] = seen.get("incomparable", 0)
    cov = (doc or {}).get("coverage")
    total = len(results)
    judged = total - out["inconclusive"] - out["no-baseline"] - out["incomparable"]
    if isinstance(cov, Mapping):
        with contextlib.suppress(TypeError, ValueError):
            total, judged = int(cov.get("total", total)), int(cov.get("judged", judged))
    out["judged"] = judged
    out["not-judged"] = max(total - judged, 0)
    out["total"] = total
    # per verdict judged beside, the benchmarks whose verdict of it failed (memory per call:
    # regressed, or over max_memory; ``memory-regressed``): their tests failed whatever their
    # time's verdict
    for side in SIDES:
        out[f"{side.field}-regressed"] = sum(1 for r in results if side.fails(r))
    return out


def fit(text: str, limit: int = COMMENT_LIMIT, link: str | None = None) -> str:
    """``text`` (Markdown) cut to at most ``limit`` characters: the longest table loses rows
    from its end first, each cut table saying how many rows it left out and where the rest is;
    prose is cut last, at a line. Shorter text is returned as it is."""
    if len(text) <= limit:
        return text
    safe = _safe_link(link)
    where = f"[the full summary]({safe})" if safe else "the full summary is in the job's artifacts"
    lines = text.split("\n")
    tables = _tables(lines)
    cut: dict[int, int] = {}  # table index -> rows left out

    def build() -> str:
        out: list[str] = []
        i = 0
        for t, (start, end) in enumerate(tables):
            out.extend(lines[i:start])
            body = lines[start:end]
            dropped = cut.get(t, 0)
            if dropped:
                width = body[0].count("|") - 1
                kept = body[: len(body) - dropped]
                note = f"{dropped} more row(s) left out to fit GitHub's comment limit; {where}"
                kept.append("| " + " | ".join([note] + [""] * (width - 1)) + " |")
                body = kept
            out.extend(body)
            i = end
        out.extend(lines[i:])
        return "\n".join(out)

    result = build()
    while len(result) > limit:
        rows = {t: (end - start - 2) - cut.get(t, 0) for t, (start, end) in enumerate(tables)}
        longest = max(rows, key=lambda t: rows[t], default=None)
        if longest is None or rows[longest] <= 0:
            break
        # drop about as many rows as the excess needs, at least one
        start, end = tables[longest]
        row_chars = max(1, sum(len(x) + 1 for x in lines[start + 2 : end]) // (end - start - 2))
        need = max(1, (len(result) - limit) // row_chars)
        cut[longest] = cut.get(longest, 0) + min(need, rows[longest])
        result = build()
    if len(result) > limit:
        note = f"\n\n_(cut to fit GitHub's comment limit; {where})_\n"
        head = result[: max(limit - len(note), 0)]
        head = head[: head.rfind("\n")] if "\n" in head else head
        result = head + note
    return result


def _safe_link(url: str | None) -> str | None:
    """``url`` where it can be a Markdown link target as it is (an https URL without spaces,
    brackets or quotes: the artifact's address GitHub gives), else None."""
    if not url or not re.fullmatch(r"https://[A-Za-z0-9._~:/?#@!$&'*+,;=%-]+", url):
        return None
    return url if "'" not in url else None


def _tables(lines: Sequence[str]) -> list[tuple[int, int]]:
    """``(start, end)`` of each Markdown table with at least one row: a header line, a
    ``|---|`` separator line, then rows (``end`` excluded)."""
    found: list[tuple[int, int]] = []
    i = 0
    while i < len(lines) - 1:
        if lines[i].startswith("|") and lines[i + 1].startswith("|---"):
            j = i + 2
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            if j > i + 2:
                found.append((i, j))
            i = j
        else:
            i += 1
    return found


def may_comment(environ: Mapping[str, str]) -> tuple[bool, str]:
    """Whether this job can comment on a pull request, and why not: only on a pull-request event
    whose head repository is this repository (a fork's pull request runs with a token that
    cannot write comments, and a failed comment must not fail the benchmarks)."""
    event = environ.get("GITHUB_EVENT_NAME", "")
    if event not in ("pull_request", "pull_request_target"):
        return False, f"not a pull request (event {event or 'unknown'})"
    payload: Any = {}
    path = environ.get("GITHUB_EVENT_PATH")
    if path:
        try:
            payload = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            return False, f"the event file {path} cannot be read: {exc}"

    def field(obj: Any, key: str) -> Any:  # a payload of other shapes names no head
        return obj.get(key) if isinstance(obj, dict) else None

    head = field(field(field(payload, "pull_request"), "head"), "repo") or {}
    repo = environ.get("GITHUB_REPOSITORY", "")
    if not isinstance(head, dict) or not head.get("full_name"):
        return False, "the event names no pull request head"
    if head.get("full_name") != repo or head.get("fork"):
        return False, (
            f"a pull request from the fork {head.get('full_name')}: its token cannot write "
            "comments, so the verdicts are in the job summary only"
        )
    return True, "a pull request from this repository"


def comment(
    doc: Mapping[str, object] | None,
    *,
    label: str,
    exit_code: int,
    output_tail: str = "",
    link: str | None = None,
    limit: int = COMMENT_LIMIT,
) -> str:
    """The pull-request comment: the marker, the run's Markdown summary (or, where the run wrote
    no results, its exit code and the end of its output), cut to ``limit``."""
    head = MARKER.format(label=_marker_safe(label))
    title = f"**pytest-burnperf on {escape(label)}** (pytest exited {exit_code})"
    if doc is not None:
        body = render(doc)
    else:
        tail = output_tail.replace("```", "'''")
        body = f"No results to show:\n\n```\n{tail}\n```\n"
    safe = _safe_link(link)
    if safe:
        body += f"\n[Results, summary and output]({safe})\n"
    text = f"{head}\n{title}\n\n{body}"
    return fit(text, limit, link)


def _marker_safe(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in label)[:64]


def write_outputs(path: Path, values: Mapping[str, object]) -> None:
    """Append ``name=value`` lines to a ``$GITHUB_OUTPUT`` file (values on one line)."""
    with open(path, "a", encoding="utf-8") as f:
        for name, value in values.items():
            f.write(f"{name}={' '.join(str(value).split())}\n")
