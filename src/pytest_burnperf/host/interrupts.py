"""Ctrl-C and SIGTERM while files are written: held, not lost, never a half-done update.

:func:`held_signals` replaces the SIGINT/SIGTERM/SIGHUP handlers by ones that only remember the
signal. Code inside checks :attr:`Held.received` where stopping is safe (before the first file is
renamed into place) and otherwise finishes its work; the caller then reports the signal and ends
the run as interrupted. Outside the main thread, signals cannot be handled and nothing changes.
"""

from __future__ import annotations

import atexit
import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

SIGNALS = tuple(
    s for s in (getattr(signal, n, None) for n in ("SIGINT", "SIGTERM", "SIGHUP")) if s is not None
)


@dataclass
class Held:
    """The signals that arrived while held, by name (``SIGINT``), in order."""

    received: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.received)

    def names(self) -> str:
        return ", ".join(dict.fromkeys(self.received))


_holding: Held | None = None
_previous: dict[int, Any] = {}


def hold() -> Held:
    """Start holding SIGINT/SIGTERM/SIGHUP (until :func:`release`); if already holding, the
    current :class:`Held`. Outside the main thread nothing is held."""
    global _holding
    if _holding is not None:
        return _holding
    held = Held()
    if threading.current_thread() is not threading.main_thread():
        return held

    def remember(signum: int, frame: FrameType | None) -> None:
        held.received.append(signal.Signals(signum).name)

    _holding = held
    for s in SIGNALS:
        _previous[s] = signal.signal(s, remember)
    return held


def release(*, until_exit: bool = False) -> None:
    """Put the handlers back that :func:`hold` replaced. A signal that arrives as its handler
    comes back is handled by that handler (Ctrl-C: ``KeyboardInterrupt``), raised once every
    handler is back: never a hold left half released, whose stale handlers would swallow later
    signals.

    ``until_exit``: the process is ending (the outermost pytest run's end): keep holding until
    it exits, so that a signal landing in pytest's own cleanup after the run's files were
    written is said in one line at exit instead of a ``KeyboardInterrupt`` traceback."""
    global _holding
    if until_exit and _holding is not None:
        held = _holding
        if not _at_exit:
            _at_exit.append(held)
            atexit.register(_say_late, held)
        return
    _holding = None
    previous = list(_previous.items())
    _previous.clear()
    raised: BaseException | None = None
    for s, handler in previous:
        try:
            signal.signal(s, handler)
        except BaseException as exc:  # raised by the handler just put back, once it is in place
            raised = raised or exc
    if raised is not None:
        raise raised


_at_exit: list[Held] = []


def forget_caught_interrupt() -> None:
    """Clear CPython's note of an interrupt that left code run from a string, once the run has
    caught it. ``exec`` or ``eval`` of a string (dataclasses' and namedtuple's generated
    methods, made as a module is first imported) marks a ``KeyboardInterrupt`` that leaves it
    as unhandled, even where a caller catches it, and ``python -m pytest`` then ends by SIGINT
    (status -2, or 130 in a shell) after pytest's summary instead of with pytest's exit status
    2: a Ctrl-C landing as a lazily imported module made its dataclasses did so, 2 times in 40
    at random moments. Running any string through ``exec`` clears the mark (CPython sets it
    again only when an interrupt leaves that code). Called at the end of the outermost run,
    when pytest has dealt with every interrupt; signals arriving after it are held."""
    exec("pass")  # a constant string: its only effect is to clear the mark


def _say_late(held: Held) -> None:
    """At exit: say what was held, then ignore the signals for the rest of the process. Python's
    finalisation puts a signal whose handler is a Python function back to the default action,
    so a SIGINT or SIGTERM in the teardown after this (modules, threads, a C extension's
    cleanup: 0.1-0.2 s with torch loaded) killed the process by the signal (130, 143) with no
    word, though the run had ended and its files were whole; an ignored signal it leaves
    alone."""
    if held:
        sys.stderr.write(
            f"pytest-burnperf: {held.names()} received as pytest was ending; the run's files "
            "had been written whole\n"
        )
    if threading.current_thread() is threading.main_thread():
        for s in SIGNALS:
            with contextlib.suppress(ValueError, OSError):
                signal.signal(s, signal.SIG_IGN)


@contextmanager
def held_signals() -> Iterator[Held]:
    """Hold the signals inside; nested in a hold that is already on, share its :class:`Held` and
    leave it on."""
    outer = _holding is not None
    held = hold()
    try:
        yield held
    finally:
        if not outer:
            release()


class Terminated(KeyboardInterrupt):
    """SIGTERM during a perf run, raised where Ctrl-C would be, so pytest ends the run as
    interrupted and no baseline is written."""


#: The signals that arrived while :func:`signals_as_interrupts` was on, by name, in order.
_arrived: list[str] = []


def arrived() -> list[str]:
    """The signals (``SIGINT``, ``SIGTERM``) that interrupted this perf run so far. A test that
    failed after one arrived failed because of it: an interrupt that lands in an import or a
    C extension's code can surface as another error (``ImportError: initialization failed``)."""
    return list(_arrived)


def raise_if_arrived() -> None:
    """Raise the interrupt (:class:`Terminated` for SIGTERM, else ``KeyboardInterrupt``) where a
    signal arrived during this perf run but the run goes on: something turned the interrupt into
    another error or swallowed it."""
    if _arrived:
        raise Terminated("SIGTERM") if "SIGTERM" in _arrived else KeyboardInterrupt()


def signals_as_interrupts() -> Callable[[], None]:
    """For the length of a perf run: SIGTERM ends it like Ctrl-C (cleanly, no baseline written)
    instead of killing the process where it stands, and both are remembered as they arrive
    (:func:`arrived`). Returns the function that restores the old handlers. A handler the
    project installed itself is left alone."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    _arrived.clear()
    installed: list[tuple[int, Any, Any]] = []
    for sig, kind, default in (
        (signal.SIGTERM, Terminated, signal.SIG_DFL),
        (signal.SIGINT, KeyboardInterrupt, signal.default_int_handler),
    ):
        if signal.getsignal(sig) is not default:
            continue

        def interrupt(
            signum: int, frame: FrameType | None, kind: type[KeyboardInterrupt] = kind
        ) -> None:
            name = signal.Signals(signum).name
            _arrived.append(name)
            raise kind(name) if kind is Terminated else kind()

        signal.signal(sig, interrupt)
        installed.append((sig, interrupt, default))

    def restore() -> None:
        for sig, handler, default in installed:
            if signal.getsignal(sig) is handler:
                signal.signal(sig, default)
        _arrived.clear()

    return restore
