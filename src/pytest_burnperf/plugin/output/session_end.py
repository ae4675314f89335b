"""The end of a measuring session, with signals held: from the moment its files are written to
the end of the process, a Ctrl-C or SIGTERM is held, so every file is written whole or not at all
and the run ends as interrupted with a message instead of a traceback."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pytest_burnperf.host.interrupts import arrived, hold
from pytest_burnperf.plugin.session.outcome_watch import interrupted
from pytest_burnperf.plugin.session.perf_state import PerfState


def held_end(session: pytest.Session, state: PerfState, write: Callable[[], None]) -> None:
    """Put back the signal handlers the run replaced, then ``write`` with signals held; a signal
    that arrived meanwhile makes the run interrupted. So does one that arrived during the run
    where pytest did not tell the plugins of it: its rendering of an interrupt that landed in a
    frame with no line number (an import's) can fail before the plugins hear of it."""
    if arrived():
        interrupted(state)
    state.restore_signals()
    held = hold()
    write()
    if held:
        interrupted(state, f"{held.names()} received while the run was being written up")
        session.exitstatus = pytest.ExitCode.INTERRUPTED
