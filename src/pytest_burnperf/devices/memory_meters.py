"""A call's memory on the host, for devices that keep arrays in host memory: through the
allocator where memray runs, else Python's own allocations (tracemalloc) or the process's
resident-set high-water mark (/proc/self/status).

Through the allocator, memray (a well-kept allocation tracker) intercepts ``malloc``,
``calloc``, ``realloc``, ``posix_memalign``, ``mmap`` and their frees in every library of the
process, so torch's and other native allocations count, not only numpy's (``tracemalloc`` sees
numpy's buffers and Python's objects, not torch's; the resident set moves by pages and with
whatever else the process does). Python's small-object allocator is not tracked inside its
arenas (the arenas are, as they are mapped): a pure-Python call's large containers count, its
churn of small objects does not.

Measured before choosing (validation/memory_tracker.py, docs/data/memory-tracker.json): after
one untracked call, numpy and torch-CPU calls read the same three figures on each tracked call;
a pure-Python call's first tracked call may map one arena more than those after. Starting and
stopping a tracker costs some 25-85 ms in a process without torch and 0.16-0.26 s with torch
loaded (memray patches every loaded library's symbol table). Linux and macOS only, memray's own
platforms.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from pytest_burnperf.core.memory.allocations import Allocations
from pytest_burnperf.core.memory.call_figures import (
    MARKER_BYTES,
    Event,
    EventKind,
    MemoryCalls,
    interpreter_map_sizes,
    per_call,
    sites_per_call,
    top_sites,
)
from pytest_burnperf.core.text import escape


def tracemalloc_peak(call: Callable[[], object]) -> int:
    """Peak bytes traced by ``tracemalloc`` while ``call`` runs (numpy reports its buffers)."""
    __tracebackhide__ = True  # a call failing here shows the benchmark's frames
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
    __tracebackhide__ = True  # a call failing here shows the benchmark's frames
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


class TrackerBusy(RuntimeError):
    """The allocator cannot be tracked now: memray is missing here, or another tracker already
    runs in this process (pytest-memray's, say); the message says which."""


def allocator_unavailable() -> str | None:
    """Why memory cannot be tracked here, or None."""
    if sys.platform not in ("linux", "darwin"):
        return f"memory tracking needs memray, which runs on Linux and macOS, not {sys.platform}"
    try:
        import memray  # noqa: F401
    except ImportError as exc:
        return f"memory tracking needs memray ({exc}); install it with pip install memray"
    return None


def allocator_track(call: Callable[[], object], work: Path | None = None) -> Allocations:
    """Run ``call`` once under memray and return what it allocated (:func:`track_calls`)."""
    __tracebackhide__ = True  # a call failing here shows the benchmark's frames
    return track_calls(lambda: (call, None), 1, work)[0]


def track_calls(
    make_call: Callable[[], tuple[Callable[[], object], Callable[[], object] | None]],
    calls: int,
    work: Path | None = None,
) -> list[Allocations]:
    """Make ``calls`` calls one after another under one memray tracker and return what each
    allocated (:func:`track_calls_with_sites`)."""
    __tracebackhide__ = True  # a call failing here shows the benchmark's frames
    return track_calls_with_sites(make_call, calls, work)[0]


#: Allocations of at least this many bytes are traced to the Python line that made them.
SITE_BYTES = 4096


def track_calls_with_sites(
    make_call: Callable[[], tuple[Callable[[], object], Callable[[], object] | None]],
    calls: int,
    work: Path | None = None,
) -> tuple[list[Allocations], list[dict[str, int]]]:
    """Make ``calls`` calls one after another under one memray tracker; what each allocated
    (core/memory/call_figures.py) and where (bytes per allocating Python line, allocations of
    at least :data:`SITE_BYTES`). ``make_call`` makes each call ready (a pedantic round's setup)
    and gives what to run after it (its teardown); a marker mapping on both sides of each call
    keeps those out of its figures, and the interpreter's own mappings are left out (its arenas
    and frame-stack chunks: call_figures.interpreter_map_sizes). The capture file goes to
    a temporary folder (under ``work`` where given) and is removed. :class:`TrackerBusy` where
    memray cannot track here (raised before any call ran)."""
    __tracebackhide__ = True  # a call failing here shows the benchmark's frames
    why = allocator_unavailable()
    if why is not None:
        raise TrackerBusy(why)
    import mmap

    import memray
    from memray import AllocatorType, FileReader

    def mark() -> None:
        mmap.mmap(-1, MARKER_BYTES).close()

    with tempfile.TemporaryDirectory(prefix="burnperf-memory-", dir=work) as tmp:
        capture = Path(tmp) / "calls.memray"
        tracker = memray.Tracker(capture, native_traces=False, trace_python_allocators=False)
        try:
            tracker.__enter__()
        except RuntimeError as exc:  # another tracker runs (pytest-memray's, a user's)
            raise TrackerBusy(f"memray already tracks this process: {exc}") from None
        try:
            for _ in range(calls):
                call, after = make_call()
                mark()
                call()
                mark()
                if after is not None:
                    after()
        finally:
            tracker.__exit__(None, None, None)
        reader = FileReader(capture)
        try:
            kinds: dict[AllocatorType, EventKind] = {
                AllocatorType.FREE: "free",
                AllocatorType.MUNMAP: "unmap",
                AllocatorType.MMAP: "map",
            }
            events = []
            for r in reader.get_allocation_records():
                allocator = AllocatorType(r.allocator)
                if allocator == AllocatorType.PYMALLOC_FREE:
                    continue
                kind = kinds.get(allocator, "alloc")
                site = ""
                if kind in ("alloc", "map") and r.size >= SITE_BYTES and r.size != MARKER_BYTES:
                    site = _site(r.stack_trace())
                events.append(Event(kind, r.address, r.size, site))
        finally:
            reader.close()
    skip = interpreter_map_sizes()
    stretches = per_call(events, calls=2 * calls - 1, skip_maps_of=skip)
    sites = sites_per_call(events, calls=2 * calls - 1, skip_maps_of=skip)
    return stretches[::2], sites[::2]


#: Frames of this plugin's own files: never an allocation's name.
_OWN_PART = f"{os.sep}pytest_burnperf{os.sep}"
#: Frames of these folders are libraries' (the installed packages, the standard library, this
#: plugin): an allocation is named by the innermost frame outside them, the benchmark's own.
_LIBRARY_PARTS = ("site-packages", "dist-packages", _OWN_PART)
#: The name of an allocation made where no Python frame of the call's own was: a compiled
#: function benchmarked directly (``perf(torch.conv2d, x, w)``). The tracker sees only the
#: frames entered after it started, so the test's own line is not among them.
COMPILED_CALL = "the benchmarked call (compiled code: no Python line of its own)"


def _site(frames: list[tuple[str, str, int]]) -> str:
    """``add (bench.py:22) [t = a.copy()]``: the innermost frame of ``frames`` outside the
    libraries (else the innermost library frame that is not this plugin's, else
    :data:`COMPILED_CALL`), by its function, file name, line and the line's text (which names
    the line where an edit above it moved its number)."""
    import linecache
    import sysconfig

    if not frames:
        return ""
    stdlib = sysconfig.get_paths().get("stdlib", "\0")
    chosen = next(
        (
            f
            for f in frames
            if not any(part in f[1] for part in _LIBRARY_PARTS) and not f[1].startswith(stdlib)
        ),
        next((f for f in frames if _OWN_PART not in f[1]), None),
    )
    if chosen is None:
        return COMPILED_CALL
    function, filename, line = chosen
    # a line of source is the user's text: no control character reaches a terminal from it
    text = escape(" ".join(linecache.getline(filename, line).split())[:60])
    return f"{function} ({os.path.basename(filename)}:{line})" + (f" [{text}]" if text else "")


#: The name of the allocator meter in a memory key (core/memory/allocations.memory_key).
ALLOCATOR = "allocator (memray)"


def host_calls(
    make_call: Callable[[], tuple[Callable[[], object], Callable[[], object] | None]],
    calls: int = 3,
) -> MemoryCalls | str:
    """Each call's figures through the allocator, the meter's name and where the last call
    allocated; or why memory is not tracked here (memray missing, or another tracker running:
    pytest-memray's)."""
    __tracebackhide__ = True  # a call failing here shows the benchmark's frames
    try:
        figures, sites = track_calls_with_sites(make_call, calls)
    except TrackerBusy as exc:
        return str(exc)
    return MemoryCalls(figures, ALLOCATOR, top_sites(sites[-1]) if sites else {})


#: What the allocator meter measures, in words (a device's ``memory_meter``).
ALLOCATOR_METER = "peak above the call's start of what the allocator holds (memray: every library)"


def host_peak(
    call: Callable[[], object], fallback: Callable[[Callable[[], object]], int | None]
) -> int | None:
    """The peak above its start of what ``call`` allocated on the host: through the allocator
    where memray runs, else ``fallback`` (tracemalloc_peak, rss_peak)."""
    __tracebackhide__ = True  # a call failing here shows the benchmark's frames
    if allocator_unavailable() is not None:
        return fallback(call)
    try:
        return allocator_track(call).peak
    except TrackerBusy:  # raised before the call ran
        return fallback(call)


def host_meter(fallback: str) -> str:
    """What :func:`host_peak` measures here: the allocator's peak, else ``fallback``'s words."""
    return ALLOCATOR_METER if allocator_unavailable() is None else fallback
