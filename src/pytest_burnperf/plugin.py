"""The pytest glue: options, the ``perf`` marker, parametrisation, fixtures, reporting hooks.

Everything heavy (devices, scipy, array libraries) is imported only inside a ``--perf`` run.
Timing, statistics, storage and reports live in plain modules that the CLI and unit tests use
without pytest.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import pytest

from . import spec as _spec
from .spec import PerfSpec, Settings, SpecError

if TYPE_CHECKING:
    from .assess import HostEvidence
    from .devices import Entry, Registry
    from .hoststate import Window
    from .results import Result
    from .roofline import PeakCache, Peaks, Work
    from .store import BaselineStore

T = TypeVar("T")

_WITHOUT_PERF = (
    "perf benchmark: run with --perf (or set perf = true in the ini file); perf_smoke = false "
    "skips it instead of running it once"
)

#: Process rounds of --update-baselines when --perf-rounds is not given: a baseline is recorded once
#: and judged against many times, and three processes show its between-process spread.
DEFAULT_UPDATE_ROUNDS = 3


# --------------------------------------------------------------------------------------------
# options


def _argtype(parser: Callable[[str, str], T], option: str) -> Callable[[str], T]:
    def parse(value: str) -> T:
        try:
            return parser(value, option)
        except SpecError as exc:
            # argparse names the option itself ("argument --perf-threshold: ..."): say it once
            raise argparse.ArgumentTypeError(str(exc).removeprefix(f"{option}: ")) from None

    parse.__name__ = option.lstrip("-").replace("-", "_")
    return parse


def _machine_arg(value: str, where: str) -> str:
    from .machine import check_machine_id

    return check_machine_id(value, where)


_DEFAULTS = Settings()

# (option, ini name, parser, help)
_VALUE_OPTIONS: tuple[tuple[str, str, Callable[[str, str], Any], str], ...] = (
    (
        "--perf-backends",
        "perf_backends",
        _spec.parse_backends,
        "only run these backends: comma-separated kinds (cpu, cuda, ...), libraries (numpy, "
        "torch, ...) or device ids (torch-cuda0). Default: every backend a benchmark asks for.",
    ),
    (
        "--perf-require",
        "perf_require",
        _spec.parse_backends,
        "fail the run when one of these devices is absent: comma-separated kinds (cuda, opencl, "
        "...), libraries or device ids, as for --perf-backends (for a GPU CI job that must not "
        "go green by skipping on a runner that lost its GPU). Default: none",
    ),
    (
        "--perf-dtypes",
        "perf_dtypes",
        _spec.parse_dtypes,
        f"only run these dtypes, comma-separated ({', '.join(_spec.DTYPES)}). Default: every "
        "dtype a benchmark asks for.",
    ),
    (
        "--perf-baselines-dir",
        "perf_baselines_dir",
        lambda v, w: v,
        "directory of baseline files, relative to the rootdir. Default: baselines",
    ),
    (
        "--perf-machine",
        "perf_machine",
        _machine_arg,
        "machine id that groups baselines. Default: derived from OS, architecture, CPU model and "
        "CPU count, e.g. linux-x86_64-amd-epyc-7b13-2cpu",
    ),
    (
        "--perf-alpha",
        "perf_alpha",
        _spec.parse_alpha,
        f"significance level of the one-sided Mann-Whitney test. Default: {_DEFAULTS.alpha}",
    ),
    (
        "--perf-threshold",
        "perf_threshold",
        _spec.parse_threshold,
        "minimum slowdown of the median that fails a benchmark, as a fraction or percentage "
        f"(0.05 or 5%%). Default: {_DEFAULTS.threshold}",
    ),
    (
        "--perf-samples",
        "perf_samples",
        _spec.parse_samples,
        f"timed samples per benchmark. Default: {_DEFAULTS.samples}",
    ),
    (
        "--perf-warmup",
        "perf_warmup",
        _spec.parse_warmup,
        f"warm-up time per benchmark in seconds (at least one call). Default: {_DEFAULTS.warmup}",
    ),
    (
        "--perf-min-time",
        "perf_min_time",
        _spec.parse_min_time,
        "shortest time of one sample in seconds; fast functions loop until they reach it. "
        f"Default: {_DEFAULTS.min_time}",
    ),
    (
        "--perf-max-samples",
        "perf_max_samples",
        _spec.parse_max_samples,
        "adaptive sampling cap: after --perf-samples, keep sampling in batches while the median "
        "of this process is not known to +-1/4 of the threshold, up to this many samples "
        f"(at or below --perf-samples: off). Default: {_DEFAULTS.max_samples}",
    ),
    (
        "--perf-max-time",
        "perf_max_time",
        _spec.parse_max_time,
        "adaptive sampling time budget per benchmark and process, in seconds of sampling "
        f"(the first --perf-samples samples are always taken). Default: {_DEFAULTS.max_time}",
    ),
    (
        "--perf-timer",
        "perf_timer",
        _spec.parse_timer,
        "clock that gates: 'device' (the device's own events: CUDA/HIP/MPS events, OpenCL "
        "profiling, Vulkan timestamps; the host clock where a device has none) or 'host' (wall "
        f"time bracketed by device.sync()). Default: {_DEFAULTS.timer}",
    ),
    (
        "--perf-rounds",
        "perf_rounds",
        _spec.parse_rounds,
        "measure every selected benchmark in this many processes (this one and N-1 fresh ones, "
        "run one after another before the tests) and pool their samples; with "
        "--update-baselines the baseline keeps every run, so it carries the between-process "
        "noise the gate needs. Default: 3 with --update-baselines, else 1",
    ),
    (
        "--perf-threads",
        "perf_threads",
        _spec.parse_threads,
        "host threads for CPU benchmarks (BLAS/OpenMP pools and torch's), recorded in the "
        f"fingerprint; 0 = the libraries' default. Default: {_DEFAULTS.threads}",
    ),
    (
        "--perf-size",
        "perf_size",
        _spec.parse_size,
        "size preset the benchmarks pick their shapes from (the perf_size fixture): tiny "
        "(correctness runs), small, medium or full (GPU-sized). Baselines of each size other than "
        f"small live in their own directory (<machine>-<size>). Default: {_spec.DEFAULT_SIZE}",
    ),
    (
        "--perf-json",
        "perf_json",
        lambda v, w: v,
        "write every result, with raw samples, to this JSON file. Default: none",
    ),
)


# (option, ini name, help, ini help)
_FLAG_OPTIONS: tuple[tuple[str, str, str, str], ...] = (
    (
        "--perf",
        "perf",
        "run the benchmarks marked @pytest.mark.perf; without it they are skipped. Default: off",
        "same as --perf. Default: false",
    ),
    (
        "--update-baselines",
        "perf_update_baselines",
        "record the results of the benchmarks that ran and passed as their new baselines "
        "(atomic writes; other baselines are kept). Default: off",
        "same as --update-baselines (for a dedicated recording job). Default: false",
    ),
    (
        "--perf-recalibrate",
        "perf_recalibrate",
        "measure the devices' peak GFLOP/s and GB/s again instead of using the cached figures "
        "(the cache is in $BURNPERF_CACHE_DIR, else $XDG_CACHE_HOME/pytest-burnperf). "
        "Default: off",
        "same as --perf-recalibrate. Default: false",
    ),
    (
        "--perf-strict",
        "perf_strict",
        "also fail benchmarks whose verdict is inconclusive or that have no baseline. "
        "Default: off (only regressed fails)",
        "same as --perf-strict. Default: false",
    ),
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("burnperf", "performance regression testing (pytest-burnperf)")
    group.addoption(
        "--perf-smoke",
        action=argparse.BooleanOptionalAction,
        dest="perf_smoke",
        default=None,
        help="without --perf, run each benchmark's body once with perf(fn) calling fn once, "
        "untimed, at the tiny size, so its correctness checks run in ordinary test runs "
        "(--no-perf-smoke: skip the benchmarks instead). Default: on",
    )
    parser.addini(
        "perf_smoke",
        type="bool",
        default=True,
        help="same as --perf-smoke / --no-perf-smoke. Default: true",
    )
    for option, ini, text, ini_text in _FLAG_OPTIONS:
        group.addoption(option, action="store_true", default=None, help=text)
        parser.addini(ini, type="bool", default=False, help=ini_text)
    group.addoption(
        "--perf-worker-out", dest="perf_worker_out", default=None, help=argparse.SUPPRESS
    )
    for option, ini, parse, text in _VALUE_OPTIONS:
        group.addoption(
            option,
            dest=ini,
            default=None,
            type=_argtype(parse, option),
            metavar=ini.removeprefix("perf_").upper(),
            help=text,
        )
        parser.addini(ini, type=_ini_type(ini), default="", help=f"same as {option}")


#: ini keys whose values are numbers: in pytest 9's native TOML configuration (``[tool.pytest]``)
#: they may be written as TOML numbers (``perf_alpha = 0.05``) as well as strings (``"5%"``).
_FLOAT_INI = ("perf_alpha", "perf_threshold", "perf_warmup", "perf_min_time", "perf_max_time")
_INT_INI = ("perf_samples", "perf_max_samples", "perf_rounds", "perf_threads")


def _ini_type(ini: str) -> Any:
    """A number-or-string ini type where this pytest has type unions (9.2+), else a string."""
    version = tuple(int(p) for p in pytest.__version__.split(".")[:2] if p.isdigit())
    if version < (9, 2):
        return None
    if ini in _FLOAT_INI:
        return float | str
    if ini in _INT_INI:
        return int | str
    return None


# --------------------------------------------------------------------------------------------
# session state


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


@dataclass
class PerfState:
    enabled: bool
    update: bool
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
    rounds: int = 1
    strict: bool = False
    #: Without --perf: run each benchmark body once, untimed (smoke mode).
    smoke: bool = False
    #: Smoke-run benchmarks that called perf (node ids).
    smoked: set[str] = field(default_factory=set)
    size: str = "small"
    #: In a worker process (one extra round): where to write its raw samples.
    worker_out: Path | None = None
    #: Perf comparisons in this session (for the family-wise correction).
    comparisons: int = 1
    #: Raw samples of the extra rounds, per node id: one list of values per worker process.
    worker_runs: dict[str, list[list[float]]] = field(default_factory=dict)
    worker_samples: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Host windows (hoststate.Window as dicts) and reference probes of the extra rounds, per node.
    worker_host: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    worker_probes: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: This process's reference probe per device id, and its host parts (shared by devices).
    probes: dict[str, dict[str, Any]] = field(default_factory=dict)
    _host_probe: dict[str, float] | None = None
    results: dict[str, Result] = field(default_factory=dict)
    passed: set[str] = field(default_factory=set)
    interrupted: bool = False
    messages: list[str] = field(default_factory=list)
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

    @property
    def registry(self) -> Registry:
        if self._registry is None:
            from .devices import Registry

            self._registry = Registry()
        return self._registry

    @property
    def store(self) -> BaselineStore:
        if self._store is None:
            from .spec import DEFAULT_SIZE
            from .store import BaselineStore

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
            from .machine import legacy_machine_id
            from .spec import DEFAULT_SIZE
            from .store import BaselineStore

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
            from .machine import git_state

            self._git = git_state(self.rootpath)
        return self._git

    def peaks_for(self, device: Any, dtype: str, threads: int) -> Peaks:
        """The device's measured peaks for ``dtype``: from the cache, else calibrated now."""
        from .roofline import PeakCache, Peaks, cache_path, calibrate

        if self._peak_cache is None:
            self._peak_cache = PeakCache(cache_path(), self.machine_id)
        cache = self._peak_cache
        name = str(device.fingerprint().get("name", device.id))
        key = PeakCache.key(self.machine_id, device.id, name, dtype, threads)
        fresh = self.recalibrate and key not in self._checked
        peaks = None if fresh else cache.get(key)
        if peaks is None and key in self._checked:
            return Peaks(None, None, "calibration failed earlier in this run")
        if peaks is None:
            try:
                with device.threads(threads):
                    peaks = calibrate(device, dtype)
            except Exception as exc:  # a driver that cannot run the calibration kernels
                self._checked.add(key)
                self.messages.append(
                    f"peak calibration of {device.id} ({dtype}) failed, so its benchmarks show "
                    f"no % of peak: {type(exc).__name__}: {exc}"
                )
                return Peaks(None, None, f"calibration failed: {type(exc).__name__}: {exc}")
            cache.put(key, peaks)  # failures are never cached: the next run tries again
            self.messages.extend(cache.problems)
            cache.problems.clear()
        self._checked.add(key)
        return peaks

    def probe_for(self, device: Any) -> dict[str, Any] | None:
        """The reference probe of ``device`` in this process, measured on first use."""
        from . import probe

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


def _ini_value(config: pytest.Config, ini: str, parse: Callable[[Any, str], T]) -> T | None:
    where = f"ini option {ini}" + (f" in {config.inipath}" if config.inipath else "")
    try:
        raw = config.getini(ini)
    except (TypeError, ValueError) as exc:  # pytest's own type check of a TOML value
        raise pytest.UsageError(f"{where}: {exc}") from None
    if raw in ("", None):
        return None
    try:
        return parse(raw if isinstance(raw, (int, float)) else str(raw), where)
    except SpecError as exc:
        raise pytest.UsageError(str(exc)) from None


def _xdist_workers(config: pytest.Config) -> object:
    if hasattr(config, "workerinput"):
        return "worker"
    n = getattr(config.option, "numprocesses", None)
    return n if n not in (None, 0, "0") else None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "perf(backends=['cpu'], dtypes=['f32'], samples=, warmup=, min_time=, alpha=, threshold=, "
        "timer='device'|'host', flush_l2=False, threads=1, max_samples=, max_time=): "
        "a benchmark timed and judged against its baseline by pytest-burnperf (needs --perf)",
    )
    values: dict[str, Any] = {}
    ini_values: dict[str, Any] = {}
    for _option, ini, parse, _text in _VALUE_OPTIONS:
        values[ini] = config.getoption(ini)
        ini_values[ini] = _ini_value(config, ini, parse)

    def pick(ini: str) -> Any:
        return values[ini] if values[ini] is not None else ini_values[ini]

    enabled = bool(config.getoption("perf") or config.getini("perf"))
    smoke_opt = config.getoption("perf_smoke")
    smoke = not enabled and bool(config.getini("perf_smoke") if smoke_opt is None else smoke_opt)
    update = bool(config.getoption("update_baselines") or config.getini("perf_update_baselines"))
    if update and not enabled:
        raise pytest.UsageError(
            "--update-baselines records benchmark results, so it needs --perf as well: "
            "pytest --perf --update-baselines"
        )
    if enabled and _xdist_workers(config) is not None:
        raise pytest.UsageError(
            f"pytest-burnperf: --perf cannot run under pytest-xdist (-n {_xdist_workers(config)}): "
            "benchmarks running side by side time each other's interference. "
            "Run the perf tests without -n (or with -n 0)."
        )
    settings_keys = (
        "samples",
        "warmup",
        "min_time",
        "alpha",
        "threshold",
        "timer",
        "threads",
        "max_samples",
        "max_time",
    )
    base = _DEFAULTS.merged({k: ini_values[f"perf_{k}"] for k in settings_keys})
    cmdline = {k: values[f"perf_{k}"] for k in settings_keys if values[f"perf_{k}"] is not None}
    machine_id = pick("perf_machine")
    if machine_id is None and enabled:
        from .machine import default_machine_id

        machine_id = default_machine_id()
    baselines_dir = Path(pick("perf_baselines_dir") or "baselines")
    json_path = pick("perf_json")
    worker_out = config.getoption("perf_worker_out")
    if worker_out:  # one extra round for a parent session: measure, write samples, judge nothing
        update, json_path = False, None
    config.stash[STATE] = PerfState(
        enabled=enabled,
        update=update,
        base=base,
        cmdline=cmdline,
        backends_filter=pick("perf_backends"),
        require=pick("perf_require"),
        dtypes_filter=pick("perf_dtypes"),
        baselines_root=baselines_dir
        if baselines_dir.is_absolute()
        else config.rootpath / baselines_dir,
        machine_id=machine_id or "",
        machine_explicit=pick("perf_machine") is not None,
        json_path=Path(json_path) if json_path else None,
        rootpath=config.rootpath,
        invocation=tuple(str(a) for a in config.invocation_params.args),
        rounds=1
        if worker_out
        else (pick("perf_rounds") or (DEFAULT_UPDATE_ROUNDS if update else 1)),
        size=pick("perf_size") or ("tiny" if smoke else _spec.DEFAULT_SIZE),
        smoke=smoke,
        strict=bool(config.getoption("perf_strict") or config.getini("perf_strict")),
        recalibrate=bool(config.getoption("perf_recalibrate") or config.getini("perf_recalibrate")),
        worker_out=Path(worker_out) if worker_out else None,
    )


# --------------------------------------------------------------------------------------------
# collection


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("perf")
    if marker is None:
        return
    test = metafunc.definition.nodeid
    try:
        spec = _spec.parse_marker(test, marker.args, marker.kwargs)
    except SpecError as exc:
        _invalid(metafunc, str(exc))
        return
    if "perf" not in metafunc.fixturenames:
        _invalid(
            metafunc,
            f"{test}: is marked @pytest.mark.perf but does not use the `perf` fixture; "
            "add a `perf` argument and call perf(fn, *args)",
        )
        return
    state = metafunc.config.stash[STATE]
    cases: list[Case] = []
    if not state.enabled and not state.smoke:
        for name in spec.backends:
            for dtype in spec.dtypes:
                cases.append(Case(None, name, dtype, spec, skip_reason=_WITHOUT_PERF))
    else:
        for entry in state.registry.resolve_all(spec.backends):
            for dtype in spec.dtypes:
                reason = entry.reason
                if reason is None and entry.device is not None:
                    reason = entry.device.unsupported(dtype)
                cases.append(Case(entry, entry.id, dtype, spec, skip_reason=reason))
    argnames = ["_burnperf_case"] + [n for n in ("device", "dtype") if n in metafunc.fixturenames]
    params = []
    for case in cases:
        values: list[Any] = [case]
        if "device" in argnames:
            values.append(case.entry.device if case.entry is not None else None)
        if "dtype" in argnames:
            values.append(case.dtype)
        marks = [pytest.mark.skip(reason=case.skip_reason)] if case.skip_reason else []
        params.append(pytest.param(*values, id=f"{case.label}-{case.dtype}", marks=marks))
    metafunc.parametrize(argnames, params)


def _invalid(metafunc: pytest.Metafunc, message: str) -> None:
    """One parameter that errors at setup with ``message``: each bad marker is reported on its
    own test, all of them, and the rest of the module still runs."""
    argnames = ["_burnperf_case"] + [n for n in ("device", "dtype") if n in metafunc.fixturenames]
    case = Case(None, "invalid", "", _spec.PerfSpec(), error=message)
    values = [case] + [None] * (len(argnames) - 1)
    metafunc.parametrize(argnames, [pytest.param(*values, id="invalid-perf-marker")])


def pytest_runtest_setup(item: pytest.Item) -> None:
    case = _case_of(item)
    if case is not None and case.error is not None:
        pytest.fail(case.error, pytrace=False)


def _runnable(item: pytest.Item) -> bool:
    case = _case_of(item)
    return case is not None and case.skip_reason is None and case.error is None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    state = config.stash[STATE]
    if state.enabled or state.smoke:
        _filter_items(config, state, items)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Count the comparisons (after -k and every other deselection) and run the extra rounds."""
    state = session.config.stash[STATE]
    if not state.enabled:
        return
    runnable = [item for item in session.items if _runnable(item)]
    state.comparisons = max(1, len(runnable))
    if state.rounds > 1 and runnable and not session.config.option.collectonly:
        _run_rounds(session, state)


def _run_rounds(session: pytest.Session, state: PerfState) -> None:
    """Rounds 1..N-1: the same pytest command in fresh processes, one after another."""
    import subprocess
    import sys
    import tempfile

    config = session.config
    tr = config.pluginmanager.get_plugin("terminalreporter")
    import time

    args = [a for a in state.invocation if a not in ("--update-baselines", "--perf-strict")]
    t0 = time.monotonic()

    def elapsed() -> str:
        s = int(time.monotonic() - t0)
        return f"{s // 60}:{s % 60:02d}"

    with tempfile.TemporaryDirectory(prefix="burnperf-rounds-") as tmp:
        for r in range(1, state.rounds):
            out = Path(tmp, f"round{r}.json")
            if tr is not None:
                tr.write_line(
                    f"pytest-burnperf: round {r}/{state.rounds} in a fresh process ({elapsed()} "
                    f"elapsed; this process measures round {state.rounds}) ..."
                )
            cmd = [sys.executable, "-m", "pytest", *args, "-q", "--perf-worker-out", str(out)]
            proc = subprocess.run(
                cmd,
                cwd=config.invocation_params.dir,
                capture_output=True,
                text=True,
                check=False,
            )
            if not out.exists():
                tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
                state.messages.append(
                    f"round {r} in a fresh process failed (exit {proc.returncode}); its samples "
                    f"are missing from the verdicts:\n{tail}"
                )
                continue
            doc = json.loads(out.read_text(encoding="utf-8"))
            for nodeid, rec in doc.items():
                state.worker_runs.setdefault(nodeid, []).append(list(rec["values"]))
                state.worker_host.setdefault(nodeid, []).append(rec.get("host") or {})
                state.worker_probes.setdefault(nodeid, []).append(rec.get("probe") or {})


def _filter_items(config: pytest.Config, state: PerfState, items: list[pytest.Item]) -> None:
    if state.backends_filter is None and state.dtypes_filter is None:
        return
    from .devices import matches

    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        case = _case_of(item)
        if case is None:
            keep.append(item)
            continue
        ok = True
        if state.backends_filter is not None:
            ok = case.entry is not None and any(
                matches(name, case.entry) for name in state.backends_filter
            )
        if ok and state.dtypes_filter is not None:
            ok = case.dtype in state.dtypes_filter
        (keep if ok else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def _case_of(item: pytest.Item) -> Case | None:
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    case = callspec.params.get("_burnperf_case")
    return case if isinstance(case, Case) else None


# --------------------------------------------------------------------------------------------
# fixtures


@pytest.fixture
def _burnperf_case(request: pytest.FixtureRequest) -> Case:
    pytest.fail(
        f"{request.node.nodeid}: the perf, device and dtype fixtures need the test to be marked "
        "@pytest.mark.perf(backends=[...], dtypes=[...])",
        pytrace=False,
    )


@pytest.fixture
def device(_burnperf_case: Case) -> Any:
    """The device this benchmark runs on (see pytest_burnperf.devices.Device)."""
    return _burnperf_case.entry.device if _burnperf_case.entry else None


@pytest.fixture
def perf_size(request: pytest.FixtureRequest) -> str:
    """The run's size preset (``--perf-size``): ``tiny``, ``small``, ``medium`` or ``full``."""
    return request.config.stash[STATE].size


@pytest.fixture
def dtype(_burnperf_case: Case) -> str:
    """The dtype name of this benchmark, such as ``"f32"``."""
    return _burnperf_case.dtype


def _module_and_key(item: pytest.Item, rootpath: Path) -> tuple[str, str]:
    try:
        module = Path(os.path.relpath(item.path, rootpath)).as_posix()
    except ValueError:  # another drive on Windows
        module = item.path.name
    if module.startswith("../"):
        module = item.path.name
    key = item.nodeid.split("::", 1)[1] if "::" in item.nodeid else item.name
    return module, key


@pytest.fixture
def perf(request: pytest.FixtureRequest, _burnperf_case: Case) -> Perf | SmokePerf:
    """Time a function on this benchmark's device and judge it against the baseline.

    ``perf(fn, *args, **kwargs)`` warms up, calibrates, samples, and returns ``fn``'s result;
    ``perf.pedantic(fn, setup=..., rounds=..., iterations=..., warmup_rounds=...)`` gives each
    round fresh inputs.
    """
    from .store import BaselineError

    state = request.config.stash[STATE]
    case = _burnperf_case
    assert case.entry is not None and case.entry.device is not None
    if not state.enabled:
        case.entry.device.reseed(0)
        return SmokePerf(state, request.node, case)
    module, key = _module_and_key(request.node, state.rootpath)
    legacy = False
    try:
        baseline = state.store.get(module, key)
        if baseline is None and state.legacy_store is not None:
            baseline = state.legacy_store.get(module, key)
            legacy = baseline is not None
    except BaselineError as exc:
        pytest.fail(
            f"{request.node.nodeid}: {exc}. The file was left untouched; fix it, or delete it and "
            "record new baselines with --update-baselines",
            pytrace=False,
        )
    case.entry.device.reseed(0)
    return Perf(state, request.node, case, module, key, baseline, legacy)


class SmokePerf:
    """The ``perf`` fixture without --perf: calls the function once, untimed, and returns its
    result, so the benchmark's own checks run; nothing is measured, judged or written."""

    def __init__(self, state: PerfState, item: pytest.Item, case: Case) -> None:
        assert case.entry is not None and case.entry.device is not None
        self._state = state
        self._item = item
        self.device = case.entry.device
        self.dtype = case.dtype
        self._used = False

    def _start(self, fn: object, what: str) -> None:
        __tracebackhide__ = True
        if self._used:
            pytest.fail(
                f"{self._item.nodeid}: {what} was called a second time; a benchmark times one "
                "function once (split it into separate tests)",
                pytrace=False,
            )
        if not callable(fn):
            pytest.fail(f"{self._item.nodeid}: {what} needs a callable, got {fn!r}", pytrace=False)
        self._used = True
        self._state.smoked.add(self._item.nodeid)

    def work(self, flops: Any = None, bytes: Any = None, shape: Any = None) -> None:
        """Accepted and ignored: nothing is timed in a smoke run."""

    def __call__(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        __tracebackhide__ = True
        self._start(fn, "perf()")
        result = fn(*args, **kwargs)
        self.device.sync()
        return result

    def pedantic(
        self,
        fn: Callable[..., T],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        *,
        setup: Callable[[], Any] | None = None,
        rounds: int | None = None,
        iterations: int = 1,
        warmup_rounds: int = 0,
    ) -> T:
        """One round: ``setup`` (if any), then one call."""
        __tracebackhide__ = True
        del rounds, iterations, warmup_rounds
        self._start(fn, "perf.pedantic()")
        a, k = tuple(args), dict(kwargs or {})
        if setup is not None:
            prepared = setup()
            if prepared is not None:
                a, k = tuple(prepared[0]), dict(prepared[1])
        result = fn(*a, **k)
        self.device.sync()
        return result


class Perf:
    """The ``perf`` fixture: call it once per test with the function to benchmark."""

    def __init__(
        self,
        state: PerfState,
        item: pytest.Item,
        case: Case,
        module: str,
        key: str,
        baseline: dict[str, Any] | None,
        legacy: bool = False,
    ) -> None:
        assert case.entry is not None and case.entry.device is not None
        self._state = state
        self._item = item
        self._case = case
        self._module = module
        self._key = key
        self._baseline = baseline
        #: The baseline comes from the directory of the machine id before hardware classes.
        self._legacy = legacy
        self._used = False
        self._work: Work | None = None
        self.device = case.entry.device
        self.dtype = case.dtype
        self.settings = state.settings_for(case.spec)

    def work(
        self,
        flops: float | Work | None = None,
        bytes: float | None = None,
        shape: str | None = None,
    ) -> None:
        """Declare what one call of the benchmarked function computes and moves: floating-point
        operations and bytes read or written in memory (or a ``Work`` from the helpers in
        ``pytest_burnperf.roofline``), and optionally the shape to show. The report then shows
        the shape, GFLOP/s, GB/s and % of peak."""
        from .roofline import Work, WorkError

        where = f"{self._item.nodeid}: perf.work"
        if shape is not None and not isinstance(shape, str):
            pytest.fail(
                f"{where}: shape must be a string such as '256x256', got {shape!r}", pytrace=False
            )
        if isinstance(flops, Work):
            if bytes is not None:
                pytest.fail(f"{where}: give a Work or flops=/bytes=, not both", pytrace=False)
            self._work = flops if shape is None else replace(flops, shape=shape)
            return
        try:
            self._work = Work(flops=flops, bytes=bytes, shape=shape)
        except WorkError as exc:
            pytest.fail(f"{where}: {exc}", pytrace=False)

    def _start(self, fn: object, what: str) -> None:
        __tracebackhide__ = True
        if self._used:
            pytest.fail(
                f"{self._item.nodeid}: {what} was called a second time; a benchmark times one "
                "function once (split it into separate tests)",
                pytrace=False,
            )
        if not callable(fn):
            pytest.fail(f"{self._item.nodeid}: {what} needs a callable, got {fn!r}", pytrace=False)
        self._used = True

    def _clock(self) -> tuple[Any, Callable[[], None] | None]:
        """The timer this benchmark's settings pick on this device, and the L2 flush (or None)."""
        s = self.settings
        timer = self.device.timer() if s.timer == "device" else None
        flush = self.device.l2_flusher() if s.flush_l2 else None
        return timer, flush

    def __call__(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        __tracebackhide__ = True  # an error inside fn shows the user's frames, not the plugin's
        from .stats import median_halfwidth, precision_goal
        from .timing import measure

        self._start(fn, "perf()")
        s = self.settings
        goal = precision_goal(s.threshold)
        return cast(
            T,
            self._measure(
                measure,
                fn,
                args,
                kwargs,
                samples=s.samples,
                warmup=s.warmup,
                min_time=s.min_time,
                precise=lambda values: median_halfwidth(values) <= goal,
                max_samples=s.max_samples,
                max_time=s.max_time,
            ),
        )

    def _measure(self, sampler: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``sampler`` (timing.measure or measure_pedantic) with this benchmark's threads,
        clock, L2 flush and memory meter, watching the host; judge the sample; return the
        function's result."""
        __tracebackhide__ = True
        import time

        from . import hoststate

        probe = self._state.probe_for(self.device)
        single = self.device.kind == "cpu" and self.settings.threads == 1
        with self.device.threads(self.settings.threads):
            timer, flush = self._clock()
            marks: list[hoststate.Snapshot] = []
            result, sample = sampler(
                *args,
                **kwargs,
                sync=self.device.sync,
                timer=timer,
                flush=flush,
                meter=self.device.peak_memory,
                cpu_clock=time.process_time_ns,
                watch=lambda: marks.append(hoststate.snapshot()),
            )
            host = hoststate.window(
                marks[0],
                marks[-1],
                sample.cpu_share if single else None,
                gpu_slowdown=self.device.gpu_slowdown(),
            )
            fingerprint = self.device.fingerprint()
        self._judge(sample, fingerprint, host, probe)
        return result

    def pedantic(
        self,
        fn: Callable[..., T],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        *,
        setup: Callable[[], Any] | None = None,
        rounds: int | None = None,
        iterations: int = 1,
        warmup_rounds: int = 0,
    ) -> T:
        """Time ``rounds`` rounds of ``iterations`` calls, each round after an untimed ``setup``.

        ``setup`` may return ``(args, kwargs)`` for that round. ``rounds`` defaults to the
        benchmark's ``samples`` setting.
        """
        __tracebackhide__ = True
        from .timing import measure_pedantic

        where = f"{self._item.nodeid}: perf.pedantic"
        rounds = self.settings.samples if rounds is None else rounds
        for name, value, low in (
            ("rounds", rounds, 2),
            ("iterations", iterations, 1),
            ("warmup_rounds", warmup_rounds, 0),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                pytest.fail(
                    f"{where}({name}={value!r}): must be a whole number >= {low}", pytrace=False
                )
        if setup is not None and (args or kwargs):
            pytest.fail(
                f"{where}: give either setup (returning args, kwargs) or args/kwargs",
                pytrace=False,
            )
        if setup is not None and iterations > 1:
            pytest.fail(
                f"{where}: iterations={iterations} with a setup function would reuse one "
                "round's inputs; use iterations=1",
                pytrace=False,
            )
        self._start(fn, "perf.pedantic()")
        result = self._measure(
            measure_pedantic,
            fn,
            args,
            kwargs,
            setup=setup,
            rounds=rounds,
            iterations=iterations,
            warmup_rounds=warmup_rounds,
        )
        return cast(T, result)

    def _judge(
        self,
        sample: Any,
        fingerprint: dict[str, Any],
        host: Window,
        probe: dict[str, Any] | None,
    ) -> None:
        from .assess import assess
        from .compare import INCONCLUSIVE, NO_BASELINE, REGRESSED, Policy, failure_message
        from .results import Result

        state = self._state
        node = self._item.nodeid
        if state.worker_out is not None:  # an extra round: keep the samples for the parent
            state.worker_samples[node] = {
                "values": list(sample.values),
                "host": host.as_dict(),
                "probe": probe,
            }
            return
        s = self.settings
        policy = Policy(alpha=s.alpha, threshold=s.threshold, comparisons=state.comparisons)
        runs = [*state.worker_runs.get(node, []), list(sample.values)]
        evidence = _host_evidence(state, node, host, probe, self._baseline)
        verdict = assess(
            self._baseline,
            runs,
            fingerprint=fingerprint,
            timer=sample.timer,
            l2_flush=sample.l2_flush,
            policy=policy,
            legacy=self._legacy,
            host=evidence,
        )
        if s.flush_l2 and not sample.l2_flush:
            verdict = replace(
                verdict, notes=(*verdict.notes, f"flush_l2: {self.device.id} has no L2 flush")
            )
        case = self._case
        assert case.entry is not None
        result = Result(
            nodeid=node,
            module=self._module,
            key=self._key,
            benchmark=self._key.split("[", 1)[0],
            device_id=case.entry.id,
            kind=case.entry.kind,
            library=case.entry.library,
            dtype=case.dtype,
            fingerprint=fingerprint,
            settings=s,
            sample=sample,
            verdict=verdict,
            baseline=self._baseline,
            runs=tuple(tuple(r) for r in runs),
            work=self._work,
            peaks=None
            if self._work is None
            else state.peaks_for(self.device, case.dtype, s.threads),
            host=tuple(evidence.windows),
            probe=None if evidence.probe is None else dict(evidence.probe),
        )
        state.results[node] = result
        self._item.user_properties.extend(junit_properties(result))
        if state.update:
            return
        if verdict.status == REGRESSED:
            pytest.fail(failure_message(self._key, verdict, policy), pytrace=False)
        if state.strict and verdict.status in (INCONCLUSIVE, NO_BASELINE):
            pytest.fail(
                f"{self._key}: {verdict.status} ({verdict.reason}); --perf-strict fails it",
                pytrace=False,
            )


def junit_properties(result: Result) -> list[tuple[str, object]]:
    """The verdict as JUnit XML ``<property>`` elements (what CI systems show per test)."""
    v = result.verdict
    props: list[tuple[str, object]] = [
        ("perf_verdict", v.status),
        ("perf_median_s", f"{v.current_median:.6g}"),
    ]
    if v.baseline_median is not None:
        props.append(("perf_baseline_median_s", f"{v.baseline_median:.6g}"))
    if v.change_pct is not None:
        props.append(("perf_change_pct", f"{v.change_pct:+.2f}"))
    if v.ratio_low is not None and v.ratio_high is not None:
        low, high = 100 * (v.ratio_low - 1), 100 * (v.ratio_high - 1)
        props.append(("perf_change_ci95_pct", f"{low:+.2f},{high:+.2f}"))
    if v.p_value is not None:
        props.append(("perf_p_value", f"{v.p_value:.3g}"))
    if v.min_detectable is not None:
        props.append(("perf_min_detectable_pct", f"{100 * v.min_detectable:.2f}"))
    if v.reason:
        props.append(("perf_reason", v.reason))
    return props


def _host_evidence(
    state: PerfState,
    node: str,
    host: Window,
    probe: dict[str, Any] | None,
    baseline: dict[str, Any] | None,
) -> HostEvidence:
    """This benchmark's host windows and probe over all rounds, and the baseline's."""
    from . import probe as _probe
    from .assess import HostEvidence
    from .hoststate import Window

    windows = [w for d in state.worker_host.get(node, []) if (w := Window.from_dict(d)) is not None]
    windows.append(host)
    probes = [p for p in state.worker_probes.get(node, []) if p]
    if probe:
        probes.append(probe)
    old_windows: list[Window] = []
    old_probe = None
    if baseline is not None:
        for d in baseline.get("host") or ():
            w = Window.from_dict(d) if isinstance(d, dict) else None
            if w is not None:
                old_windows.append(w)
        old_probe = baseline.get("host_probe")
    return HostEvidence(
        windows=tuple(windows),
        baseline_windows=tuple(old_windows),
        probe=_probe.pooled(probes),
        baseline_probe=old_probe if isinstance(old_probe, dict) else None,
    )


# --------------------------------------------------------------------------------------------
# results


class _Recorder:
    """Remembers which benchmarks passed their call, the only ones whose baselines may change."""

    def __init__(self, state: PerfState) -> None:
        self.state = state

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        from .compare import FAILED, REGRESSED

        results = self.state.results
        if report.when == "call" and report.passed and report.nodeid in results:
            self.state.passed.add(report.nodeid)
        elif report.failed:
            self.state.passed.discard(report.nodeid)
            r = results.get(report.nodeid)
            if r is not None and r.verdict.status not in (REGRESSED, FAILED):
                # timed, then failed (an assert after perf(), a teardown): counted as failed
                reason = f"the test failed in {report.when} after it was timed (see its failure)"
                results[report.nodeid] = replace(
                    r, verdict=replace(r.verdict, status=FAILED, reason=reason)
                )

    def pytest_keyboard_interrupt(self) -> None:
        self.state.interrupted = True


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call" and report.passed and _case_of(item) is not None:
        state = item.config.stash[STATE]
        timed = item.nodeid in state.results or item.nodeid in state.smoked
        if (state.enabled or state.smoke) and not timed:
            report.outcome = "failed"
            report.longrepr = (
                f"{item.nodeid}: is marked @pytest.mark.perf but never called perf(fn, ...) "
                "or perf.pedantic(fn, ...), so nothing was timed"
            )
    return report


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    state = config.stash[STATE]
    if not state.enabled or state.worker_out is not None:
        return None
    from .hardware import cpu_identity, describe

    return [
        f"burnperf: machine {state.machine_id} ({describe(cpu_identity())})",
        f"burnperf: baselines {_rel(state.store.dir, state.rootpath)}, {state.rounds} process "
        f"round(s), size {state.size}",
    ]


def _check_required(state: PerfState) -> None:
    """--perf-require: every named device must be here, else a usage error with the reasons."""
    if not state.require or state.worker_out is not None:
        return
    missing = []
    for name in state.require:
        entries = state.registry.resolve(name)
        if not any(e.device is not None for e in entries):
            reasons = "; ".join(dict.fromkeys(e.reason or "absent" for e in entries))
            missing.append(f"{name} ({reasons})")
    if missing:
        raise pytest.UsageError(
            "--perf-require: no device for " + ", ".join(missing) + "; this run would only skip "
            "those benchmarks, so it fails instead"
        )


def pytest_sessionstart(session: pytest.Session) -> None:
    state = session.config.stash[STATE]
    if state.enabled:
        _check_required(state)
        session.config.pluginmanager.register(_Recorder(state), "burnperf-recorder")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash[STATE]
    if not state.enabled:
        return
    if state.worker_out is not None:
        from .store import atomic_write_text

        atomic_write_text(state.worker_out, json.dumps(state.worker_samples))
        return
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        state.interrupted = True
    from .machine import machine_info, now_utc

    now = now_utc()
    if state.update:
        if state.interrupted:
            state.messages.append(
                "baselines NOT updated: the run was interrupted, so no baseline file was written"
            )
        elif not _write_baselines(state, now) and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if state.json_path is not None:
        from .report import json_document
        from .store import atomic_write_text

        doc = json_document(
            list(state.results.values()),
            machine=machine_info(state.machine_id),
            created=now,
            git=state.git,
            settings={
                "samples": state.base.merged(state.cmdline).samples,
                "alpha": state.base.merged(state.cmdline).alpha,
                "threshold": state.base.merged(state.cmdline).threshold,
                "update_baselines": state.update,
                "size": state.size,
                "baselines": str(state.store.dir),
            },
        )
        path = session.config.invocation_params.dir / state.json_path
        try:
            atomic_write_text(path, json.dumps(doc, indent=1, sort_keys=True) + "\n")
        except OSError as exc:
            state.messages.append(f"--perf-json: could not write {path}: {exc.strerror or exc}")
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
        else:
            state.messages.append(f"results written to {state.json_path}")


def _write_baselines(state: PerfState, now: str) -> bool:
    """Write the new baselines; False if some file could not be read or written."""
    from .machine import machine_info
    from .results import provenance

    updates: dict[str, dict[str, dict[str, Any]]] = {}
    for nodeid in sorted(state.passed):
        r = state.results[nodeid]
        libs = dict(r.fingerprint.get("versions", {}))
        updates.setdefault(r.module, {})[r.key] = r.baseline_entry(provenance(state.git, libs, now))
    if not updates:
        state.messages.append("baselines not updated: no benchmark ran and passed")
        return True
    written, errors = state.store.save(updates, machine_info(state.machine_id))
    n = sum(len(updates[m]) for m in updates) - sum(
        len(updates[m]) for m in updates if state.store.path_for(m) in {e.path for e in errors}
    )
    for err in errors:
        state.messages.append(f"NOT updated, left untouched: {err}")
    if written:
        state.messages.append(
            f"baselines updated: {n} benchmark(s) in {len(written)} file(s) under "
            f"{_rel(state.store.dir, state.rootpath)}"
        )
    return not errors


def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash[STATE]
    if not state.enabled or state.worker_out is not None:
        return
    from .comparability import LEGACY
    from .compare import NO_BASELINE
    from .report import counts_line, header, notes, speedups, table

    tr = terminalreporter
    results = list(state.results.values())
    tr.section("pytest-burnperf")
    base = state.base.merged(state.cmdline)
    for line in header(
        results,
        machine_id=state.machine_id,
        baselines=_rel(state.store.dir, state.rootpath),
        size=state.size,
        rounds=state.rounds,
        threshold=base.threshold,
        alpha=base.alpha,
        comparisons=state.comparisons,
    ):
        tr.write_line(line)
    if results:
        for line in table(results):
            tr.write_line(line)
        for line in notes(results):
            tr.write_line(line)
        for line in speedups(results):
            tr.write_line(line)
    tr.write_line(f"perf: {counts_line(results)}")
    args = [a for a in state.invocation if a not in ("--perf", "--update-baselines")]
    record = shlex.join(["pytest", "--perf", "--update-baselines", *args])
    legacy = [r for r in results if r.verdict.reason.startswith(LEGACY)]
    if legacy and not state.update:
        tr.write_line(
            f"{len(legacy)} baseline(s) were recorded before pytest-burnperf recorded the hardware "
            "class, so they were not compared; re-record them on this machine with: " + record
        )
    elif any(r.verdict.status == NO_BASELINE for r in results) and not state.update:
        tr.write_line("record baselines for this machine with: " + record)
    for message in state.messages:
        tr.write_line(message)
