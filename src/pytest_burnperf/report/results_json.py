"""The results document (``--perf-json``): writing it from a run's results, reading one back
strictly (every sample checked, the field at fault named), and checking where one may be written."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_burnperf.core import measures
from pytest_burnperf.core.records.results import RESULTS_SCHEMA, RESULTS_VERSION, Result
from pytest_burnperf.core.sides.side_registry import SIDES
from pytest_burnperf.storage.jsonfile import Fields, FileFormatError, loads, read_bytes, read_json


def json_document(
    results: Sequence[Result],
    *,
    machine: dict[str, object],
    created: str,
    git: dict[str, object],
    settings: dict[str, object],
    coverage: dict[str, object] | None = None,
) -> dict[str, object]:
    doc: dict[str, object] = {
        "schema": RESULTS_SCHEMA,
        "version": RESULTS_VERSION,
        "created": created,
        "machine": machine,
        "git": git,
        "settings": settings,
        "results": [r.as_json() for r in results],
    }
    if coverage is not None:
        doc["coverage"] = coverage
    return doc


def read_results(path: Path) -> dict[str, list[list[float]]]:
    """The samples of a ``--perf-json`` file by test id: each process round's where the file has
    them (so the between-process spread counts), else the one list. Raises FileFormatError."""
    f = Fields(path)
    data = read_bytes(path)
    if data is None:
        f.fail("", "does not exist")
    doc = loads(path, data)
    if not isinstance(doc, dict) or doc.get("schema") != RESULTS_SCHEMA:
        f.fail("", f'is not a pytest-burnperf --perf-json file (no "schema": "{RESULTS_SCHEMA}")')
    if doc.get("version") != RESULTS_VERSION or isinstance(doc.get("version"), bool):
        f.fail("version", f"must be {RESULTS_VERSION}, got {doc.get('version')!r}")
    results = doc.get("results")
    if not isinstance(results, list):
        f.fail("results", "must be a list")
    out: dict[str, list[list[float]]] = {}
    for i, r in enumerate(results):
        where = f"results[{i}]"
        f.obj(r, where)
        test = f.text(r.get("test"), f"{where}.test")
        if test in out:
            f.fail(f"{where}.test", f"{test!r} appears twice")
        runs = r.get("runs")
        values = f.counts if measures.of_field(r.get("timer")).counted else f.samples
        if runs:
            if not isinstance(runs, list):
                f.fail(f"{where}.runs", "must be a list of sample lists")
            out[test] = [values(run, f"{where}.runs[{j}]") for j, run in enumerate(runs)]
        else:
            out[test] = [values(r.get("samples"), f"{where}.samples")]
    return out


@dataclass(frozen=True)
class CountsRecord:
    """What a counted result keeps beside its instructions: the key they compare under and the
    share of them the Python interpreter ran (core/counting/counts.judge_counts)."""

    key: dict[str, object]
    interpreter: float
    #: Each counted call's place among its process's calls (core/counting/paired_counts.py),
    #: in the order of the result's samples; empty where the file does not say.
    positions: tuple[int, ...] = ()


def read_counts(path: Path) -> dict[str, CountsRecord]:
    """The counts record of each counted result (``timer`` ``counts``) of a ``--perf-json``
    file read by :func:`read_results` first, where it has one. Raises FileFormatError naming
    the field at fault."""
    doc = read_json(path)
    f = Fields(path)
    out: dict[str, CountsRecord] = {}
    for i, r in enumerate(doc.get("results") or [] if isinstance(doc, dict) else []):
        if not isinstance(r, dict) or not measures.of_field(r.get("timer")).counted:
            continue
        if r.get("counts") is None:  # a file made by hand, or before results kept it
            continue
        counts = f.obj(r.get("counts"), f"results[{i}].counts")
        key = f.obj(counts.get("key"), f"results[{i}].counts.key")
        share = counts.get("interpreter", 0.0)
        interpreter = f.number(share, f"results[{i}].counts.interpreter", low=0.0, high=1.0)
        places = counts.get("positions")
        positions = tuple(
            f.integer(v, f"results[{i}].counts.positions[{k}]", low=1)
            for k, v in enumerate(places if isinstance(places, list) else [])
        )
        if places is not None and not isinstance(places, list):
            f.fail(f"results[{i}].counts.positions", "must be a list of places")
        out[str(r.get("test"))] = CountsRecord(dict(key), float(interpreter), positions)
    return out


def read_sides(path: Path) -> dict[str, dict[str, object]]:
    """What each result of a ``--perf-json`` file (read by :func:`read_results` first) recorded
    of each verdict judged beside (core/sides/side_registry.SIDES: memory per call), by the
    side's field and test id (a result that has none of a side is left out), each read back by
    its side. Raises FileFormatError naming the field at fault."""
    doc = read_json(path)
    out: dict[str, dict[str, object]] = {side.field: {} for side in SIDES}
    for i, r in enumerate(doc.get("results") or [] if isinstance(doc, dict) else []):
        for side in SIDES:
            if not isinstance(r, dict) or r.get(side.field) is None:
                continue
            try:
                read = side.read_recorded(r[side.field], f"results[{i}].{side.field}")
            except ValueError as exc:
                raise FileFormatError(path, str(exc)) from None
            out[side.field][str(r.get("test"))] = read
    return out


def result_timers(path: Path) -> dict[str, str]:
    """The timer of each result of a ``--perf-json`` file read by :func:`read_results` (``counts``
    where its samples are counted instructions)."""
    doc = read_json(path)
    return {
        str(r.get("test")): str(r.get("timer") or "host")
        for r in (doc.get("results") or [])
        if isinstance(r, dict)
    }


def json_target_problem(path: Path, baselines_root: Path, fmt: str = "burnperf") -> str | None:
    """Why ``--perf-json`` must not write ``path``, or None: it lies inside the baselines
    directory, or it exists and is not a results file (a test module, the ini file, a baseline)."""

    target = path.resolve()
    if target.is_relative_to(baselines_root.resolve()):
        return (
            f"lies inside the baselines directory {baselines_root}; write results elsewhere "
            "(baselines are written by --perf-update only)"
        )
    if not os.path.lexists(path):
        return None
    try:
        doc = read_json(path)
    except FileFormatError as exc:
        return (
            f"exists and {exc.problem}; refusing to overwrite it (delete it or choose another path)"
        )
    if fmt == "pytest-benchmark":
        from pytest_burnperf.report.pytest_benchmark import looks_like_one

        if looks_like_one(doc):
            return None
    if not isinstance(doc, dict) or doc.get("schema") != RESULTS_SCHEMA:
        return (
            "exists and is not a pytest-burnperf results file; refusing to overwrite it (delete "
            "it or choose another path)"
        )
    return None
