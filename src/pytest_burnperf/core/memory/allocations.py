"""A benchmark's memory per call as its allocator saw it: three figures (:class:`Allocations`),
the bytes allocated during the call (freed or not), the number of allocations, and the peak held
above what was held when the call started. They come from tracking the allocator through one
call (devices/memory_meters.py on the CPU) and repeat exactly from call to call for most code.
No pytest here.
"""

from __future__ import annotations

import platform
import sys
from collections.abc import Mapping
from dataclasses import dataclass


class AllocationsError(ValueError):
    """A stored memory figure that is not one (the message names where it was read)."""


@dataclass(frozen=True)
class Allocations:
    """What one call allocated: bytes, allocations, and the peak above the call's start."""

    allocated: int
    count: int
    peak: int

    def to_json(self) -> dict[str, int]:
        return {
            "allocated_bytes": self.allocated,
            "allocations": self.count,
            "peak_bytes": self.peak,
        }

    @classmethod
    def from_json(cls, doc: object, where: str) -> Allocations:
        """The figures of a stored document; :class:`AllocationsError` naming ``where`` and the
        field where one is missing or not a whole number of at least 0."""
        if not isinstance(doc, Mapping):
            raise AllocationsError(f"{where}: memory figures must be an object, got {doc!r:.60}")
        values = []
        for name in ("allocated_bytes", "allocations", "peak_bytes"):
            value = doc.get(name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise AllocationsError(
                    f"{where}: {name} must be a whole number of at least 0, got {value!r:.60}"
                )
            values.append(value)
        return cls(*values)


def memory_key(
    fingerprint: Mapping[str, object],
    meter: str,
    interpreter: str = "default",
    threads: int | None = None,
    rule: str | None = None,
    calls_before: int | None = None,
) -> dict[str, object]:
    """What makes two benchmarks' memory figures comparable: the ``meter`` that read them, the
    Python (its objects' sizes), the platform, the device's library and its versions, the code
    paths the library chose on this CPU (its dispatch: an instruction set may bring its own
    scratch buffers; not the BLAS core, whose buffers are allocated once, before any tracked
    call), a GPU's compute capability (its kernels' workspaces), and the ``interpreter``'s
    settings that decide what the allocator sees (``PYTHONMALLOC=malloc`` sends every small
    object to it; tracemalloc allocates beside each allocation it traces; ``-X dev``), and the
    ``threads`` the benchmark runs with (OpenBLAS and torch keep a buffer per thread: 4 threads
    instead of 1 moved 11 of 119 shipped benchmarks' figures, docs/validation.md), and the
    ``rule`` the calls were tracked by (which calls, what is left out: a baseline tracked by
    an earlier rule, or before rules were kept, is of another key), and where more calls than
    the rule's ran before the tracked ones (a compiler settling first), how many."""
    dispatch = fingerprint.get("dispatch")
    key: dict[str, object] = {
        "meter": meter,
        "python": f"{sys.version_info[0]}.{sys.version_info[1]}",
        "platform": f"{sys.platform}-{platform.machine()}",
        "library": fingerprint.get("library"),
        "versions": fingerprint.get("versions"),
        "dispatch": {k: v for k, v in dispatch.items() if k != "blas"}
        if isinstance(dispatch, Mapping)
        else None,
        "capability": fingerprint.get("capability"),
        "interpreter": interpreter,
        "threads": threads,
        "rule": rule,
    }
    if calls_before is not None:
        key["calls_before"] = calls_before
    return key
