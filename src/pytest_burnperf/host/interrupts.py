"""Ctrl-C and SIGTERM while files are written: held, not lost, never a half-done update.

:func:`held_signals` replaces the SIGINT/SIGTERM/SIGHUP handlers by ones that only remember the
signal. Code inside checks :attr:`Held.received` where stopping is safe (before the first file is
renamed into place) and otherwise finishes its work; the caller then reports the signal and ends
the run as interrupted. Outside the main thread, signals cannot be handled and nothing changes.
"""

from __future__ import annotations

import signal
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


def release() -> None:
    """Put the handlers back that :func:`hold` replaced. A signal that arrives as its handler
    comes back is handled by that handler (Ctrl-C: ``KeyboardInterrupt``), raised once every
    handler is back: never a hold left half released, whose stale handlers would swallow later
    signals."""
    global _holding
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


def sigterm_as_interrupt() -> Callable[[], None]:
    """For the length of a perf run: SIGTERM ends it like Ctrl-C (cleanly, no baseline written)
    instead of killing the process where it stands. Returns the function that restores the old
    handler. A handler the project installed itself is left alone."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    ):
        return lambda: None

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise Terminated("SIGTERM")

    signal.signal(signal.SIGTERM, interrupt)

    def restore() -> None:
        if signal.getsignal(signal.SIGTERM) is interrupt:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)

    return restore
