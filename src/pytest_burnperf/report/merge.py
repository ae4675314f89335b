"""The results of N shards (``--perf-shard K/N``) as one run: ``burnperf merge``. No pytest here.

The shards must be of one run: the same selection (its fingerprint), shard count, comparisons
(the family-wise alpha every shard judged at), alpha, threshold, git commit and hardware class.
A shard given twice (a retried CI job) counts once, the newer one; a missing shard or a benchmark
in two shards is an error, so nothing is lost or counted twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import NoReturn
from xml.sax.saxutils import escape as xml_escape
from xml.sax.saxutils import quoteattr

from pytest_burnperf import json_fields as jf
from pytest_burnperf.core.judging import abstention
from pytest_burnperf.core.judging.abstention import Cause
from pytest_burnperf.core.judging.coverage import coverage, shortfall
from pytest_burnperf.core.judging.verdict import VERDICTS
from pytest_burnperf.core.options.shards import selection_id
from pytest_burnperf.core.sides.side_registry import SIDES
from pytest_burnperf.core.text import escape
from pytest_burnperf.report.side_verdicts import failed_beside, failed_beside_text, summaries

#: What every shard of one run must agree on: (where in the document, what it is called).
_SAME = (
    (("settings", "shard", "count"), "the shard count"),
    (("settings", "shard", "selection"), "the selection (its benchmarks)"),
    (("settings", "shard", "comparisons"), "the comparisons"),
    (("settings", "alpha"), "alpha"),
    (("settings", "threshold"), "the threshold"),
    (("settings", "update_baselines"), "--perf-update"),
    (("git", "commit"), "the git commit"),
    (("machine", "hardware_class"), "the hardware class"),
)


class MergeError(ValueError):
    """Shards that cannot be merged; ``str()`` names the files and what differs."""


#: The most shards a run may be split into (a CI matrix wider than this is no plan).
MAX_SHARDS = 1000


def _created(name: str, doc: Mapping[str, object]) -> datetime:
    """When the shard's run ended, parsed (dates compared as text put ``5`` after 2026)."""
    text = doc.get("created")
    try:
        if not isinstance(text, str):
            raise ValueError(text)
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise MergeError(
            f"{name}: created is {escape(repr(text))}, not a date (ISO 8601, as --perf-json "
            "writes it)"
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def check(name: str, doc: Mapping[str, object]) -> None:
    """A shard's results document as --perf-json writes it, or MergeError naming the field:
    hand-edited shard metadata must not hang, crash or silently change a merge."""

    def fail(where: str, what: str) -> NoReturn:
        raise MergeError(f"{name}: {where} {what}")

    shard = _get(doc, ("settings", "shard"))
    if not isinstance(shard, Mapping) or not isinstance(shard.get("index"), int):
        raise MergeError(f"{name}: not a shard's results (the run had no --perf-shard)")
    for key in ("index", "count", "comparisons"):
        value = shard.get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            fail(f"settings.shard.{key}", f"is {escape(repr(value))}, not a whole number")
    count, index = int(shard["count"]), int(shard["index"])
    if not 1 <= count <= MAX_SHARDS:
        fail("settings.shard.count", f"is {count}, not between 1 and {MAX_SHARDS}")
    if not 1 <= index <= count:
        fail("settings.shard.index", f"is {index}, not between 1 and the count, {count}")
    if int(shard["comparisons"]) < 0:
        fail("settings.shard.comparisons", f"is {shard['comparisons']}, below 0")
    if not isinstance(shard.get("selection"), str):
        fail("settings.shard.selection", "is missing (the fingerprint of the selection)")
    _created(name, doc)
    results = doc.get("results")
    if not isinstance(results, list):
        fail("results", "is not a list")
    for i, r in enumerate(results):
        if not isinstance(r, Mapping) or not isinstance(r.get("test"), str):
            fail(f"results[{i}]", "is not a result with its test's id")
        status = (
            (r.get("verdict") or {}).get("status")
            if isinstance(r.get("verdict"), Mapping)
            else None
        )
        if status not in VERDICTS:
            fail(
                f"results[{i}].verdict.status",
                f"is {escape(repr(status))}; allowed: {', '.join(VERDICTS)}",
            )
    minimum = _get(doc, ("coverage", "min_share"))
    if minimum is not None and (
        isinstance(minimum, bool) or not isinstance(minimum, (int, float)) or not 0 <= minimum <= 1
    ):
        fail("coverage.min_share", f"is {escape(repr(minimum))}, not a share from 0 to 1")


def _get(doc: Mapping[str, object], path: tuple[str, ...]) -> object:
    value: object = doc
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def merge(docs: Sequence[tuple[str, Mapping[str, object]]]) -> tuple[dict[str, object], list[str]]:
    """One results document from the shards' (``(name, document)`` each), and notes (a shard
    given twice). Raises :class:`MergeError`."""
    if not docs:
        raise MergeError("no shard results given")
    by_index: dict[int, tuple[str, Mapping[str, object]]] = {}
    notes: list[str] = []
    for name, doc in docs:
        check(name, doc)
        shard = jf.mapping(_get(doc, ("settings", "shard")))  # checked: whole numbers
        if doc.get("interrupted") is True:
            raise MergeError(f"{name}: shard {shard['index']} was interrupted; run it again")
        first_name, first = docs[0]
        for path, what in _SAME:
            if _get(doc, path) != _get(first, path):
                raise MergeError(
                    f"{name} and {first_name} are not shards of one run: {what} differs "
                    f"({escape(str(_get(doc, path)))!s} vs {escape(str(_get(first, path)))!s})"
                )
        index = jf.integer(shard.get("index")) or 0
        if index in by_index:
            older, newer = sorted(
                [by_index[index], (name, doc)], key=lambda p: _created(p[0], p[1])
            )
            notes.append(
                f"shard {index} given twice ({older[0]}, {newer[0]}): kept the newer, {newer[0]}"
            )
            by_index[index] = newer
        else:
            by_index[index] = (name, doc)
    count = jf.integer(_get(docs[0][1], ("settings", "shard", "count"))) or 0
    missing = [k for k in range(1, count + 1) if k not in by_index]
    if missing:
        raise MergeError(
            f"shard(s) {', '.join(map(str, missing))} of {count} missing: every shard's "
            "--perf-json is needed (a run of them all, or a retried one)"
        )
    results: list[dict[str, object]] = []
    seen: dict[str, str] = {}
    for index in sorted(by_index):
        name, doc = by_index[index]
        for r in jf.mappings(doc.get("results")):
            test = str(r.get("test"))
            if test in seen:
                raise MergeError(
                    f"{escape(test)} is in {seen[test]} and in {name}: counted twice; these are "
                    "not shards of one split"
                )
            seen[test] = name
            results.append(dict(r))
    results.sort(key=lambda r: str(r.get("test")))
    claimed = jf.integer(_get(docs[0][1], ("settings", "shard", "comparisons"))) or 0
    if len(results) > claimed:
        raise MergeError(
            f"the shards hold {len(results)} benchmarks, more than the {claimed} of the "
            "selection they claim: a shard of another selection, or edited"
        )
    if len(results) == claimed:
        selection = _get(docs[0][1], ("settings", "shard", "selection"))
        if selection_id(str(r.get("test")) for r in results) != selection:
            raise MergeError(
                "the shards' benchmarks are not the selection they claim (its fingerprint "
                "differs): a shard of another selection, or edited"
            )
    newest = max(by_index.values(), key=lambda p: _created(p[0], p[1]))[1]
    base = by_index[1][1]
    settings = dict(jf.mapping(base.get("settings")))
    shard = jf.mapping(settings.get("shard"))
    settings["shard"] = {
        "count": count,
        "selection": shard.get("selection"),
        "comparisons": shard.get("comparisons"),
        "merged_from": [by_index[k][0] for k in sorted(by_index)],
    }
    cov = coverage(_cases(results))
    minimum = _get(base, ("coverage", "min_share"))
    advice = list(
        dict.fromkeys(
            a
            for _, d in sorted(by_index.items())
            for a in jf.sequence(_get(d[1], ("coverage", "advice")))
            if isinstance(a, str)
        )
    )
    merged = {
        "schema": base.get("schema"),
        "version": base.get("version"),
        "created": newest.get("created"),
        "machine": base.get("machine"),
        "git": base.get("git"),
        "settings": settings,
        "results": results,
        "coverage": cov.as_json(
            float(minimum) if isinstance(minimum, (int, float)) else None, advice
        ),
    }
    return merged, notes


def _cases(results: Sequence[Mapping[str, object]]) -> list[tuple[str, str, Cause | None]]:
    """``(test, status, cause)`` of each result, as :func:`core.judging.coverage.coverage` counts them
    (a shard written before verdicts named their cause: its status's)."""
    out: list[tuple[str, str, Cause | None]] = []
    for r in results:
        v = jf.mapping(r.get("verdict"))
        status = str(v.get("status", ""))
        out.append((str(r.get("test")), status, abstention.parse(v.get("cause"), status)))
    return out


def verdict(merged: Mapping[str, object]) -> tuple[int, str]:
    """The merged run's exit code (0, or 1 for a regression or a run that judged too little)
    and its summary line."""
    results = jf.mappings(merged.get("results"))
    status = [str(jf.mapping(r.get("verdict")).get("status", "")) for r in results]
    counts = {s: status.count(s) for s in dict.fromkeys(status)}
    cov = jf.mapping(merged.get("coverage"))
    minimum = cov.get("min_share")
    text = ", ".join(f"{n} {s}" for s, n in counts.items()) or "no benchmark"
    judged = f"judged {cov.get('judged', 0)} of {cov.get('total', 0)}"
    short = None
    if isinstance(minimum, (int, float)) and minimum > 0:
        short = shortfall(coverage(_cases(results)), float(minimum))
    # a benchmark whose time or counts passed and whose memory per call (a side) failed fails too
    failed_alone = {i for _, places in failed_beside(results) for i in places}
    text = ", ".join([text, *failed_beside_text(results)])
    bad = counts.get("regressed", 0) + counts.get("failed", 0) + len(failed_alone)
    said = "".join(f"; {line}" for line in summaries(results))
    line = f"{text}; {judged}" + (f"; {short}" if short else "") + said
    return (1 if bad or short else 0), line


def junit(merged: Mapping[str, object]) -> str:
    """The merged run as JUnit XML: one test case per benchmark, a failure per regression."""
    results = jf.mappings(merged.get("results"))
    cases = []
    failures = 0
    for r in results:
        v = jf.mapping(r.get("verdict"))
        test = str(r.get("test", "?"))
        module, _, name = test.partition("::")
        body = ""
        failed_sides = [side for side in SIDES if side.fails(r)]
        if v.get("status") in ("regressed", "failed"):
            failures += 1
            body = (
                f"<failure message={quoteattr(escape(str(v.get('reason') or v.get('status'))))}>"
                f"{xml_escape(escape(str(v.get('reason', ''))))}</failure>"
            )
        elif failed_sides:
            failures += 1
            said = failed_sides[0].failure(r.get(failed_sides[0].field))
            body = (
                f"<failure message={quoteattr(escape(said))}>{xml_escape(escape(said))}</failure>"
            )
        elif v.get("status") in ("inconclusive", "no-baseline", "incomparable"):
            body = f"<skipped message={quoteattr(escape(str(v.get('status'))))} />"
        cases.append(
            f"<testcase classname={quoteattr(escape(module))} name={quoteattr(escape(name))}>"
            f"{body}</testcase>"
        )
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        f'<testsuites><testsuite name="pytest-burnperf" tests="{len(results)}" '
        f'failures="{failures}">' + "".join(cases) + "</testsuite></testsuites>\n"
    )
