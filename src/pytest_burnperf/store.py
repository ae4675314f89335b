"""Baseline files: versioned JSON, loaded once, written atomically, never half-written.

Layout: ``<baselines dir>/<machine id>/<test module path>.json``, one file per test module and
machine, e.g. ``baselines/linux-x86_64-amd-epyc-7b13-2cpu/perf_tests/test_matmul.json``. Inside,
benchmarks are keyed by their test name with parameters (``test_matmul[numpy-cpu-f32]``). Keys are
sorted and floats rounded to 6 significant digits, so a re-recorded file diffs cleanly in review.

Format history (``"version"``):

* 1 -- first format: ``schema``, ``version``, ``machine`` and ``benchmarks``; each benchmark holds
  ``samples`` (seconds per call), ``stats``, ``loops``, ``timer``, ``dtype``, ``device`` and
  ``recorded`` (date, git commit, Python and library versions). Added later within version 1,
  all optional so older files stay valid: ``runs`` (the samples of each process round; ``samples``
  is then all of them pooled), ``l2_flush``, ``peak_memory_bytes``.

A file that is not valid JSON, or has another schema or version, raises :class:`BaselineError`
naming the file; it is never rewritten by this module.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

SCHEMA = "pytest-burnperf-baselines"
VERSION = 1


class BaselineError(Exception):
    """A baseline file that cannot be used. ``str()`` names the file and the problem."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"baseline file {path}: {problem}")
        self.path = path
        self.problem = problem


def round_floats(obj: Any, digits: int = 6) -> Any:
    if isinstance(obj, float):
        if not math.isfinite(obj) or obj == 0.0:
            return obj
        return float(f"{obj:.{digits}g}")
    if isinstance(obj, Mapping):
        return {str(k): round_floats(v, digits) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [round_floats(v, digits) for v in obj]
    return obj


def dumps(doc: Mapping[str, Any]) -> str:
    return json.dumps(round_floats(doc), indent=1, sort_keys=True, allow_nan=False) + "\n"


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old file or the new one, nothing between."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _check_entry(path: Path, key: str, entry: object) -> None:
    if not isinstance(entry, dict):
        raise BaselineError(path, f"benchmark {key!r} is not an object")
    samples = entry.get("samples")
    if not isinstance(samples, list) or not samples:
        raise BaselineError(path, f"benchmark {key!r} has no 'samples' list")
    runs = entry.get("runs")
    if runs is not None and (
        not isinstance(runs, list) or not runs or not all(isinstance(r, list) and r for r in runs)
    ):
        raise BaselineError(path, f"benchmark {key!r} has 'runs' that is not a list of samples")
    for v in [*samples, *(v for r in runs or () for v in r)]:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
            raise BaselineError(
                path, f"benchmark {key!r} has a sample that is not a number > 0: {v!r}"
            )


def load_file(path: Path) -> dict[str, dict[str, Any]]:
    """The benchmarks of one baseline file; ``{}`` if it does not exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise BaselineError(path, f"cannot be read ({exc.strerror})") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BaselineError(
            path, f"is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise BaselineError(
            path, f'is not a pytest-burnperf baseline file (no "schema": "{SCHEMA}")'
        )
    version = doc.get("version")
    if version != VERSION:
        hint = (
            "written by a newer pytest-burnperf; upgrade it"
            if isinstance(version, int) and version > VERSION
            else "not a version this pytest-burnperf knows"
        )
        raise BaselineError(
            path,
            f"has schema version {version!r}, this pytest-burnperf reads version {VERSION} ({hint})",
        )
    benchmarks = doc.get("benchmarks")
    if not isinstance(benchmarks, dict):
        raise BaselineError(path, "has no 'benchmarks' object")
    for key, entry in benchmarks.items():
        _check_entry(path, key, entry)
    return benchmarks


class BaselineStore:
    """Baselines of one machine under one directory. Each file is read at most once per run."""

    def __init__(self, root: Path, machine_id: str) -> None:
        self.root = root
        self.machine_id = machine_id
        self.dir = root / machine_id
        self._cache: dict[Path, dict[str, dict[str, Any]] | BaselineError] = {}

    def path_for(self, module: str) -> Path:
        """``module`` is the test file's path relative to the rootdir, with '/' separators."""
        rel = Path(*module.split("/"))
        return self.dir / rel.with_suffix(".json")

    def load(self, path: Path) -> dict[str, dict[str, Any]]:
        cached = self._cache.get(path)
        if cached is None:
            try:
                cached = load_file(path)
            except BaselineError as exc:
                cached = exc
            self._cache[path] = cached
        if isinstance(cached, BaselineError):
            raise cached
        return cached

    def get(self, module: str, key: str) -> dict[str, Any] | None:
        return self.load(self.path_for(module)).get(key)

    def save(
        self,
        updates: Mapping[str, Mapping[str, dict[str, Any]]],
        machine: Mapping[str, Any],
    ) -> tuple[list[Path], list[BaselineError]]:
        """Merge ``updates`` ({module: {key: entry}}) into the files and write each atomically.

        Benchmarks that are not in ``updates`` are kept as they are. A file that could not be read
        or written is left untouched and returned among the errors.
        """
        written: list[Path] = []
        errors: list[BaselineError] = []
        for module in sorted(updates):
            path = self.path_for(module)
            self._cache.pop(path, None)
            try:
                benchmarks = dict(self.load(path))
            except BaselineError as exc:
                errors.append(exc)
                continue
            benchmarks.update(updates[module])
            doc = {
                "schema": SCHEMA,
                "version": VERSION,
                "machine": dict(machine),
                "benchmarks": benchmarks,
            }
            try:
                atomic_write_text(path, dumps(doc))
            except OSError as exc:  # disk full, no permission: the old file stays as it was
                errors.append(BaselineError(path, f"could not be written ({exc.strerror or exc})"))
                continue
            self._cache[path] = json.loads(dumps(doc))["benchmarks"]
            written.append(path)
        return written, errors
