"""A ``--perf-json`` results document as the results store's rows (storage/history/store.py):
one for the run, one per benchmark (its median and interval from the process rounds, its
verdict, raw runs, each verdict judged beside and the counts record), and the run's identity. No database
here."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping

from pytest_burnperf import json_fields as jf
from pytest_burnperf.core import measures
from pytest_burnperf.core.records.versions import level
from pytest_burnperf.core.sides.side_registry import SIDES


class RowError(ValueError):
    """A result that cannot be stored: ``str()`` names its field and what is wrong."""


def _finite(x: object) -> float | None:
    return float(x) if isinstance(x, (int, float)) and math.isfinite(x) else None


def run_key(doc: Mapping[str, object]) -> str:
    """The identity of a run: the sha256 of its results document written canonically."""
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str, allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def rows_of(
    doc: Mapping[str, object], key: str, source: str
) -> tuple[dict[str, object], list[dict[str, object]]]:
    machine = doc.get("machine") if isinstance(doc.get("machine"), Mapping) else {}
    git = doc.get("git") if isinstance(doc.get("git"), Mapping) else {}
    assert isinstance(machine, Mapping) and isinstance(git, Mapping)
    run = {
        "run_key": key,
        "created": str(doc.get("created") or ""),
        "machine_id": str(machine.get("id") or "unknown"),
        "hardware_class": str(machine.get("hardware_class") or "unknown"),
        "commit": git.get("commit"),
        "branch": git.get("branch"),
        "dirty": git.get("dirty"),
        "source": source,
        "machine": dict(machine),
        "settings": dict(jf.mapping(doc.get("settings"))),
    }
    out = []
    for i, r in enumerate(_results(doc)):
        run_list = [x for x in jf.rounds(r.get("runs")) if x] or [jf.floats(r.get("samples"))]
        run_list = [x for x in run_list if x]
        if not run_list:
            continue
        med, low, high = level(run_list)
        v = r.get("verdict") if isinstance(r.get("verdict"), Mapping) else {}
        assert isinstance(v, Mapping)
        name = str(r.get("name") or r.get("test"))
        beside = _sides(r, i)
        out.append(
            {
                "test": str(r.get("test") or name),
                "name": name,
                "benchmark": str(r.get("benchmark") or name.split("[", 1)[0]),
                "backend": str(r.get("backend") or ""),
                "kind": str(r.get("kind") or ""),
                "dtype": str(r.get("dtype") or ""),
                "median": med,
                "low": low,
                "high": high,
                "status": str(v.get("status") or "unknown"),
                "ratio": _finite(v.get("ratio")),
                "mds": _finite(v.get("min_detectable_slowdown")),
                "runs": run_list,
                "detail": {
                    "verdict": dict(v),
                    "device": r.get("device"),
                    "host": r.get("host"),
                    "host_disturbed": r.get("host_disturbed"),
                    "settings": r.get("settings"),
                    "baseline": r.get("baseline"),
                },
                **beside,
                "counts": _counts(r, f"results[{i}].counts"),
                "measure": _measure(r, f"results[{i}]").name,
            }
        )
    return run, out


def _measure(r: Mapping[str, object], where: str) -> measures.Judged:
    """What a result's median and runs are: its ``measure``, or (a file written before the
    field) its ``timer``'s; RowError for a measure no version wrote."""
    if r.get("measure") is None:
        return measures.of_field(r.get("timer"))
    try:
        return measures.judged(r.get("measure"))
    except ValueError as exc:
        raise RowError(f"{where}.measure: {exc}") from None


def _counts(r: Mapping[str, object], where: str) -> dict[str, object] | None:
    """A counted result's counts record (its key, interpreter share and, where the result says
    them, its counted calls' places), None for a timed one or one without a record; RowError
    where it is not one."""
    counts = r.get("counts")
    if not measures.of_field(r.get("timer")).counted or counts is None:
        return None
    key = counts.get("key") if isinstance(counts, Mapping) else None
    share = counts.get("interpreter", 0.0) if isinstance(counts, Mapping) else None
    if (
        not isinstance(key, Mapping)
        or isinstance(share, bool)
        or not isinstance(share, (int, float))
    ):
        raise RowError(f"{where}: must hold a key (an object) and an interpreter share (a number)")
    record: dict[str, object] = {"key": dict(key), "interpreter": float(share)}
    # each counted call's place among its process's calls (compare-history pairs by them)
    places = jf.mapping(counts).get("positions")
    if places is not None:
        if not isinstance(places, list) or not all(
            isinstance(p, int) and not isinstance(p, bool) and p >= 1 for p in places
        ):
            raise RowError(f"{where}.positions: must be a list of whole numbers from 1")
        record["positions"] = list(places)
    return record


def _sides(r: Mapping[str, object], i: int) -> dict[str, object]:
    """The store's columns of each verdict judged beside (core/sides/): from its record in the
    result, read back by its side (null where the result has none); RowError where a record
    is not one."""
    out: dict[str, object] = {}
    for side in SIDES:
        doc = r.get(side.field)
        try:
            record = None if doc is None else side.read_recorded(doc, f"results[{i}].{side.field}")
        except ValueError as exc:
            raise RowError(str(exc)) from None
        out.update(side.stored_values(record))
    return out


def _results(doc: Mapping[str, object]) -> Iterable[Mapping[str, object]]:
    yield from jf.mappings(doc.get("results"))
