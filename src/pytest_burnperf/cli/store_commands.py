"""The commands on the results store: ``burnperf import-results`` (``--perf-json`` files into
it), ``burnperf history`` (each benchmark's series and the change points found in it) and
``burnperf publish`` (a static benchmarks site from it)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pytest_burnperf import json_fields as jf
from pytest_burnperf.cli.arguments import (
    EXIT_OK,
    InputError,
    missing_sqlite,
    open_store,
    results_doc,
    selection,
    series_args,
    store_arg,
)
from pytest_burnperf.storage.history import redact, resolve_url
from pytest_burnperf.storage.history.query import series, text
from pytest_burnperf.storage.jsonfile import FileFormatError


def cmd_import_results(args: argparse.Namespace) -> int:
    from pytest_burnperf.storage.history.store import StoreError

    docs = [(path, results_doc(path)) for path in args.files]
    for path, doc in docs:
        if doc.get("interrupted") is True:
            raise InputError(
                f"{path}: the run was interrupted; its partial results are not stored (history "
                "and change points would read them as a whole run). Nothing was imported"
            )
    with open_store(args) as store:
        for path, doc in docs:
            try:
                added = store.record(doc, source=f"import {path.name}")
            except StoreError as exc:
                raise InputError(f"{path}: {exc}") from None
            n = len(jf.sequence(doc.get("results")))
            print(f"{path}: {'imported' if added else 'already in the store'} ({n} results)")
        runs, res = store.counts()
    print(f"the store holds {runs} runs, {res} results")
    return EXIT_OK


def cmd_history(args: argparse.Namespace) -> int:
    import shutil

    keep = selection(args)
    with open_store(args) as store:
        points = store.points(last=args.last, branch=args.branch)
    found = series(points, keep=keep, device=args.device)
    if args.json:
        print(json.dumps([s.as_json() for s in found], indent=1))
        return EXIT_OK
    if not found:
        print("no stored runs match")
        return EXIT_OK
    for line in text(found, width=shutil.get_terminal_size((100, 20)).columns):
        print(line)
    shifts = sum(len(s.changes) for s in found)
    print(f"{len(found)} series, {shifts} shift(s) found")
    return EXIT_OK


def cmd_publish(args: argparse.Namespace) -> int:
    """The store as a static site."""
    import time

    try:
        import plotly  # noqa: F401
    except ImportError as exc:
        raise InputError(
            f"the site needs plotly ({exc}): pip install 'pytest-burnperf[report]'"
        ) from None
    from pytest_burnperf.report.site import SiteError, publish, target_problem

    problem = target_problem(args.output)
    if problem:
        raise InputError(f"-o {args.output}: {problem}")
    t0 = time.perf_counter()
    keep = selection(args)
    url = resolve_url(args.store, Path.cwd())
    missing = missing_sqlite(url)
    if missing is not None:  # opening it would create an empty store, and publish nothing
        raise InputError(
            f"no results store at {missing} (--store, or $BURNPERF_STORE); "
            f"nothing was written to {args.output}"
        )
    with open_store(args) as store:
        points = store.points(last=args.last, branch=args.branch)
    all_series = series([p for p in points if keep(str(p["test"]))])
    if not all_series:
        raise InputError(
            f"{redact(url)} holds no results"
            + (" that the selection keeps" if points else "")
            + f": the site at {args.output} was left as it is"
        )
    try:
        done = publish(all_series, args.output, title=args.title)
    except (SiteError, OSError, FileFormatError) as exc:
        raise InputError(f"-o {args.output}: {exc}") from None
    print(
        f"published {done['series']} series of {done['benchmarks']} benchmark(s) from "
        f"{len(points)} results to {args.output}/index.html in {time.perf_counter() - t0:.1f} s"
    )
    return EXIT_OK


def register(sub: Any) -> None:
    ir = sub.add_parser(
        "import-results", aliases=["import"], help="add --perf-json results files to the store"
    )
    ir.add_argument("files", type=Path, nargs="+", help="--perf-json files")
    store_arg(ir)
    ir.set_defaults(func=cmd_import_results)
    hist = sub.add_parser("history", help="each benchmark's stored series and its shifts")
    hist.add_argument("--json", action="store_true", help="print JSON instead of text")
    series_args(hist, 100)
    hist.set_defaults(func=cmd_history)
    pub = sub.add_parser("publish", help="a static benchmarks site from the results store")
    pub.add_argument("-o", "--output", type=Path, required=True, help="the site's folder")
    pub.add_argument("--title", default="Benchmarks", help="the site's title")
    series_args(pub, 200, device=False)
    pub.set_defaults(func=cmd_publish)
