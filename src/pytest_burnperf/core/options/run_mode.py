"""What kind of run this pytest process is: one :class:`Mode`, decided once when the run is
configured (``plugin/configuration/configure.py``), and the one table of what each mode does.

=======  =====================================================================  ===================
mode     what the process does                                                  started by
=======  =====================================================================  ===================
OFF      nothing: the benchmarks are ordinary tests (smoke runs switched off)   ``pytest``
SMOKE    runs each benchmark's body once, untimed, so a broken one fails        ``pytest``
JUDGE    measures and judges each benchmark against its stored baselines        ``--perf``
RECORD   measures and writes the baselines                                      ``--perf-update``
COMPARE  parent of a same-session comparison: runs each body once as a check,   ``--perf-against``
         starts the round processes of both sides, judges their samples
ROUND    one process round for a parent: measures, writes its samples file,     the parent
         judges nothing and prints nothing of its own
COUNT    a ROUND under valgrind: counts each benchmark's calls, not their time  the parent
PROFILE  a ROUND for one side of a comparison with ``--perf-profile``:          the parent
         profiles each benchmark, times nothing
TRACK    a ROUND for one side of a comparison: tracks each benchmark's memory   the parent
         per call, times nothing
SERVE    a round server: collects once, then forks one ROUND per request        the parent
=======  =====================================================================  ===================

Code elsewhere asks the mode a question named for what it decides (``mode.measures``,
``mode.in_round``, ``mode.records``...), never which mode it is; a new mode is a new row here.
What each mode registers with pytest is in ``plugin/configuration/modes.py``.
"""

from __future__ import annotations

import enum


class Mode(enum.Enum):
    OFF = "off"
    SMOKE = "smoke"
    JUDGE = "judge"
    RECORD = "record"
    COMPARE = "compare"
    ROUND = "round"
    COUNT = "count"
    PROFILE = "profile"
    TRACK = "track"
    SERVE = "serve"

    @property
    def measures(self) -> bool:
        """``--perf``: the benchmarks are measured in this process or in its rounds."""
        return self not in (Mode.OFF, Mode.SMOKE)

    @property
    def runs_benchmarks(self) -> bool:
        """The benchmarks run at all (measured, or once as a smoke test)."""
        return self is not Mode.OFF

    @property
    def smoke_only(self) -> bool:
        """Each benchmark's body runs once, untimed; nothing is measured or judged."""
        return self is Mode.SMOKE

    @property
    def in_round(self) -> bool:
        """A process round measuring for a parent session: writes its samples file, judges
        nothing, records nothing, prints no header or summary of its own."""
        return self in (Mode.ROUND, Mode.COUNT, Mode.PROFILE, Mode.TRACK, Mode.SERVE)

    @property
    def counts_calls(self) -> bool:
        """A counted round: each benchmark's calls are counted under callgrind, not timed."""
        return self is Mode.COUNT

    @property
    def profiles_calls(self) -> bool:
        """A profiled round: each benchmark runs under its library's profiler for one side of a
        same-session comparison (runs/profiled.py), untimed."""
        return self is Mode.PROFILE

    @property
    def tracks_sides(self) -> bool:
        """A memory round: each benchmark's memory per call is tracked for one side of a
        same-session comparison (runs/tracked_sides.py), untimed."""
        return self is Mode.TRACK

    @property
    def serves_rounds(self) -> bool:
        """A round server: after its collection it forks one round per request of the parent
        (runs/forkserver.py); each forked child measures as a ROUND."""
        return self is Mode.SERVE

    @property
    def journals(self) -> bool:
        """Notes each benchmark before it starts and its record as it finishes, so that a
        benchmark that kills the process costs only itself (runs/counted.py restarts for the
        rest and names it)."""
        return self is Mode.COUNT

    @property
    def reports(self) -> bool:
        """The session the user started with ``--perf``: prints the header and the summary,
        writes the results files, checks the required devices."""
        return self in (Mode.JUDGE, Mode.RECORD, Mode.COMPARE)

    @property
    def records(self) -> bool:
        """Writes the baselines at its end (``--perf-update``, ``--update-baselines``)."""
        return self is Mode.RECORD

    @property
    def compares(self) -> bool:
        """Judges two environments measured in this session (``--perf-against REF``,
        ``--perf-versions``), not stored baselines."""
        return self is Mode.COMPARE

    @property
    def judges_baselines(self) -> bool:
        """Judges against stored baselines (and so can say how to record or accept them)."""
        return self is Mode.JUDGE


def decide(
    *,
    perf: bool,
    smoke: bool,
    update: bool,
    same_session: bool,
    round_process: bool,
    counted: bool,
    profiled: bool = False,
    serves: bool = False,
    tracked: bool = False,
) -> Mode:
    """The mode of a run from its options: ``perf`` (``--perf``), ``smoke`` (smoke runs on),
    ``update`` (``--perf-update``), ``same_session`` (a comparison plan was made),
    ``round_process`` (``--perf-round-process-out``: started by a parent), ``counted``
    (``--perf-count-dir``: under valgrind), ``profiled`` (``--perf-round-process-profile-side``: one side
    of a comparison profiled), ``tracked`` (``--perf-round-process-tracked-side``: one side's memory
    per call tracked), ``serves`` (``--perf-round-process-serve``: a round server). A round
    process's own ``update`` and comparison are
    its parent's business, so they do not make it another mode."""
    if not perf:
        return Mode.SMOKE if smoke else Mode.OFF
    if round_process:
        if counted:
            return Mode.COUNT
        if profiled:
            return Mode.PROFILE
        if tracked:
            return Mode.TRACK
        return Mode.SERVE if serves else Mode.ROUND
    if same_session:
        return Mode.COMPARE
    return Mode.RECORD if update else Mode.JUDGE
