"""host/interrupts.py: a signal arriving as the held handlers come back."""

from __future__ import annotations

import signal
from typing import Any

import pytest

from pytest_burnperf.host import interrupts


def test_a_signal_while_releasing_leaves_no_handler_held(monkeypatch: pytest.MonkeyPatch) -> None:
    before = {s: signal.getsignal(s) for s in interrupts.SIGNALS}
    real = signal.signal
    fired: list[int] = []

    def signal_then_ctrl_c(signum: int, handler: Any) -> Any:
        old = real(signum, handler)
        # Ctrl-C lands just as SIGINT's handler comes back: raised from inside signal.signal,
        # after the handler is in place (CPython checks for signals there)
        if signum == signal.SIGINT and handler is before[signal.SIGINT] and not fired:
            fired.append(signum)
            raise KeyboardInterrupt
        return old

    held = interrupts.hold()
    assert not held
    monkeypatch.setattr(signal, "signal", signal_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        interrupts.release()
    monkeypatch.undo()
    assert fired == [signal.SIGINT]
    # every handler is back (SIGTERM and SIGHUP too, after the one that raised), nothing held
    assert {s: signal.getsignal(s) for s in interrupts.SIGNALS} == before
    assert interrupts._holding is None and interrupts._previous == {}
    with interrupts.held_signals() as again:  # and a later hold works as the first did
        assert not again
    assert {s: signal.getsignal(s) for s in interrupts.SIGNALS} == before
