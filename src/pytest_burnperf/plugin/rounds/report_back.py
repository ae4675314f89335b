"""What a round process does besides measuring (``Mode.ROUND``, ``Mode.COUNT``: started by a
parent session, runs/round_launcher.py): it tells the parent each finished test (for the parent's
progress lines) and writes one samples file at its end. It prints nothing of its own: no header,
no table, no summary (it registers none of those hooks; the parent reports), and writes no
baseline, results file or store record."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_burnperf.host.leftovers import die_with_parent
from pytest_burnperf.plugin.measuring.result_record import new_round
from pytest_burnperf.plugin.output.session_end import held_end
from pytest_burnperf.plugin.rounds.counted_children import Zygote, child_path, forks, run_forked
from pytest_burnperf.plugin.session.perf_state import PerfState
from pytest_burnperf.runs.comparison.overlay import installed_from
from pytest_burnperf.runs.comparison.same_session import shadowed_modules
from pytest_burnperf.runs.round_launcher import (
    note_finished,
    note_record,
    note_started,
    progress_path,
)
from pytest_burnperf.storage.jsonfile import atomic_write_text, dumps, finite


def note_shadowed(round_out: Path) -> None:
    """In a round's process of an installed reference: which of its modules came from elsewhere
    (versions.shadowed_modules), for the parent to refuse the round."""
    overlay = installed_from()
    if overlay:
        bad = shadowed_modules(overlay, sys.modules)
        atomic_write_text(round_out.with_name(round_out.name + ".modules"), dumps(bad))


class RoundProcess:
    """The pytest plugin object of a round process (registered by plugin/configuration/modes.py)."""

    def __init__(self, state: PerfState) -> None:
        assert state.schedule.round_out is not None
        self.state = state
        #: This round's samples file: the schedule's, or in a round server's forked child the
        #: one its request named (start_round); the frozen schedule is never replaced.
        self.out: Path = state.schedule.round_out
        self.progress = progress_path(self.out)
        #: In a counted process: what forks each benchmark's child (counted_children.py).
        self.zygote: Zygote | None = None
        if state.run.mode.counts_calls:
            die_with_parent()  # a counted process never outlives the run that reads it

    def start_round(self, out: Path) -> None:
        """In a round server's forked child: this round's samples file, progress file and an
        empty set of samples."""
        self.out = out
        new_round(self.state)
        self.progress = progress_path(out)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> bool | None:
        """In a counted process: each benchmark counted in a child forked for it
        (counted_children.py), so that what ran before it here does not move its counts."""
        if not self.state.run.mode.counts_calls or not forks(item):
            return None
        if self.zygote is None or self.zygote.pid is None:
            # before the first benchmark: every child is forked from this state
            self.zygote = Zygote(item.session, self.state, child_path(self.out))
        run_forked(item, self.state, self.zygote, self.out)
        return True

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        if self.state.run.mode.journals:
            note_started(self.out, nodeid)

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        record = self.state.findings.round_records.get(nodeid)
        if record is not None and self.state.run.mode.journals:
            note_record(self.out, nodeid, record)
        note_finished(self.progress, nodeid)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.zygote is not None:
            self.zygote.close()
        held_end(session, self.state, self.write_samples)

    def write_samples(self) -> None:
        """The raw samples of this round for the parent (its path may change per round in a
        round server's forked children), and the modules an installed reference shadowed."""
        atomic_write_text(self.out, dumps(finite(self.state.findings.round_records)))
        note_shadowed(self.out)
