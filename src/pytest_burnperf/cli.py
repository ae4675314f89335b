"""``burnperf``: the plugin's building blocks without pytest.

* ``burnperf devices [--json]`` lists the devices this machine offers and, for each kind a library
  could serve but does not, why.
* ``burnperf compare OLD.json NEW.json`` judges two ``--perf-json`` result files with the same gate the
  plugin uses, and exits 1 if any benchmark regressed.
* ``burnperf machines [--baselines DIR] [--json]`` lists the hardware classes that have baselines
  and says which one this host is.
* ``burnperf import-results FILE... [--store URL]`` adds ``--perf-json`` files (a CI matrix's
  runners') to the results store.
* ``burnperf history [-k EXPR] [--device D] [--branch B] [--last N] [--store URL] [--json]``
  shows each benchmark's series with the change points found in it.
* ``burnperf compare-history NEW.json [--last N] [--branch B]`` judges a results file against the
  last N stored runs (of a branch) on the same hardware class.
* ``burnperf report [RESULTS.json] [--store URL] -o FILE`` writes a Markdown (``.md``), CSV
  (``.csv``) or self-contained HTML (``.html``) report.
* ``burnperf merge SHARD.json... -o RESULTS.json [--markdown F.md] [--junit F.xml]`` combines
  the ``--perf-json`` files of the shards of one run (``--perf-shard K/N``) into one, and exits 1
  on a regression or a run that judged too little, as the unsharded run would.
* ``burnperf publish -o SITE/ [--store URL] [--last N]`` writes a static benchmarks site from
  the results store (an index with a filter, a page per benchmark with its history and change
  points, the backends compared), offline, for GitHub Pages.
* ``burnperf merge-baselines SHARD_BASELINES... [--baselines DIR]`` adds the baselines that
  shards recorded (each job its own ``baselines/`` folder) to one baselines directory, under its
  lock; the same benchmark recorded differently by two shards is refused.
* ``burnperf github --results RESULTS.json --exit-code N ...`` publishes a run in GitHub Actions
  (what ``.github/actions/burnperf`` calls): the verdict counts as step outputs, a pull-request
  comment cut to GitHub's limit, and whether this job may comment at all (not from a fork).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_burnperf._version import __version__
from pytest_burnperf.core.results import RESULTS_SCHEMA
from pytest_burnperf.core.settings import (
    DTYPES,
    SpecError,
    check_machine_id,
    parse_alpha,
    parse_threshold,
)
from pytest_burnperf.core.stats import summarize
from pytest_burnperf.core.text import escape, escape_strings, format_time, format_value
from pytest_burnperf.core.verdict import REGRESSED, Policy, failure_message, judge
from pytest_burnperf.devices import Registry
from pytest_burnperf.devices.base import graph_unsupported
from pytest_burnperf.host.hardware import cpu_identity, describe, hardware_class
from pytest_burnperf.host.machine import (
    default_machine_id,
    legacy_machine_id,
    machine_info,
    now_utc,
)
from pytest_burnperf.report.pytest_benchmark import read_saved_run, same_simd_class
from pytest_burnperf.report.terminal import read_results, result_timers
from pytest_burnperf.storage.baselines import BaselineStore
from pytest_burnperf.storage.history import redact, resolve_url
from pytest_burnperf.storage.history.query import against_history, series, text
from pytest_burnperf.storage.history.select import ExpressionError, matcher
from pytest_burnperf.storage.jsonfile import FileFormatError, _why, atomic_write_text, read_json

#: Exit codes: 0 all is well, 1 a benchmark regressed, 2 bad usage or an input that cannot be used.
EXIT_OK, EXIT_REGRESSED, EXIT_USAGE = 0, 1, 2


class InputError(Exception):
    """A file or value the command cannot use; ``str()`` names it and what is wrong."""


def _spec_type(parser: Any, name: str) -> Any:
    def convert(value: str) -> Any:
        try:
            return parser(value, name)
        except SpecError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


def device_info(device: Any) -> dict[str, Any]:
    """What ``burnperf devices`` shows for one device: its fingerprint, dtypes and clock."""

    info = dict(device.fingerprint())
    info["dtypes"] = [d for d in DTYPES if device.unsupported(d) is None]
    info["unsupported_dtypes"] = {
        d: reason for d in DTYPES if (reason := device.unsupported(d)) is not None
    }
    try:
        timer = device.timer()
    except Exception as exc:  # a driver that cannot make events: say so, keep listing
        info["clock"] = f"host (device clock failed: {exc})"
    else:
        label = getattr(timer, "label", type(timer).__name__)
        info["clock"] = "host (wall time around sync)" if timer is None else f"device ({label})"
    info["graphs"] = graph_unsupported(device) is None
    return info


def _gib(n: object) -> str:
    return f"{int(n) / 2**30:.1f} GiB" if isinstance(n, int) and n > 0 else "-"


def _quiet_mesa() -> None:
    """Mesa's Vulkan driver complains on stderr when XDG_RUNTIME_DIR is unset or unusable (each
    time it loads); give it a private directory so the listing is not interleaved with that."""
    import os
    import stat
    import tempfile

    current = os.environ.get("XDG_RUNTIME_DIR")
    try:
        ok = current is not None and stat.S_IMODE(os.stat(current).st_mode) == 0o700
    except OSError:
        ok = False
    if not ok:
        os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="burnperf-xdg-")


def cmd_devices(args: argparse.Namespace) -> int:

    _quiet_mesa()
    probes = Registry().probe_all()
    infos = [device_info(d) for p in probes for d in p.devices]
    absent = {p.library: p.absent for p in probes if p.absent}
    if args.json:
        print(json.dumps({"devices": infos, "absent": absent}, indent=1, sort_keys=True))
        return 0
    for info in infos:
        memory = info.get("memory_bytes", info.get("host_memory_bytes"))
        versions = ", ".join(f"{k} {v}" for k, v in sorted(info.get("versions", {}).items()))
        what = dict.fromkeys((str(info["kind"]), str(info["library"])))  # "opencl" said once
        print(f"{info['id']}  ({', '.join(what)})")
        print(f"  model:         {info['name']}")
        print(f"  memory:        {_gib(memory)}")
        units = info.get("compute_units", info.get("cpus"))
        print(f"  compute units: {units if units is not None else '-'}")
        if info.get("threads") is not None:
            print(
                f"  threads:       {info['threads']} by the library's default; benchmarks run "
                "with 1 unless threads= or --perf-threads say otherwise"
            )
        for key, label in (
            ("capability", "capability"),
            ("blas", "BLAS"),
            ("driver", "driver"),
            ("runtime", "runtime"),
        ):
            if info.get(key) not in (None, ""):
                print(f"  {label + ':':<14} {info[key]}")
        print(f"  versions:      {versions or '-'}")
        print(f"  clock:         {info['clock']}")
        print(f"  dtypes:        {', '.join(info['dtypes']) or '-'}")
        graphs = "yes (timer='graph' times CUDA-graph replays)" if info["graphs"] else "no"
        print(f"  graphs:        {graphs}")
    if not infos:
        print("no devices found")
    print()
    print("not available:")
    for library, kinds in absent.items():
        for kind, reason in kinds.items():
            name = library if kind == library else f"{library} {kind}"  # "opencl", not twice
            print(f"  {name}: {reason}")
    return 0


def _load_results(path: Path) -> dict[str, list[list[float]]]:

    try:
        return read_results(path)
    except FileFormatError as exc:
        raise InputError(str(exc)) from None


def cmd_compare(args: argparse.Namespace) -> int:

    old = _load_results(args.old)
    new = _load_results(args.new)
    timers = result_timers(args.new)
    policy = Policy(alpha=args.alpha, threshold=args.threshold)
    regressed = 0
    for test in sorted(new):
        v = judge(old.get(test), new[test], policy)
        change = "-" if v.change_pct is None else f"{v.change_pct:+.1f}%"
        timer = timers.get(test, "host")  # a counted result's values are instructions
        base = "-" if v.baseline_median is None else format_value(v.baseline_median, timer)
        now = format_value(v.current_median, timer)
        print(f"{v.status:<12} {change:>8} {base:>10} -> {now:>10}  {test}")
        if v.status == REGRESSED:
            regressed += 1
            print(f"  {failure_message(test, v, policy)}")
    return EXIT_REGRESSED if regressed else EXIT_OK


def machine_dirs(root: Path) -> list[dict[str, Any]]:
    """One record per machine directory under a baselines directory: its id, hardware class and
    CPU (from the files' ``machine`` section), how many files and benchmarks it holds."""

    out: list[dict[str, Any]] = []
    if not root.is_dir():
        return out
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        files = sorted(d.rglob("*.json"))
        info: dict[str, Any] = {}
        benchmarks = 0
        for f in files:
            try:
                doc = read_json(f)
            except FileFormatError:
                continue
            if isinstance(doc, dict) and isinstance(doc.get("benchmarks"), dict):
                benchmarks += len(doc["benchmarks"])
                if not info and isinstance(doc.get("machine"), dict):
                    info = escape_strings(doc["machine"])
        if files:
            out.append(
                {
                    "id": escape(d.name),
                    "hardware_class": info.get("hardware_class"),
                    "cpu_identity": info.get("cpu_identity"),
                    "cpu": info.get("cpu"),
                    "files": len(files),
                    "benchmarks": benchmarks,
                }
            )
    return out


def cmd_machines(args: argparse.Namespace) -> int:

    here = default_machine_id()
    cls = hardware_class()
    dirs = machine_dirs(args.baselines)
    for rec in dirs:
        base = rec["id"].removesuffix("-tiny").removesuffix("-medium").removesuffix("-full")
        rec["this_host"] = base == here
        rec["same_class"] = rec["hardware_class"] == cls
        rec["legacy"] = rec["hardware_class"] is None
    if args.json:
        print(
            json.dumps(
                {
                    "this_host": {"id": here, "hardware_class": cls, "cpu": cpu_identity()},
                    "baselines": str(args.baselines),
                    "machines": dirs,
                },
                indent=1,
                sort_keys=True,
            )
        )
        return 0
    print(f"this host: {here}")
    print(f"  {describe(cpu_identity())}")
    print(f"baselines in {args.baselines}:")
    if not dirs:
        print("  none")
    for rec in dirs:
        mark = "*" if rec["this_host"] else " "
        if rec["legacy"]:
            what = "recorded before the hardware identity: never compared; re-record"
            if rec["id"] == legacy_machine_id():
                what += " (this host's name in that scheme)"
        elif rec["this_host"]:
            what = f"class {rec['hardware_class']}: this host's baselines"
        elif rec["same_class"]:
            what = f"class {rec['hardware_class']}: same class (use --perf-machine {rec['id']})"
        else:
            ident = rec["cpu_identity"]
            detail = describe(ident) if isinstance(ident, dict) else str(rec["cpu"])
            what = f"class {rec['hardware_class']}: another class ({detail})"
        print(
            f" {mark} {rec['id']}: {rec['benchmarks']} benchmark(s) in {rec['files']} file(s); {what}"
        )
    if not any(r["this_host"] for r in dirs):
        print("no baselines for this host's class: pytest --perf --perf-update records them")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    """A saved pytest-benchmark run with raw data, as this machine's baselines of those tests."""

    try:
        saved, their_machine = read_saved_run(args.file)
    except FileFormatError as exc:
        raise InputError(str(exc)) from None
    level = str(cpu_identity().get("level") or "")
    why = same_simd_class(their_machine, level)
    if why is not None:
        raise InputError(f"{args.file}: {why}")
    try:
        machine_id = (
            check_machine_id(args.machine, "--machine") if args.machine else default_machine_id()
        )
    except SpecError as exc:
        raise InputError(str(exc)) from None
    (entry,) = Registry().resolve_all(("numpy-cpu",))[:1]
    assert entry.device is not None
    with entry.device.threads(1):
        fingerprint = escape_strings(entry.device.fingerprint())
    recorded = {"date": now_utc(), "imported_from": args.file.name, "tool": "pytest-benchmark"}
    updates: dict[str, dict[str, dict[str, Any]]] = {}
    for b in saved:
        updates.setdefault(b.module, {})[b.key] = {
            "samples": list(b.samples),
            "runs": [list(b.samples)],
            "stats": summarize(b.samples).as_dict(),
            "loops": b.iterations,
            "timer": "host",
            "l2_flush": False,
            "mode": "imported",
            "dtype": "f64",
            "device": fingerprint,
            "recorded": recorded,
        }
    report = BaselineStore(args.baselines, machine_id).save(updates, machine_info(machine_id))
    for err in report.errors:
        print(f"NOT imported, left untouched: {err}", file=sys.stderr)
    n = sum(len(v) for v in updates.values())
    print(
        f"imported {n} benchmark(s) from {args.file} into {len(report.written)} file(s) under "
        f"{args.baselines / machine_id} (as this machine's, class {hardware_class()})"
    )
    return EXIT_USAGE if report.errors else EXIT_OK


def _store(args: argparse.Namespace) -> Any:
    from pytest_burnperf.storage.history.store import Store, StoreError

    try:
        return Store(resolve_url(args.store, Path.cwd()))
    except ImportError as exc:
        raise InputError(
            f"the results store needs SQLAlchemy ({exc}): pip install 'pytest-burnperf[history]'"
        ) from None
    except StoreError as exc:
        raise InputError(str(exc)) from None


def _distinct_paths(outputs: Sequence[tuple[str, Path]], inputs: Sequence[Path] = ()) -> None:
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


def _missing_sqlite(url: str) -> Path | None:
    """The file of a SQLite store URL that does not exist (None: it exists, or not SQLite)."""
    prefix = "sqlite:///"
    if not url.startswith(prefix) or url[len(prefix) :] in ("", ":memory:"):
        return None
    path = Path(url[len(prefix) :].split("?", 1)[0])
    return None if path.exists() else path


def _results_doc(path: Path) -> dict[str, Any]:
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
    except FileFormatError as exc:
        raise InputError(str(exc)) from None
    return doc


def cmd_import_results(args: argparse.Namespace) -> int:
    from pytest_burnperf.storage.history.store import StoreError

    docs = [(path, _results_doc(path)) for path in args.files]
    for path, doc in docs:
        if doc.get("interrupted") is True:
            raise InputError(
                f"{path}: the run was interrupted; its partial results are not stored (history "
                "and change points would read them as a whole run). Nothing was imported"
            )
    with _store(args) as store:
        for path, doc in docs:
            try:
                added = store.record(doc, source=f"import {path.name}")
            except StoreError as exc:
                raise InputError(f"{path}: {exc}") from None
            n = len(doc.get("results") or [])
            print(f"{path}: {'imported' if added else 'already in the store'} ({n} results)")
        runs, res = store.counts()
    print(f"the store holds {runs} runs, {res} results")
    return EXIT_OK


def _selection(args: argparse.Namespace) -> Any:

    try:
        return matcher(args.k or "")
    except ExpressionError as exc:
        raise InputError(str(exc)) from None


def cmd_history(args: argparse.Namespace) -> int:
    import shutil

    keep = _selection(args)
    with _store(args) as store:
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


def cmd_compare_history(args: argparse.Namespace) -> int:

    doc = _results_doc(args.new)
    with _store(args) as store:
        points = store.points(last=args.last, branch=args.branch, with_runs=True)
    judged = against_history(doc, points, alpha=args.alpha, threshold=args.threshold)
    policy = Policy(alpha=args.alpha, threshold=args.threshold, comparisons=max(1, len(judged)))
    regressed = 0
    where = f"the last {args.last} runs" + (f" on {args.branch}" if args.branch else "")
    for test, v, used in judged:
        change = "-" if v.change_pct is None else f"{v.change_pct:+.1f}%"
        base = "-" if v.baseline_median is None else format_time(v.baseline_median)
        print(
            f"{v.status:<12} {change:>8} {base:>10} -> {format_time(v.current_median):>10}  "
            f"{test}  ({used} stored runs)"
        )
        if v.status == REGRESSED:
            regressed += 1
            print(f"  {failure_message(test, v, policy)}")
    print(f"judged against {where} of the same hardware class")
    return EXIT_REGRESSED if regressed else EXIT_OK


REPORT_KINDS = {
    ".html": "html",
    ".htm": "html",
    ".md": "markdown",
    ".markdown": "markdown",
    ".csv": "csv",
}


def cmd_report(args: argparse.Namespace) -> int:
    """A results file and/or the store's history to an HTML, Markdown or CSV file."""

    kind = REPORT_KINDS.get(args.output.suffix.lower())
    if kind is None:
        raise InputError(
            f"-o {args.output}: the file's suffix picks the format: "
            f"{', '.join(sorted(REPORT_KINDS))}"
        )
    from pytest_burnperf.report import csv as csv_report
    from pytest_burnperf.report import html, markdown
    from pytest_burnperf.storage.paths import target_problem

    ours = {
        "markdown": markdown.written_by_us,
        "csv": csv_report.written_by_us,
        "html": html.written_by_us,
    }[kind]
    problem = target_problem(args.output, ours, force=args.force)
    if problem:
        raise InputError(f"-o {args.output}: {problem}")
    doc = _results_doc(args.results) if args.results is not None else None
    use_store = args.store is not None or doc is None
    points: list[dict[str, Any]] = []
    if use_store:
        with _store(args) as store:
            points = store.points(last=args.last, branch=args.branch)
    keep = _selection(args)
    if kind == "markdown":
        from pytest_burnperf.report.markdown import render as md

        if doc is None:
            raise InputError("a Markdown report is made from a results file: give RESULTS.json")
        text = md(doc)
    elif kind == "csv":
        from pytest_burnperf.report.csv import history_csv, results_csv

        text = (
            results_csv(doc)
            if doc is not None
            else history_csv([p for p in points if keep(str(p["test"]))])
        )
    else:
        try:  # plotly itself is imported where each figure is drawn: check for it first
            import plotly  # noqa: F401
        except ImportError as exc:
            raise InputError(
                f"the HTML report needs plotly ({exc}): pip install 'pytest-burnperf[report]'"
            ) from None
        from pytest_burnperf.report.html import render as page
        from pytest_burnperf.storage.history.query import series

        history = series(points, keep=keep, device=args.device) if points else []
        text = page(doc, history)
    try:
        atomic_write_text(args.output, text)
    except (OSError, FileFormatError) as exc:
        raise InputError(f"-o {args.output}: cannot write it: {exc}") from None
    print(f"wrote {args.output} ({kind}, {len(text) // 1024} KiB)")
    return EXIT_OK


def cmd_github(args: argparse.Namespace) -> int:
    """Publish a run in GitHub Actions; never fails the job itself (the action's last step exits
    with pytest's code), but says in the summary and the comment what it could not read."""
    import os

    from pytest_burnperf.report import github, markdown
    from pytest_burnperf.storage.paths import target_problem

    doc: dict[str, Any] | None = None
    problem = ""
    if args.results.exists():
        try:
            read_results(args.results)  # checks the format, names the field that is wrong
            loaded = read_json(args.results)
            doc = loaded if isinstance(loaded, dict) else None
        except (OSError, FileFormatError) as exc:
            problem = f"{args.results}: {exc}"
    else:
        problem = f"{args.results} was not written (the run stopped before its end)"
    tail = ""
    if args.output_file is not None:
        try:
            text = args.output_file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        tail = "\n".join(escape(text).splitlines()[-40:])
    if problem:
        tail = f"{escape(problem)}\n{tail}"
    body = github.comment(
        doc,
        label=args.label,
        exit_code=args.exit_code,
        output_tail=tail,
        link=args.link or None,
        limit=args.limit,
    )
    allowed, why = github.may_comment(os.environ)
    if args.comment_file is not None:
        inputs = [args.results] + ([args.output_file] if args.output_file is not None else [])
        _distinct_paths([("--comment-file", args.comment_file)], inputs)
        marker = github.MARKER.split("{", 1)[0].encode()
        refused = target_problem(args.comment_file, lambda head: head.startswith(marker))
        if refused:
            raise InputError(f"--comment-file {args.comment_file}: {refused}")
        try:
            atomic_write_text(args.comment_file, body)
        except (OSError, FileFormatError) as exc:
            raise InputError(
                f"--comment-file {args.comment_file}: cannot write it: {exc}"
            ) from None
    values: dict[str, object] = dict(github.counts(doc))
    values.update(
        {
            "comment": "true" if allowed and args.comment_file is not None else "false",
            "comment-why": why,
            "results-path": args.results if doc is not None else "",
            "comment-path": args.comment_file or "",
        }
    )
    outputs = args.outputs or os.environ.get("GITHUB_OUTPUT")
    where = "--outputs" if args.outputs else "$GITHUB_OUTPUT"
    if outputs:
        try:
            github.write_outputs(Path(outputs), values)
        except OSError as exc:
            raise InputError(f"{where} {outputs}: cannot append to it: {_why(exc)}") from None
    else:
        for name, value in values.items():
            print(f"{name}={value}")
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary and (doc is None or not allowed):
        text = body + "\n" if doc is None else ""  # no --perf-markdown there: the comment is
        text += f"\n_No pull-request comment: {markdown.escape(why)}._\n"
        try:
            with open(summary, "a", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:
            raise InputError(
                f"$GITHUB_STEP_SUMMARY {summary}: cannot append to it: {_why(exc)}"
            ) from None
    return EXIT_OK


def cmd_merge(args: argparse.Namespace) -> int:
    """The shards' results as one run: one file, one summary, one verdict."""
    from pytest_burnperf.report import markdown
    from pytest_burnperf.report.merge import MergeError, junit, merge, verdict
    from pytest_burnperf.report.terminal import json_target_problem
    from pytest_burnperf.storage.paths import target_problem

    problem = json_target_problem(args.output, Path("baselines"))
    if problem:
        raise InputError(f"-o {args.output}: {problem}")
    if args.markdown is not None and (why := markdown.target_problem(args.markdown)):
        raise InputError(f"--markdown {args.markdown}: {why}")
    if args.junit is not None and (
        why := target_problem(args.junit, lambda head: b'name="pytest-burnperf"' in head)
    ):
        raise InputError(f"--junit {args.junit}: {why}")
    outputs = [("-o", args.output), ("--markdown", args.markdown), ("--junit", args.junit)]
    _distinct_paths([(o, p) for o, p in outputs if p is not None], args.shards)
    docs = [(str(path), _results_doc(path)) for path in args.shards]
    try:
        merged, notes = merge(docs)
    except MergeError as exc:
        raise InputError(str(exc)) from None
    for note in notes:
        print(f"note: {note}")
    try:
        atomic_write_text(args.output, json.dumps(merged, indent=1, sort_keys=True) + "\n")
        if args.markdown is not None:
            markdown.write(args.markdown, markdown.render(merged))
        if args.junit is not None:
            atomic_write_text(args.junit, junit(merged))
    except (OSError, FileFormatError) as exc:
        raise InputError(f"cannot write the merged results: {exc}") from None
    code, line = verdict(merged)
    shard = merged["settings"]["shard"]
    print(f"merged {shard['count']} shard(s) into {args.output}: {line}")
    return code


def cmd_merge_baselines(args: argparse.Namespace) -> int:
    """The shards' recorded baselines into one baselines directory."""
    from pytest_burnperf.storage.baselines import BaselineError, LockTimeout, collect, load_file

    merged: dict[str, tuple[dict[str, Any], dict[str, dict[str, dict[str, Any]]]]] = {}
    origin: dict[tuple[str, str, str], Path] = {}
    for src in args.sources:
        try:
            found = collect(src)
        except BaselineError as exc:
            raise InputError(f"{exc}; nothing was merged") from None
        for machine_id, (machine, modules) in found.items():
            mine = merged.setdefault(machine_id, (machine, {}))[1]
            for module, entries in modules.items():
                for key, entry in entries.items():
                    where = (machine_id, module, key)
                    old = mine.setdefault(module, {}).get(key)
                    if old is not None and old != entry:
                        raise InputError(
                            f"{escape(module)}::{escape(key)} ({machine_id}) was recorded by "
                            f"{origin[where]} and by {src}, differently: a benchmark belongs to "
                            "one shard; nothing was merged"
                        )
                    mine[module][key] = entry
                    origin[where] = src
    if not merged:
        raise InputError(f"no baseline files under {', '.join(map(str, args.sources))}")
    for machine_id in merged:  # every check before the first file is written
        try:
            check_machine_id(machine_id, "a machine directory")
        except SpecError as exc:
            raise InputError(f"{exc}; nothing was merged") from None
    if args.baselines.exists() and not args.baselines.is_dir():
        raise InputError(f"--baselines {args.baselines}: is a file, not a baselines folder")
    errors = 0
    for machine_id, (machine, modules) in sorted(merged.items()):
        store = BaselineStore(args.baselines, machine_id)
        for module, entries in sorted(modules.items()):  # what the merge replaces, said
            try:
                old_entries = load_file(store.path_for(module))
            except BaselineError:
                continue  # the save reports it, with its path
            for key in sorted(entries):
                if key in old_entries and old_entries[key] != entries[key]:
                    print(
                        f"note: {escape(module)}::{escape(key)} ({machine_id}): the baseline "
                        "already there was replaced by the shard's"
                    )
        try:
            report = store.save(modules, machine or {"id": machine_id})
        except LockTimeout as exc:
            raise InputError(f"baselines NOT merged: {exc}") from None
        for err in report.errors:
            print(f"NOT merged, left untouched: {err}", file=sys.stderr)
        errors += len(report.errors)
        n = sum(len(v) for v in modules.values())
        print(f"{machine_id}: {n} benchmark(s) merged into {len(report.written)} file(s)")
    return EXIT_USAGE if errors else EXIT_OK


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
    keep = _selection(args)
    url = resolve_url(args.store, Path.cwd())
    missing = _missing_sqlite(url)
    if missing is not None:  # opening it would create an empty store, and publish nothing
        raise InputError(
            f"no results store at {missing} (--store, or $BURNPERF_STORE); "
            f"nothing was written to {args.output}"
        )
    with _store(args) as store:
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="burnperf", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"burnperf {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    dev = sub.add_parser("devices", help="list the devices found here, and why others are missing")
    dev.add_argument("--json", action="store_true", help="print JSON instead of a table")
    dev.set_defaults(func=cmd_devices)
    cmp_ = sub.add_parser("compare", help="judge two --perf-json result files")
    cmp_.add_argument("old", type=Path, help="results recorded before the change")
    cmp_.add_argument("new", type=Path, help="results recorded after the change")
    cmp_.add_argument(
        "--alpha",
        type=_spec_type(parse_alpha, "--alpha"),
        default=0.01,
        help="significance level. Default: 0.01",
    )
    cmp_.add_argument(
        "--threshold",
        type=_spec_type(parse_threshold, "--threshold"),
        default=0.05,
        help="minimum slowdown of the median (0.05 or 5%%). Default: 0.05",
    )
    cmp_.set_defaults(func=cmd_compare)
    mach = sub.add_parser(
        "machines", help="the hardware classes that have baselines, and which one this host is"
    )
    mach.add_argument(
        "--baselines", type=Path, default=Path("baselines"), help="Default: ./baselines"
    )
    mach.add_argument("--json", action="store_true", help="print JSON instead of text")
    mach.set_defaults(func=cmd_machines)
    imp = sub.add_parser(
        "import-pytest-benchmark",
        help="import a saved pytest-benchmark run (with --benchmark-save-data) as baselines",
    )
    imp.add_argument(
        "file", type=Path, help="a .benchmarks/... JSON file or --benchmark-json output"
    )
    imp.add_argument(
        "--baselines", type=Path, default=Path("baselines"), help="Default: ./baselines"
    )
    imp.add_argument("--machine", default=None, help="machine id. Default: this machine's")
    imp.set_defaults(func=cmd_import)

    def store_arg(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--store",
            default=None,
            help="the results store: a SQLAlchemy URL (postgresql://...), a SQLite file, or "
            "'local'. Default: $BURNPERF_STORE, else .burnperf/history.sqlite here",
        )

    ir = sub.add_parser(
        "import-results", aliases=["import"], help="add --perf-json results files to the store"
    )
    ir.add_argument("files", type=Path, nargs="+", help="--perf-json files")
    store_arg(ir)
    ir.set_defaults(func=cmd_import_results)

    def series_args(p: argparse.ArgumentParser, last: int, device: bool = True) -> None:
        """-k, --device, --branch, --last and --store: which of the store's series to show."""
        p.add_argument("-k", default=None, help="series to include, as pytest's -k")
        if device:
            p.add_argument("--device", default=None, help="backend, kind or backend-kind")
        p.add_argument("--branch", default=None, help="runs of this branch only (e.g. main)")
        p.add_argument(
            "--last", type=_positive, default=last, help=f"newest runs per series. Default: {last}"
        )
        store_arg(p)

    hist = sub.add_parser("history", help="each benchmark's stored series and its shifts")
    hist.add_argument("--json", action="store_true", help="print JSON instead of text")
    series_args(hist, 100)
    hist.set_defaults(func=cmd_history)
    ch = sub.add_parser(
        "compare-history", help="judge a --perf-json file against the last N stored runs"
    )
    ch.add_argument("new", type=Path, help="the results to judge")
    ch.add_argument("--last", type=_positive, default=20, help="stored runs per test. Default: 20")
    ch.add_argument("--branch", default=None, help="stored runs of this branch only (e.g. main)")
    ch.add_argument(
        "--alpha",
        type=_spec_type(parse_alpha, "--alpha"),
        default=0.01,
        help="family-wise significance level. Default: 0.01",
    )
    ch.add_argument(
        "--threshold",
        type=_spec_type(parse_threshold, "--threshold"),
        default=0.05,
        help="minimum slowdown of the median (0.05 or 5%%). Default: 0.05",
    )
    store_arg(ch)
    ch.set_defaults(func=cmd_compare_history)
    rep = sub.add_parser(
        "report", help="an HTML, Markdown or CSV report of a results file and/or the store"
    )
    rep.add_argument("results", type=Path, nargs="?", default=None, help="a --perf-json file")
    rep.add_argument(
        "-o", "--output", type=Path, required=True, help="report.html, summary.md or results.csv"
    )
    rep.add_argument(
        "--force",
        action="store_true",
        help="replace -o even where it is a file pytest-burnperf did not write",
    )
    series_args(rep, 50)
    rep.set_defaults(func=cmd_report)
    pub = sub.add_parser("publish", help="a static benchmarks site from the results store")
    pub.add_argument("-o", "--output", type=Path, required=True, help="the site's folder")
    pub.add_argument("--title", default="Benchmarks", help="the site's title")
    series_args(pub, 200, device=False)
    pub.set_defaults(func=cmd_publish)
    mb = sub.add_parser(
        "merge-baselines", help="add the baselines that shards recorded to a baselines directory"
    )
    mb.add_argument("sources", type=Path, nargs="+", help="each shard's baselines directory")
    mb.add_argument(
        "--baselines", type=Path, default=Path("baselines"), help="Default: ./baselines"
    )
    mb.set_defaults(func=cmd_merge_baselines)
    mg = sub.add_parser(
        "merge", help="combine the --perf-json files of a run's shards (--perf-shard) into one"
    )
    mg.add_argument("shards", type=Path, nargs="+", help="each shard's --perf-json file")
    mg.add_argument("-o", "--output", type=Path, required=True, help="the merged results JSON")
    mg.add_argument("--markdown", type=Path, default=None, help="also a Markdown summary")
    mg.add_argument("--junit", type=Path, default=None, help="also JUnit XML")
    mg.set_defaults(func=cmd_merge)
    gh = sub.add_parser(
        "github", help="publish a run in GitHub Actions: step outputs and a pull-request comment"
    )
    gh.add_argument("--results", type=Path, required=True, help="the run's --perf-json file")
    gh.add_argument("--exit-code", type=int, required=True, help="pytest's exit code")
    gh.add_argument("--output-file", type=Path, default=None, help="the run's text output")
    gh.add_argument("--label", default="perf", help="which job this is (one comment per label)")
    gh.add_argument("--link", default="", help="where the full results are (an artifact URL)")
    gh.add_argument("--comment-file", type=Path, default=None, help="write the comment here")
    gh.add_argument(
        "--outputs", type=Path, default=None, help="step outputs file. Default: $GITHUB_OUTPUT"
    )
    gh.add_argument(
        "--limit",
        type=_comment_limit,
        default=65_536,
        help="the comment's length limit in characters, at least 2000 (its fixed text and a "
        "note of what was cut must fit). Default: GitHub's, 65536",
    )
    gh.set_defaults(func=cmd_github)
    return parser


def _positive(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {value!r}")
    return n


def _comment_limit(value: str) -> int:
    n = _positive(value)
    if n < 2000:
        raise argparse.ArgumentTypeError(
            f"must be at least 2000 (the comment's fixed text and its note must fit), got {value!r}"
        )
    return n


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; 0 ok, 1 regressions found, 2 usage or input error (argparse's own usage
    errors exit 2 as well). A reader that closes the pipe early (``| head``) ends it quietly."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except InputError as exc:
        print(f"burnperf {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        import os

        # Python flushes stdout again at exit: point it at devnull so that is quiet too
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
