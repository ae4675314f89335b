"""What each mode of a run (core/run_mode.py) registers with pytest, as pytest-xdist registers
one plugin object per role: the session the user started gets a :class:`~.reporter.Reporter`
(header, summary, files at its end), a round process a :class:`~.round_process.RoundProcess`
(progress notes, its samples file; it prints nothing), every measuring run a
:class:`~.result_record.Recorder`; a run without ``--perf`` none of them."""

from __future__ import annotations

import pytest

from pytest_burnperf.plugin.reporter import Reporter
from pytest_burnperf.plugin.result_record import Recorder
from pytest_burnperf.plugin.round_process import RoundProcess
from pytest_burnperf.plugin.session import PerfState


def register(config: pytest.Config, state: PerfState) -> None:
    """The mode's plugin objects, registered once the run's settings are made."""
    mode = state.run.mode
    if not mode.measures:
        return
    config.pluginmanager.register(Recorder(state), "burnperf-recorder")
    if mode.in_round:
        config.pluginmanager.register(RoundProcess(state), "burnperf-round-process")
    elif mode.reports:
        config.pluginmanager.register(Reporter(state), "burnperf-reporter")
