"""host/interrupts.py: a signal arriving as the held handlers come back."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
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


def _in_a_process(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


def test_signals_during_a_run_are_interrupts_and_remembered() -> None:
    """SIGTERM raises Terminated and Ctrl-C KeyboardInterrupt, each remembered; an interrupt
    that something turned into another error is raised again by raise_if_arrived."""
    out = _in_a_process(
        "import os, signal\n"
        "from pytest_burnperf.host import interrupts\n"
        "restore = interrupts.signals_as_interrupts()\n"
        "try:\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    for _ in range(10**6): pass\n"
        "except KeyboardInterrupt as e:\n"
        "    caught = type(e).__name__\n"
        "try:\n"
        "    interrupts.raise_if_arrived()\n"
        "except interrupts.Terminated:\n"
        "    again = 'Terminated'\n"
        "print(caught, again, interrupts.arrived())\n"
        "restore()\n"
        "print(interrupts.arrived(), signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)\n"
    )
    assert out.stdout.split("\n")[:2] == ["Terminated Terminated ['SIGTERM']", "[] True"], out


def test_a_signal_held_until_exit_is_said_in_one_line_not_a_traceback() -> None:
    """The outermost run keeps holding after its end: a Ctrl-C in pytest's own cleanup is said
    at exit, the exit status stays the run's."""
    out = _in_a_process(
        "import os, signal, time\n"
        "from pytest_burnperf.host import interrupts\n"
        "interrupts.hold()\n"
        "interrupts.release(until_exit=True)\n"
        "os.kill(os.getpid(), signal.SIGINT)\n"
        "time.sleep(0.2)\n"
        "print('ended normally')\n"
    )
    assert out.returncode == 0 and "ended normally" in out.stdout, out
    assert "Traceback" not in out.stderr and "KeyboardInterrupt" not in out.stderr, out
    assert "SIGINT received as pytest was ending" in out.stderr, out


def test_a_second_run_in_one_process_gets_its_signals_back(tmp_path: Path) -> None:
    """pytest.main twice in one process: the first --perf run's end keeps holding (until exit),
    the second's start gives Ctrl-C back, so it interrupts that run instead of being held."""
    (tmp_path / "t_once.py").write_text("def test_a():\n    pass\n")
    (tmp_path / "t_sleep.py").write_text(
        "import os, signal, time\n\n\ndef test_b():\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n    time.sleep(5)\n"
    )
    code = (
        "import pytest\n"
        "pytest.main(['-q', '-p', 'no:cacheprovider', '--perf', 't_once.py'])\n"
        "code = pytest.main(['-q', '-p', 'no:cacheprovider', 't_sleep.py'])\n"
        "print('second run exit', int(code))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "second run exit 2" in out.stdout, out


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_signal_in_the_interpreters_teardown_does_not_end_the_process(sig: str) -> None:
    """Issue 74: a SIGINT or SIGTERM 0.1-0.2 s after the last line ended 4 of 23 runs by the
    signal (130, 143), no word said: Python's finalisation puts a Python-function handler back
    to the default action, and the signal landed in the teardown after it. Here it lands in a
    module global's __del__, which runs in that teardown."""
    out = _in_a_process(
        "import os, signal, time\n"
        "from pytest_burnperf.host import interrupts\n"
        "class Late:\n"
        "    def __del__(self):\n"
        f"        os.kill(os.getpid(), signal.{sig})\n"
        "        time.sleep(0.2)\n"
        "late = Late()\n"
        "interrupts.hold()\n"
        "interrupts.release(until_exit=True)\n"
        "print('ended normally')\n"
    )
    assert out.returncode == 0, out
    assert "ended normally" in out.stdout and "Traceback" not in out.stderr, out
