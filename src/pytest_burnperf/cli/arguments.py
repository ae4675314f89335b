"""What every ``burnperf`` command shares: the exit codes, the error a command raises for input it
cannot use, the options several commands take (the gate's ``--alpha``/``--threshold``, the
results store and its series selection) and the checks of their files."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_burnperf.core.options.settings import (
    SettingsError,
    parse_alpha,
    parse_threshold,
)
from pytest_burnperf.core.records.results import RESULTS_SCHEMA
from pytest_burnperf.report.results_json import read_results, read_sides
from pytest_burnperf.storage.history import resolve_url
from pytest_burnperf.storage.history.select import ExpressionError, matcher
from pytest_burnperf.storage.jsonfile import FileFormatError, read_json

#: Exit codes: 0 all is well, 1 a benchmark regressed, 2 bad usage or an input that cannot be used.
EXIT_OK, EXIT_REGRESSED, EXIT_USAGE = 0, 1, 2


class InputError(Exception):
    """A file or value the command cannot use; ``str()`` names it and what is wrong."""


def spec_type(parser: Any, name: str) -> Any:
    def convert(value: str) -> Any:
        try:
            return parser(value, name)
        except SettingsError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


def judging_args(p: argparse.ArgumentParser, alpha_help: str) -> None:
    """``--alpha`` and ``--threshold``: the gate's settings, as the plugin reads them."""
    p.add_argument(
        "--alpha",
        type=spec_type(parse_alpha, "--alpha"),
        default=0.01,
        help=f"{alpha_help}. Default: 0.01",
    )
    p.add_argument(
        "--threshold",
        type=spec_type(parse_threshold, "--threshold"),
        default=None,
        help="minimum slowdown of the median (0.05 or 5%%), and the minimum growth of memory "
        "per call where it is given. Default: 0.05 for time and counts; for memory 1%% of the "
        "figure, at least 4 KiB",
    )


def time_threshold(args: argparse.Namespace) -> float:
    """The ``--threshold`` that judges time and counts: the one given, else 0.05."""
    return 0.05 if args.threshold is None else float(args.threshold)


def store_arg(p: argparse.ArgumentParser) -> None:
    """``--store``: the results store."""
    p.add_argument(
        "--store",
        default=None,
        help="the results store: a SQLAlchemy URL (postgresql://...), a SQLite file, or "
        "'local'. Default: $BURNPERF_STORE, else .burnperf/history.sqlite here",
    )


def series_args(p: argparse.ArgumentParser, last: int, device: bool = True) -> None:
    """-k, --device, --branch, --last and --store: which of the store's series to show."""
    p.add_argument("-k", default=None, help="series to include, as pytest's -k")
    if device:
        p.add_argument("--device", default=None, help="backend, kind or backend-kind")
    p.add_argument("--branch", default=None, help="runs of this branch only (e.g. main)")
    p.add_argument(
        "--last", type=positive, default=last, help=f"newest runs per series. Default: {last}"
    )
    store_arg(p)


def positive(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {value!r}")
    return n


def comment_limit(value: str) -> int:
    n = positive(value)
    if n < 2000:
        raise argparse.ArgumentTypeError(
            f"must be at least 2000 (the comment's fixed text and its note must fit), got {value!r}"
        )
    return n


def open_store(args: argparse.Namespace) -> Any:
    from pytest_burnperf.storage.history.store import Store, StoreError

    try:
        return Store(resolve_url(args.store, Path.cwd()))
    except ImportError as exc:
        raise InputError(
            f"the results store needs SQLAlchemy ({exc}): pip install 'pytest-burnperf[history]'"
        ) from None
    except StoreError as exc:
        raise InputError(str(exc)) from None


def distinct_paths(outputs: Sequence[tuple[str, Path]], inputs: Sequence[Path] = ()) -> None:
    """InputError unless every output is a path of its own, none of them an input: two outputs
    on one path would leave only the last one written (``merge -o x.json --junit x.json``)."""
    seen: dict[Path, str] = {}
    read = {p.resolve(): p for p in inputs}
    for option, path in outputs:
        where = path.resolve()
        if where in read:
            raise InputError(
                f"{option} {path}: is an input of this command ({read[where]}); write elsewhere"
            )
        if where in seen:
            raise InputError(
                f"{option} {path}: is also {seen[where]}'s path; give each output its own"
            )
        seen[where] = option


def missing_sqlite(url: str) -> Path | None:
    """The file of a SQLite store URL that does not exist (None: it exists, or not SQLite)."""
    prefix = "sqlite:///"
    if not url.startswith(prefix) or url[len(prefix) :] in ("", ":memory:"):
        return None
    path = Path(url[len(prefix) :].split("?", 1)[0])
    return None if path.exists() else path


def results_doc(path: Path) -> dict[str, object]:
    """A ``--perf-json`` results file, read strictly; InputError names what is wrong."""

    if not path.exists():
        raise InputError(f"{path}: no such file")
    if path.is_dir():
        raise InputError(f"{path}: is a folder, not a results file (--perf-json)")
    try:
        doc = read_json(path)
        if not isinstance(doc, dict) or doc.get("schema") != RESULTS_SCHEMA:
            raise InputError(f"{path}: not a pytest-burnperf results file (--perf-json)")
        read_results(path)  # every sample checked
        read_sides(path)  # and what every verdict judged beside recorded (memory per call)
    except FileFormatError as exc:
        raise InputError(str(exc)) from None
    return doc


def selection(args: argparse.Namespace) -> Any:

    try:
        return matcher(args.k or "")
    except ExpressionError as exc:
        raise InputError(str(exc)) from None
