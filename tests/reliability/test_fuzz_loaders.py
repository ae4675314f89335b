"""Fuzzing the strict readers with hypothesis: any bytes, and valid files with one field replaced
by any JSON value, give a clear error naming the file, or a document whose every value the plugin
reads has its type and range; never another exception."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_burnperf.core.judging.assess import HostEvidence, assess
from pytest_burnperf.core.judging.verdict import VERDICTS, Policy
from pytest_burnperf.core.records.stored_baseline import StoredBaseline
from pytest_burnperf.host.activity import Window
from pytest_burnperf.report.results_json import read_results
from pytest_burnperf.runs.round_launcher import read_round_file
from pytest_burnperf.storage.baselines import BaselineError, load_file
from pytest_burnperf.storage.jsonfile import MAX_SECONDS, MIN_SECONDS, FileFormatError

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)

VALID_ENTRY: dict[str, Any] = {
    "samples": [0.001, 0.002],
    "runs": [[0.001], [0.002]],
    "timer": "host",
    "l2_flush": False,
    "loops": 2,
    "dtype": "f32",
    "mode": "auto",
    "device": {"identity": 2, "cpu": {"level": "x86-64-v3"}, "versions": {"numpy": "2.4"}},
    "host": [{"seconds": 1.0, "cpus": 2, "others_cpus": 0.1, "gpu_slowdown": None}],
    "host_probe": {"version": 2, "python": 0.003},
    "stats": {"median": 0.0015},
    "settings": {"samples": 20},
    "recorded": {"date": "2026-11-22", "libraries": {"numpy": "2.4"}},
    "peak_memory_bytes": 1024,
}
FINGERPRINT: dict[str, Any] = {
    "identity": 2,
    "cpu": {"level": "x86-64-v3", "family": "25"},
    "versions": {"numpy": "2.5"},
    "dispatch": {"numpy": "AVX2"},
}
PATHS = [(k,) for k in VALID_ENTRY] + [
    ("samples", 0),
    ("runs", 1),
    ("runs", 0, 0),
    ("device", "identity"),
    ("device", "cpu"),
    ("host", 0),
    ("host", 0, "seconds"),
    ("host", 0, "cpus"),
    ("host_probe", "python"),
    ("recorded", "libraries", "numpy"),
    ("device", "cpu", "level"),
    ("device", "versions", "numpy"),
    ("device", "dispatch"),
    ("host_probe", "version"),
]


def _doc(entry: dict[str, Any]) -> dict[str, Any]:
    return {"schema": "pytest-burnperf-baselines", "version": 1, "benchmarks": {"t[x]": entry}}


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for step in path[:-1]:
        doc = doc[step]
    doc[path[-1]] = value


def _check_loaded(benchmarks: dict[str, Any]) -> None:
    for entry in benchmarks.values():
        values = [*entry["samples"], *(v for r in entry.get("runs") or () for v in r)]
        for v in values:
            assert isinstance(v, (int, float)) and not isinstance(v, bool)
            assert math.isfinite(v) and MIN_SECONDS <= v <= MAX_SECONDS
        assert entry.get("l2_flush") in (None, True, False)
        assert entry.get("timer") in (None, "host", "device", "graph")


FUZZ = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@FUZZ
@given(data=st.binary(max_size=300))
def test_any_bytes(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "b.json"
    path.write_bytes(data)
    try:
        _check_loaded(load_file(path))
    except BaselineError as exc:
        assert str(exc).startswith(f"baseline file {path}: ")
    assert path.read_bytes() == data


@FUZZ
@given(where=st.sampled_from(PATHS), value=JSON)
def test_one_field_replaced_by_any_json(tmp_path: Path, where: tuple[Any, ...], value: Any) -> None:
    doc = _doc(json.loads(json.dumps(VALID_ENTRY)))
    _set(doc["benchmarks"]["t[x]"], where, value)
    path = tmp_path / "f.json"
    path.write_text(json.dumps(doc))
    try:
        loaded = load_file(path)
    except BaselineError as exc:
        assert str(exc).startswith(f"baseline file {path}: ") and "\n" not in str(exc)
        return
    _check_loaded(loaded)
    # what was accepted is judged without an exception, whatever the field held
    verdict = assess(
        StoredBaseline.from_entry(loaded["t[x]"]),
        [[0.0015, 0.0016, 0.0014]],
        fingerprint=FINGERPRINT,
        timer="host",
        l2_flush=False,
        policy=Policy(alpha=0.01, threshold=0.05),
        host=HostEvidence(
            windows=(),
            baseline_windows=tuple(
                w for d in loaded["t[x]"].get("host") or () if (w := Window.from_dict(d))
            ),
            probe={"version": 2, "python": 0.003},
            baseline_probe=loaded["t[x]"].get("host_probe"),
        ),
    )
    assert verdict.status in VERDICTS


@FUZZ
@given(value=JSON, where=st.sampled_from(["results", "test", "samples", "runs", "version"]))
def test_results_and_round_files(tmp_path: Path, value: Any, where: str) -> None:
    result: dict[str, Any] = {"test": "t.py::a", "samples": [0.1], "runs": [[0.1]]}
    doc: dict[str, Any] = {"schema": "pytest-burnperf-results", "version": 1, "results": [result]}
    if where in ("results", "version"):
        doc[where] = value
    else:
        result[where] = value
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    try:
        for runs in read_results(path).values():
            assert runs and all(MIN_SECONDS <= v <= MAX_SECONDS for r in runs for v in r)
    except FileFormatError as exc:
        assert str(exc).startswith(f"{path}: ")
    round_doc = {"t.py::a": {"values": value, "host": {}, "probe": None}}
    path.write_text(json.dumps(round_doc))
    try:
        assert all(isinstance(v, float) for v in read_round_file(path)["t.py::a"]["values"])
    except FileFormatError as exc:
        assert str(exc).startswith(f"{path}: ")
