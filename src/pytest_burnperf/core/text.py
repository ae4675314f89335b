"""Text for people: the one time formatter, durations, and escaping of anything read from
files, test ids or metadata before a terminal shows it, and commands to copy fitted to a line.
Standard library only."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

#: The password of a URL's user part: ``scheme://user:PASSWORD@host``.
_URL_PASSWORD = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^/@\s:]*):(?P<secret>[^@\s]*)@")


def redact(text: str) -> str:
    """``text`` with the password of every URL in it hidden (``postgresql://u:***@host/db``):
    every message, suggested command and document that may repeat a URL passes through here."""
    return _URL_PASSWORD.sub(lambda m: f"{m.group('head')}:***@", text)


def has_control(text: str) -> bool:
    """Whether ``text`` holds a control character (C0, DEL or C1)."""
    return any(ord(c) < 32 or 127 <= ord(c) < 160 for c in text)


def escape(text: str) -> str:
    """``text`` with control characters (C0, DEL, C1; newlines and escapes included) written as
    ``\\x1b``-style escapes, so text from a file or a driver can never move the cursor, colour the
    terminal or start a line of its own."""
    if not has_control(text):
        return text
    return "".join(
        c if not (ord(c) < 32 or 127 <= ord(c) < 160) else f"\\x{ord(c):02x}" for c in text
    )


def escape_strings(obj: Any) -> Any:
    """``obj`` with :func:`escape` applied to every string in it, keys included."""
    if isinstance(obj, str):
        return escape(obj)
    if isinstance(obj, Mapping):
        return {escape(str(k)): escape_strings(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [escape_strings(v) for v in obj]
    return obj


def format_time(seconds: float) -> str:
    """``12.3 ms``: seconds in the largest unit (s, ms, us, ns) they reach, to three significant
    digits (``1.00 ms``, ``12.3 ms``, ``123 ms``); ``-`` for what is not a finite time. The one
    time format of the terminal, Markdown, HTML and CLI output."""
    if not math.isfinite(seconds):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if abs(seconds) >= scale or unit == "ns":
            value = seconds / scale
            digits = 2 if abs(value) < 10 else 1 if abs(value) < 100 else 0
            return f"{value:.{digits}f} {unit}"
    raise AssertionError("unreachable")


def format_bytes(n: object) -> str:
    """``12.0 MiB``: a byte count as the tables show it; ``-`` when unknown."""
    if isinstance(n, bool) or not isinstance(n, int):
        return "-"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def format_count(value: float | None) -> str:
    """``1.51 M``: a count (instructions, estimated cycles) to three significant digits in k, M
    or G; ``-`` for what is not a finite count."""
    if value is None or not math.isfinite(value):
        return "-"
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            v = value / scale
            digits = 2 if abs(v) < 10 else 1 if abs(v) < 100 else 0
            return f"{v:.{digits}f} {unit}"
    return f"{value:.0f}"


def clock(seconds: float) -> str:
    """``m:ss`` (or ``h:mm:ss``) for a progress line."""
    s = max(0, int(seconds))
    h, rest = divmod(s, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


def rounds_text(rounds: int, max_rounds: int) -> str:
    """``3 process rounds (up to 8 for undecided benchmarks)`` for the header lines."""
    text = f"{rounds} process round" + ("s" if rounds != 1 else "")
    if max_rounds > rounds:
        text += f" (up to {max_rounds} for undecided benchmarks)"
    return text


#: Where a dead process's own account of its death starts: Python's fault handler (pytest
#: enables it: the crashing thread's frames follow, the innermost first) and valgrind's.
_DEATH = ("Fatal Python error", "Process terminating with default action")
#: A line of pytest's progress alone (``..F.s``, ``[ 50%]``): says nothing of a crash.
_PROGRESS = re.compile(r"^[.sFExX]*( *\[ *\d+%\])?$")


def tail(output: str, lines: int = 15) -> str:
    """The lines of a process's output a message shows: from the first account of a crash
    (Python's fault handler, valgrind's "Process terminating"), so that the crashing frame is
    never cut off for the outer ones below it; else the last lines, without pytest's progress
    dots at the end (a process ended by ``os._exit`` left a lone "." as its last word)."""
    text = output.strip().splitlines()
    for i, line in enumerate(text):
        if any(mark in line for mark in _DEATH):
            return "\n".join(text[i : i + lines])
    while text and _PROGRESS.match(text[-1].strip()):
        text.pop()
    return "\n".join(text[-lines:]) if text else "(no output of its own)"


#: What each line of a process's output quoted in a message starts with.
QUOTE = "    | "


def quoted(output: str, lines: int = 15) -> str:
    """:func:`tail` of a process's output, each line behind ``    | ``: quoted under the message
    that shows it, so that another pytest's summary lines in it (``== short test summary info
    ==``, ``2 failed in 3.1s``) never read as this run's."""
    return "\n".join(QUOTE + line for line in tail(output, lines).splitlines())


def device_within(library: str, device_id: str) -> str:
    """A device id without its library's prefix, as the tables name it under the library
    (``pocl-cpu0`` for ``opencl-pocl-cpu0`` of ``opencl``)."""
    return device_id.removeprefix(f"{library}-")


def shorten(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters in the middle, never at the end: a test id keeps its
    parameters, which tell its cases apart (``test_ker…[mylib-nansum-shape0]``), and as much of
    its name as fits; parameters longer than that keep a third of the width for the start."""
    if len(text) <= width:
        return text
    if width <= 2:
        return text[:width]
    i = text.find("[")
    params = text[i:] if i > 0 else ""
    if params and len(params) + 2 <= width:
        return text[: width - 1 - len(params)] + "…" + params
    head = max(1, (width - 1) // 3)
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


#: A ``-k`` expression that may be broken across lines inside double quotes: only characters the
#: shell leaves alone there (no ``$``, backquote, ``"``, backslash or ``!``).
_SAFE_IN_DOUBLE_QUOTES = re.compile(r"[\w:+\-.\[\]/ ()]+")


def command_lines(lead: str, argv: Sequence[str], width: int | None) -> list[str]:
    """``lead`` and the shell command ``argv`` to be copied: one line where it fits in ``width``;
    else the command on lines of its own, indented, broken between arguments with `` \\``
    continuations, so it still pastes as one command. An argument longer than a line (a ``-k``
    expression naming many tests) is broken between its words inside double quotes, where the
    shell removes a backslash-newline, when it holds only characters the shell leaves alone
    there; else it stays whole on its own line. A ``lead`` longer than a line wraps as prose."""
    import shlex

    one = f"{lead} {shlex.join(argv)}"
    if width is None or width < 40 or len(one) <= width:
        return [one]
    indent = "    "
    import textwrap

    # a lead longer than a line wraps as prose
    lines = textwrap.wrap(lead, width, subsequent_indent="    ", break_on_hyphens=False) or [lead]
    current = ""

    def push(word: str, glue: str = " ") -> None:
        nonlocal current
        if current and len(indent) + len(current) + len(glue) + len(word) + 2 > width:
            lines.append(f"{indent}{current} \\")
            current = word
        else:
            current = f"{current}{glue}{word}" if current else word

    for arg in argv:
        quoted = shlex.quote(arg)
        fits = len(indent) + len(quoted) + 2 <= width
        if fits or " " not in arg or not _SAFE_IN_DOUBLE_QUOTES.fullmatch(arg):
            push(quoted)
            continue
        words = arg.split(" ")
        words[0], words[-1] = f'"{words[0]}', f'{words[-1]}"'
        push(words[0])
        for word in words[1:]:
            push(word)
    lines.append(f"{indent}{current}")
    return lines
