"""Recording (``--perf-update``): the passed benchmarks' results written into the baselines (time)
and the counts baselines, with what happened said in the run's messages; a file that cannot be
written is left untouched and named."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from pytest_burnperf import json_fields as jf
from pytest_burnperf.core.records.results import provenance
from pytest_burnperf.storage.baselines import Interrupted, LockTimeout

if TYPE_CHECKING:
    from pytest_burnperf.storage.baselines import BaselineStore
from pytest_burnperf.plugin.session.outcome_watch import interrupted
from pytest_burnperf.plugin.session.perf_state import PerfState, rel


def write_baselines(state: PerfState, now: str, machine: dict[str, object]) -> bool:
    """Write the new baselines; False if some file could not be read or written."""

    updates: dict[str, dict[str, dict[str, object]]] = {}
    counted: dict[str, dict[str, dict[str, object]]] = {}
    for nodeid in sorted(state.findings.passed):
        r = state.findings.results[nodeid]
        libs = dict(jf.mapping(r.fingerprint.get("versions")))
        for one in (r, r.time):
            if one is None:
                continue
            if one is r.time and not one.sides:  # judged once beside both (memory per call)
                one = replace(one, sides=r.sides)
            entry = one.baseline_entry(provenance(state.git, libs, now))
            if one.judged_by.counted:  # into the counts baselines, which travel
                counted.setdefault(r.module, {})[r.key] = entry
                continue
            if state.findings.durations.get(
                nodeid
            ):  # one round's wall time, calibration, setup included
                entry["seconds"] = round(state.findings.durations[nodeid], 4)
            updates.setdefault(r.module, {})[r.key] = entry
    if not updates and not counted:
        state.notes.append("baselines not updated: no benchmark ran and passed")
        return True
    ok = True
    if counted:
        ok = _save(state, state.counts().store(), counted, machine, {}, "counts baselines")
    if updates:
        drop = {
            module: [old for key, old in renamed.items() if key in updates.get(module, {})]
            for module, renamed in state.findings.renamed_baselines.items()
        }
        ok = _save(state, state.store, updates, machine, drop, "baselines") and ok
    return ok


def _save(
    state: PerfState,
    store: BaselineStore,
    updates: dict[str, dict[str, dict[str, object]]],
    machine: dict[str, object],
    drop: dict[str, list[str]],
    what: str,
) -> bool:
    """Save ``updates`` into ``store`` and say what happened; False if some file could not be
    read or written."""
    try:
        report = store.save(updates, machine, drop=drop)
    except Interrupted as exc:
        interrupted(
            state,
            f"{what} NOT updated: interrupted ({exc.signals}) before any file was replaced; "
            "every baseline file is as it was",
        )
        return False
    except LockTimeout as exc:
        state.notes.append(f"{what} NOT updated: {exc}")
        return False
    written, errors = report.written, report.errors
    n = sum(len(updates[m]) for m in updates) - sum(
        len(updates[m]) for m in updates if store.path_for(m) in {e.path for e in errors}
    )
    for err in errors:
        state.notes.append(f"NOT updated, left untouched: {err}")
    if report.cleaned:
        state.notes.append(
            f"removed {len(report.cleaned)} temporary file(s) a killed run had left in "
            f"{rel(store.root, state.run.rootpath)}"
        )
    if written:
        state.notes.append(
            f"{what} updated: {n} benchmark(s) in {len(written)} file(s) under "
            f"{rel(store.dir, state.run.rootpath)}"
        )
    noisy = {
        node: floor
        for node, floor in state.findings.noisy_records.items()
        if node in state.findings.passed
        and store.path_for(state.findings.results[node].module) in written
    }
    if noisy and store is state.store:
        state.notes.append(noisy_baselines_text(noisy, n))
    single = {
        node: floor
        for node, floor in state.findings.single_round_records.items()
        if node in state.findings.passed
        and store.path_for(state.findings.results[node].module) in written
    }
    if single and store is state.store:
        state.notes.append(single_round_text(single, n))
    busy = {
        node: why
        for node in state.findings.passed
        if store.path_for(state.findings.results[node].module) in written
        and not state.findings.results[node].judged_by.counted
        and (why := state.findings.results[node].host_disturbed()) is not None
    }
    if busy and store is state.store:
        state.notes.append(busy_baselines_text(busy, n))
    if report.deferred:
        interrupted(
            state,
            f"{report.deferred} arrived while the baseline files were being renamed into place; "
            "it was held until all of them were, so the update is whole",
        )
    return not errors


def noisy_baselines_text(floors: Mapping[str, float], recorded: int, show: int = 5) -> str:
    """The summary line of baselines recorded so noisy that comparisons against them will see
    only slowdowns above their floor (node id -> floor, a fraction)."""
    worst = sorted(floors.items(), key=lambda kv: (-kv[1], kv[0]))
    names = ", ".join(f"{node} (+{100 * floor:.1f}%)" for node, floor in worst[:show])
    if len(worst) > show:
        names += f" and {len(worst) - show} more"
    return (
        f"noisy baselines: {len(floors)} of {recorded} recorded benchmark(s) varied so much "
        "between their process rounds that a comparison with as many rounds will see only "
        f"slowdowns above its floor: {names}; re-record them on a quieter host "
        "(-k NAME --perf-update), or compare in one session (--perf-against), which "
        "cancels what the host does between runs"
    )


def single_round_text(floors: Mapping[str, float | None], recorded: int, show: int = 5) -> str:
    """The summary line of baselines timed in one process round: how far processes move was
    not measured, so comparisons against them see only what the prior allows, and whatever
    that one process's host did (a launch-bound GPU kernel's launches) is in them."""
    worst = sorted(floors.items(), key=lambda kv: (-(kv[1] or 0.0), kv[0]))
    names = ", ".join(
        node + ("" if floor is None else f" (+{100 * floor:.1f}%)") for node, floor in worst[:show]
    )
    if len(worst) > show:
        names += f" and {len(worst) - show} more"
    return (
        f"single-round baselines: {len(floors)} of {recorded} recorded benchmark(s) were timed "
        "in one process round, so how far their processes move is not measured and a "
        "comparison against them sees only slowdowns above the prior's floor: "
        f"{names}; whatever that one process's host did is in them (a launch-bound GPU "
        "kernel's launch times); record them with the default process rounds (-k NAME "
        "--perf-update, without --perf-rounds 1)"
    )


def busy_baselines_text(busy: Mapping[str, str], recorded: int, show: int = 5) -> str:
    """The summary line of time baselines recorded while the host (or GPU) was busy in some of
    their rounds: slow rounds in a baseline make later slowdowns look smaller, so comparisons
    against them leave such rounds out where three clean ones remain, and otherwise do not call
    a change they could hide ``unchanged`` (core/judging/assess.explain_by_busy_baseline)."""
    names = sorted(busy)
    shown = ", ".join(names[:show]) + (
        f" and {len(names) - show} more" if len(names) > show else ""
    )
    first = busy[names[0]]
    return (
        f"baselines recorded on a busy host: {len(busy)} of {recorded} recorded benchmark(s) ran "
        f"some rounds beside other work ({first}): {shown}; a comparison against them leaves "
        "those rounds out where three clean ones remain, and otherwise calls no change they "
        "could hide unchanged; re-record them on a quiet host (-k NAME --perf-update)"
    )
