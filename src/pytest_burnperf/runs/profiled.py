"""The profiled processes of a same-session comparison (``--perf-against``, ``--perf-versions``
with ``--perf-profile``): after the rounds, one pytest process per environment reruns the
benchmarks to profile under the profiler of their library (runs/profiling.py), each in its own
environment, and writes where its profiles are and their summaries; this module starts such a
process and reads what it wrote.

A profiled process measures nothing: its calls never enter a sample or a verdict. One process
per environment, one after the other (a profile is not a timing: it needs no interleaving).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_burnperf.core.records.profiles import ProfileFormatError, ProfileSummary
from pytest_burnperf.runs.round_launcher import SidePass, read_side_file, side_pass
from pytest_burnperf.storage.jsonfile import Fields

#: The hidden option that makes a round process a profiled one: the environment's label (the
#: profile files are named by it).
SIDE_OPTION = "--perf-round-process-profile-side"


@dataclass(frozen=True)
class SideProfile:
    """One benchmark's profile in one environment: its summary and file."""

    summary: ProfileSummary
    path: Path


def read_profiles(path: Path) -> tuple[dict[str, SideProfile], dict[str, str]]:
    """The profiles a profiled process wrote (``{nodeid: {"profile": {"file", "summary"}}}``)
    and the benchmarks it could not profile (``{nodeid: {"profile_error": why}}``), each field
    checked (``FileFormatError`` names a bad one)."""

    def parse(f: Fields, rec: dict[str, object], where: str) -> SideProfile:
        prof = f.obj(rec.get("profile"), f"{where}.profile")
        file = f.text(prof.get("file"), f"{where}.profile.file")
        try:
            summary = ProfileSummary.from_json(prof.get("summary"), f"{where}.profile.summary")
        except ProfileFormatError as exc:
            f.fail(exc.field, exc.problem)
        return SideProfile(summary=summary, path=Path(file))

    return read_side_file(path, error="profile_error", parse=parse)


def run(*, label: str, **launch: Any) -> SidePass:
    """Profile the benchmarks ``wanted`` (node ids) in one process of ``python -m pytest args``
    (``args`` name the profile folder), their files named by ``label``: the profiles found
    (``found``: :class:`SideProfile` by node id) and why the others have none."""
    return side_pass(option=f"{SIDE_OPTION}={label}", what="profiled", read=read_profiles, **launch)
