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
* ``burnperf bisect GOOD BAD [--max-probes N] [--json] [-- PYTEST ARGS]`` names, for each
  selected benchmark that moved between two commits, every commit where it moved (by counts).
* ``burnperf github --results RESULTS.json --exit-code N ...`` publishes a run in GitHub Actions
  (what ``.github/actions/burnperf`` calls): the verdict counts as step outputs, a pull-request
  comment cut to GitHub's limit, and whether this job may comment at all (not from a fork).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pytest_burnperf._version import __version__
from pytest_burnperf.cli import (
    baseline_commands,
    bisect_command,
    compare_commands,
    devices_command,
    report_commands,
    store_commands,
)
from pytest_burnperf.cli.arguments import EXIT_OK, EXIT_USAGE, InputError

#: Each command family registers its subcommands, in the order ``burnperf --help`` lists them.
FAMILIES = (
    devices_command,
    compare_commands,
    baseline_commands,
    store_commands,
    report_commands,
    bisect_command,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="burnperf", description=__doc__.split("\n\n")[0].replace("``", "")
    )
    parser.add_argument("--version", action="version", version=f"burnperf {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for family in FAMILIES:
        family.register(sub)
    return parser


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
