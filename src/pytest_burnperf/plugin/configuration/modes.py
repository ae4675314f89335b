"""What each mode of a run (core/options/run_mode.py) registers with pytest, as pytest-xdist registers
one plugin object per role: the session the user started gets a ``Reporter``
(output/reporter.py: header, summary, files at its end), a round process a ``RoundProcess``
(rounds/report_back.py: progress notes, its samples file; it prints nothing), every measuring
run an ``OutcomeWatch`` (session/outcome_watch.py); a run without ``--perf`` none of them."""

from __future__ import annotations

import pytest

from pytest_burnperf.plugin.output.reporter import Reporter
from pytest_burnperf.plugin.rounds.report_back import RoundProcess
from pytest_burnperf.plugin.session.outcome_watch import OutcomeWatch
from pytest_burnperf.plugin.session.perf_state import PerfState


def register(config: pytest.Config, state: PerfState) -> None:
    """The mode's plugin objects, registered once the run's settings are made."""
    mode = state.run.mode
    if not mode.measures:
        return
    config.pluginmanager.register(OutcomeWatch(state), "burnperf-outcome-watch")
    if mode.in_round:
        config.pluginmanager.register(RoundProcess(state), "burnperf-round-process")
    elif mode.reports:
        config.pluginmanager.register(Reporter(state), "burnperf-reporter")
