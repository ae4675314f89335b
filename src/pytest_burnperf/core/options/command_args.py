"""The run's command line as the plugin hands it on: a round process's (its parent's less what
only the parent acts on), and the commands a summary suggests (the run's own arguments less what
each command sets itself: ``suggested_args``, ``recording_args``). No pytest here."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence


def without_options(
    args: Sequence[str], valued: Sequence[str], flags: Sequence[str] = ()
) -> list[str]:
    """``args`` without the options ``valued`` (with their value: ``--opt V`` or ``--opt=V``)
    and the flags ``flags``: a round's process gets its parent's command line less what only
    the parent acts on, a suggested command its run's less what it sets itself."""
    out: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a in flags:
            continue
        if a in valued:
            skip = True
            continue
        if any(a.startswith(o + "=") for o in valued):
            continue
        out.append(a)
    return out


#: What a command the run suggests (record, judge, accept) leaves out of the run's own command
#: line: options that neither select nor configure benchmarks, only what this run printed or
#: wrote (verbosity, tracebacks, colours, output files, profiles, pytest's temporary folder) and
#: what the suggestion sets itself. Everything else is kept, unknown options included.
INCIDENTAL_VALUED = (
    "--perf-json",
    "--perf-markdown",
    "--perf-profile-dir",
    "--perf-store",
    "--perf-columns",
    "--junitxml",
    "--junit-xml",
    "--basetemp",
    "--tb",
    "--color",
    "--capture",
    "--durations",
    "--durations-min",
    "--perf-against",
    "--perf-min-judged",
)
INCIDENTAL_FLAGS = (
    "--perf",
    "--perf-update",
    "--update-baselines",
    "--perf-profile",
    "--verbose",
    "--quiet",
    "--exitfirst",
    "--showlocals",
    "--no-header",
    "--no-summary",
    "--pdb",
    "--trace",
    "-s",
    "-x",
    "-l",
)
_VERBOSITY = re.compile(r"^-(v+|q+|r[a-zA-Z]*)$")


def suggested_args(invocation: Sequence[str]) -> list[str]:
    """The run's command-line arguments a suggested command repeats: those that select and
    configure benchmarks (test paths, ``-k``, ``-m``, ``--perf-*`` settings), without
    :data:`INCIDENTAL_VALUED` and :data:`INCIDENTAL_FLAGS` (``--perf-profile=regressed`` too)
    and without ``-v``/``-q``/``-r...``."""
    args = list(invocation)
    for i in range(len(args) - 1, 0, -1):  # --perf-profile's optional value, given apart
        if args[i - 1] == "--perf-profile" and args[i] in ("off", "all", "regressed"):
            del args[i]
    kept = without_options(args, INCIDENTAL_VALUED, INCIDENTAL_FLAGS)
    return [a for a in kept if not _VERBOSITY.match(a) and not a.startswith("--perf-profile=")]


#: Options that say what a run compares with (a reference, versions, the base --perf-against
#: auto takes): a suggested command that records baselines (--perf-update goes with none of
#: them) or names its own comparison leaves them out.
COMPARISON_VALUED = ("--perf-against", "--perf-versions", "--perf-reference", "--perf-base")


def recording_args(invocation: Sequence[str]) -> list[str]:
    """:func:`suggested_args` less :data:`COMPARISON_VALUED`: what a suggested command that
    records baselines, or that names its own comparison, repeats of the run's command line."""
    return without_options(suggested_args(invocation), COMPARISON_VALUED)


#: Installed pytest plugins the measuring child processes start without, where the run named
#: none of their options (the plugin's name -> a word its options and its own name contain):
#: hypothesis's imports all of hypothesis in its terminal summary whether a test used it or not
#: (about 1 s of CPU in every child, some 5 s under valgrind); a test written with hypothesis
#: runs without it (hypothesis needs no pytest plugin).
LEFT_OUT_OF_CHILDREN = {"hypothesispytest": "hypothesis"}


def left_out_of_children(loaded: Callable[[str], bool], given: Iterable[str]) -> tuple[str, ...]:
    """``-p no:NAME`` for each plugin of :data:`LEFT_OUT_OF_CHILDREN` that this run ``loaded``
    and that none of the words ``given`` names (the command line, ``addopts``,
    ``PYTEST_ADDOPTS``: a child reads them again, and would refuse an option of a plugin it
    lacks)."""
    words = list(given)
    out: list[str] = []
    for name, word in LEFT_OUT_OF_CHILDREN.items():
        if loaded(name) and not any(word in w for w in words):
            out += ["-p", f"no:{name}"]
    return tuple(out)
