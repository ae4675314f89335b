"""Forked process rounds: one prepared pytest process, a child forked from it for each round.

A fresh interpreter per round pays start-up, pytest's collection and the test modules' imports
(torch alone takes 1-2 s) every round. The *server* is one ``pytest ... --perf-round-process-serve=DIR``
process started once by the parent session: it collects, imports, and then waits. For each round
the parent writes a request file ``DIR/<n>.req`` (JSON: the samples file to write and, for an
adaptive round, the node ids to run); the server forks a child, which runs those tests exactly as
a round's process does, writes its samples file and exits; the server then writes ``DIR/<n>.done``
with the child's exit status, and a byte into a pipe the parent waits on (its descriptor in
``DIR/done.fd``), so the parent sees the answer at once. ``DIR/stop`` (or the parent's death)
ends the server.

Each child allocates its own buffers, so the physical pages under a benchmark's data, the main
between-process effect measured on these machines, are drawn afresh each round;
``validation/fork_rounds.py`` measures whether forked rounds scatter like fresh processes
(docs/validation.md). GPU runtimes do not survive a fork, so ``auto`` forks only for CPU devices.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

#: How often the server looks for a request (and the parent for an answer), in seconds.
POLL_S = 0.01
#: Whether a descriptor can be passed down to the server (POSIX): its answers then end the
#: parent's wait at once; elsewhere the parent looks at the answer file every interval.
PASS_FDS = os.name == "posix"
#: Backends whose CPU devices are safe to use in a forked child.
FORK_SAFE_BACKENDS = frozenset({"numpy", "python", "torch"})


def can_fork(devices: Iterable[tuple[str, str]], *, platform: str = sys.platform) -> bool:
    """Whether ``auto`` forks: on Linux, when every ``(backend, kind)`` is a CPU device of a
    backend whose CPU path survives a fork (OpenCL and Vulkan drivers keep threads and device
    handles that a child cannot use, even on the CPU)."""
    if not platform.startswith("linux") or not hasattr(os, "fork"):
        return False
    return all(kind == "cpu" and backend in FORK_SAFE_BACKENDS for backend, kind in devices)


def request_path(ctl: Path, n: int) -> Path:
    return ctl / f"{n}.req"


def done_path(ctl: Path, n: int) -> Path:
    return ctl / f"{n}.done"


def stop_path(ctl: Path) -> Path:
    return ctl / "stop"


def done_fd_path(ctl: Path) -> Path:
    """The number of the descriptor, inherited from the parent, that the server writes a byte to
    after each answer (absent: a server started by hand or by an older parent)."""
    return ctl / "done.fd"


def _notifier(ctl: Path) -> Callable[[], None]:
    """What the server calls after each answer: a byte written to the parent's pipe, where the
    parent gave one (a parent gone, or a descriptor not inherited, is no reason to stop)."""
    try:
        fd = int(done_fd_path(ctl).read_text(encoding="utf-8"))
        os.set_blocking(fd, False)  # a pipe nobody drains (rounds taken in turns) never blocks
    except (OSError, ValueError):
        return lambda: None

    def notify() -> None:
        with contextlib.suppress(OSError):
            os.write(fd, b".")

    return notify


def resident_path(ctl: Path) -> Path:
    """Present when the server measures every round itself instead of forking (resident)."""
    return ctl / "resident"


def resident_ack_path(ctl: Path) -> Path:
    """Written by a server that serves resident rounds (a reference environment's older
    pytest-burnperf does not, and forks its rounds)."""
    return ctl / "resident.ok"


def write_request(
    ctl: Path,
    n: int,
    out: Path,
    only: Collection[str] | None,
    turns: Mapping[str, object] | None = None,
) -> None:
    """Ask the server for round ``n`` (written whole: a temporary name, then renamed);
    ``turns``: where the round's child takes its seat at a turn table (turns.Seat, as JSON)."""
    doc: dict[str, object] = {"out": str(out), "only": None if only is None else sorted(only)}
    if turns is not None:
        doc["turns"] = dict(turns)
    tmp = ctl / f"{n}.req.tmp"
    tmp.write_text(json.dumps(doc), encoding="utf-8")
    os.replace(tmp, request_path(ctl, n))


def read_request(path: Path) -> tuple[Path, frozenset[str] | None, dict[str, object] | None]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    only = doc.get("only")
    turns = doc.get("turns")
    return (
        Path(doc["out"]),
        None if only is None else frozenset(only),
        dict(turns) if isinstance(turns, dict) else None,
    )


def serve(
    ctl: Path,
    run_round: Callable[[Path, frozenset[str] | None, dict[str, object] | None], None],
    *,
    fork: Callable[[], int] = os.fork,
    parent_alive: Callable[[], bool] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """The server's loop: for each request, fork a child that calls ``run_round(out, only,
    turns)``
    and exits (status 0, or 1 after printing the error); answer with the child's exit status.
    A resident server (``resident_path`` present) calls ``run_round`` itself, round after
    round, and answers 0 or 1. Returns the number of rounds served when ``stop`` appears or the
    parent is gone."""
    first_parent = os.getppid()
    notify = _notifier(ctl)
    resident = resident_path(ctl).exists()
    if resident:
        resident_ack_path(ctl).touch()
    alive = parent_alive or (lambda: os.getppid() == first_parent)
    n = 1
    while True:
        req = request_path(ctl, n)
        if not req.exists():
            if stop_path(ctl).exists() or not alive():
                return n - 1
            sleep(POLL_S)
            continue
        out, only, turns = read_request(req)
        if resident:
            code = 1
            try:
                run_round(out, only, turns)
                code = 0
            except Exception:  # reported in the log; the parent sees 1 and the server goes on
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
            _answer(ctl, n, code)
            notify()
            n += 1
            continue
        pid = fork()
        if pid == 0:  # the child: one round, then gone without running the server's teardown
            code = 1
            try:
                run_round(out, only, turns)
                code = 0
            except BaseException:  # reported in the log; the parent sees exit 1
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        _answer(ctl, n, os.waitstatus_to_exitcode(status))
        notify()
        n += 1


def _answer(ctl: Path, n: int, code: int) -> None:
    """Round ``n`` is done with exit status ``code`` (written whole)."""
    tmp = ctl / f"{n}.done.tmp"
    tmp.write_text(str(code), encoding="utf-8")
    os.replace(tmp, done_path(ctl, n))


class ForkServer:
    """The parent's handle on a server process: ``round(out, only, ...)`` per round, ``close()``."""

    def __init__(
        self,
        cmd: Sequence[str],
        *,
        cwd: Path,
        tmp: Path,
        env: Mapping[str, str] | None = None,
        resident: bool = False,
    ) -> None:
        self.ctl = Path(tempfile.mkdtemp(prefix="serve-", dir=tmp))
        if resident:
            resident_path(self.ctl).touch()
        self.log = (tmp / (self.ctl.name + ".log")).open("w+", encoding="utf-8", errors="replace")
        self.n = 0
        # the server writes a byte here after each answer: the parent's wait ends at once
        self._answered: int | None = None
        answers: int | None = None
        if PASS_FDS:
            self._answered, answers = os.pipe()
            done_fd_path(self.ctl).write_text(str(answers), encoding="utf-8")
        try:
            self.proc = subprocess.Popen(
                [*cmd, f"--perf-round-process-serve={self.ctl}"],
                cwd=cwd,
                stdout=self.log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                text=True,
                env=None if env is None else dict(env),
                pass_fds=() if answers is None else (answers,),
            )
        except BaseException:
            if self._answered is not None:
                os.close(self._answered)
            raise
        finally:
            if answers is not None:
                os.close(answers)

    def wait(self, s: float) -> None:
        """Wait ``s`` seconds, or less where the server answers a round in between (a server
        that writes no byte, an older release's, is waited on for the whole ``s``)."""
        if self._answered is None:
            time.sleep(s)
            return
        ready, _, _ = select.select([self._answered], [], [], s)
        if ready and not os.read(self._answered, 4096):
            time.sleep(s)  # the server closed it (gone): its end is running()'s to see

    def forked_instead(self, label: str) -> str | None:
        """Why a resident server was asked for but the one started forked its rounds (its
        pytest-burnperf predates resident rounds), once it has answered a round; else None."""
        if (
            resident_path(self.ctl).exists()
            and done_path(self.ctl, 1).exists()
            and not resident_ack_path(self.ctl).exists()
        ):
            return (
                f"{label}: its pytest-burnperf does not serve resident rounds (an older "
                "release); its rounds were forked from one process instead"
            )
        return None

    def output(self) -> str:
        self.log.flush()
        self.log.seek(0)
        text = self.log.read()
        self.log.seek(0, os.SEEK_END)
        return text

    def round(
        self,
        out: Path,
        only: Collection[str] | None,
        watch: Callable[[Callable[[], bool]], None],
    ) -> tuple[int, str]:
        """Run one round; ``watch(running)`` is called to wait (and print progress) while
        ``running()`` is true. Returns the child's exit status (or the server's, when it died)
        and the server's output so far."""
        running = self.start(out, only)
        watch(running)
        return self.result()

    def start(
        self, out: Path, only: Collection[str] | None, turns: Mapping[str, object] | None = None
    ) -> Callable[[], bool]:
        """Ask for a round without waiting; returns ``running()``, true until its child is
        done (or the server died). ``result()`` then gives what ``round`` returns."""
        self.n += 1
        done = done_path(self.ctl, self.n)
        write_request(self.ctl, self.n, out, only, turns)

        def running() -> bool:
            return not done.exists() and self.proc.poll() is None

        return running

    def result(self) -> tuple[int, str]:
        """The exit status of the last round's child (or the server's, when it died) and the
        server's output so far."""
        done = done_path(self.ctl, self.n)
        if done.exists():
            return int(done.read_text(encoding="utf-8") or 1), self.output()
        return (self.proc.returncode if self.proc.returncode is not None else 1), self.output()

    def close(self) -> None:
        try:
            stop_path(self.ctl).touch()
        except OSError:
            self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            self.proc.wait()
        finally:
            self.log.close()
            if self._answered is not None:
                os.close(self._answered)


def run_items(session: Any, items: Sequence[Any]) -> None:
    """Run ``items`` the way pytest's own test loop does (setup, call and teardown of each, with
    the next item known so that shared fixtures are torn down at the right time)."""
    for i, item in enumerate(items):
        nextitem = items[i + 1] if i + 1 < len(items) else None
        item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        if session.shouldfail or session.shouldstop:
            break
