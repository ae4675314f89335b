"""Command-line options and ini keys of the plugin: their table, parsers and defaults."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from pytest_burnperf.core.options.settings import SettingsError
from pytest_burnperf.plugin.configuration.option_table import (
    ALONE,
    FLAG_OPTIONS,
    VALUE_OPTIONS,
    ref_arg,
    refs_arg,
)

if TYPE_CHECKING:
    pass

T = TypeVar("T")


WITHOUT_PERF = (
    "perf benchmark: run with --perf (or set perf = true in the ini file); perf_smoke = false "
    "skips it instead of running it once"
)


def _argtype(parser: Callable[[str, str], T], option: str) -> Callable[[str], T]:
    def parse(value: str) -> T:
        try:
            return parser(value, option)
        except ValueError as exc:  # SettingsError, or environments' REF checks
            # argparse names the option itself ("argument --perf-threshold: ..."): say it once
            text = str(exc).removeprefix(f"{option}: ").removeprefix(f"{option} ")
            raise argparse.ArgumentTypeError(text) from None

    parse.__name__ = option.lstrip("-").replace("-", "_")
    return parse


# (option, ini name, parser, help)


# (option, ini name, help, ini help)


def add_options(parser: pytest.Parser) -> None:
    """Register the command-line options and ini keys."""
    group = parser.getgroup("burnperf", "performance regression testing (pytest-burnperf)")
    group.addoption(
        "--perf-smoke",
        action=argparse.BooleanOptionalAction,
        dest="perf_smoke",
        default=None,
        help="without --perf, run each benchmark's body once with perf(fn) calling fn once, "
        "untimed, at the tiny size, so its correctness checks run in ordinary test runs "
        "(--no-perf-smoke: skip the benchmarks instead). Default: on",
    )
    parser.addini(
        "perf_smoke",
        type="bool",
        default=True,
        help="same as --perf-smoke / --no-perf-smoke. Default: true",
    )
    for option, ini, text, ini_text in FLAG_OPTIONS:
        group.addoption(option, action="store_true", default=None, help=text)
        parser.addini(ini, type="bool", default=False, help=ini_text)
    group.addoption(
        "--perf-against",
        dest="perf_against",
        default=None,
        metavar="REF",
        type=_argtype(ref_arg, "--perf-against"),
        help="same-session comparison: measure every selected benchmark here and in REF, in "
        "alternating fresh processes on this machine, and fail the benchmarks that got slower "
        "than in REF (no baseline file is read or written). REF: a git revision of this "
        "repository, name==version (a release), local=PATH (a source tree), a Python "
        "interpreter, or 'auto': the stored baselines where this hardware class has them, else "
        "the base of the change (the merge base of a pull request, else --perf-base, else the "
        "last release tag); 'baselines': the stored baselines only. Rounds: --perf-rounds "
        "(default 3) and --perf-max-rounds. Default: auto where $CI is set, else baselines",
    )
    group.addoption(
        "--perf-versions",
        dest="perf_versions",
        default=None,
        metavar="REF,REF[,...]",
        type=_argtype(refs_arg, "--perf-versions"),
        help="measure every selected benchmark in each of these (the --perf-against forms, and "
        "'current'), interleaved, and print one table per benchmark; the verdict judges "
        "'current' (else the last) against the first (or --perf-reference)",
    )
    group.addoption(
        "--perf-reference",
        dest="perf_reference",
        default=None,
        metavar="REF",
        help="with --perf-versions: the version the verdict compares against. Default: the first",
    )
    group.addoption(
        "--perf-store",
        dest="perf_store",
        nargs="?",
        const="local",
        default=None,
        metavar="URL",
        help="record this run (raw samples, verdicts, hardware class, git commit and branch, "
        "settings) in the results store: a SQLAlchemy URL (postgresql://user@host/db), a SQLite "
        "file, or nothing/'local' for $BURNPERF_STORE, else .burnperf/history.sqlite under the "
        "rootdir (pip install 'pytest-burnperf[history]'). Default: not recorded",
    )
    parser.addini(
        "perf_store",
        default="",
        help="same as --perf-store (keep passwords out of files: use $BURNPERF_STORE)",
    )
    group.addoption(
        "--perf-round-process-out",
        dest="perf_round_process_out",
        default=None,
        help=argparse.SUPPRESS,
    )
    group.addoption(
        "--perf-round-process-only",
        dest="perf_round_process_only",
        default=None,
        help=argparse.SUPPRESS,
    )
    group.addoption(
        "--perf-round-process-serve",
        dest="perf_round_process_serve",
        default=None,
        help=argparse.SUPPRESS,
    )
    group.addoption(  # a counted process (runs/counted.py): the directory of its dumps ...
        "--perf-round-process-count-dir",
        dest="perf_count_dir",
        default=None,
        help=argparse.SUPPRESS,
    )
    group.addoption(  # ... and how many calls of each benchmark it counts
        "--perf-round-process-count-calls",
        dest="perf_count_calls",
        type=int,
        default=None,
        help=argparse.SUPPRESS,
    )
    group.addoption(  # ... and the file of those it counts whatever --perf-count-limit says
        "--perf-round-process-count-always",
        dest="perf_count_always",
        default=None,
        help=argparse.SUPPRESS,
    )
    group.addoption(  # a profiled process (runs/profiled.py): the environment it profiles
        "--perf-round-process-profile-side",
        dest="perf_profile_side",
        default=None,
        help=argparse.SUPPRESS,
    )
    group.addoption(  # a memory process (runs/tracked_sides.py): the environment it tracks
        "--perf-round-process-tracked-side",
        dest="perf_tracked_side",
        default=None,
        help=argparse.SUPPRESS,
    )
    group.addoption(
        "--perf-round-process-rounds",
        dest="perf_round_process_rounds",
        type=int,
        default=None,
        help=argparse.SUPPRESS,
    )
    for option, ini, parse, text in VALUE_OPTIONS:
        alone = ALONE.get(option)  # an option that may be given without a value
        group.addoption(
            option,
            dest=ini,
            default=None,
            type=_argtype(parse, option),
            metavar=ini.removeprefix("perf_").upper(),
            help=text,
            **({} if alone is None else {"nargs": "?", "const": alone}),
        )
        parser.addini(ini, type=_ini_type(ini), default="", help=f"same as {option}")


#: ini keys whose values are numbers: in pytest 9's native TOML configuration (``[tool.pytest]``)
#: they may be written as TOML numbers (``perf_alpha = 0.05``) as well as strings (``"5%"``).
_FLOAT_INI = (
    "perf_alpha",
    "perf_threshold",
    "perf_warmup",
    "perf_min_time",
    "perf_max_time",
    "perf_min_judged",
    "perf_round_budget",
)


_INT_INI = ("perf_samples", "perf_max_samples", "perf_rounds", "perf_max_rounds", "perf_threads")


def _ini_type(ini: str) -> Any:
    """A number-or-string ini type where this pytest has type unions (9.2+), else a string."""
    version = tuple(int(p) for p in pytest.__version__.split(".")[:2] if p.isdigit())
    if version < (9, 2):
        return None
    if ini in _FLOAT_INI:
        return float | str
    if ini in _INT_INI:
        return int | str
    return None


def ini_where(config: pytest.Config, ini: str) -> str:
    """Where an ini key's value came from, for messages: ``-o KEY=...`` on the command line (it
    wins over the file), else the key in the ini file pytest read."""
    overrides = config.getoption("override_ini", None) or []
    if any(str(o).split("=", 1)[0].strip() == ini for o in overrides):
        return f"-o {ini}=... on the command line"
    return f"ini option {ini}" + (f" in {config.inipath}" if config.inipath else "")


def ini_value(config: pytest.Config, ini: str, parse: Callable[[Any, str], T]) -> T | None:
    where = ini_where(config, ini)
    try:
        raw = config.getini(ini)
    except (
        TypeError,
        ValueError,
        pytest.UsageError,
    ) as exc:  # pytest's own type check of a TOML value
        raise pytest.UsageError(f"{where}: {exc}") from None
    if raw in ("", None):
        return None
    try:
        return parse(raw if isinstance(raw, (int, float)) else str(raw), where)
    except SettingsError as exc:
        raise pytest.UsageError(str(exc)) from None


def flag_value(config: pytest.Config, ini: str) -> bool:
    """A boolean ini key; a value that is not one names the key and the file."""
    try:
        return bool(config.getini(ini))
    except (TypeError, ValueError, pytest.UsageError) as exc:
        where = ini_where(config, ini)
        raise pytest.UsageError(
            f"{where}: must be true or false (also 1/0, yes/no, on/off), {exc}"
        ) from None


def xdist_workers(config: pytest.Config) -> object:
    if hasattr(config, "workerinput"):
        return "worker"
    n = getattr(config.option, "numprocesses", None)
    return n if n not in (None, 0, "0") else None


#: The spelling of --perf-update the users of this tool know (``pytest --perf --update-baselines``
#: after an intended change): a first-class name of the same option, registered where nothing
#: else defines it (several projects' conftest.py files do; then --perf-update is the one).
UPDATE_ALIAS = "--update-baselines"
UPDATE_ALIAS_DEST = "perf_update_alias"


def add_update_alias(parser: pytest.Parser) -> bool:
    """Register :data:`UPDATE_ALIAS` for --perf-update unless another plugin or the project's
    initial conftest.py files already define it (call it once they are loaded); whether it was
    registered. Registering it unconditionally made such a project unable to start pytest."""
    try:
        _, unknown = parser.parse_known_and_unknown_args([UPDATE_ALIAS])
    except (pytest.UsageError, SystemExit):  # theirs takes a value: it is theirs
        return False
    if UPDATE_ALIAS not in unknown:
        return False
    parser.getgroup("burnperf").addoption(
        UPDATE_ALIAS,
        action="store_true",
        dest=UPDATE_ALIAS_DEST,
        default=None,
        help="record new baselines (the same as --perf-update). Default: off",
    )
    return True
