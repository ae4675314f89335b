"""Device discovery: lazy, cached per registry, one module per library behind one protocol.

A library is imported only when a requested backend name could be served by it: asking for ``cpu``
probes numpy and torch, asking for ``cuda`` probes torch and cupy, and so on. Names resolve to
:class:`Entry` objects: a device that is present, or a placeholder with the reason it is not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pytest_burnperf.core.options.settings import KINDS, LIBRARY_KINDS
from pytest_burnperf.devices.array_device import ArrayPlace
from pytest_burnperf.devices.base import Device, DeviceBase, Probe

__all__ = ["Device", "DeviceBase", "Entry", "Probe", "Registry", "matches"]


def _probe_numpy() -> Probe:
    from pytest_burnperf.devices.backends import numpy_backend

    return numpy_backend.probe()


def _probe_torch() -> Probe:
    from pytest_burnperf.devices.backends import torch_backend

    return torch_backend.probe()


def _probe_cupy() -> Probe:
    from pytest_burnperf.devices.backends import cupy_backend

    return cupy_backend.probe()


def _probe_opencl() -> Probe:
    from pytest_burnperf.devices.backends import opencl_backend

    return opencl_backend.probe()


def _probe_vulkan() -> Probe:
    from pytest_burnperf.devices.backends import vulkan_backend

    return vulkan_backend.probe()


PROBES: dict[str, Callable[[], Probe]] = {
    "numpy": _probe_numpy,
    "torch": _probe_torch,
    "cupy": _probe_cupy,
    "opencl": _probe_opencl,
    "vulkan": _probe_vulkan,
}


@dataclass(frozen=True)
class Entry:
    """One parameter of a benchmark: a present device, or an absent one with its reason."""

    id: str
    kind: str
    library: str
    device: Device | None = None
    reason: str | None = None


def matches(name: str, entry: Entry) -> bool:
    """Does the backend name (kind, library, id or id prefix such as ``torch-cuda``) pick ``entry``?"""
    if name in (entry.kind, entry.library, entry.id):
        return True
    return entry.id.startswith(name) and entry.id[len(name) :].isdigit()


def _placeholder_id(library: str, kind: str) -> str:
    return kind if library == kind else f"{library}-{kind}"


def could_pick(names: Iterable[str], library: str, kind: str) -> bool:
    """Could one of the backend names (``--perf-backends``: kinds, libraries, device ids or id
    prefixes) pick a device of ``library`` of this ``kind``? Errs towards yes (an id of the
    library, whatever its kind): what it says no to is never probed."""
    return any(n in (kind, library) or n.startswith(f"{library}-") for n in names)


NOT_SELECTED = "not selected by --perf-backends"


class Registry:
    """Probes libraries on first need and remembers what it found. ``only``: the run's backend
    filter (``--perf-backends``); a library none of its names could pick is never probed (its
    entries are placeholders that the filter deselects), so a run of numpy benchmarks does not
    import torch, cupy or an OpenCL driver (seconds each, tens of seconds under valgrind)."""

    def __init__(
        self,
        probes: dict[str, Callable[[], Probe]] | None = None,
        only: Iterable[str] | None = None,
    ) -> None:
        self._probes = dict(PROBES if probes is None else probes)
        self._found: dict[str, Probe] = {}
        self._python: Entry | None = None
        self._only = None if only is None else tuple(only)

    def python(self) -> Entry:
        """The host CPU of a test written for pytest-benchmark (devices/backends/python_backend.py): not
        a backend a marker asks for, so never among what :meth:`resolve` finds."""
        if self._python is None:
            from pytest_burnperf.devices.backends.python_backend import PythonDevice

            device = PythonDevice()
            self._python = Entry(device.id, device.kind, device.library, device=device)
        return self._python

    def of_place(self, place: ArrayPlace) -> Entry | str:
        """The present device an array lives on (devices/array_device.py), probed whatever the
        run's backend filter (the array's library is loaded already); else why it is not one."""
        if place.library not in self._probes:
            return f"{place.text()}: pytest-burnperf has no {place.library} backend"
        found = self.probe(place.library)
        for device in found.devices:
            if device.id in place.candidate_ids():
                return Entry(device.id, device.kind, device.library, device=device)
        present = ", ".join(d.id for d in found.devices) or "none"
        return f"{place.text()}: no such {place.library} device here (present: {present})"

    def probe(self, library: str) -> Probe:
        if library not in self._found:
            try:
                self._found[library] = self._probes[library]()
            except Exception as exc:  # a library that breaks while probing: a reason, not a crash
                kinds = LIBRARY_KINDS.get(library, ())
                self._found[library] = Probe(
                    library, absent=dict.fromkeys(kinds, f"{library} failed while probing: {exc}")
                )
        return self._found[library]

    def probe_all(self) -> list[Probe]:
        return [self.probe(lib) for lib in self._probes]

    def _entries_for(self, library: str, kinds: Iterable[str]) -> list[Entry]:
        kinds = list(kinds)
        if self._only is not None and not any(could_pick(self._only, library, k) for k in kinds):
            return [
                Entry(_placeholder_id(library, k), k, library, reason=NOT_SELECTED) for k in kinds
            ]
        p = self.probe(library)
        out: list[Entry] = []
        for kind in kinds:
            devs = [d for d in p.devices if d.kind == kind]
            broken = [(i, why) for i, (k, why) in p.broken.items() if k == kind]
            if devs:
                out.extend(Entry(d.id, d.kind, d.library, device=d) for d in devs)
                out.extend(Entry(i, kind, library, reason=why) for i, why in broken)
            else:
                reason = p.absent.get(kind, f"{library} found no {kind} device")
                out.append(Entry(_placeholder_id(library, kind), kind, library, reason=reason))
        return out

    def resolve(self, name: str) -> list[Entry]:
        """Entries for one backend name; the name must already be checked by ``spec``."""
        if name in KINDS:
            out: list[Entry] = []
            for library, kinds in LIBRARY_KINDS.items():
                if name in kinds and library in self._probes:
                    out.extend(self._entries_for(library, [name]))
            return out
        if name in LIBRARY_KINDS:
            return self._entries_for(name, LIBRARY_KINDS[name])
        library = name.split("-", 1)[0]
        candidates = self._entries_for(library, LIBRARY_KINDS[library])
        picked = [e for e in candidates if e.device is not None and matches(name, e)]
        if picked:
            return picked
        absent = [e for e in candidates if e.device is None and name.startswith(e.id)]
        reason = absent[0].reason if absent else None
        found = ", ".join(e.id for e in candidates if e.device is not None) or "none"
        return [
            Entry(
                name,
                absent[0].kind if absent else "",
                library,
                reason=reason or f"no device {name} (present for {library}: {found})",
            )
        ]

    def resolve_all(self, names: Iterable[str]) -> list[Entry]:
        seen: dict[str, Entry] = {}
        for name in names:
            for e in self.resolve(name):
                seen.setdefault(e.id, e)
        return list(seen.values())
