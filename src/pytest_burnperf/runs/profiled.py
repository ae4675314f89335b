"""The profiled processes of a same-session comparison (``--perf-against``, ``--perf-versions``
with ``--perf-profile``): after the rounds, one pytest process per environment reruns the
benchmarks to profile under the profiler of their library (runs/profiling.py), each in its own
environment, and writes where its profiles are and their summaries; this module starts such a
process and reads what it wrote.

A profiled process measures nothing: its calls never enter a sample or a verdict. One process
per environment, one after the other (a profile is not a timing: it needs no interleaving).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_burnperf.core.records.profiles import ProfileFormatError, ProfileSummary
from pytest_burnperf.core.text import tail
from pytest_burnperf.runs.round_launcher import run_round_process
from pytest_burnperf.storage.jsonfile import Fields, FileFormatError, read_json

#: The hidden option that makes a round process a profiled one: the environment's label (the
#: profile files are named by it).
SIDE_OPTION = "--perf-round-process-profile-side"


@dataclass(frozen=True)
class SideProfile:
    """One benchmark's profile in one environment: its summary and file."""

    summary: ProfileSummary
    path: Path


@dataclass
class ProfiledRun:
    """What one environment's profiled process wrote: a profile per node id, and why others
    have none."""

    profiles: dict[str, SideProfile] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0


def read_profiles(path: Path) -> tuple[dict[str, SideProfile], dict[str, str]]:
    """The profiles a profiled process wrote (``{nodeid: {"profile": {"file", "summary"}}}``)
    and the benchmarks it could not profile (``{nodeid: {"profile_error": why}}``), each field
    checked (``FileFormatError`` names a bad one)."""
    doc = read_json(path)
    f = Fields(path)
    profiles: dict[str, SideProfile] = {}
    errors: dict[str, str] = {}
    for nodeid, value in f.obj(doc, "document").items():
        where = f"[{json.dumps(nodeid)}]"
        rec = f.obj(value, where)
        if "profile_error" in rec:
            errors[nodeid] = f.text(rec["profile_error"], f"{where}.profile_error")
            continue
        prof = f.obj(rec.get("profile"), f"{where}.profile")
        file = f.text(prof.get("file"), f"{where}.profile.file")
        try:
            summary = ProfileSummary.from_json(prof.get("summary"), f"{where}.profile.summary")
        except ProfileFormatError as exc:
            f.fail(exc.field, exc.problem)
        profiles[nodeid] = SideProfile(summary=summary, path=Path(file))
    return profiles, errors


def run(
    *,
    python: str,
    args: Sequence[str],
    label: str,
    wanted: Sequence[str],
    cwd: Path,
    say: Callable[[int], None],
    env: Mapping[str, str] | None = None,
) -> ProfiledRun:
    """Profile the benchmarks ``wanted`` (node ids) in one process of ``python -m pytest args``
    (``args`` name the profile folder), their files named by ``label``."""
    got = ProfiledRun()
    t0 = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="burnperf-profiles-"))
    try:
        code, output, out = run_round_process(
            python,
            args,
            wanted=wanted,
            work=work,
            cwd=cwd,
            say=say,
            options=[f"{SIDE_OPTION}={label}"],
            env=env,
        )
        if not out.exists():
            why = f"its profiled process failed (exit {code})"
            got.problems.append(f"{why}:\n{tail(output)}")
            got.missing = {n: why for n in wanted}
            return got
        try:
            got.profiles, errors = read_profiles(out)
        except FileFormatError as exc:
            why = f"its profiled process wrote a bad file ({exc})"
            got.problems.append(why)
            got.missing = {n: why for n in wanted}
            return got
        got.missing.update(errors)
        for n in wanted:
            if n not in got.profiles and n not in got.missing:
                got.missing[n] = "it failed or was skipped in the profiled process" + (
                    f" (exit {code})" if code not in (0, 1) else ""
                )
    finally:
        got.seconds = time.monotonic() - t0
        shutil.rmtree(work, ignore_errors=True)
    return got
