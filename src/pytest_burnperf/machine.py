"""Which machine we are on, as a stable human-readable id, and where a result came from.

The machine id groups baselines: results are only compared with baselines recorded under the same id.
It is built from the operating system, the architecture, the CPU model and the number of CPUs, so two
machines of the same class (say, two CI runners of one type) share it, and it reads like
``linux-x86_64-amd-epyc-7b13-2cpu``. ``--perf-machine`` / ini ``perf_machine`` override it.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import re
import subprocess
import sys
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

_SLUG = re.compile(r"[^a-z0-9]+")
_NOISE = re.compile(r"\((r|tm)\)|\bcpu\b|\bprocessor\b|\b\d+-core\b|@.*$", re.IGNORECASE)

MACHINE_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def slug(text: str) -> str:
    return _SLUG.sub("-", text.lower()).strip("-")


@lru_cache(maxsize=1)
def cpu_model() -> str:
    """The CPU's model name, best effort, without reading anything slow."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if (
                    key.strip() in ("model name", "Model", "cpu model", "Hardware")
                    and value.strip()
                ):
                    return value.strip()
    except OSError:
        pass
    if sys.platform == "darwin":
        try:
            out = subprocess.run(
                ["sysctl", "-n", "machdep.cpu.brand_string"],
                capture_output=True,
                text=True,
                timeout=5,
                check=False,
            )
            if out.stdout.strip():
                return out.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or platform.machine() or "unknown-cpu"


def memory_bytes() -> int | None:
    """Physical memory of this machine, where the OS tells."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def cpu_count() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def default_machine_id() -> str:
    model = slug(_NOISE.sub(" ", cpu_model())) or "cpu"
    return f"{slug(platform.system()) or 'os'}-{slug(platform.machine()) or 'arch'}-{model}-{cpu_count()}cpu"


def check_machine_id(value: str, where: str) -> str:
    from .spec import SpecError

    if not MACHINE_ID_RE.match(value):
        raise SpecError(
            f"{where}: machine id {value!r} is not allowed; use letters, digits, '.', '_' and '-' "
            "(it becomes a folder name under the baselines directory)"
        )
    return value


def machine_info(machine_id: str) -> dict[str, object]:
    return {
        "id": machine_id,
        "system": platform.system(),
        "arch": platform.machine(),
        "cpu": cpu_model(),
        "cpus": cpu_count(),
    }


def git_state(root: Path) -> dict[str, object]:
    """The commit the tree is at, and whether it has uncommitted changes; empty outside git."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        )
        if head.returncode != 0:
            return {}
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        )
        return {"commit": head.stdout.strip(), "dirty": bool(dirty.stdout.strip())}
    except (OSError, subprocess.SubprocessError):
        return {}


def now_utc() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


#: Fingerprint keys that identify the hardware (and how it is driven). A baseline whose value for
#: one of these differs from this run's was measured on something else and is never compared.
IDENTITY_KEYS: tuple[str, ...] = (
    "kind",
    "library",
    "name",
    "vendor",
    "platform",
    "memory_bytes",
    "compute_units",
    "capability",
    "cpus",
    "threads",
)

#: Fingerprint keys for software around the device: a difference is compared and noted.
SOFTWARE_KEYS: tuple[str, ...] = ("driver", "runtime", "blas")


def _label(fp: Mapping[str, Any]) -> str:
    name = fp.get("name") or fp.get("id") or "an unnamed device"
    return f"{name} ({fp['id']})" if fp.get("id") and fp.get("id") != name else str(name)


def comparability(
    baseline_fp: Mapping[str, Any] | None, current_fp: Mapping[str, Any]
) -> tuple[str | None, tuple[str, ...]]:
    """``(why not comparable or None, notes)`` for a baseline's device fingerprint and this run's.

    Keys present on only one side (say, a fingerprint written by an older version) are not held
    against the baseline; only values that are known on both sides and differ count.
    """
    if not isinstance(baseline_fp, Mapping):
        return None, ()
    diffs = [
        f"{key} {baseline_fp[key]!r} -> {current_fp[key]!r}"
        for key in IDENTITY_KEYS
        if key in baseline_fp and key in current_fp and baseline_fp[key] != current_fp[key]
    ]
    if diffs:
        return (
            f"baseline from {_label(baseline_fp)}, this run is on {_label(current_fp)} "
            f"({'; '.join(diffs)}): not compared; record a baseline for this device with "
            "--update-baselines",
            (),
        )
    notes: list[str] = []
    for key in SOFTWARE_KEYS:
        old, new = baseline_fp.get(key), current_fp.get(key)
        if old is not None and new is not None and old != new:
            notes.append(f"{key} {old} -> {new} since the baseline")
    old_v, new_v = baseline_fp.get("versions"), current_fp.get("versions")
    if isinstance(old_v, Mapping) and isinstance(new_v, Mapping):
        for lib in sorted(set(old_v) & set(new_v)):
            if old_v[lib] != new_v[lib]:
                notes.append(f"{lib} {old_v[lib]} -> {new_v[lib]} since the baseline")
    return None, tuple(notes)
