"""Process rounds: the same pytest command in fresh processes, one after another, each writing its
raw samples, host windows and probes for the parent session to pool.

While a round runs, its process appends the node id of every finished test to a progress file; the
parent reads it and prints ``round 2/3: 41/125 done, 1:12 elapsed`` every
:data:`PROGRESS_EVERY_S` seconds and when the round ends, so a long run is never silent.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pytest_burnperf.core.options.command_args import without_options
from pytest_burnperf.core.text import clock, quoted, shorten
from pytest_burnperf.storage.jsonfile import Fields, FileFormatError, dumps, finite, read_json

#: What a side process's file holds per benchmark (runs/profiled.py, runs/tracked_sides.py).
T = TypeVar("T")

#: Seconds between two progress lines of one round (a last line is always printed at its end).
PROGRESS_EVERY_S = 15.0
#: How often the parent looks at the progress file (a process's end is seen at once where the
#: platform can wait on it: :func:`exit_waiter`).
POLL_S = 0.5


def budget_spent(elapsed_s: float, budget_s: float) -> bool:
    """Whether the round budget (--perf-round-budget; 0: none) forbids another adaptive round
    ``elapsed_s`` after the first round started."""
    return budget_s > 0 and elapsed_s >= budget_s


def budget_text(budget_s: float, undecided: int, total: int) -> str:
    """The run's message when the round budget stopped the adaptive rounds."""
    return (
        f"adaptive rounds stopped: the round budget of {budget_s:g} s was spent with "
        f"{undecided} of {total} benchmark(s) still undecided, which stay inconclusive where "
        "their rounds cannot tell; a longer --perf-round-budget (0: no limit) buys them more "
        "rounds"
    )


#: Progress lines fit this many columns (the test named last is shortened in the middle).
PROGRESS_WIDTH = 80


def progress_line(
    r: int,
    rounds: int,
    done: int,
    total: int,
    elapsed_s: float,
    *,
    where: str = "",
    round_s: float | None = None,
    last: str | None = None,
) -> str:
    """``burnperf: round 2/3: 41/125 done, 1:12, ~2:05 left, last test_x[numpy-cpu-f32]``:
    the estimate of the time left in this round from its pace so far (``round_s``: seconds since
    it started), while benchmarks remain; ``where``: `` in ENVIRONMENT``; the last test by its
    name without its file, shortened in the middle so that the line fits PROGRESS_WIDTH."""
    line = f"burnperf: round {r}/{rounds}{where}: {done}/{total} done, {clock(elapsed_s)}"
    if round_s is not None and 0 < done < total:
        line += f", ~{clock(round_s / done * (total - done))} left"
    else:
        line += " elapsed"
    if last and done < total:
        name = last.split("::", 1)[-1]
        room = PROGRESS_WIDTH - len(line) - len(", last ")
        if room >= 12:
            line += f", last {shorten(name, room)}"
    return line


def last_done(progress: Path) -> str | None:
    """The benchmark a round's process finished last, from its progress file (or None)."""
    try:
        lines = progress.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return lines[-1] if lines else None


def count_done(progress: Path, wanted: Collection[str]) -> int:
    """Benchmarks of ``wanted`` that a round's process has finished, from its progress file."""
    try:
        text = progress.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return 0
    return len({line for line in text.splitlines() if line in wanted})


def note_finished(progress: Path, nodeid: str) -> None:
    """In a round's process: one finished test (never fails the run; progress is best effort)."""
    try:
        with progress.open("a", encoding="utf-8") as f:
            f.write(nodeid.replace("\n", " ") + "\n")
    except OSError:
        pass


def progress_path(round_out: Path) -> Path:
    return round_out.with_name(round_out.name + ".progress")


def started_path(round_out: Path) -> Path:
    return round_out.with_name(round_out.name + ".started")


def journal_path(round_out: Path) -> Path:
    return round_out.with_name(round_out.name + ".journal")


def note_started(round_out: Path, nodeid: str) -> None:
    """In a journalling process (a counted one): the benchmark it starts now, so that the
    parent can name it if the process dies on it. Written before the benchmark runs."""
    try:
        with started_path(round_out).open("a", encoding="utf-8") as f:
            f.write(json.dumps(nodeid) + "\n")
    except OSError:
        pass  # the scratch folder went away: the parent says so (runs/counted.py)


def note_record(round_out: Path, nodeid: str, record: Any) -> None:
    """In a journalling process: one finished benchmark's record, one JSON line, so that what
    it measured survives a crash on a later benchmark."""
    line = dumps({nodeid: finite(record)})
    try:
        with journal_path(round_out).open("a", encoding="utf-8") as f:
            f.write(line + "\n")
    except OSError:
        pass  # the scratch folder went away: the parent says so (runs/counted.py)


def _lines(path: Path) -> list[str]:
    """The whole lines of ``path`` (a line cut short by the process's death is left out)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    return text.split("\n")[:-1]


def read_journal(round_out: Path) -> tuple[dict[str, object], str | None]:
    """What a journalling process that died had finished (``{nodeid: record}``, records not
    yet checked: the caller reads them as it reads the process's file) and the benchmark it
    was on when it died (started, not finished), or None where it died between benchmarks
    or before the first."""
    records: dict[str, object] = {}
    for line in _lines(journal_path(round_out)):
        try:
            doc = json.loads(line)
        except ValueError:
            continue  # a line written while the process died cannot be read back
        if isinstance(doc, dict):
            records.update(doc)
    started = []
    for line in _lines(started_path(round_out)):
        try:
            started.append(json.loads(line))
        except ValueError:
            continue  # not a line this process wrote whole
    last = started[-1] if started else None
    return records, (last if isinstance(last, str) and last not in records else None)


def watch(
    running: Callable[[], bool],
    progress: Path,
    wanted: Collection[str],
    say: Callable[[int], None],
    *,
    every_s: float = PROGRESS_EVERY_S,
    poll_s: float = POLL_S,
    now: Callable[[], float] = time.monotonic,
    wait: Callable[[float], None] = time.sleep,
) -> None:
    """While ``running()``: ``say(done)`` every ``every_s`` seconds when the count moved.
    ``wait(s)`` passes the time between two looks: ``s`` seconds, or less where it returns as
    soon as what is watched ended (:func:`exit_waiter`)."""
    last_said, last_done = now(), -1
    while running():
        wait(poll_s)
        if now() - last_said >= every_s:
            done = count_done(progress, wanted)
            if done != last_done:
                say(done)
                last_done = done
            last_said = now()


def pooled(
    n: int,
    say: Callable[[int], None],
    *,
    every_s: float = PROGRESS_EVERY_S,
    now: Callable[[], float] = time.monotonic,
) -> list[Callable[[int], None]]:
    """One ``say`` for ``n`` processes watched at once (each by :func:`watch`): a callback per
    process that keeps its count; their sum said at most once per ``every_s`` (each process's
    watcher would otherwise print its own line at the same moment). Thread-safe."""
    done = [0] * n
    lock = threading.Lock()
    last: list[float | None] = [None]

    def tell(i: int, count: int) -> None:
        with lock:
            done[i] = count
            t = now()
            if last[0] is not None and t - last[0] < every_s * 0.5:
                return  # another process's line was just said
            last[0] = t
            say(sum(done))

    return [functools.partial(tell, i) for i in range(n)]


@contextlib.contextmanager
def exit_waiter(
    proc: subprocess.Popen[str], sleep: Callable[[float], None] = time.sleep
) -> Iterator[Callable[[float], None]]:
    """A ``wait`` for :func:`watch` that returns at ``proc``'s exit rather than at the end of
    its ``s`` seconds: a pidfd waited on with ``select`` (Linux 5.3 and later). Sleeping the
    whole interval, the parent noticed each process's end 0.25 s late on average (a
    same-session run of 20 rounds: 5 s idle). Elsewhere it still sleeps: ``Popen.wait`` with a
    timeout polls every 50 ms at most, and a parent waking that often beside a round that
    measures is worse than a late look."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # not Linux, or a kernel before 5.3
        yield sleep
        return

    def on_exit(s: float) -> None:
        select.select([fd], [], [], s)

    try:
        yield on_exit
    finally:
        os.close(fd)


def run_process(
    cmd: Sequence[str],
    *,
    cwd: Path,
    out: Path,
    todo: Collection[str],
    say: Callable[[int], None],
    env: Mapping[str, str] | None = None,
) -> tuple[int, str]:
    """One round's process: start ``cmd``, report its progress through ``say`` while it runs,
    and return its exit status and output. Interrupted, the process goes with us."""
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as log:
        proc = subprocess.Popen(
            list(cmd),
            cwd=cwd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            env=None if env is None else dict(env),
        )
        try:
            with exit_waiter(proc) as wait:
                watch(lambda: proc.poll() is None, progress_path(out), todo, say, wait=wait)
        finally:
            if proc.poll() is None:
                proc.terminate()
                proc.wait()
        log.seek(0)
        return proc.returncode, log.read()


def read_round_file(path: Path) -> dict[str, dict[str, object]]:
    """The samples a round's process wrote: ``{nodeid: {"values", "host", "probe"}}``, checked."""
    doc = read_json(path)
    f = Fields(path)
    records: dict[str, dict[str, object]] = {}
    for nodeid, value in f.obj(doc, "document").items():
        f.text(nodeid, "test id")
        where = f"[{json.dumps(nodeid)}]"
        rec = records[nodeid] = f.obj(value, where)
        rec["values"] = f.samples(rec.get("values"), f"{where}.values")
        f.plain(f.opt_obj(rec.get("host"), f"{where}.host"), f"{where}.host")
        f.plain(f.opt_obj(rec.get("probe"), f"{where}.probe"), f"{where}.probe")
    return records


#: Options of the parent run that its round processes must not get: what to compare with ...
PARENT_ONLY = ("--perf-against", "--perf-versions", "--perf-reference")
#: ... and what only the parent writes or enforces.
PARENT_FLAGS = ("--perf-update", "--update-baselines", "--perf-strict")


def interpreter_args(
    flags: object = None,
    xoptions: Mapping[str, object] | None = None,
    warnoptions: Sequence[str] | None = None,
) -> list[str]:
    """The options this interpreter was started with that change what Python code runs, for
    every child ``python -m pytest`` (rounds, counted and profiled processes): ``-O``/``-OO``,
    each ``-X`` option and each ``-W`` filter, so that a child runs what the user's runs
    (``python -O -m pytest --perf`` counted its child without ``-O``: a module of asserts read
    unchanged by counts while its time moved -40%). The counts key then holds them
    (core/counting/counts_key.interpreter_settings). Defaults: this interpreter's."""
    f = sys.flags if flags is None else flags
    optimize = int(getattr(f, "optimize", 0) or 0)
    out = ["-" + "O" * optimize] if optimize > 0 else []
    for key, value in (sys._xoptions if xoptions is None else xoptions).items():
        out += ["-X", key if value is True else f"{key}={value}"]
    for w in sys.warnoptions if warnoptions is None else warnoptions:
        out += ["-W", w]
    return out


def basetemp_option(here: Path) -> list[str]:
    """pytest's temporary folder for a counted process (runs/counted.py): one of its own, in its scratch folder,
    the same path for every benchmark's child (after the run's own ``--basetemp``, which it
    overrides). Left to pytest, each child made the next numbered folder (``pytest-41``,
    ``pytest-42``...): a suite whose session fixture builds its data under ``tmp_path_factory``
    then counted a path that changed over the run, and on pint's suite parametrisations doing the
    same work counted 60.8-62.3 k instructions a call in one recording; with one folder, within
    20 of each other (docs/pytest-benchmark-suites.md, "pint")."""
    return [f"--basetemp={here / 'basetemp'}"]


def backends_option(devices: Mapping[str, str] | None, todo: Sequence[str]) -> list[str]:
    """The ``--perf-backends`` (the last given wins) that picks the devices of the benchmarks
    ``todo`` (node ids -> device id: ``devices``) alone, or none where one's device is unknown
    (the interpreter of a pytest-benchmark test): a round or counted process started with it
    probes and imports no other device library (importing torch took 16 s of CPU under
    valgrind here, probing an OpenCL driver seconds natively)."""
    if devices is None or any(devices.get(n) is None for n in todo):
        return []
    return [f"--perf-backends={','.join(sorted({devices[n] for n in todo}))}"]


def run_round_process(
    python: str,
    args: Sequence[str],
    *,
    wanted: Sequence[str],
    work: Path,
    cwd: Path,
    say: Callable[[int], None],
    options: Sequence[str] = (),
    prefix: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> tuple[int, str, Path]:
    """One pass of ``python -m pytest args`` over the node ids ``wanted`` (a counted or a
    profiled process: ``options`` say which, ``prefix`` runs it under valgrind), its files
    under ``work``. Returns its exit status, its output and the file it was to write."""
    out = work / "round-process.json"
    only = work / "round-process.only"
    only.write_text("\n".join(wanted) + "\n", encoding="utf-8")
    cmd = [
        *prefix,
        python,
        *interpreter_args(),
        "-m",
        "pytest",
        *args,
        "-q",
        "-p",
        "no:cacheprovider",
        f"--perf-round-process-out={out}",
        f"--perf-round-process-only={only}",
        *options,
    ]
    code, output = run_process(cmd, cwd=cwd, out=out, todo=wanted, say=say, env=env)
    return code, output, out


@dataclass
class SidePass:
    """What one pass of a side process (profiled, tracking) over its benchmarks found: a record
    per node id, why the others have none, its problems and its seconds."""

    found: dict[str, Any] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0


def read_side_file(
    path: Path, *, error: str | None, parse: Callable[[Fields, dict[str, object], str], T]
) -> tuple[dict[str, T], dict[str, str]]:
    """What a side process (profiled, tracking) wrote, ``{nodeid: record}``: ``parse(fields,
    record, where)`` reads one benchmark's record, and a record holding ``error`` (None: none
    does) says why that benchmark has none. Every field checked (``FileFormatError`` names a
    bad one)."""
    doc = read_json(path)
    f = Fields(path)
    found: dict[str, T] = {}
    errors: dict[str, str] = {}
    for nodeid, value in f.obj(doc, "document").items():
        where = f"[{json.dumps(nodeid)}]"
        rec = f.obj(value, where)
        if error is not None and error in rec:
            errors[nodeid] = f.text(rec[error], f"{where}.{error}")
        else:
            found[nodeid] = parse(f, rec, where)
    return found, errors


def side_pass(
    python: str,
    args: Sequence[str],
    *,
    wanted: Sequence[str],
    cwd: Path,
    say: Callable[[int], None],
    option: str,
    what: str,
    read: Callable[[Path], tuple[dict[str, Any], dict[str, str]]],
    env: Mapping[str, str] | None = None,
) -> SidePass:
    """One ``what`` process (``profiled``, ``tracking``: the hidden ``option`` says which) over
    the node ids ``wanted``; ``read`` reads what it wrote (records, and why others have none;
    FileFormatError on a bad file). A process that wrote nothing, or garbage, leaves every
    benchmark without a record, with why."""
    got = SidePass()
    t0 = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix=f"burnperf-{what}-"))
    try:
        code, output, out = run_round_process(
            python, args, wanted=wanted, work=work, cwd=cwd, say=say, options=[option], env=env
        )
        if not out.exists():
            why = f"its {what} process failed (exit {code})"
            got.problems.append(f"{why}:\n{quoted(output)}")
            got.missing = {n: why for n in wanted}
            return got
        try:
            got.found, errors = read(out)
        except FileFormatError as exc:
            why = f"its {what} process wrote a bad file ({exc})"
            got.problems.append(why)
            got.missing = {n: why for n in wanted}
            return got
        got.missing.update(errors)
        for n in wanted:
            if n not in got.found and n not in got.missing:
                got.missing[n] = f"it failed or was skipped in the {what} process" + (
                    f" (exit {code})" if code not in (0, 1) else ""
                )
    finally:
        got.seconds = time.monotonic() - t0
        shutil.rmtree(work, ignore_errors=True)
    return got


def round_args(invocation: Sequence[str], plugins_off: Sequence[str] = ()) -> list[str]:
    """The parent's command-line arguments without the options only the parent acts on, and
    the plugins the child starts without (``plugins_off``: command_args.left_out_of_children)."""
    return [*without_options(invocation, PARENT_ONLY, PARENT_FLAGS), *plugins_off]
