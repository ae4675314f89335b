"""The commands that write reports of a run: ``burnperf report`` (HTML, Markdown or CSV of a
results file and/or the store), ``burnperf merge`` (the shards of one run as one results file,
summary and verdict) and ``burnperf github`` (a run published in GitHub Actions: step outputs and
a pull-request comment)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pytest_burnperf import json_fields as jf
from pytest_burnperf.cli.arguments import (
    EXIT_OK,
    InputError,
    comment_limit,
    distinct_paths,
    open_store,
    results_doc,
    selection,
    series_args,
)
from pytest_burnperf.core.text import escape
from pytest_burnperf.report.results_json import read_results
from pytest_burnperf.storage.jsonfile import FileFormatError, _why, atomic_write_text, read_json

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
    doc = results_doc(args.results) if args.results is not None else None
    use_store = args.store is not None or doc is None
    points: list[dict[str, object]] = []
    if use_store:
        with open_store(args) as store:
            points = store.points(last=args.last, branch=args.branch)
    keep = selection(args)
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


def cmd_merge(args: argparse.Namespace) -> int:
    """The shards' results as one run: one file, one summary, one verdict."""
    from pytest_burnperf.report import markdown
    from pytest_burnperf.report.merge import MergeError, junit, merge, verdict
    from pytest_burnperf.report.results_json import json_target_problem
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
    distinct_paths([(o, p) for o, p in outputs if p is not None], args.shards)
    docs = [(str(path), results_doc(path)) for path in args.shards]
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
    shard = jf.mapping(jf.mapping(merged.get("settings")).get("shard"))
    print(f"merged {shard['count']} shard(s) into {args.output}: {line}")
    return code


def cmd_github(args: argparse.Namespace) -> int:
    """Publish a run in GitHub Actions; never fails the job itself (the action's last step exits
    with pytest's code), but says in the summary and the comment what it could not read."""
    import os

    from pytest_burnperf.report import github, markdown
    from pytest_burnperf.storage.paths import target_problem

    doc: dict[str, object] | None = None
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
        distinct_paths([("--comment-file", args.comment_file)], inputs)
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


def register(sub: Any) -> None:
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
        type=comment_limit,
        default=65_536,
        help="the comment's length limit in characters, at least 2000 (its fixed text and a "
        "note of what was cut must fit). Default: GitHub's, 65536",
    )
    gh.set_defaults(func=cmd_github)
