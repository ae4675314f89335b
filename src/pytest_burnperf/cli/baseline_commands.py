"""The commands on baselines directories: ``burnperf machines`` (which hardware classes have
baselines, and which one this host is), ``burnperf import-pytest-benchmark`` (a saved
pytest-benchmark run as this machine's baselines) and ``burnperf merge-baselines`` (the shards'
recorded baselines into one directory, under its lock)."""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path
from typing import Any

from pytest_burnperf.cli.arguments import (
    EXIT_OK,
    EXIT_USAGE,
    InputError,
)
from pytest_burnperf.core import measures
from pytest_burnperf.core.counting import counts_key
from pytest_burnperf.core.judging.stats import summarize
from pytest_burnperf.core.options.run_options import check_machine_id, check_time_machine_id
from pytest_burnperf.core.options.settings import SettingsError
from pytest_burnperf.core.text import escape, escape_strings
from pytest_burnperf.devices import Registry
from pytest_burnperf.host.hardware import cpu_identity, describe, hardware_class
from pytest_burnperf.host.machine import (
    default_machine_id,
    legacy_machine_id,
    machine_info,
    now_utc,
)
from pytest_burnperf.report.pytest_benchmark import read_saved_run, same_simd_class
from pytest_burnperf.storage.baselines import BaselineStore
from pytest_burnperf.storage.jsonfile import FileFormatError, read_json


def machine_dirs(root: Path) -> list[dict[str, object]]:
    """One record per machine directory under a baselines directory: its id, hardware class and
    CPU (from the files' ``machine`` section), how many files and benchmarks it holds, and
    whether it holds counts baselines (``counts``: instructions, for any machine of its OS and
    architecture) rather than one class's times."""

    out: list[dict[str, object]] = []
    if not root.is_dir():
        return out
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        files = sorted(d.rglob("*.json"))
        info: dict[str, object] = {}
        benchmarks = 0
        counted = False
        for f in files:
            try:
                doc = read_json(f)
            except FileFormatError:
                continue
            if isinstance(doc, dict) and isinstance(doc.get("benchmarks"), dict):
                benchmarks += len(doc["benchmarks"])
                counted = counted or any(
                    isinstance(e, dict) and measures.of_field(e.get("timer")).counted
                    for e in doc["benchmarks"].values()
                )
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
                    "counts": counted,
                }
            )
    return out


def cmd_machines(args: argparse.Namespace) -> int:

    here = default_machine_id()
    cls = hardware_class()
    dirs = machine_dirs(args.baselines)
    for rec in dirs:
        base = str(rec["id"]).removesuffix("-tiny").removesuffix("-medium").removesuffix("-full")
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
    ours = counts_key.store_name(platform.system(), platform.machine())
    for rec in dirs:
        mark = "*" if rec["this_host"] else " "
        if rec["counts"]:
            judges_here = str(rec["id"]) == ours or str(rec["id"]).startswith(f"{ours}-")
            mark = "*" if judges_here else " "
            what = "counts baselines (instructions per call): " + (
                "judge this host and every machine of its OS and architecture where valgrind runs"
                if judges_here
                else "of another OS or architecture"
            )
        elif rec["legacy"]:
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
    if not any(r["this_host"] for r in dirs if not r["counts"]):
        counted = any(r["counts"] and str(r["id"]).startswith(ours) for r in dirs)
        print(
            "no time baselines for this host's class"
            + (
                " (the counts baselines judge its CPU benchmarks where valgrind runs)"
                if counted
                else ""
            )
            + ": pytest --perf --perf-update records them"
        )
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
            check_time_machine_id(args.machine, "--machine")
            if args.machine
            else default_machine_id()
        )
    except SettingsError as exc:
        raise InputError(str(exc)) from None
    (entry,) = Registry().resolve_all(("numpy-cpu",))[:1]
    assert entry.device is not None
    with entry.device.threads(1):
        fingerprint = escape_strings(entry.device.fingerprint())
    recorded = {"date": now_utc(), "imported_from": args.file.name, "tool": "pytest-benchmark"}
    updates: dict[str, dict[str, dict[str, object]]] = {}
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


def cmd_merge_baselines(args: argparse.Namespace) -> int:
    """The shards' recorded baselines into one baselines directory."""
    from pytest_burnperf.storage.baseline_merge import MergeConflict, merge_sources
    from pytest_burnperf.storage.baselines import BaselineError, LockTimeout, load_file

    try:
        merged = merge_sources(list(args.sources))
    except (BaselineError, MergeConflict) as exc:
        raise InputError(f"{exc}; nothing was merged") from None
    if not merged:
        raise InputError(f"no baseline files under {', '.join(map(str, args.sources))}")
    for machine_id in merged:  # every check before the first file is written
        try:
            check_machine_id(machine_id, "a machine directory")
        except SettingsError as exc:
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


def register(sub: Any) -> None:
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
    mb = sub.add_parser(
        "merge-baselines", help="add the baselines that shards recorded to a baselines directory"
    )
    mb.add_argument("sources", type=Path, nargs="+", help="each shard's baselines directory")
    mb.add_argument(
        "--baselines", type=Path, default=Path("baselines"), help="Default: ./baselines"
    )
    mb.set_defaults(func=cmd_merge_baselines)
