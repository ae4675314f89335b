"""What a run must not leave behind when it dies: a counted process still running under valgrind
after the pytest that started it was killed, and its scratch folder with dumps on disk.

A counted process asks the kernel to kill it when its parent dies (Linux's parent-death signal:
set before valgrind starts by ``setpriv``, where util-linux has it, and again inside the process,
so no ``preexec_fn`` runs between fork and exec); the parent's process id in its environment
catches a parent that died before that. Each scratch folder holds its
owner's process id and start time; the next run removes the folders whose owner is gone (never a
folder without that mark: it is not ours to remove)."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import Final

#: The environment variable that gives a counted process its parent's process id.
PARENT_ENV: Final = "BURNPERF_PARENT_PID"
#: The file in a scratch folder naming its owner: ``<pid> <start time in clock ticks>``.
OWNER_FILE: Final = ".burnperf-owner"
_PR_SET_PDEATHSIG: Final = 1


def start_time(pid: int) -> str | None:
    """When process ``pid`` started (field 22 of /proc/PID/stat, in clock ticks since boot), or
    None where it does not exist or this is not Linux: with the pid, what names one process
    (a pid alone is reused)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None


def die_with_parent(parent: int | None = None) -> bool:
    """In a child process: be killed (SIGKILL) when the parent dies; where the parent
    (``parent``, else the ``BURNPERF_PARENT_PID`` variable) is already gone, exit at once.
    Returns whether the kernel took the request (Linux only)."""
    if parent is None:
        raw = os.environ.get(PARENT_ENV, "")
        parent = int(raw) if raw.isdigit() else None
    took = False
    if sys.platform.startswith("linux"):
        name = ctypes.util.find_library("c") or "libc.so.6"
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(name, use_errno=True)
            took = libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    if parent is not None and os.getppid() != parent and not _alive(parent):
        os._exit(3)  # the parent died before the request was made: nobody reads what we count
    return took


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def dying_with_parent() -> list[str]:
    """The command prefix that makes a child die with this process from its first instruction
    (util-linux's ``setpriv --pdeathsig KILL``, which execs the command with the parent-death
    signal set), or nothing where there is no setpriv: :func:`die_with_parent` inside the child
    then covers all but the child's start-up (valgrind's and the imports: seconds)."""
    if not sys.platform.startswith("linux"):
        return []
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL"] if setpriv else []


def mark_owner(folder: Path, pid: int | None = None) -> None:
    """Write ``folder``'s owner (this process unless ``pid``) into it."""
    pid = os.getpid() if pid is None else pid
    (folder / OWNER_FILE).write_text(f"{pid} {start_time(pid) or '?'}\n", encoding="ascii")


def owner_alive(folder: Path) -> bool | None:
    """Whether the process that owns ``folder`` still runs; None where the folder has no owner
    mark (not ours, or not yet written)."""
    try:
        pid_text, started = (folder / OWNER_FILE).read_text(encoding="ascii").split()
        pid = int(pid_text)
    except (OSError, ValueError):
        return None
    now = start_time(pid)
    if now is None:
        return _alive(pid) and started == "?"  # no /proc: the pid alone
    return started == now


def sweep(prefix: str, where: Path | None = None) -> list[Path]:
    """Remove the scratch folders named ``prefix*`` under ``where`` (the temporary directory)
    whose owner is gone; returns them. Folders without an owner mark are left alone."""
    root = Path(tempfile.gettempdir() if where is None else where)
    removed = []
    try:
        candidates = sorted(root.glob(f"{prefix}*"))
    except OSError:
        return []
    for folder in candidates:
        if folder.is_symlink() or not folder.is_dir():
            continue
        if owner_alive(folder) is False:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed
