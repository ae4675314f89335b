"""Which comparison a ``--perf`` run makes: the stored baselines, a revision measured beside
this code in the same session (``--perf-against REF``, ``auto`` resolved by runs/comparison/reference.py),
or several versions (``--perf-versions``); checked against the other options, with a usage
error that names them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_burnperf.core.options import settings
from pytest_burnperf.host.probe import host_parts
from pytest_burnperf.runs.comparison.environments import CURRENT
from pytest_burnperf.runs.comparison.reference import (
    Choice,
    choose,
    has_baselines,
    stored_host_off,
    stored_noisy,
)
from pytest_burnperf.runs.comparison.same_session import Plan

#: --perf-against's value for the stored baselines only (the default where $CI is not set).
STORED = "baselines"


def comparison(
    config: pytest.Config,
    pick: Callable[[str], Any],
    *,
    enabled: bool,
    update: bool,
    ci: bool,
    counts: bool,
    group: str,
    size: str,
    baselines_root: Path,
    trust_host: bool,
) -> tuple[Plan | None, Choice | None]:
    """The same-session plan (None: stored baselines) and, for ``--perf-against auto``, what
    runs/comparison/reference.py chose and why (``counts``: counts baselines judge on any machine, so
    ``auto`` builds nothing)."""
    choice = None
    against = _against(config, enabled=enabled, update=update, ci=ci)
    if against == "auto" and counts:
        against = None  # counts baselines judge on any machine: nothing to build
    if against == "auto":
        if size != settings.DEFAULT_SIZE:
            group = f"{group}-{size}"
        stored = has_baselines(baselines_root / group)
        host_off = _stored_host_off(baselines_root / group, trust_host) if stored else None
        choice = choose(
            stored=stored,
            machine=group,
            repo=config.rootpath,
            base=pick("perf_base"),
            host_off=host_off,
            noisy=None
            if not stored or host_off is not None or trust_host
            else stored_noisy(baselines_root / group),
        )
        against = choice.ref
    plan = _plan(config, against, enabled=enabled, update=update)
    return plan, choice


def _stored_host_off(directory: Path, trust_host: bool) -> str | None:
    """How far this host runs the reference probe from the stored baselines' host, where too
    far for them to judge the code (``reference.stored_host_off``); never with
    BURNPERF_TRUST_HOST=1, which keeps the host out of every decision."""

    if trust_host:
        return None

    return stored_host_off(directory, host_parts())


def _against(config: pytest.Config, *, enabled: bool, update: bool, ci: bool) -> str | None:
    """--perf-against as given; ``auto`` where it is not given, $CI is set and the run compares
    (a --perf run that records nothing and names no --perf-versions)."""
    against: str | None = config.getoption("perf_against")
    if against is None and enabled and not update and not config.getoption("perf_versions") and ci:
        return "auto"
    if against == STORED:
        if not enabled:
            raise pytest.UsageError(
                f"--perf-against {STORED} compares with stored baselines, so it needs --perf"
            )
        return None
    if against == "auto":
        if not enabled:
            raise pytest.UsageError(
                "--perf-against compares measurements, so it needs --perf as well"
            )
        if config.getoption("perf_versions"):
            raise pytest.UsageError("give --perf-against REF or --perf-versions A,B,..., not both")
        if update:
            raise pytest.UsageError(
                "--perf-against auto compares with stored baselines or in this session, so it "
                "does not go with --perf-update; record baselines in a run of their own"
            )
    return against


def _plan(
    config: pytest.Config, against: str | None, *, enabled: bool, update: bool
) -> Plan | None:
    """The same-session comparison --perf-against / --perf-versions ask for, checked
    (``against``: --perf-against, with ``auto`` already resolved to a revision or None)."""

    versions = config.getoption("perf_versions")
    reference = config.getoption("perf_reference")
    option = "--perf-against" if against else "--perf-versions"
    if not against and not versions:
        if reference:
            raise pytest.UsageError("--perf-reference names one of --perf-versions; give those")
        return None
    if not enabled:
        raise pytest.UsageError(f"{option} compares measurements, so it needs --perf as well")
    if against and versions:
        raise pytest.UsageError("give --perf-against REF or --perf-versions A,B,..., not both")
    if update:
        raise pytest.UsageError(
            f"{option} compares in this session and reads or writes no baseline, so it does not "
            "go with --perf-update; record baselines in a run of their own"
        )
    if against:
        if reference:
            raise pytest.UsageError(
                "--perf-reference goes with --perf-versions, not --perf-against"
            )
        if against == CURRENT:
            raise pytest.UsageError(
                "--perf-against current would compare this code with itself; for a check of "
                "the gate give the git revision of this commit (--perf-against HEAD)"
            )
        return Plan.against(against)
    try:
        return Plan.versions(versions, reference)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
