"""The state of one pytest session with the plugin (:class:`PerfState`): its configuration
(run_config.py), what it finds out as it goes (findings.py) and the objects it works with; and how a test
item finds its benchmark case."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_burnperf.core.options.settings import LIBRARY_KINDS
from pytest_burnperf.host.machine import ci_info, machine_info
from pytest_burnperf.plugin.session.cases import Case
from pytest_burnperf.plugin.session.findings import Findings
from pytest_burnperf.plugin.session.run_config import OutputConfig, RoundSchedule, RunConfig

if TYPE_CHECKING:
    from pytest_burnperf.devices import Registry
    from pytest_burnperf.instruments.counts_run import Counting
    from pytest_burnperf.runs.device_peaks import PeakSource
    from pytest_burnperf.runs.device_probes import Probes
    from pytest_burnperf.storage.baselines import BaselineStore


@dataclass
class PerfState:
    """One pytest session with the plugin: its configuration (made once, read-only), what it
    collects as it runs, and the objects it works with (devices, baselines, peaks, probes)."""

    run: RunConfig
    schedule: RoundSchedule
    output: OutputConfig
    findings: Findings = field(default_factory=Findings)
    #: The summary's closing lines: the run's one open channel, any part of it may add a line
    #: (what it finds out goes to ``findings``, each part of it written by its owner).
    notes: list[str] = field(default_factory=list)
    #: Writes a progress line to the terminal (set in pytest_configure).
    announce: Callable[[str], None] = print
    #: Puts back the SIGINT/SIGTERM handlers this perf run replaced (interrupts.signals_as_interrupts).
    restore_signals: Callable[[], None] = lambda: None
    #: In a round process of a turn-taking pair (turns.py): this side's end of the turn table.
    turn_side: Any = None
    #: A run that counts (--perf-measure counts|both, or auto where counts judge): what the
    #: counts instrument holds over the run (instruments/counts_run.py: the valgrind, the
    #: counted processes' counts, what was left to the clock and why).
    counting: Counting | None = None
    #: pytest-benchmark's hooks switched off for this --perf run (measuring/compat.py times its
    #: ``benchmark`` fixture's tests); decided once in pytest_configure.
    took_over_benchmark: bool = False
    _registry: Registry | None = None
    _store: BaselineStore | None = None
    _legacy_store: BaselineStore | None = None
    _git: dict[str, object] | None = None
    _peaks: PeakSource | None = None
    _probes: Probes | None = None

    def counts(self) -> Counting:
        """The run's counting, where the caller is reached only in a run that counts."""
        assert self.counting is not None, "asked for the counts of a run that does not count"
        return self.counting

    @property
    def registry(self) -> Registry:
        if self._registry is None:
            from pytest_burnperf.devices import Registry

            self._registry = Registry(only=self.run.backends_filter)
        return self._registry

    @property
    def store(self) -> BaselineStore:
        """This machine's baselines (its hardware class, and the size when not the default)."""
        if self._store is None:
            from pytest_burnperf.core.options.settings import DEFAULT_SIZE
            from pytest_burnperf.storage.baselines import BaselineStore

            group = self.run.machine_id
            if self.run.size != DEFAULT_SIZE:
                group = f"{group}-{self.run.size}"
            self._store = BaselineStore(self.run.baselines_root, group)
        return self._store

    @property
    def legacy_store(self) -> BaselineStore | None:
        """Where baselines of this machine lived before the machine id named the hardware class
        (None when --perf-machine chose the id): found there, they are reported, not compared."""
        if self.run.machine_explicit:
            return None
        if self._legacy_store is None:
            from pytest_burnperf.core.options.settings import DEFAULT_SIZE
            from pytest_burnperf.host.machine import legacy_machine_id
            from pytest_burnperf.storage.baselines import BaselineStore

            group = legacy_machine_id()
            if self.run.size != DEFAULT_SIZE:
                group = f"{group}-{self.run.size}"
            if group == self.store.machine_id:
                return None
            self._legacy_store = BaselineStore(self.run.baselines_root, group)
        return self._legacy_store

    @property
    def git(self) -> dict[str, object]:
        if self._git is None:
            from pytest_burnperf.host.machine import git_state

            self._git = git_state(self.run.rootpath)
        return self._git

    @property
    def peaks(self) -> PeakSource:
        """The devices' measured peaks (runs/device_peaks.py), for roofline figures."""
        if self._peaks is None:
            from pytest_burnperf.runs.device_peaks import PeakSource

            self._peaks = PeakSource(
                self.run.machine_id,
                recalibrate=self.run.recalibrate,
                announce=self.announce,
                messages=self.notes,
            )
        return self._peaks

    @property
    def probes(self) -> Probes:
        """This process's reference probe per device (runs/device_probes.py)."""
        if self._probes is None:
            from pytest_burnperf.runs.device_probes import Probes

            self._probes = Probes(self.notes)
        return self._probes


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
    cases = item.config.stash[STATE].findings.benchmark_cases if STATE in item.config.stash else {}
    return cases.get(definition_id(item)) if cases else None


def session_machine_info(config: pytest.Config, state: PerfState) -> dict[str, object]:
    """This machine's facts, with whatever the project's hooks add."""

    info = dict(machine_info(state.run.machine_id))
    if state.run.environment:
        info["environment"] = dict(state.run.environment)
    ci = ci_info(os.environ)
    if ci:  # the CI job and runner type: with the shard (settings), what a fleet's store keeps
        info["ci"] = ci
    config.hook.pytest_burnperf_update_machine_info(config=config, machine_info=info)
    return info


def line_writer(config: pytest.Config) -> Callable[[str], None]:
    """A function that writes one line to the terminal (nothing where pytest has no terminal
    reporter, e.g. under -p no:terminal)."""
    tr = config.pluginmanager.get_plugin("terminalreporter")

    def write(line: str) -> None:
        if tr is not None:
            tr.write_line(line)

    return write


def rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def module_and_key(item: pytest.Item, rootpath: Path) -> tuple[str, str]:
    """Where a test's baselines are kept: its module's path under the rootdir and its id in
    that module."""
    try:
        module = Path(os.path.relpath(item.path, rootpath)).as_posix()
    except ValueError:  # another drive on Windows
        module = item.path.name
    if module.startswith("../"):
        module = item.path.name
    key = item.nodeid.split("::", 1)[1] if "::" in item.nodeid else item.name
    return module, key


def devices_of(items: list[pytest.Item], wanted: set[str]) -> dict[str, str] | None:
    """The device id (a ``--perf-backends`` name) of each benchmark ``wanted`` (node ids); None
    where one of them is on a device no such name picks (the interpreter of a pytest-benchmark
    test), so nothing is restricted."""
    devices = {
        i.nodeid: c.entry
        for i in items
        if i.nodeid in wanted and (c := case_of(i)) is not None and c.entry is not None
    }
    if not devices or any(e.library not in LIBRARY_KINDS for e in devices.values()):
        return None
    return {nodeid: e.id for nodeid, e in devices.items()}
