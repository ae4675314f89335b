"""A call's peak memory on the host: Python's own allocations (tracemalloc) and the process's
resident set high-water mark (/proc/self/status), for devices that keep arrays in host memory."""

from __future__ import annotations

import os
import re
import tracemalloc
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass


def tracemalloc_peak(call: Callable[[], object]) -> int:
    """Peak bytes traced by ``tracemalloc`` while ``call`` runs (numpy reports its buffers)."""
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        call()
        return max(0, tracemalloc.get_traced_memory()[1] - before)
    finally:
        if started:
            tracemalloc.stop()


_STATUS = "/proc/self/status"


def _status_bytes(field_name: str) -> int | None:
    try:
        with open(_STATUS, encoding="ascii", errors="replace") as fh:
            m = re.search(rf"^{field_name}:\s+(\d+) kB", fh.read(), re.MULTILINE)
    except OSError:
        return None
    return int(m.group(1)) * 1024 if m else None


def rss_peak(call: Callable[[], object]) -> int | None:
    """Growth of the process's resident-set high-water mark while ``call`` runs (Linux only).

    Resets the mark through ``/proc/self/clear_refs`` first; None where that is not possible.
    For libraries whose allocations ``tracemalloc`` does not see (torch on the CPU).
    """
    try:
        fd = os.open("/proc/self/clear_refs", os.O_WRONLY)
        try:
            os.write(fd, b"5")
        finally:
            os.close(fd)
    except OSError:
        call()
        return None
    before = _status_bytes("VmRSS")
    call()
    after = _status_bytes("VmHWM")
    if before is None or after is None:
        return None
    return max(0, after - before)
