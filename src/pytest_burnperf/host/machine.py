"""Which machine we are on, as a stable human-readable id, and where a result came from.

The machine id groups baselines: results are only compared with baselines recorded under the same id.
It is built from the operating system, the architecture, the CPU model, the number of CPUs and the
hardware class (instruction-set level and CPU family/model, see ``hardware.py``), so two machines of
the same class (say, two CI runners of one type) share it, and it reads like
``linux-x86-64-amd-epyc-2cpu-x86-64-v3-f25m1``. ``--perf-machine`` / ini ``perf_machine`` override
it; the device fingerprints still have to match (``comparability.py``).
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import re
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

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


def legacy_machine_id() -> str:
    """The machine id of pytest-burnperf before the hardware class was part of it (OS,
    architecture, CPU model name, CPU count): where older baselines live."""
    model = slug(_NOISE.sub(" ", cpu_model())) or "cpu"
    return f"{slug(platform.system()) or 'os'}-{slug(platform.machine()) or 'arch'}-{model}-{cpu_count()}cpu"


def default_machine_id() -> str:
    """``<os>-<arch>-<CPU model>-<N>cpu-<hardware class>``, e.g.
    ``linux-x86-64-amd-epyc-2cpu-x86-64-v3-f25m1``: machines behind the same CPU name but with
    another instruction-set level or micro-architecture get their own baselines directory."""
    from pytest_burnperf.host.hardware import hardware_class

    return f"{legacy_machine_id()}-{slug(hardware_class())}"


def check_machine_id(value: str, where: str) -> str:
    from pytest_burnperf.core.settings import SpecError

    if not MACHINE_ID_RE.match(value):
        raise SpecError(
            f"{where}: machine id {value!r} is not allowed; use letters, digits, '.', '_' and '-' "
            "(it becomes a folder name under the baselines directory)"
        )
    return value


def machine_info(machine_id: str) -> dict[str, object]:
    from pytest_burnperf.host.hardware import cpu_identity, hardware_class

    return {
        "id": machine_id,
        "system": platform.system(),
        "arch": platform.machine(),
        "cpu": cpu_model(),
        "cpus": cpu_count(),
        "hardware_class": hardware_class(),
        "cpu_identity": cpu_identity(),
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
        branch = subprocess.run(
            ["git", "rev-parse", "--abbrev-ref", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        if branch in ("", "HEAD"):  # detached, as in CI checkouts: the CI's own name for it
            branch = os.environ.get("GITHUB_HEAD_REF") or os.environ.get("GITHUB_REF_NAME") or ""
        state: dict[str, object] = {
            "commit": head.stdout.strip(),
            "dirty": bool(dirty.stdout.strip()),
        }
        if branch:
            state["branch"] = branch
        return state
    except (OSError, subprocess.SubprocessError):
        return {}


def now_utc() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()
