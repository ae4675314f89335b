"""In a counted process (``Mode.COUNT``): each benchmark counted in a child of its own, every
child forked from the same state, so that a benchmark's counts follow the benchmark, not what
ran before it.

Counts are the same from run to run only where the counted call meets the interpreter in the
same state. Run one after another in one process, a benchmark met whatever the benchmarks before
it left behind (a cache or registry they filled, type caches, specialised code, the heap):
on pint's suite one conversion counted 70.5 k instructions a call after the whole suite and
65.4-68.9 k after a ``-k`` selection or one module, a false -5% to -7% against a baseline
recorded after the whole suite (docs/pytest-benchmark-suites.md, "pint"); a planted suite whose
first benchmark fills a table the second reads, -51.9%. A child forked from the counted process
itself before each benchmark still met the state the counted process's own work for the earlier
ones left (their reports and records): pint's ``test_base_units`` moved by 2.5% between two
selections. So the counted process forks one :class:`Zygote` before its first benchmark, and
the zygote, which does nothing else, forks every benchmark's child.

The counted process notes the benchmark as started (its journal: a crash names it) and asks the
zygote for a child. The child runs the test's whole protocol (its fixtures included: a session
fixture is set up again in each child) and hands back its record and its test reports through a
file; the counted process keeps the record and logs the reports as its own, so failures, the
progress file and the journal read as before. A child killed by a signal takes the counted
process with it by the same signal: the run then names the benchmark as for any crash
(runs/counted.py) and counts the rest in a fresh process.

Only benchmarks on a backend whose CPU path survives a fork are forked (runs/forkserver.can_fork:
numpy, torch, plain Python); a CPU backend a project adds, and a platform without fork, run in
the counted process itself as before.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from pathlib import Path

import pytest
from _pytest.runner import runtestprotocol

from pytest_burnperf.host.callgrind import DUMP_PREFIX
from pytest_burnperf.host.leftovers import die_with_parent
from pytest_burnperf.plugin.measuring.result_record import keep_round_record
from pytest_burnperf.plugin.session.perf_state import PerfState, case_of
from pytest_burnperf.runs.forkserver import can_fork
from pytest_burnperf.storage.jsonfile import atomic_write_text

#: The exit status of a child that could not run the test's protocol to its end (pytest.exit,
#: an interrupt, an error of pytest's own): what it wrote says why.
STOPPED = 3


def forks(item: pytest.Item) -> bool:
    """Whether ``item`` is counted in a forked child: a benchmark on a fork-safe CPU backend."""
    case = case_of(item)
    if case is None or case.entry is None:
        return False
    return can_fork([(case.entry.library, case.entry.kind)])


def child_path(round_out: Path) -> Path:
    """Where a child writes what it measured and reported, beside the counted process's
    samples file (in its scratch folder)."""
    return round_out.with_name(round_out.name + ".child")


class Zygote:
    """A process forked from the counted process before its first benchmark that does nothing
    but fork each benchmark's child on request and say how it ended: every child then starts
    from the same state, whatever the counted process did for the benchmarks before (a child
    forked from the counted process itself met the state its earlier reports and records left:
    pint's ``test_base_units`` counted 1.4-1.5 k instructions apart, 2.5%, between two ``-k``
    selections of the same collection; forked from this, 47 or fewer). A request and an answer
    are 8 bytes each, the item's index in the session and the child's wait status, so that what
    the zygote allocates is the same for every request."""

    def __init__(self, session: pytest.Session, state: PerfState, handed: Path) -> None:
        self.index = {item.nodeid: i for i, item in enumerate(session.items)}
        requests_in, self._requests = os.pipe()
        self._answers, answers_out = os.pipe()
        for stream in (sys.stdout, sys.stderr):  # nothing buffered is written twice
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            os.close(self._requests)
            os.close(self._answers)
            _serve(session.items, state, handed, parent, requests_in, answers_out)
        os.close(requests_in)
        os.close(answers_out)
        self.pid: int | None = pid

    def run(self, item: pytest.Item) -> int | None:
        """Have ``item`` run in a fresh child; its wait status, or None where the zygote is gone
        (it died: the next benchmark starts another)."""
        if self.pid is None:
            return None
        try:
            os.write(self._requests, self.index[item.nodeid].to_bytes(_WORD, "little"))
            answer = _read_exactly(self._answers, _WORD)
        except OSError:
            answer = b""
        if len(answer) != _WORD:
            self.close()
            return None
        return int.from_bytes(answer, "little", signed=True)

    def close(self) -> None:
        """End the zygote (its requests closed: it exits) and reap it."""
        if self.pid is None:
            return
        for fd in (self._requests, self._answers):
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(self.pid, 0)
        self.pid = None


#: The size of a request (an item's index) and of an answer (a wait status).
_WORD = 8


def _read_exactly(fd: int, size: int) -> bytes:
    got = b""
    while len(got) < size:
        part = os.read(fd, size - len(got))
        if not part:
            break
        got += part
    return got


def _serve(
    items: list[pytest.Item],
    state: PerfState,
    handed: Path,
    parent: int,
    requests: int,
    answers: int,
) -> None:
    """The zygote's loop: fork a child for each requested item, wait for it, answer with its
    wait status; exit when the counted process closes its end (or dies: then the kernel kills
    this one first)."""
    try:
        die_with_parent(parent)
        me = os.getpid()
        word = bytearray(_WORD)
        while os.readv(requests, [word]) == _WORD:
            pid = os.fork()
            if pid == 0:
                os.close(requests)
                os.close(answers)
                _child(items[int.from_bytes(word, "little")], state, handed, me)
            status = os.waitpid(pid, 0)[1]
            _sweep_dumps(state, pid)
            os.write(answers, status.to_bytes(_WORD, "little", signed=True))
    finally:
        os._exit(0)


def run_forked(item: pytest.Item, state: PerfState, zygote: Zygote, round_out: Path) -> None:
    """Run ``item``'s protocol in a child the ``zygote`` forks: log it as started here, keep
    the child's record and log its reports here."""
    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    handed = child_path(round_out)
    handed.unlink(missing_ok=True)
    status = zygote.run(item)
    if status is not None and os.WIFSIGNALED(status):
        _die_by(os.WTERMSIG(status))
    got = _read(handed)
    handed.unlink(missing_ok=True)
    record = got.get("record")
    if isinstance(record, dict):
        keep_round_record(state, item.nodeid, record)
    reports = got.get("reports")
    config = item.config
    for data in reports if isinstance(reports, list) else []:
        report = config.hook.pytest_report_from_serializable(config=config, data=data)
        if report is not None:
            ihook.pytest_runtest_logreport(report=report)
    stopped = got.get("stopped")
    if not isinstance(reports, list) or stopped:
        if status is None:
            why = "the process that forks each benchmark's child died"
        else:
            code = os.waitstatus_to_exitcode(status)
            why = f"the forked child that ran it exited with status {code} and no report"
        why = str(stopped or why)
        ihook.pytest_runtest_logreport(report=_failed(item, why))
        if stopped:
            item.session.shouldstop = f"{item.nodeid}: {why}"
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)


def _child(item: pytest.Item, state: PerfState, handed: Path, parent: int) -> None:
    """In the forked child: run the protocol (every fixture set up and torn down here), write
    the record and the reports, and exit without running the session's end."""
    code = 0
    doc: dict[str, object] = {}
    try:
        die_with_parent(parent)
        reports = runtestprotocol(item, nextitem=None, log=False)
        config = item.config
        doc["reports"] = [
            config.hook.pytest_report_to_serializable(config=config, report=r) for r in reports
        ]
        record = state.findings.round_records.get(item.nodeid)
        if record is not None:
            doc["record"] = record
    except BaseException as exc:
        code = STOPPED
        doc["stopped"] = f"{type(exc).__name__}: {exc}"
    try:
        atomic_write_text(handed, json.dumps(doc, default=repr, allow_nan=False))
    except (OSError, ValueError) as exc:
        code = STOPPED
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f"burnperf: the counted child could not hand back its record: {exc}\n")
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def _sweep_dumps(state: PerfState, pid: int) -> None:
    """Remove what callgrind wrote for the child ``pid`` that nothing reads: its profile at exit
    (about 130 kB with torch loaded) and the dumps of warm-up calls, which would otherwise pile
    up in the scratch folder, one set a benchmark, until the run's end."""
    folder = state.run.count.dir
    if folder is None:
        return
    for left in folder.glob(f"{DUMP_PREFIX}.{pid}*"):
        left.unlink(missing_ok=True)


def _read(handed: Path) -> dict[str, object]:
    """What the child handed back (nothing where it wrote no file or a bad one)."""
    try:
        doc = json.loads(handed.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _die_by(signum: int) -> None:
    """End this process by ``signum``, as its child ended: the run that started it reads a
    crash on the benchmark its journal names as started (runs/counted.py)."""
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
        sys.stderr.flush()
    with contextlib.suppress(OSError, ValueError):
        signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)  # a signal that does not kill by default


def _failed(item: pytest.Item, why: str) -> pytest.TestReport:
    """A failed report for ``item`` whose child could not report (it said ``why``)."""
    return pytest.TestReport(
        item.nodeid,
        item.location,
        {},
        "failed",
        f"not counted: {why}",
        "call",
    )
