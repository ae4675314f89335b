"""Turn-taking pairs: the two sides of a same-session comparison measure one benchmark in short
alternating windows, both processes alive, so that the host's slow spells (a few hundred
milliseconds to over a second on shared machines, docs/validation.md) fall on both sides alike.

One *turn table* per benchmark and round, in the parent session: it listens on a Unix socket,
each side's round process (a child forked by that environment's round server) connects, and the
table hands out the turn. A side works only while it holds the turn:

* ``go SECONDS`` (table -> side): the side's turn; it runs (fixture set-up, warm-up and loop
  calibration on its first turn; a sampling window of SECONDS after that) and then answers
* ``yield`` (side -> table): it wants another window, or
* ``finished`` (side -> table, or the connection closing): the test is over, teardown included;
  the table waits for the side's process to exit before the next turn.

Turns alternate between the sides still working, in an order drawn at random in each cycle of
turns. A test that never asks for a window (``benchmark.pedantic``, a failure, a skip) simply
keeps its first turn until it is finished, so the two processes never run at the same time.
No pytest here; the socket is the only channel, and every wait has a deadline checked against
whether the side's process is still alive.
"""

from __future__ import annotations

import contextlib
import os
import random
import select
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: The length of a sampling window, in seconds (validation/alternation.py chose it: see
#: docs/validation.md, "How long a turn should be").
WINDOW_S = 0.25
#: A table gives up on a side that holds the turn longer than this without a word (a hung
#: benchmark), or that does not connect in this long after its process started.
STALL_S = 600.0
#: How often waits look at whether the side's process is still alive.
POLL_S = 0.2
#: After a side yields, the table waits at most this long for it to sleep, looking this often.
SETTLE_S = 0.05
SETTLE_POLL_S = 0.0002
#: How often a table looks whether a finished side's process has exited.
EXIT_POLL_S = 0.002
#: A side asks for at most this many windows (a runaway loop ends; the measurement stands).
MAX_TURNS = 400


@dataclass(frozen=True)
class Seat:
    """Where a round process takes its seat: the table's address, its side's label, and the
    CPU both sides of the pair are bound to (None: where the scheduler puts them)."""

    address: str
    label: str
    cpu: int | None = None

    def as_json(self) -> dict[str, object]:
        return {"address": self.address, "label": self.label, "cpu": self.cpu}

    @classmethod
    def from_json(cls, doc: Mapping[str, object]) -> Seat:
        cpu = doc.get("cpu")
        if cpu is not None and not isinstance(cpu, int):
            raise ValueError(f"a seat's cpu must be a whole number, got {cpu!r}")
        return cls(str(doc["address"]), str(doc["label"]), cpu)


def table_address(rng: random.Random, platform: str = sys.platform) -> str:
    """A fresh address for a turn table: a name in Linux's abstract socket namespace (no file),
    elsewhere a short socket path in the temporary directory (Table.close removes it)."""
    tag = f"burnperf-turns-{os.getpid()}-{rng.getrandbits(48):012x}"
    if platform.startswith("linux"):
        return "\0" + tag
    import tempfile

    return str(Path(tempfile.gettempdir(), tag + ".sock"))


def shared_cpu(rng: random.Random) -> int | None:
    """A CPU for both sides of a pair, drawn from those this process may run on (None where
    the platform cannot bind a process to a CPU)."""
    getaffinity = getattr(os, "sched_getaffinity", None)
    if getaffinity is None or not hasattr(os, "sched_setaffinity"):
        return None
    cpus = sorted(getaffinity(0))
    return rng.choice(cpus) if cpus else None


class TurnError(Exception):
    """The table lost a side (it died, hung, or never connected)."""


def _read_line(sock: socket.socket, buf: bytearray) -> str | None:
    """The next line from ``sock`` (blocking), or None at end of stream."""
    while b"\n" not in buf:
        chunk = sock.recv(4096)
        if not chunk:
            return None
        buf.extend(chunk)
    line, _, rest = bytes(buf).partition(b"\n")
    buf[:] = rest
    return line.decode("ascii", "replace").strip()


class Side:
    """A round process's end: ``wait()`` blocks until this side holds the turn and returns the
    window's length; ``give_back()`` yields the turn asking for another; ``finish()`` ends."""

    def __init__(self, address: str, label: str, cpu: int | None = None) -> None:
        """``cpu``: where the sampling runs (the other side's too); the calling thread is bound
        to it when sampling starts (``give_back``), after set-up and warm-up, so that threads
        the process starts meanwhile (a BLAS pool) stay free to run elsewhere instead of
        waiting behind the benchmark on its CPU."""
        self.cpu = cpu
        self.bound = False
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(address)
        # the thread that will sample (this one), for the table's look at whether it sleeps
        tid = threading.get_native_id()
        self.sock.sendall(f"hello {label} {tid}\n".encode("ascii"))
        self.buf = bytearray()
        self.turns = 0
        self.closed = False

    def wait(self) -> float:
        """Block until the table hands this side the turn; the window's length in seconds."""
        line = _read_line(self.sock, self.buf)
        if line is None or not line.startswith("go "):
            raise TurnError(f"the turn table closed the connection (got {line!r})")
        self.turns += 1
        return float(line.split()[1])

    def give_back(self) -> float:
        """Yield the turn, asking for another; blocks until it comes; its window's length."""
        if self.cpu is not None and not self.bound:
            self.bound = True
            with contextlib.suppress(OSError, AttributeError):
                os.sched_setaffinity(0, {self.cpu})  # this thread only (pid 0 on Linux)
        self.sock.sendall(b"yield\n")
        return self.wait()

    def wants_more(self) -> bool:
        return self.turns < MAX_TURNS

    def finish(self) -> None:
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(OSError):
            self.sock.sendall(b"finished\n")
        with contextlib.suppress(OSError):
            self.sock.close()


def asleep(tid: int, most: float = SETTLE_S, stat: str | None = None) -> bool:
    """Wait until thread ``tid`` is no longer running or runnable (``/proc/TID/stat``'s state),
    at most ``most`` seconds; False where it did not (or cannot be read)."""
    path = stat or f"/proc/{tid}/stat"
    end = time.monotonic() + most
    while True:
        try:
            with open(path, encoding="ascii", errors="replace") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        if state != "R":
            return True
        if time.monotonic() > end:
            return False
        time.sleep(SETTLE_POLL_S)


class Table:
    """The parent's end for one benchmark and round: ``run(alive)`` hands out the turns until
    both sides are finished; ``turns`` counts the windows each side got."""

    def __init__(self, address: str, labels: Sequence[str], *, window: float = WINDOW_S) -> None:
        """``address``: a socket path, or on Linux a name in the abstract namespace (a leading
        NUL byte: no file, no path-length limit)."""
        self.address, self.labels, self.window = address, list(labels), window
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(address)
        self.listener.listen(len(labels))
        self.conns: dict[str, socket.socket] = {}
        self.bufs: dict[str, bytearray] = {}
        self.turns: dict[str, int] = {label: 0 for label in labels}
        #: Each side's sampling thread (its native id), to look whether it sleeps.
        self.tids: dict[str, int] = {}
        #: The order in which the sides held the turn (for tests and the record).
        self.log: list[str] = []

    def close(self) -> None:
        for conn in self.conns.values():
            with contextlib.suppress(OSError):
                conn.close()
        with contextlib.suppress(OSError):
            self.listener.close()
        if not self.address.startswith("\0"):
            with contextlib.suppress(OSError):
                Path(self.address).unlink()

    def _wait_readable(
        self, sock: socket.socket, alive: Callable[[], bool], what: str, stall: float
    ) -> None:
        end = time.monotonic() + stall
        while True:
            ready, _, _ = select.select([sock], [], [], POLL_S)
            if ready:
                return
            if not alive():
                raise TurnError(f"{what}: its process ended")
            if time.monotonic() > end:
                raise TurnError(f"{what}: no word for {stall:.0f} s")

    def connect(self, alive: Callable[[str], bool], stall: float = STALL_S) -> list[str]:
        """Accept every side; the labels of those whose process ended before connecting (a
        test that did not run: collection error, deselected) are returned, not waited for."""
        gone: list[str] = []
        while len(self.conns) + len(gone) < len(self.labels):
            missing = [x for x in self.labels if x not in self.conns and x not in gone]
            try:
                self._wait_readable(
                    self.listener,
                    lambda m=missing: all(alive(x) for x in m),  # type: ignore[misc]
                    f"round process of {', '.join(missing)}",
                    stall,
                )
            except TurnError:
                dead = [x for x in missing if not alive(x)]
                if not dead:
                    raise
                gone.extend(dead)
                continue
            conn, _ = self.listener.accept()
            buf = bytearray()
            hello = _read_line(conn, buf)
            words = (hello or "").split()
            label = words[1] if len(words) == 3 and words[0] == "hello" else ""
            if label not in self.labels or label in self.conns or not words[2].isdigit():
                conn.close()
                raise TurnError(f"unexpected turn-table greeting {hello!r}")
            self.conns[label], self.bufs[label] = conn, buf
            self.tids[label] = int(words[2])
        return gone

    def _turn(self, label: str, alive: Callable[[str], bool], stall: float) -> bool:
        """Hand ``label`` the turn; True while it wants another."""
        conn = self.conns[label]
        try:
            conn.sendall(f"go {self.window!r}\n".encode("ascii"))
        except OSError:
            return False
        self.turns[label] += 1
        self.log.append(label)
        self._wait_readable(conn, lambda: alive(label), f"side {label}", stall)
        try:
            line = _read_line(conn, self.bufs[label])
        except OSError:
            line = None
        if line == "yield":
            # the next side starts only once this one sleeps: woken on the CPU they share
            # while this one still runs towards its wait, it would preempt it and leave it
            # runnable behind its whole window (tens of ms of CPU pressure a window, measured)
            asleep(self.tids[label])
            return True
        # finished: its process exits (unmapping its memory) before anyone else's turn, so
        # that the exit does not run beside the other side's windows (on the CPU they share)
        end = time.monotonic() + stall
        while alive(label) and time.monotonic() < end:
            time.sleep(EXIT_POLL_S)
        return False

    def run(
        self,
        alive: Callable[[str], bool],
        rng: random.Random | None = None,
        *,
        first: Sequence[str] | None = None,
        stall: float = STALL_S,
    ) -> dict[str, int]:
        """Connect the sides, then alternate the turn between those still working: the first
        cycle in the order ``first`` (else drawn), each later one in an order drawn anew."""
        rng = rng or random.Random()
        self.connect(alive, stall)
        working = [x for x in self.labels if x in self.conns]
        cycle = 0
        while working:
            order = working[:]
            if cycle == 0 and first is not None:
                order = [x for x in first if x in working]
            else:
                rng.shuffle(order)
            cycle += 1
            for label in order:
                if not self._turn(label, alive, stall):
                    working.remove(label)
        return dict(self.turns)
