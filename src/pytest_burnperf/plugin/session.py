"""The state of one pytest session with the plugin: settings, devices, baselines, results, the
extra rounds' samples, peaks and probes; and writing baselines at the end."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_burnperf.core.precision import key_part
from pytest_burnperf.core.results import provenance
from pytest_burnperf.core.roofline_figures import Peaks
from pytest_burnperf.core.run_mode import Mode
from pytest_burnperf.core.settings import PerfSpec, Settings
from pytest_burnperf.devices import peak_calibration as device_peaks
from pytest_burnperf.host import probe
from pytest_burnperf.host.machine import ci_info, machine_info
from pytest_burnperf.storage.baselines import Interrupted, LockTimeout
from pytest_burnperf.storage.peak_cache import PeakCache, cache_path

if TYPE_CHECKING:
    from pytest_burnperf.core.coverage import Coverage
    from pytest_burnperf.core.results import Result
    from pytest_burnperf.devices import Entry, Registry
    from pytest_burnperf.runs.reference import Choice
    from pytest_burnperf.runs.same_session import Plan
    from pytest_burnperf.runs.scheduler import Measured
    from pytest_burnperf.storage.baselines import BaselineStore


@dataclass
class Case:
    """One parameter of a benchmark: a device entry and a dtype."""

    entry: Entry | None
    label: str
    dtype: str
    spec: PerfSpec
    skip_reason: str | None = None
    #: A bad marker: the test errors at setup with this message, the rest of its module runs.
    error: str | None = None
    #: A test written for pytest-benchmark: its one case (the host CPU) adds nothing to its id.
    benchmark_style: bool = False


@dataclass
class PerfState:
    #: What kind of run this process is (core/run_mode.py), decided once in configure.py.
    mode: Mode
    base: Settings
    cmdline: dict[str, Any]
    backends_filter: tuple[str, ...] | None
    dtypes_filter: tuple[str, ...] | None
    #: Devices that must be present (--perf-require), or None.
    require: tuple[str, ...] | None
    baselines_root: Path
    machine_id: str
    json_path: Path | None
    rootpath: Path
    invocation: tuple[str, ...]
    #: Results table: columns, sort key and grouping (None: the defaults).
    columns: tuple[str, ...] | None = None
    sort: str | None = None
    group_by: str | None = None
    #: Writes a progress line to the terminal (set in pytest_configure).
    announce: Callable[[str], None] = print
    rounds: int = 1
    #: The fixed process rounds the session pools per benchmark (a round's own process is told
    #: by --perf-worker-rounds): sets each round's samples and precision goal (stats.round_samples).
    sampling_rounds: int = 1
    #: Rounds an undecided benchmark may get in all (adaptive rounds; == rounds: off).
    max_rounds: int = 1
    #: Seconds after the first round started past which no adaptive round starts (0: no limit).
    round_budget: float = 0.0
    #: In a worker process: the node ids to run (an adaptive round of undecided benchmarks).
    worker_only: frozenset[str] | None = None
    strict: bool = False
    #: Smoke-run benchmarks that called perf (node ids).
    smoked: set[str] = field(default_factory=set)
    size: str = "small"
    #: In a worker process (one extra round): where to write its raw samples.
    worker_out: Path | None = None
    #: In a round server (forkserver.py): the directory its requests come through.
    serve_dir: Path | None = None
    #: How extra rounds start: spec.ROUND_STARTS.
    round_start: str = "auto"
    #: Perf comparisons in this session (for the family-wise correction); in a shard, those of
    #: the whole selection.
    comparisons: int = 1
    #: --perf-shard K/N, and what the shard kept (core/shards.py): ``index``, ``count``,
    #: ``selection`` (the whole selection's fingerprint), ``comparisons`` (the whole selection's),
    #: ``benchmarks`` (this shard's), ``expected_s`` (each shard's expected seconds).
    shard: tuple[int, int] | None = None
    shard_info: dict[str, Any] | None = None
    #: Seconds each benchmark took in this process, setup to teardown (what a baseline keeps as
    #: ``seconds`` for --perf-shard's split).
    durations: dict[str, float] = field(default_factory=dict)
    #: Raw samples of the extra rounds, per node id: one list of values per worker process.
    worker_runs: dict[str, list[list[float]]] = field(default_factory=dict)
    worker_samples: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: In a round process of a turn-taking pair (turns.py): this side's end of the turn table.
    turn_side: Any = None
    #: Host windows (activity.Window as dicts) and reference probes of the extra rounds, per node.
    worker_host: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    worker_probes: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: This process's reference probe per device id, and its host parts (shared by devices).
    probes: dict[str, dict[str, Any]] = field(default_factory=dict)
    _host_probe: dict[str, float] | None = None
    results: dict[str, Result] = field(default_factory=dict)
    passed: set[str] = field(default_factory=set)
    #: Recording: the benchmarks whose runs are too noisy for their threshold, with the noise
    #: floor a comparison with as many rounds would have (compare.recording_floor).
    noisy_records: dict[str, float] = field(default_factory=dict)
    interrupted: bool = False
    #: BURNPERF_TRUST_HOST=1 (read once, in configure.py): the host state and the reference
    #: probe are measured and reported but change no verdict and no round.
    trust_host: bool = False
    #: Format of the --perf-json file (spec.JSON_FORMATS).
    json_format: str = "burnperf"
    #: From the configuration file (config.py): test functions to run, free environment facts,
    #: and the file itself.
    benches: tuple[str, ...] | None = None
    environment: dict[str, Any] = field(default_factory=dict)
    config_file: Path | None = None
    #: pytest-benchmark's hooks switched off for this --perf run (compat.py), and how many tests
    #: use its `benchmark` fixture.
    took_over_benchmark: bool = False
    #: Those tests' one CPU case each, by the test function's node id (their ids stay unchanged).
    benchmark_cases: dict[str, Case] = field(default_factory=dict)
    #: How many of them run in this session (after -k and every other deselection).
    benchmark_fixture_tests: int = 0
    #: Their baselines found under the name they had with ``[cpu]`` in the id:
    #: ``{module: {key: old key}}``; --perf-update writes the key and drops the old one.
    renamed_baselines: dict[str, dict[str, str]] = field(default_factory=dict)
    #: Node ids of @pytest.mark.perf benchmarks that -k and the other deselections left out.
    deselected_benchmarks: list[str] = field(default_factory=list)
    #: Puts back the SIGTERM handler this perf run replaced (see interrupts.sigterm_as_interrupt).
    restore_sigterm: Callable[[], None] = lambda: None
    messages: list[str] = field(default_factory=list)
    #: GPUs that faulted in this process: ``{device id: what failed where}``; their remaining
    #: benchmarks are skipped with that reason (a CUDA fault is sticky).
    bad_devices: dict[str, str] = field(default_factory=dict)
    recalibrate: bool = False
    _peak_cache: PeakCache | None = None
    #: Peak-cache keys measured (or failed) in this run: --perf-recalibrate measures each once.
    _checked: set[str] = field(default_factory=set)
    _registry: Registry | None = None
    _store: BaselineStore | None = None
    _legacy_store: BaselineStore | None = None
    #: The machine id came from --perf-machine or the ini file, not from this host.
    machine_explicit: bool = False
    _git: dict[str, Any] | None = None
    #: A same-session comparison (--perf-against, --perf-versions) and what its rounds measured.
    plan: Plan | None = None
    measured: Measured | None = None
    #: --perf-markdown: the Markdown summary to write (markdown.py).
    markdown_path: Path | None = None
    #: --perf-store: where to record this run (a URL, a SQLite path or "local"), or None.
    store_value: str | None = None
    #: The run stopped with a usage error after the session began: no summary.
    aborted: bool = False
    #: --perf-against auto: what it chose and why (reference.Choice), for the header and JSON.
    reference: Choice | None = None
    #: --perf-measure: what judges CPU benchmarks (time, counts or both); in a counted process
    #: (runs/counted.py) the directory of its callgrind dumps; in the run that judges, its
    #: counting (plugin/counting.Counting: the valgrind, the counted process's counts).
    measure: str = "time"
    count_dir: Path | None = None
    count_calls: int | None = None
    counting: Any = None
    #: --perf-min-judged: the share of benchmarks that must get a verdict (0: shown only).
    min_judged: float = 0.0
    #: What the run judged (judged.Coverage), the advice lines, its JSON, and the failure
    #: message when it judged less than min_judged; set at session finish.
    coverage: Coverage | None = None
    coverage_advice: list[str] = field(default_factory=list)
    coverage_json: dict[str, Any] | None = None
    shortfall: str | None = None

    @property
    def registry(self) -> Registry:
        if self._registry is None:
            from pytest_burnperf.devices import Registry

            self._registry = Registry()
        return self._registry

    @property
    def store(self) -> BaselineStore:
        if self._store is None:
            from pytest_burnperf.core.settings import DEFAULT_SIZE
            from pytest_burnperf.storage.baselines import BaselineStore

            group = self.machine_id
            if self.size != DEFAULT_SIZE:
                group = f"{group}-{self.size}"
            self._store = BaselineStore(self.baselines_root, group)
        return self._store

    @property
    def legacy_store(self) -> BaselineStore | None:
        """Where baselines of this machine lived before the machine id named the hardware class
        (None when --perf-machine chose the id): found there, they are reported, not compared."""
        if self.machine_explicit:
            return None
        if self._legacy_store is None:
            from pytest_burnperf.core.settings import DEFAULT_SIZE
            from pytest_burnperf.host.machine import legacy_machine_id
            from pytest_burnperf.storage.baselines import BaselineStore

            group = legacy_machine_id()
            if self.size != DEFAULT_SIZE:
                group = f"{group}-{self.size}"
            if group == self.store.machine_id:
                return None
            self._legacy_store = BaselineStore(self.baselines_root, group)
        return self._legacy_store

    @property
    def git(self) -> dict[str, Any]:
        if self._git is None:
            from pytest_burnperf.host.machine import git_state

            self._git = git_state(self.rootpath)
        return self._git

    def peaks_for(self, device: Any, dtype: str, threads: int) -> Peaks:
        """The device's measured peaks for ``dtype``: from the cache, else calibrated now."""

        if self._peak_cache is None:
            self._peak_cache = PeakCache(cache_path(), self.machine_id)
        cache = self._peak_cache
        name = str(device.fingerprint().get("name", device.id))

        key = PeakCache.key(self.machine_id, device.id, name, dtype, threads)
        key += key_part(device.precision() if hasattr(device, "precision") else {})
        fresh = self.recalibrate and key not in self._checked
        peaks = None if fresh else cache.get(key)
        if peaks is None and key in self._checked:
            return Peaks(None, None, "calibration failed earlier in this run")
        if peaks is None:
            import time

            self.announce(
                f"pytest-burnperf: measuring the peak GFLOP/s and GB/s of {device.id} ({dtype}, "
                f"{threads} thread(s)) once; cached for later runs ..."
            )
            t0 = time.monotonic()
            try:
                active = getattr(device, "active", contextlib.nullcontext)
                with device.threads(threads), active():
                    peaks = device_peaks.calibrate(device, dtype)
            except Exception as exc:  # a driver that cannot run the calibration kernels
                self._checked.add(key)
                self.messages.append(
                    f"peak calibration of {device.id} ({dtype}) failed, so its benchmarks show "
                    f"no % of peak: {type(exc).__name__}: {exc}"
                )
                return Peaks(None, None, f"calibration failed: {type(exc).__name__}: {exc}")
            self.announce(
                f"pytest-burnperf: peaks of {device.id} measured in {time.monotonic() - t0:.1f} s"
            )
            cache.put(key, peaks)  # failures are never cached: the next run tries again
            self.messages.extend(cache.problems)
            cache.problems.clear()
        self._checked.add(key)
        return peaks

    def probe_for(self, device: Any) -> dict[str, Any] | None:
        """The reference probe of ``device`` in this process, measured on first use."""

        if device.id not in self.probes:
            try:
                if self._host_probe is None:
                    self._host_probe = probe.host_parts()
                self.probes[device.id] = probe.measure(device, self._host_probe)
            except Exception as exc:  # a device that cannot run the probe: no probe, say why
                self.messages.append(
                    f"reference probe on {device.id} failed, so its verdicts cannot tell a slower "
                    f"host from slower code: {type(exc).__name__}: {exc}"
                )
                self.probes[device.id] = {}
        return self.probes[device.id] or None

    def settings_for(self, spec: PerfSpec) -> Settings:
        return self.base.merged(spec.overrides).merged(self.cmdline)


STATE = pytest.StashKey[PerfState]()


def definition_id(item: pytest.Item) -> str:
    """The node id of the test function ``item`` was generated from (its id without the
    parameters): what ``metafunc.definition.nodeid`` was at collection."""
    parent = item.parent.nodeid if item.parent is not None else ""
    name = str(getattr(item, "originalname", item.name))
    return f"{parent}::{name}" if parent else name


def case_of(item: pytest.Item) -> Case | None:
    """The benchmark case of ``item``: a ``@pytest.mark.perf`` test's device-and-dtype parameter,
    or the one CPU case of a test written for pytest-benchmark (kept by its function, so that its
    test id stays what the user's ``-k`` expects); None for any other test."""
    callspec = getattr(item, "callspec", None)
    case = callspec.params.get("_burnperf_case") if callspec is not None else None
    if isinstance(case, Case):
        return case
    cases = item.config.stash[STATE].benchmark_cases if STATE in item.config.stash else {}
    return cases.get(definition_id(item)) if cases else None


def session_machine_info(config: pytest.Config, state: PerfState) -> dict[str, Any]:
    """This machine's facts, with whatever the project's hooks add."""

    info = dict(machine_info(state.machine_id))
    if state.environment:
        info["environment"] = dict(state.environment)
    ci = ci_info(os.environ)
    if ci:  # the CI job and runner type: with the shard (settings), what a fleet's store keeps
        info["ci"] = ci
    config.hook.pytest_burnperf_update_machine_info(config=config, machine_info=info)
    return info


def write_baselines(state: PerfState, now: str, machine: dict[str, Any]) -> bool:
    """Write the new baselines; False if some file could not be read or written."""

    updates: dict[str, dict[str, dict[str, Any]]] = {}
    counted: dict[str, dict[str, dict[str, Any]]] = {}
    for nodeid in sorted(state.passed):
        r = state.results[nodeid]
        libs = dict(r.fingerprint.get("versions", {}))
        for one in (r, r.time):
            if one is None:
                continue
            entry = one.baseline_entry(provenance(state.git, libs, now))
            if one.measure == "counts":  # into the counts baselines, which travel
                counted.setdefault(r.module, {})[r.key] = entry
                continue
            if state.durations.get(nodeid):  # one round's wall time, calibration, setup included
                entry["seconds"] = round(state.durations[nodeid], 4)
            updates.setdefault(r.module, {})[r.key] = entry
    if not updates and not counted:
        state.messages.append("baselines not updated: no benchmark ran and passed")
        return True
    ok = True
    if counted:
        ok = _save(state, state.counting.store(state), counted, machine, {}, "counts baselines")
    if updates:
        drop = {
            module: [old for key, old in renamed.items() if key in updates.get(module, {})]
            for module, renamed in state.renamed_baselines.items()
        }
        ok = _save(state, state.store, updates, machine, drop, "baselines") and ok
    return ok


def _save(
    state: PerfState,
    store: BaselineStore,
    updates: dict[str, dict[str, dict[str, Any]]],
    machine: dict[str, Any],
    drop: dict[str, list[str]],
    what: str,
) -> bool:
    """Save ``updates`` into ``store`` and say what happened; False if some file could not be
    read or written."""
    try:
        report = store.save(updates, machine, drop=drop)
    except Interrupted as exc:
        state.interrupted = True
        state.messages.append(
            f"{what} NOT updated: interrupted ({exc.signals}) before any file was replaced; "
            "every baseline file is as it was"
        )
        return False
    except LockTimeout as exc:
        state.messages.append(f"{what} NOT updated: {exc}")
        return False
    written, errors = report.written, report.errors
    n = sum(len(updates[m]) for m in updates) - sum(
        len(updates[m]) for m in updates if store.path_for(m) in {e.path for e in errors}
    )
    for err in errors:
        state.messages.append(f"NOT updated, left untouched: {err}")
    if report.cleaned:
        state.messages.append(
            f"removed {len(report.cleaned)} temporary file(s) a killed run had left in "
            f"{rel(store.root, state.rootpath)}"
        )
    if written:
        state.messages.append(
            f"{what} updated: {n} benchmark(s) in {len(written)} file(s) under "
            f"{rel(store.dir, state.rootpath)}"
        )
    noisy = {
        node: floor
        for node, floor in state.noisy_records.items()
        if node in state.passed and store.path_for(state.results[node].module) in written
    }
    if noisy and store is state.store:
        state.messages.append(noisy_baselines_text(noisy, n))
    if report.deferred:
        state.interrupted = True
        state.messages.append(
            f"{report.deferred} arrived while the baseline files were being renamed into place; "
            "it was held until all of them were, so the update is whole"
        )
    return not errors


def noisy_baselines_text(floors: Mapping[str, float], recorded: int, show: int = 5) -> str:
    """The summary line of baselines recorded so noisy that comparisons against them will see
    only slowdowns above their floor (node id -> floor, a fraction)."""
    worst = sorted(floors.items(), key=lambda kv: (-kv[1], kv[0]))
    names = ", ".join(f"{node} (+{100 * floor:.1f}%)" for node, floor in worst[:show])
    if len(worst) > show:
        names += f" and {len(worst) - show} more"
    return (
        f"noisy baselines: {len(floors)} of {recorded} recorded benchmark(s) varied so much "
        "between their process rounds that a comparison with as many rounds will see only "
        f"slowdowns above its floor: {names}; re-record them on a quieter host "
        "(-k NAME --perf-update), or compare in one session (--perf-against), which "
        "cancels what the host does between runs"
    )


def rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)
