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
  is then all of them pooled), ``l2_flush``, ``peak_memory_bytes``; ``counts`` (a counts
  baseline, under ``counts-<os>-<arch>-valgrind-<version>/``: ``instructions`` and ``cycles``
  per counted call, the median call's ``events`` and the ``key`` that decides whether counts
  compare; ``samples`` are then the estimated cycles and ``timer`` is ``counts``).

Every file is read by the strict reader of :mod:`.jsonfile` and checked field by field
(:func:`check_document`); a file that fails raises :class:`BaselineError` naming the file and the
field, and is never rewritten by this module. The JSON schema of the format is
``schemas/baselines-v1.schema.json`` in the repository.

Writers (:meth:`BaselineStore.save`) hold a lock on the baselines directory
(``<baselines dir>/.burnperf.lock``, from filelock) around read-merge-write, so concurrent
``--perf-update`` runs keep every benchmark each of them wrote. All files of one update are
written to temporary files first and then renamed into place with SIGINT/SIGTERM/SIGHUP held:
an interrupt before the first rename changes no file, one during the renames is served after the
last. Temporary files left by a killed run (``.burnperf-*.tmp``) are removed by the next writer.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_burnperf.core import measures
from pytest_burnperf.core.clocks import SAMPLE_TIMERS
from pytest_burnperf.core.records.profiles import ProfileFormatError, ProfileSummary
from pytest_burnperf.core.records.stored_baseline import StoredBaseline
from pytest_burnperf.core.sides.side_kind import KeptError
from pytest_burnperf.core.sides.side_registry import SIDES
from pytest_burnperf.core.text import escape_strings
from pytest_burnperf.host.activity import WINDOW_COUNTS, WINDOW_NUMBERS, WINDOW_TEXTS
from pytest_burnperf.host.interrupts import Held, held_signals
from pytest_burnperf.storage.jsonfile import (
    Fields,
    FileFormatError,
    loads,
    read_bytes,
    stale_temporaries,
    write_temporary,
)
from pytest_burnperf.storage.jsonfile import dumps as json_dumps
from pytest_burnperf.storage.paths import UnsafeName, inside

SCHEMA = "pytest-burnperf-baselines"
VERSION = 1
#: The lock file in the baselines directory (ignored by the ``.gitignore`` written beside it).
LOCK_NAME = ".burnperf.lock"
#: How long a writer waits for another run's lock before giving up on the update.
LOCK_TIMEOUT_S = 300.0
GITIGNORE = (
    "# written by pytest-burnperf: its lock, and temporary files a killed run may leave\n"
    ".burnperf.lock\n.burnperf-*.tmp\n"
)


class BaselineError(Exception):
    """A baseline file that cannot be used. ``str()`` names the file and the problem."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"baseline file {path}: {problem}")
        self.path = path
        self.problem = problem


class Interrupted(Exception):
    """A signal arrived before any baseline file was replaced; none was."""

    def __init__(self, signals: str) -> None:
        super().__init__(signals)
        self.signals = signals


class LockTimeout(Exception):
    """Another run held the baselines lock for :data:`LOCK_TIMEOUT_S`."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            f"another pytest-burnperf run held {path} for {LOCK_TIMEOUT_S:.0f} s; no baseline "
            "file was written"
        )
        self.path = path


def _try_acquire(lock: Any) -> bool:
    from filelock import Timeout

    try:
        lock.acquire(timeout=0.2)
    except Timeout:
        return False
    return True


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


def dumps(doc: Mapping[str, object]) -> str:
    """The file's text: floats rounded, control characters in strings escaped (a driver's device
    name cannot put one in a file that the strict reader would then refuse), NaN refused."""
    return json_dumps(escape_strings(round_floats(doc)), indent=1, sort_keys=True) + "\n"


def check_entry(f: Fields, key: str, entry: object) -> dict[str, object]:
    """One benchmark of a baseline file, every field the plugin reads checked for its type and
    range; ``f`` names the file."""
    where = f"benchmarks[{json.dumps(key)}]"
    e = f.obj(entry, where)
    # a counts baseline's samples are estimated cycles, not seconds
    values = f.counts if measures.of_field(e.get("timer")).counted else f.samples
    values(e.get("samples"), f"{where}.samples")
    runs = e.get("runs")
    if runs is not None:
        if not isinstance(runs, list) or not runs:
            f.fail(f"{where}.runs", "must be a non-empty list of sample lists")
        for i, r in enumerate(runs):
            values(r, f"{where}.runs[{i}]")
    f.opt_text(e.get("timer"), f"{where}.timer", allowed=SAMPLE_TIMERS)
    if e.get("l2_flush") is not None:
        f.flag(e["l2_flush"], f"{where}.l2_flush")
    if e.get("loops") is not None:
        f.integer(e["loops"], f"{where}.loops", low=1)
    if e.get("seconds") is not None:
        f.seconds(e["seconds"], f"{where}.seconds")
    if e.get("peak_memory_bytes") is not None:
        f.integer(e["peak_memory_bytes"], f"{where}.peak_memory_bytes")
    for name in ("dtype", "mode"):
        f.opt_text(e.get(name), f"{where}.{name}")
    pedantic = f.opt_obj(e.get("pedantic"), f"{where}.pedantic")
    if pedantic is not None:  # perf.pedantic's shape (core/judging/comparability.PEDANTIC_KEYS)
        if pedantic.get("rounds") is not None:
            f.integer(pedantic["rounds"], f"{where}.pedantic.rounds", low=1)
        f.integer(pedantic.get("iterations"), f"{where}.pedantic.iterations", low=1)
        f.integer(pedantic.get("warmup_rounds"), f"{where}.pedantic.warmup_rounds")
        f.flag(pedantic.get("setup"), f"{where}.pedantic.setup")
    device = f.opt_obj(e.get("device"), f"{where}.device")
    if device is not None:
        f.plain(device, f"{where}.device")
        if device.get("identity") is not None:
            f.integer(device["identity"], f"{where}.device.identity", high=1000)
        for name in ("cpu", "dispatch", "versions"):
            f.opt_obj(device.get(name), f"{where}.device.{name}")
    for name in ("stats", "settings", "recorded"):
        f.plain(f.opt_obj(e.get(name), f"{where}.{name}"), f"{where}.{name}")
    host = e.get("host")
    if host is not None:
        if not isinstance(host, list):
            f.fail(f"{where}.host", "must be a list of host-state windows")
        for i, w in enumerate(host):
            check_window(f, f.obj(w, f"{where}.host[{i}]"), f"{where}.host[{i}]")
    counts = f.opt_obj(e.get("counts"), f"{where}.counts")
    if (
        counts is not None
    ):  # a counts baseline (core/counting/counts.py): counted calls and their key
        for name in ("instructions", "cycles"):  # cycles: empty where no caches were simulated
            listed = counts.get(name)
            if not isinstance(listed, list) or (name == "instructions" and not listed):
                f.fail(f"{where}.counts.{name}", "must be a non-empty list of counts")
            for i, v in enumerate(listed):  # a call executes at least one instruction
                f.integer(v, f"{where}.counts.{name}[{i}]", low=1)
        for name in ("key", "events"):
            f.plain(f.opt_obj(counts.get(name), f"{where}.counts.{name}"), f"{where}.counts.{name}")
        if counts.get("interpreter") is not None:
            f.number(counts["interpreter"], f"{where}.counts.interpreter", low=0.0, high=1.0)
        medians = counts.get("process_medians")  # counted in several processes
        if medians is not None:
            if not isinstance(medians, list):
                f.fail(f"{where}.counts.process_medians", "must be a list of counts")
            for i, v in enumerate(medians):
                f.integer(v, f"{where}.counts.process_medians[{i}]", low=1)
        positions = counts.get("positions")  # each counted call's place among its process's
        if positions is not None:
            calls = counts["instructions"]
            if (
                not isinstance(positions, list)
                or not isinstance(calls, list)
                or len(positions) != len(calls)
            ):
                f.fail(f"{where}.counts.positions", "must be a list of one place per counted call")
            for i, v in enumerate(positions):
                f.integer(v, f"{where}.counts.positions[{i}]", low=1)
    for side in SIDES:  # what each verdict judged beside keeps (core/sides/side_registry.py)
        kept = f.opt_obj(e.get(side.field), f"{where}.{side.field}")
        if kept is not None:
            f.plain(kept, f"{where}.{side.field}")
            try:
                side.check_kept(kept)
            except KeptError as exc:
                f.fail(f"{where}.{exc.field}", exc.problem)
    if e.get("profile") is not None:  # recorded with --perf-profile (core/records/profiles.py)
        try:
            ProfileSummary.from_json(e["profile"], f"{where}.profile")
        except ProfileFormatError as exc:
            f.fail(exc.field, exc.problem)
    probe = f.opt_obj(e.get("host_probe"), f"{where}.host_probe")
    for name, value in (probe or {}).items():
        if name == "version":
            f.integer(value, f"{where}.host_probe.version", high=1000)
        elif value is not None:
            f.seconds(value, f"{where}.host_probe.{name}")
    return e


def check_window(f: Fields, w: dict[str, object], where: str) -> None:
    f.plain(w, where)
    for name in WINDOW_NUMBERS:
        if w.get(name) is not None:
            f.number(w[name], f"{where}.{name}", low=0.0, high=1e9)
    for name in WINDOW_COUNTS:
        if w.get(name) is not None:
            f.integer(w[name], f"{where}.{name}")
    for name in WINDOW_TEXTS:
        f.opt_text(w.get(name), f"{where}.{name}")


def check_document(path: Path, doc: object) -> dict[str, dict[str, object]]:
    """The benchmarks of a loaded baseline document, or :class:`BaselineError`."""
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise BaselineError(
            path, f'is not a pytest-burnperf baseline file (no "schema": "{SCHEMA}")'
        )
    version = doc.get("version")
    if version != VERSION or isinstance(version, bool):
        hint = (
            "written by a newer pytest-burnperf; upgrade it"
            if isinstance(version, int) and not isinstance(version, bool) and version > VERSION
            else "not a version this pytest-burnperf knows"
        )
        raise BaselineError(
            path,
            f"has schema version {version!r}, this pytest-burnperf reads version {VERSION} ({hint})",
        )
    f = Fields(path)
    try:
        f.plain(f.opt_obj(doc.get("machine"), "machine"), "machine")
        benchmarks = {
            f.text(key, "benchmarks key"): check_entry(f, key, entry)
            for key, entry in f.obj(doc.get("benchmarks"), "benchmarks").items()
        }
    except FileFormatError as exc:
        raise BaselineError(path, f"{exc.field}: {exc.problem}") from None
    return benchmarks


def load_file(path: Path) -> dict[str, dict[str, object]]:
    """The benchmarks of one baseline file; ``{}`` if it does not exist."""
    try:
        data = read_bytes(path)
        if data is None:
            return {}
        doc = loads(path, data)
    except FileFormatError as exc:
        raise BaselineError(path, exc.problem) from None
    return check_document(path, doc)


@dataclass
class SaveReport:
    """What :meth:`BaselineStore.save` did."""

    written: list[Path] = field(default_factory=list)
    errors: list[BaselineError] = field(default_factory=list)
    #: Signals that arrived during the renames and were served after them (all files written).
    deferred: str = ""
    #: Stale temporary files of killed runs that were removed.
    cleaned: list[Path] = field(default_factory=list)

    def __iter__(self) -> Any:  # ``written, errors = store.save(...)``
        return iter((self.written, self.errors))


class BaselineStore:
    """Baselines of one machine under one directory. Each file is read at most once per run."""

    def __init__(self, root: Path, machine_id: str) -> None:
        self.root = root
        self.machine_id = machine_id
        self.dir = root / machine_id
        self._cache: dict[Path, dict[str, dict[str, object]] | BaselineError] = {}

    def path_for(self, module: str) -> Path:
        """``module`` is the test file's path relative to the rootdir, with '/' separators; one
        that would lead outside this machine's directory raises :class:`BaselineError`."""
        try:
            return inside(self.dir, module, ".json")
        except UnsafeName as exc:
            raise BaselineError(self.dir, f"test module {exc}") from None

    def load(self, path: Path) -> dict[str, dict[str, object]]:
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

    def get(self, module: str, key: str) -> dict[str, object] | None:
        """The entry of ``key`` as stored (its fields checked), or None."""
        return self.load(self.path_for(module)).get(key)

    def baseline(self, module: str, key: str) -> StoredBaseline | None:
        """The stored baseline of ``key``, typed (what the gate judges against), or None."""
        entry = self.get(module, key)
        return None if entry is None else StoredBaseline.from_entry(entry)

    def lock(self) -> Any:
        """The lock of the baselines directory (a :class:`filelock.FileLock`), with the
        ``.gitignore`` that keeps it and stale temporaries out of commits."""
        from filelock import FileLock

        self.root.mkdir(parents=True, exist_ok=True)
        ignore = self.root / ".gitignore"
        if not ignore.exists():
            with contextlib.suppress(OSError):
                ignore.write_text(GITIGNORE, encoding="utf-8")
        return FileLock(self.root / LOCK_NAME, timeout=LOCK_TIMEOUT_S)

    def clean_stale(self) -> list[Path]:
        """Remove temporary files a killed run left (call with the lock held)."""
        removed = []
        for p in stale_temporaries(self.root):
            with contextlib.suppress(OSError):
                p.unlink()
                removed.append(p)
        return removed

    def save(
        self,
        updates: Mapping[str, Mapping[str, dict[str, object]]],
        machine: Mapping[str, object],
        drop: Mapping[str, Sequence[str]] | None = None,
    ) -> SaveReport:
        """Merge ``updates`` ({module: {key: entry}}) into the files and write them all; the keys
        in ``drop`` ({module: [key]}: entries the updates replace under a new name) are removed
        from the modules that are written.

        Benchmarks that are not in ``updates`` are kept as they are, also those another process
        wrote since this run started (the files are read again under the lock). A file that could
        not be read or written is left untouched and reported among the errors. Raises
        :class:`Interrupted` when a signal arrived before the first rename (no file changed) and
        ``filelock.Timeout`` when another run held the lock for :data:`LOCK_TIMEOUT_S`.
        """

        report = SaveReport()
        with held_signals() as held:
            lock: Any = None
            try:
                try:
                    lock = self.lock()
                    deadline = time.monotonic() + LOCK_TIMEOUT_S
                    while not _try_acquire(lock):  # in steps, so that Ctrl-C ends the wait
                        if held:
                            raise Interrupted(held.names())
                        if time.monotonic() > deadline:
                            raise LockTimeout(self.root / LOCK_NAME)
                except OSError as exc:  # not a directory, no permission, read-only file system
                    report.errors.append(
                        BaselineError(
                            self.root,
                            f"cannot be written ({exc.strerror or exc}); no baseline file was "
                            "changed",
                        )
                    )
                    return report
                try:
                    if held:
                        raise Interrupted(held.names())
                    report.cleaned = self.clean_stale()
                    self._write_all(updates, machine, drop or {}, held, report)
                    report.deferred = held.names()
                finally:
                    lock.release()
            finally:
                # freed here, inside the hold: filelock's __del__ does work, and a signal that
                # lands in it once the old handlers are back is swallowed with a traceback
                # ("Exception ignored in BaseFileLock.__del__")
                lock = None
        return report

    def _write_all(
        self,
        updates: Mapping[str, Mapping[str, dict[str, object]]],
        machine: Mapping[str, object],
        drop: Mapping[str, Sequence[str]],
        held: Held,
        report: SaveReport,
    ) -> None:
        """Stage every module's new file, then rename them all into place (the lock held).
        Raises :class:`Interrupted` when a signal arrived before the first rename."""
        staged: list[tuple[Path, Path, dict[str, dict[str, object]]]] = []
        try:
            for module in sorted(updates):
                try:
                    path = self.path_for(module)
                except BaselineError as exc:
                    report.errors.append(exc)
                    continue
                self._cache.pop(path, None)
                try:
                    benchmarks = dict(load_file(path))
                except BaselineError as exc:
                    report.errors.append(exc)
                    continue
                for old in drop.get(module, ()):
                    benchmarks.pop(old, None)
                benchmarks.update(updates[module])
                doc = {
                    "schema": SCHEMA,
                    "version": VERSION,
                    "machine": dict(machine),
                    "benchmarks": benchmarks,
                }
                text = dumps(doc)
                try:
                    tmp = write_temporary(path, text)
                except OSError as exc:  # disk full, no permission: old file stays
                    report.errors.append(
                        BaselineError(path, f"could not be written ({exc.strerror or exc})")
                    )
                    continue
                staged.append((tmp, path, json.loads(text)["benchmarks"]))
                if held:
                    raise Interrupted(held.names())
            # the renames: each is atomic; signals wait until all are done
            for i, (tmp, path, benchmarks) in enumerate(staged):
                try:
                    os.replace(tmp, path)
                except OSError as exc:
                    report.errors.append(
                        BaselineError(path, f"could not be written ({exc.strerror or exc})")
                    )
                    continue
                staged[i] = (path, path, benchmarks)
                self._cache[path] = benchmarks
                report.written.append(path)
        finally:
            for tmp, path, _ in staged:
                if tmp != path:
                    with contextlib.suppress(OSError):
                        tmp.unlink()
