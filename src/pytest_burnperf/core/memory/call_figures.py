"""Each call's figures (:class:`~.allocations.Allocations`) from one stream of allocator events
that tracked several calls in a row: the calls are told apart by a marker mapping (an anonymous
``mmap`` of :data:`MARKER_BYTES`, mapped and unmapped between two calls), so one tracker serves
all of a benchmark's tracked calls (starting one costs more than the calls, with torch loaded).

What a call holds is followed by address: an allocation adds its size, its free takes it back
(a free of what was allocated before tracking began is unknown and left out, as the allocator
tracker does). The peak is the most held during the call above what was held when it started.

The interpreter's own mappings (:func:`interpreter_map_sizes`) are left out: Python's
small-object arenas, where which call maps a new arena depends on what ran before it, not on
what the call does (it would move a pure-Python call's peak by a megabyte from one process to
the next), and since Python 3.11 the chunks of its frame stack, mapped where a call's frames
cross the end of a chunk, which depends on how deep the caller's stack is (pytest's, a worker's:
16-32 KiB more per call at some depths, none at others). A call's containers and buffers over
512 bytes come from ``malloc`` and count; its small objects do not. No pytest here.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Literal

from pytest_burnperf.core.memory.allocations import Allocations
from pytest_burnperf.core.text import format_bytes

#: The marker mapping's size: 37 pages of 4 KiB, a size no allocator rounds to.
MARKER_BYTES: Final = 37 * 4096

EventKind = Literal["alloc", "free", "map", "unmap"]


@dataclass(frozen=True)
class Event:
    """One allocator event: an allocation (``malloc``, ``calloc``, ``realloc``,
    ``posix_memalign``...), a free, a mapping or an unmapping, with its address and size (a
    free's size is unknown: 0)."""

    kind: EventKind
    address: int
    size: int
    #: Where an allocation was made (its Python line: ``add (bench.py:22)``), where known.
    site: str = ""


def arena_bytes(version: tuple[int, int] = sys.version_info[:2]) -> int:
    """The size of one of Python's small-object arenas: 1 MiB since 3.10 (64-bit builds), 256
    KiB before."""
    return 1 << 20 if version >= (3, 10) else 256 << 10


#: The smallest chunk of Python's frame stack (3.11 on: ``DATA_STACK_CHUNK_SIZE``); a frame
#: that does not fit doubles it.
FRAME_CHUNK_BYTES: Final = 16 << 10


def interpreter_map_sizes(version: tuple[int, int] = sys.version_info[:2]) -> frozenset[int]:
    """The sizes of the anonymous mappings the interpreter makes for itself: an arena
    (:func:`arena_bytes`), and from 3.11 a frame-stack chunk (:data:`FRAME_CHUNK_BYTES`
    doubled up to below an arena). A benchmark's own ``mmap`` of exactly such a size is left
    out with them: a buffer a library maps itself is rarely a power of two below 1 MiB."""
    arena = arena_bytes(version)
    sizes = {arena}
    if version >= (3, 11):
        chunk = FRAME_CHUNK_BYTES
        while chunk < arena:
            sizes.add(chunk)
            chunk *= 2
    return frozenset(sizes)


class MarkersMissing(ValueError):
    """The stream does not hold the markers around the calls (the message says what it held)."""


def per_call(
    events: Iterable[Event], *, calls: int, skip_maps_of: frozenset[int] = frozenset()
) -> list[Allocations]:
    """The figures of what ran between each two markers of ``events``, in order: ``calls + 1``
    marker mappings (a call between each two; a caller that marks both sides of each call takes
    every other stretch). Mappings of a size in ``skip_maps_of`` (the interpreter's:
    :func:`interpreter_map_sizes`) and their unmappings are left out."""
    held = 0
    sizes: dict[int, int] = {}
    skipped: set[int] = set()
    marker: int | None = None  # the address of a marker mapping not yet unmapped
    markers = 0
    figures: list[Allocations] = []
    start = peak = allocated = count = 0
    in_call = False
    for e in events:
        if e.kind == "map" and e.size == MARKER_BYTES and marker is None:
            if in_call:  # the marker after a call ends it
                figures.append(Allocations(allocated=allocated, count=count, peak=peak - start))
                in_call = False
            marker = e.address
            markers += 1
            continue
        if e.kind == "unmap" and marker is not None and e.address == marker:
            marker = None
            if markers <= calls:  # the next call starts
                in_call = True
                start = peak = held
                allocated = count = 0
            continue
        if e.kind in ("alloc", "map"):
            if e.kind == "map" and e.size in skip_maps_of:
                skipped.add(e.address)
                continue
            held += e.size
            sizes[e.address] = sizes.get(e.address, 0) + e.size
            if in_call and marker is None:
                allocated += e.size
                count += 1
                peak = max(peak, held)
        elif e.kind == "unmap" and e.address in skipped:
            skipped.discard(e.address)
        else:  # a free or an unmapping: what that address held goes (an unmapping: its size)
            known = sizes.pop(e.address, 0)
            gone = known if e.kind == "free" else min(known, e.size)
            if e.kind == "unmap" and known > gone:
                sizes[e.address] = known - gone
            held -= gone
    if markers != calls + 1 or len(figures) != calls:
        raise MarkersMissing(
            f"expected {calls + 1} marker mappings around {calls} calls, found {markers} "
            f"markers and {len(figures)} whole calls"
        )
    return figures


def sites_per_call(
    events: Iterable[Event], *, calls: int, skip_maps_of: frozenset[int] = frozenset()
) -> list[dict[str, int]]:
    """The bytes allocated at each site during each stretch between two markers (the stretches
    :func:`per_call` gives figures of), allocations without a site left out."""
    marker: int | None = None
    markers = 0
    out: list[dict[str, int]] = []
    here: dict[str, int] | None = None
    for e in events:
        if e.kind == "map" and e.size == MARKER_BYTES and marker is None:
            if here is not None:
                out.append(here)
                here = None
            marker = e.address
            markers += 1
        elif e.kind == "unmap" and marker is not None and e.address == marker:
            marker = None
            if markers <= calls:
                here = {}
        elif here is not None and marker is None and e.site and e.kind in ("alloc", "map"):
            if e.kind == "map" and e.size in skip_maps_of:
                continue
            here[e.site] = here.get(e.site, 0) + e.size
    return out


@dataclass(frozen=True)
class MemoryCalls:
    """What a device's meter gave of a benchmark's tracked calls: each call's figures, the
    meter's name (for the memory key), and where the last call allocated (bytes per site, the
    largest allocations; empty where the meter cannot tell)."""

    calls: list[Allocations]
    meter: str
    sites: dict[str, int]


def top_sites(sites: dict[str, int], n: int = 5) -> dict[str, int]:
    """The ``n`` sites that allocated the most, most first."""
    return dict(sorted(sites.items(), key=lambda kv: (-kv[1], kv[0]))[:n])


_LINE_NUMBER = re.compile(r":[0-9]+\)")


def _unnumbered(site: str) -> str:
    """A site without its line number: ``add (bench.py) [t = a.copy()]``, the same where an
    edit above the line moved it."""
    return _LINE_NUMBER.sub(")", site, count=1)


def _number(site: str) -> int:
    found = re.search(r":([0-9]+)\)", site)
    return int(found.group(1)) if found else 0


def where_grew(now: Mapping[str, int], before: Mapping[str, int], n: int = 3) -> str:
    """``add (bench.py:22) [t = a.copy()] +7.6 MiB (new)``: the sites whose bytes grew the
    most from ``before`` to ``now`` (in the code's order where they grew alike), matched by
    function, file and the line's text (not its number); empty where none grew."""
    was: dict[str, int] = {}
    for site, size in before.items():
        was[_unnumbered(site)] = was.get(_unnumbered(site), 0) + size
    named: dict[str, str] = {}  # unnumbered -> a current site, with its number
    is_now: dict[str, int] = {}
    for site, size in now.items():
        key = _unnumbered(site)
        is_now[key] = is_now.get(key, 0) + size
        named.setdefault(key, site)
    grown = sorted(
        ((key, is_now.get(key, 0) - was.get(key, 0)) for key in set(is_now) | set(was)),
        key=lambda kv: (-kv[1], _number(named.get(kv[0], "")), kv[0]),
    )
    parts = [
        f"{named.get(key, key)} +{format_bytes(delta)}" + (" (new)" if key not in was else "")
        for key, delta in grown[:n]
        if delta > 0
    ]
    return ", ".join(parts)
