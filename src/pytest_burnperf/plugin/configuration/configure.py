"""The run's configuration, built once in ``pytest_configure``: the command line over the
project's file (benchmarks.toml or ``[tool.burnperf]``) over the ini keys, checked, into the
session's :class:`~pytest_burnperf.plugin.session.perf_state.PerfState`; the reference ``--perf-against
auto`` chose; the helper plugins of a round's process."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_burnperf.core import measures
from pytest_burnperf.core.judging.coverage import default_min_share, in_ci
from pytest_burnperf.core.options import run_options, settings
from pytest_burnperf.core.options.command_args import left_out_of_children
from pytest_burnperf.core.options.run_mode import Mode, decide
from pytest_burnperf.core.options.run_options import Measure
from pytest_burnperf.plugin.configuration.comparison import comparison
from pytest_burnperf.plugin.configuration.counting_choice import (
    auto_counting,
    counting_for,
    environ_measure,
)
from pytest_burnperf.plugin.configuration.option_table import DEFAULTS, VALUE_OPTIONS
from pytest_burnperf.plugin.configuration.options import (
    UPDATE_ALIAS_DEST,
    flag_value,
    ini_value,
    ini_where,
    xdist_workers,
)
from pytest_burnperf.plugin.measuring import compat
from pytest_burnperf.plugin.measuring.profile_rerun import folder_refusal
from pytest_burnperf.plugin.session.perf_state import (
    STATE,
    PerfState,
)
from pytest_burnperf.plugin.session.run_config import (
    CountOptions,
    OutputConfig,
    RoundSchedule,
    RunConfig,
)
from pytest_burnperf.runs.comparison.same_session import Plan
from pytest_burnperf.storage.project_config import ConfigError
from pytest_burnperf.storage.project_config import load as load_project_config

#: Set to 1, the gate does not let the host state or the reference probe change verdicts or
#: rounds (they are still measured and reported): for the plugin's own tests of the statistics
#: under load. Read once, into ``PerfState.trust_host``.
TRUST_HOST = "BURNPERF_TRUST_HOST"


#: The ``perf`` marker as ``pytest --markers`` lists it.
PERF_MARKER = (
    "perf(backends=['cpu'], dtypes=['f32'], samples=, warmup=, min_time=, alpha=, threshold=, "
    "timer='device'|'host'|'graph', flush_l2=False, threads=1, max_samples=, max_time=): "
    "a benchmark timed and judged against its baseline by pytest-burnperf (needs --perf)"
)


def configure(config: pytest.Config) -> None:
    # the environment switches, read once for the whole run
    trust_host = os.environ.get(TRUST_HOST) == "1"
    ci = in_ci()
    config.addinivalue_line("markers", PERF_MARKER)

    try:  # benchmarks.toml or [tool.burnperf]: between the command line and the ini keys
        project = load_project_config(
            config.rootpath, {ini: parse for _o, ini, parse, _t in VALUE_OPTIONS}
        )
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    values: dict[str, object] = {}
    ini_values: dict[str, object] = {}
    for _option, ini, parse, _text in VALUE_OPTIONS:
        values[ini] = config.getoption(ini)
        ini_values[ini] = ini_value(config, ini, parse)
        if project.values.get(ini) is not None:
            ini_values[ini] = project.values[ini]

    def pick(ini: str) -> Any:
        return values[ini] if values[ini] is not None else ini_values[ini]

    def source(ini: str) -> str:
        """Where ``pick(ini)`` came from, for messages."""
        if values[ini] is not None:
            return "--" + ini.replace("_", "-")
        if project.values.get(ini) is not None:
            return f"{ini.removeprefix('perf_')} in {project.path}"
        return ini_where(config, ini)

    enabled, smoke, update = _switches(config)
    settings_keys = (
        "samples",
        "warmup",
        "min_time",
        "alpha",
        "threshold",
        "timer",
        "threads",
        "max_samples",
        "max_time",
    )
    base = DEFAULTS.merged({k: ini_values[f"perf_{k}"] for k in settings_keys})
    cmdline = {k: values[f"perf_{k}"] for k in settings_keys if values[f"perf_{k}"] is not None}
    machine_id = pick("perf_machine")
    if machine_id is None and enabled:
        from pytest_burnperf.host.machine import default_machine_id

        machine_id = default_machine_id()
    baselines_dir = Path(pick("perf_baselines_dir") or "baselines")
    json_path = pick("perf_json")
    # the one place a process learns it is a round of a parent's (the mode decided below)
    round_out = config.getoption("perf_round_process_out")
    serve = config.getoption("perf_round_process_serve")
    if serve:  # a round server: every forked round sets its own samples file
        round_out = str(Path(serve, "server.json"))
    round_process = bool(round_out)
    markdown_path = pick("perf_markdown")
    store_value = _store_value(config)
    if round_process:  # one extra round for a parent session: measure, write samples, no verdict
        update, json_path, markdown_path, store_value = False, None, None, None
    baselines_root = (
        baselines_dir if baselines_dir.is_absolute() else config.rootpath / baselines_dir
    )
    size = pick("perf_size") or ("tiny" if smoke else settings.DEFAULT_SIZE)
    measure: Measure = pick("perf_measure") or environ_measure() or "auto"
    count_dir = config.getoption("perf_count_dir")
    counting = None
    if enabled and measures.choice(measure).needs_counts and not round_process:
        counting = counting_for(measure, baselines_root, size)
    choice = None
    plan = None
    if not round_process:
        plan, choice = comparison(
            config,
            pick,
            enabled=enabled,
            update=update,
            ci=ci,
            counts=measures.choice(measure).needs_counts,
            group=machine_id or "",
            size=size,
            baselines_root=baselines_root,
            trust_host=trust_host,
        )
    auto_note = None
    # --perf-against auto that chose a same-session comparison: the committed counts baselines
    # still judge what they hold (counts travel between classes), the rest is compared here
    by_stored_counts = choice is not None and choice.ref is not None
    # a named --perf-against REF: what has counts baselines is counted in each environment
    named = plan is not None and choice is None and plan.option == "--perf-against"
    if (
        measures.choice(measure).per_benchmark
        and enabled
        and not round_process
        and (plan is None or by_stored_counts or named)
    ):
        counting, auto_note = auto_counting(baselines_root, size, records=update)
        if counting is not None:
            counting.named_reference = named
    mode = decide(
        perf=enabled,
        smoke=smoke,
        update=update,
        same_session=plan is not None,
        round_process=round_process,
        counted=bool(count_dir),
        profiled=round_process and bool(config.getoption("perf_profile_side")),
        tracked=round_process and bool(config.getoption("perf_tracked_side")),
        serves=bool(serve),
    )
    rounds, max_rounds = _rounds(
        pick,
        source,
        config,
        update=update,
        in_round=mode.in_round or not mode.measures,
        same_session=plan is not None,
    )
    if enabled:
        _check_targets(config, values, json_path, markdown_path, baselines_root, pick)
        if (pick("perf_profile") or "off") != "off" and not mode.in_round:
            problem = folder_refusal(config.invocation_params.dir, pick("perf_profile_dir"))
            if problem:
                raise pytest.UsageError(problem)
    run = RunConfig(
        mode=mode,
        base=base,
        cmdline=cmdline,
        backends_filter=pick("perf_backends"),
        dtypes_filter=pick("perf_dtypes"),
        require=pick("perf_require"),
        baselines_root=baselines_root,
        machine_id=machine_id or "",
        rootpath=config.rootpath,
        invocation=tuple(str(a) for a in config.invocation_params.args),
        child_plugins_off=left_out_of_children(
            config.pluginmanager.has_plugin,
            [
                *map(str, config.invocation_params.args),
                *map(str, config.getini("addopts")),
                os.environ.get("PYTEST_ADDOPTS", ""),
            ],
        ),
        machine_explicit=pick("perf_machine") is not None,
        size=size,
        strict=bool(
            config.getoption("perf_strict")
            or (project.strict if project.strict is not None else flag_value(config, "perf_strict"))
        ),
        trust_host=trust_host,
        memory=pick("perf_memory") is not False,
        recalibrate=bool(
            flag_value(config, "perf_recalibrate") or config.getoption("perf_recalibrate")
        ),
        count=CountOptions.of(
            count_dir,
            config.getoption("perf_count_calls"),
            pick("perf_count_limit"),
            config.getoption("perf_count_always"),
            pick("perf_count_jobs"),
            cycles=bool(
                config.getoption("perf_count_cycles") or flag_value(config, "perf_count_cycles")
            ),
        ),
        benches=project.benches,
        environment=dict(project.environment),
        config_file=project.path,
        plan=plan,
        reference=choice,
        shard=pick("perf_shard"),
        round_only=_round_process_only(config),
    )
    schedule = _schedule(config, pick, mode, rounds, max_rounds, round_out, serve, plan)
    output = _output(config, pick, mode, json_path, markdown_path, store_value, ci)
    if counting is not None:
        counting.caches = run.count.cycles
    config.stash[STATE] = PerfState(run=run, schedule=schedule, output=output, counting=counting)
    if auto_note is not None:
        config.stash[STATE].notes.append(auto_note)

    def announce(line: str) -> None:
        tr = config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None and config.get_verbosity() >= 0:
            tr.write_line(line)

    config.stash[STATE].announce = announce
    _register_benchmark_compat(config)


def _store_value(config: pytest.Config) -> str | None:
    """--perf-store (or the ini key): the results store to add this run to, or None."""
    given = config.getoption("perf_store")
    if given is not None and not given.strip():
        raise pytest.UsageError(
            "--perf-store '': an empty store; give a SQLAlchemy URL, a SQLite file, or "
            "--perf-store alone (or 'local') for the default store"
        )
    value = given or config.getini("perf_store") or None
    return None if value is None else str(value)


def _schedule(
    config: pytest.Config,
    pick: Callable[[str], Any],
    mode: Mode,
    rounds: int,
    max_rounds: int,
    round_out: str | None,
    serve: str | None,
    plan: Plan | None,
) -> RoundSchedule:
    """How the run's rounds are scheduled: how many, how started, where a round's samples go."""
    round_start = pick("perf_round_start") or "auto"
    if round_start == "fork" and not hasattr(os, "fork"):
        raise pytest.UsageError(
            "--perf-round-start fork: this platform has no fork(); use 'fresh' or 'auto'"
        )
    budget = pick("perf_round_budget")
    return RoundSchedule(
        rounds=rounds,
        sampling_rounds=_sampling_rounds(config, rounds, in_round=mode.in_round, plan=plan),
        max_rounds=max_rounds,
        round_budget=run_options.DEFAULT_ROUND_BUDGET_S if budget is None else budget,
        round_start=round_start,
        round_out=Path(round_out) if round_out else None,
        serve_dir=Path(serve) if serve else None,
    )


def _output(
    config: pytest.Config,
    pick: Callable[[str], Any],
    mode: Mode,
    json_path: str | None,
    markdown_path: str | None,
    store_value: str | None,
    ci: bool,
) -> OutputConfig:
    """What the run writes and shows (a round process writes only its samples file)."""
    min_judged = pick("perf_min_judged")
    return OutputConfig(
        json_path=Path(json_path) if json_path else None,
        json_format=pick("perf_json_format") or "burnperf",
        markdown_path=Path(markdown_path) if markdown_path else None,
        store_value=store_value,
        columns=pick("perf_columns"),
        sort=pick("perf_sort"),
        group_by=pick("perf_group_by"),
        profile="off" if mode.in_round else (pick("perf_profile") or "off"),
        profile_dir=config.invocation_params.dir / (pick("perf_profile_dir") or "perf-profiles"),
        profile_side=config.getoption("perf_profile_side") if mode.profiles_calls else None,
        update_alias=hasattr(config.option, UPDATE_ALIAS_DEST),
        min_judged=0.0
        if mode.records or mode.in_round
        else (min_judged if min_judged is not None else default_min_share(ci)),
    )


def _switches(config: pytest.Config) -> tuple[bool, bool, bool]:
    """``--perf``, smoke runs and ``--perf-update`` (or ``--update-baselines``), from the
    command line or the ini file; a usage error where they cannot go together."""
    enabled = bool(flag_value(config, "perf") or config.getoption("perf"))
    smoke_opt = config.getoption("perf_smoke")
    smoke = not enabled and bool(
        flag_value(config, "perf_smoke") if smoke_opt is None else smoke_opt
    )
    alias = bool(config.getoption(UPDATE_ALIAS_DEST, None))
    update = bool(
        flag_value(config, "perf_update_baselines") or config.getoption("perf_update") or alias
    )
    if update and not enabled:
        raise pytest.UsageError(
            "--perf-update records benchmark results, so it needs --perf as well: "
            "pytest --perf --perf-update"
        )
    if enabled and xdist_workers(config) is not None:
        raise pytest.UsageError(
            f"pytest-burnperf: --perf cannot run under pytest-xdist (-n {xdist_workers(config)}): "
            "benchmarks running side by side time each other's interference. "
            "Run the perf tests without -n (or with -n 0)."
        )
    return enabled, smoke, update


def _check_targets(
    config: pytest.Config,
    values: dict[str, object],
    json_path: str | Path | None,
    markdown_path: str | Path | None,
    baselines_root: Path,
    pick: Callable[[str], Any],
) -> None:
    """A usage error, before anything runs, for a results or Markdown file the run could not
    write or must not replace."""
    here = config.invocation_params.dir
    if json_path:
        from pytest_burnperf.report.results_json import json_target_problem

        fmt = pick("perf_json_format") or "burnperf"
        problem = json_target_problem(here / json_path, baselines_root, fmt)
        _refuse(config, values, "perf_json", json_path, problem)
    if markdown_path:
        from pytest_burnperf.report.markdown import target_problem

        _refuse(
            config, values, "perf_markdown", markdown_path, target_problem(here / markdown_path)
        )


def _refuse(
    config: pytest.Config, values: dict[str, object], ini: str, path: object, problem: str | None
) -> None:
    """The usage error for ``problem`` with ``path``, naming the option or ini key it came from."""
    if problem:
        option = "--" + ini.replace("_", "-")
        where = option if values[ini] is not None else ini_where(config, ini)
        raise pytest.UsageError(f"{where} {path}: {problem}")


def _sampling_rounds(
    config: pytest.Config, rounds: int, *, in_round: bool, plan: Plan | None
) -> int:
    """The rounds each process round samples for (PerfState.sampling_rounds): the session's
    fixed rounds, which a round's process hears through --perf-round-process-rounds. Same-session
    comparisons keep full rounds: their reference may be an older release without that option."""
    if in_round:
        return max(1, config.getoption("perf_round_process_rounds") or 1)
    return 1 if plan is not None else rounds


def _rounds(
    pick: Callable[[str], Any],
    source: Callable[[str], str],
    config: pytest.Config,
    *,
    update: bool,
    in_round: bool,
    same_session: bool = False,
) -> tuple[int, int]:
    """(--perf-rounds, --perf-max-rounds) with their defaults (spec.round_counts); a round's
    process, and a run without --perf, runs one. Between --perf-quick and --perf-max-rounds
    the command line wins over the project's settings; given at one level, both are an error."""
    if in_round:
        return 1, 1
    quick_given = bool(config.getoption("perf_quick"))
    quick = quick_given or flag_value(config, "perf_quick")
    most = pick("perf_max_rounds")
    if quick and most is not None:
        most_given = source("perf_max_rounds") == "--perf-max-rounds"
        if quick_given and not most_given:
            most = None  # --perf-quick over the project's max_rounds
        elif most_given and not quick_given:
            quick = False  # --perf-max-rounds over the ini's perf_quick
    quick_name = "--perf-quick" if quick_given else ini_where(config, "perf_quick")
    try:
        return run_options.round_counts(
            pick("perf_rounds"),
            most,
            update=update,
            same_session=same_session,
            quick=quick,
            names=(source("perf_rounds"), source("perf_max_rounds"), quick_name),
        )
    except settings.SettingsError as exc:
        raise pytest.UsageError(str(exc)) from None


def _round_process_only(config: pytest.Config) -> frozenset[str] | None:
    path = config.getoption("perf_round_process_only")
    if not path:
        return None
    return frozenset(Path(path).read_text(encoding="utf-8").splitlines())


def _register_benchmark_compat(config: pytest.Config) -> None:
    """pytest-benchmark's ``benchmark`` fixture from this plugin (compat.py) where it applies."""

    # registered always: pytest-benchmark may be absent, disabled (-p no:benchmark) or switched
    # off below before it registered the marker itself, and --strict-markers must still accept it
    config.addinivalue_line(
        "markers",
        "benchmark(group=, min_rounds=, max_time=, min_time=, warmup=, ...): pytest-benchmark's "
        "settings, honoured by pytest-burnperf for tests using the `benchmark` fixture",
    )
    if compat.active(config):
        config.pluginmanager.register(compat, "burnperf-benchmark-compat")
        theirs = config.pluginmanager.get_plugin("benchmark")
        if theirs is not None and config.stash[STATE].run.mode.measures:
            # under --perf this plugin times those tests; pytest-benchmark's hooks would reject
            # the fixture object and report an empty run, so they are switched off for this run
            config.pluginmanager.unregister(theirs)
            config.stash[STATE].took_over_benchmark = True


def check_required(state: PerfState) -> None:
    """--perf-require: every named device must be here, else a usage error with the reasons."""
    if not state.run.require or not state.run.mode.reports:
        return
    missing = []
    for name in state.run.require:
        entries = state.registry.resolve(name)
        if not any(e.device is not None for e in entries):
            reasons = "; ".join(dict.fromkeys(e.reason or "absent" for e in entries))
            missing.append(f"{name} ({reasons})")
    if missing:
        raise pytest.UsageError(
            "--perf-require: no device for " + ", ".join(missing) + "; this run would only skip "
            "those benchmarks, so it fails instead"
        )
