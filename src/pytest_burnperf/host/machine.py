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
from collections.abc import Mapping
from pathlib import Path

from pytest_burnperf.host.hardware import cpu_count, cpu_identity, cpu_model, hardware_class, slug

_NOISE = re.compile(r"\((r|tm)\)|\bcpu\b|\bprocessor\b|\b\d+-core\b|@.*$", re.IGNORECASE)


def legacy_machine_id() -> str:
    """The machine id of pytest-burnperf before the hardware class was part of it (OS,
    architecture, CPU model name, CPU count): where older baselines live."""
    model = slug(_NOISE.sub(" ", cpu_model())) or "cpu"
    return f"{slug(platform.system()) or 'os'}-{slug(platform.machine()) or 'arch'}-{model}-{cpu_count()}cpu"


def default_machine_id() -> str:
    """``<os>-<arch>-<CPU model>-<N>cpu-<hardware class>``, e.g.
    ``linux-x86-64-amd-epyc-2cpu-x86-64-v3-f25m1``: machines behind the same CPU name but with
    another instruction-set level or micro-architecture get their own baselines directory."""
    return f"{legacy_machine_id()}-{slug(hardware_class())}"


def machine_info(machine_id: str) -> dict[str, object]:
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


#: The CI system's own words for the job a run came from: ``name -> environment variable``
#: (GitHub Actions, GitLab CI), and ``runner``, the project's label of the runner type (a
#: matrix entry: ``BURNPERF_RUNNER``), kept with a run in the results store.
CI_VARIABLES = {
    "runner": "BURNPERF_RUNNER",
    "github_run_id": "GITHUB_RUN_ID",
    "github_run_attempt": "GITHUB_RUN_ATTEMPT",
    "github_job": "GITHUB_JOB",
    "github_runner_name": "RUNNER_NAME",
    "gitlab_pipeline_id": "CI_PIPELINE_ID",
    "gitlab_job_id": "CI_JOB_ID",
}


def ci_info(environ: Mapping[str, str]) -> dict[str, str]:
    """Which CI job and runner type a run came from, where the environment says (each value
    cut to 200 characters and kept free of control characters)."""
    out = {}
    for name, variable in CI_VARIABLES.items():
        value = environ.get(variable, "").strip()
        if value:
            out[name] = "".join(c for c in value[:200] if c.isprintable())
    return out


def now_utc() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()
