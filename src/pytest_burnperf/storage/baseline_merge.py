"""Shards' baselines brought together: every baseline file under other baselines directories
(each job of a sharded recording writes its own), read strictly and merged by machine, with the
one rule a merge needs: a benchmark belongs to one shard, so the same benchmark recorded
differently by two sources is a conflict and nothing is merged. Writing the result is
:meth:`~pytest_burnperf.storage.baselines.BaselineStore.save`'s job."""

from __future__ import annotations

from pathlib import Path

from pytest_burnperf.core.text import escape
from pytest_burnperf.storage.baselines import BaselineError, load_file
from pytest_burnperf.storage.jsonfile import loads, read_bytes

#: ``{machine id: (machine section, {module: {key: entry}})}``
Found = dict[str, tuple[dict[str, object], dict[str, dict[str, dict[str, object]]]]]


class MergeConflict(Exception):
    """One benchmark recorded differently by two sources; ``str()`` names it and both."""


def collect(root: Path) -> Found:
    """Every baseline file under a baselines directory ``root`` (another job's, a shard's), by
    machine id: its ``machine`` section and ``{module: {key: entry}}``, each file read strictly
    (:class:`BaselineError` names a bad one)."""
    out: Found = {}
    if not root.is_dir():
        raise BaselineError(root, "is not a directory of baselines")
    for machine_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        machine: dict[str, object] = {}
        modules: dict[str, dict[str, dict[str, object]]] = {}
        for path in sorted(machine_dir.rglob("*.json")):
            benchmarks = load_file(path)
            doc = loads(path, read_bytes(path) or b"{}")
            machine = dict(doc.get("machine") or machine)
            module = path.relative_to(machine_dir).with_suffix(".py").as_posix()
            modules[module] = dict(benchmarks)
        if modules:
            out[machine_dir.name] = (machine, modules)
    return out


def merge_sources(sources: list[Path]) -> Found:
    """Every source's baselines by machine; :class:`BaselineError` for a file or folder that
    cannot be read, :class:`MergeConflict` for a benchmark two sources recorded differently
    (the same entry twice is no conflict)."""
    merged: Found = {}
    origin: dict[tuple[str, str, str], Path] = {}
    for src in sources:
        for machine_id, (machine, modules) in collect(src).items():
            mine = merged.setdefault(machine_id, (machine, {}))[1]
            for module, entries in modules.items():
                for key, entry in entries.items():
                    where = (machine_id, module, key)
                    old = mine.setdefault(module, {}).get(key)
                    if old is not None and old != entry:
                        raise MergeConflict(
                            f"{escape(module)}::{escape(key)} ({machine_id}) was recorded by "
                            f"{origin[where]} and by {src}, differently: a benchmark belongs to "
                            "one shard"
                        )
                    mine[module][key] = entry
                    origin[where] = src
    return merged
