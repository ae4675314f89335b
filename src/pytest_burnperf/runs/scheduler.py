"""The one round scheduler: fixed rounds of every benchmark, then adaptive rounds of those still
undecided, in one environment (a stored-baseline run: the current interpreter, whose own
process then measures one more round) or in several (a same-session comparison: every
environment once per round, in an order drawn at random, so that the host's drifts fall on
every side alike).

How a round starts (:class:`Schedule` ``start``):

* ``fresh``: a new interpreter per round and environment;
* ``fork``: a child forked from one round server per environment (forkserver.py), which saves
  the interpreter's start, collection and library imports of every round;
* ``turns``: benchmark after benchmark, a forked child per environment at once, the children
  taking turns in short sampling windows (turns.py);
* ``resident``: one round server per environment measures every round itself (no fork: a
  GPU's runtime, OpenCL and Vulkan drivers set up once); its rounds do not sample what moves
  between processes.

A round's process writes its samples, host windows and probes (``--perf-round-process-out``); the
scheduler pools them in :class:`Measured`, keeping a benchmark's round only where every
environment measured it (the rounds stay paired). No adaptive round starts once the budget
is spent (``Measured.budget_stopped``). No pytest here: the plugin passes the arguments of the
round processes, says which benchmarks need another round (``more``), and prints through
``write``.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_burnperf import json_fields as jf
from pytest_burnperf.core.judging.assess import MIN_CLEAN_ROUNDS, busy_rounds, leave_out_busy
from pytest_burnperf.core.judging.between_runs import joint_source
from pytest_burnperf.core.text import clock, escape, quoted
from pytest_burnperf.host.activity import Window
from pytest_burnperf.runs.comparison.environments import Env
from pytest_burnperf.runs.forkserver import POLL_S, ForkServer
from pytest_burnperf.runs.profiled import SideProfile
from pytest_burnperf.runs.round_launcher import (
    budget_spent,
    count_done,
    interpreter_args,
    last_done,
    progress_line,
    progress_path,
    read_round_file,
    run_process,
    watch,
)
from pytest_burnperf.runs.tracked_sides import Tracked
from pytest_burnperf.runs.turns import WINDOW_S, Seat, Table, TurnError, shared_cpu, table_address
from pytest_burnperf.storage.jsonfile import FileFormatError

#: How a round's process starts (see the module docstring).
STARTS = ("fresh", "fork", "turns", "resident")


@dataclass(frozen=True)
class Side:
    """One environment the rounds run in."""

    label: str
    python: str  # its interpreter
    #: Its environment variables (None: this process's).
    environ: Mapping[str, str] | None = None
    #: For messages: what it is (``numpy==2.2.6 in a cached overlay``).
    detail: str = ""
    #: The directory of an installed reference that must shadow the checkout (overlay.py):
    #: a round that imported the checkout's package instead is refused.
    overlay: str | None = None


#: ``(side, round, samples file, node ids) -> (exit status, output)``: one side's round.
Launch = Callable[[Side, int, Path, list[str]], tuple[int, str]]


@dataclass(frozen=True)
class Schedule:
    #: Rounds every benchmark gets from this scheduler.
    fixed: int
    #: Rounds at most, adaptive ones included.
    most: int
    start: str = "fresh"
    #: Seconds after the first round started from which no adaptive round starts (0: none).
    budget_s: float = 0.0
    #: A failed round ends the rounds (same-session: the sides would no longer pair); else it
    #: is reported, and only a failed adaptive round ends them (stored baselines).
    failure_ends_all: bool = True
    #: Rounds the calling process measures itself after these (stored baselines: 1, the
    #: session's own), for the numbering of the progress lines.
    own_rounds: int = 0

    def __post_init__(self) -> None:
        if self.start not in STARTS:
            raise ValueError(f"start must be one of {', '.join(STARTS)}, got {self.start!r}")
        if not 0 <= self.fixed <= self.most:
            raise ValueError(f"need 0 <= fixed <= most, got {self.fixed} and {self.most}")


@dataclass
class Measured:
    """What the rounds measured, per environment label and benchmark node id."""

    #: The environments as the caller describes them (environments.Env), for the report.
    envs: dict[str, Env] = field(default_factory=dict)
    runs: dict[str, dict[str, list[list[float]]]] = field(default_factory=dict)
    host: dict[str, dict[str, list[dict[str, object]]]] = field(default_factory=dict)
    probes: dict[str, dict[str, list[dict[str, object]]]] = field(default_factory=dict)
    #: The last record of each benchmark per environment (loops, timer...), for the report.
    last: dict[str, dict[str, dict[str, object]]] = field(default_factory=dict)
    #: Why an environment has no (or too few) measurements: its failing round's message.
    failures: dict[str, str] = field(default_factory=dict)
    #: Rounds that failed without ending the rounds (``Schedule.failure_ends_all`` false).
    problems: list[str] = field(default_factory=list)
    #: The order of the environments in each round, as run.
    orders: list[list[str]] = field(default_factory=list)
    #: Benchmarks still undecided when the round budget stopped the adaptive rounds (0: none).
    budget_stopped: int = 0
    rounds: int = 0  # rounds run
    #: Per environment label (plugin/measuring/side_processes.py): --perf-profile's profiles and
    #: what the instruments beside tracked of the benchmarks asked for; why the others have none.
    profiles: dict[str, dict[str, SideProfile]] = field(default_factory=dict)
    profile_gaps: dict[str, dict[str, str]] = field(default_factory=dict)
    tracked: dict[str, dict[str, Tracked]] = field(default_factory=dict)
    tracked_gaps: dict[str, dict[str, str]] = field(default_factory=dict)

    def add(self, label: str, nodeid: str, rec: Mapping[str, object]) -> None:
        self.runs.setdefault(label, {}).setdefault(nodeid, []).append(jf.floats(rec["values"]))
        self.host.setdefault(label, {}).setdefault(nodeid, []).append(
            dict(jf.mapping(rec.get("host")))
        )
        self.probes.setdefault(label, {}).setdefault(nodeid, []).append(
            dict(jf.mapping(rec.get("probe")))
        )
        self.last.setdefault(label, {})[nodeid] = {
            k: rec[k] for k in ("loops", "timer", "l2_flush", "noise") if k in rec
        }

    def of(self, label: str, nodeid: str) -> list[list[float]]:
        return self.runs.get(label, {}).get(nodeid, [])

    def noise(self, labels: Sequence[str], nodeid: str) -> str | None:
        """What sets ``nodeid``'s between-process noise as the rounds of ``labels`` saw it
        (core.judging.between_runs.joint_source: ``device`` only where every side was device-bound)."""
        return joint_source(
            *(self.last.get(label, {}).get(nodeid, {}).get("noise") for label in labels)
        )

    def busy_rounds(self, labels: Sequence[str], nodeid: str) -> dict[int, str]:
        """``{round index: why}`` of the rounds in which the host was busy while one of
        ``labels`` measured ``nodeid`` (core.judging.assess.busy_rounds)."""
        out: dict[int, str] = {}
        for label in labels:
            windows = [Window.from_dict(d) for d in self.host.get(label, {}).get(nodeid, [])]
            for i, why in busy_rounds(windows).items():
                out.setdefault(i, why)
        return out

    def clean_pairs(
        self, reference: str, candidate: str, nodeid: str, *, least: int = MIN_CLEAN_ROUNDS
    ) -> tuple[list[list[float]], list[list[float]], dict[int, str]]:
        """The paired rounds of ``nodeid`` without those measured on a busy host, by the one
        rule (core.judging.assess.leave_out_busy): a busy round measures the host as much as the code,
        and pairing cancels only what hit both sides. Returns (reference runs, candidate runs,
        the rounds left out with why)."""
        ref, cur = self.of(reference, nodeid), self.of(candidate, nodeid)
        pairs = min(len(ref), len(cur))
        left = leave_out_busy(pairs, self.busy_rounds((reference, candidate), nodeid), least=least)
        if not left:
            return ref, cur, {}
        keep = [i for i in range(pairs) if i not in left]
        return [ref[i] for i in keep], [cur[i] for i in keep], left


def run(
    sides: Sequence[Side],
    schedule: Schedule,
    *,
    args: Sequence[str],
    cwd: Path,
    wanted: Sequence[str],
    more: Callable[[str, Measured], bool],
    write: Callable[[str], None],
    rng: random.Random | None = None,
    launch: Launch | None = None,
) -> Measured:
    """Run the rounds of ``schedule`` for the node ids ``wanted`` in every one of ``sides``:
    rounds ``1..fixed`` of all of them, then rounds of those ``more(node id, measured so
    far)`` calls undecided, up to ``most``. ``args`` are the round processes' pytest
    arguments (the parent's, without the options only the parent acts on). ``launch``
    replaces the round processes of a fresh or forked start (tests: ``(side, round, samples
    file, node ids) -> (exit status, output)``, writing the samples file as a round would)."""
    rng = rng or random.Random()
    got = Measured()
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="burnperf-rounds-") as tmp:
        servers: dict[str, ForkServer] = {}
        start = schedule.start
        try:
            if start != "fresh" and launch is None:
                try:
                    for side in sides:
                        servers[side.label] = ForkServer(
                            [side.python, *interpreter_args(), "-m", "pytest", *args, "-q"],
                            cwd=cwd,
                            tmp=Path(tmp),
                            env=None if side.environ is None else dict(side.environ),
                            resident=start == "resident",
                        )
                except OSError as exc:
                    if start == "turns":
                        raise
                    got.problems.append(
                        f"the round server could not start ({exc}); the rounds ran in fresh "
                        "processes"
                    )
                    for server in servers.values():
                        server.close()
                    servers.clear()
                    start = "fresh"
            rounds = _Run(
                sides,
                schedule,
                start,
                servers,
                args,
                cwd,
                Path(tmp),
                wanted,
                write,
                rng,
                t0,
                launch,
            )
            for r in range(1, schedule.most + 1):
                fixed = r <= schedule.fixed
                todo = list(wanted) if fixed else [n for n in wanted if more(n, got)]
                if not todo:
                    break
                if not fixed and budget_spent(time.monotonic() - t0, schedule.budget_s):
                    got.budget_stopped = len(todo)
                    break
                got.rounds = r
                failed = rounds.round(got, r, todo)
                if failed and (schedule.failure_ends_all or not fixed):
                    break
        finally:
            for label, server in servers.items():
                if start == "resident" and (why := server.forked_instead(label)):
                    got.problems.append(why)
                server.close()
    return got


#: How a stored-baseline run's round process started, in words.
_HOW = {"fork": "a forked process", "resident": "the resident process"}


@dataclass
class _Run:
    """What every round of one call of :func:`run` shares."""

    sides: Sequence[Side]
    schedule: Schedule
    start: str
    servers: Mapping[str, ForkServer]
    args: Sequence[str]
    cwd: Path
    tmp: Path
    wanted: Sequence[str]
    write: Callable[[str], None]
    rng: random.Random
    t0: float
    launch: Launch | None

    @property
    def labels(self) -> list[str]:
        return [s.label for s in self.sides]

    @property
    def one(self) -> bool:
        """One side: a stored-baseline run, whose own process measures the last round."""
        return len(self.sides) == 1

    def side(self, label: str) -> Side:
        return next(s for s in self.sides if s.label == label)

    def announce(self, r: int, todo: Sequence[str], order: Sequence[str]) -> str:
        """The line that starts a round."""
        schedule, elapsed = self.schedule, time.monotonic() - self.t0
        fixed = r <= schedule.fixed
        if self.one:
            how = _HOW.get(self.start, "a fresh process")
            if fixed:
                return (
                    f"burnperf: round {r}/{schedule.fixed + schedule.own_rounds}: "
                    f"{len(todo)} benchmarks in {how} ({clock(elapsed)} elapsed) ..."
                )
            return (
                f"burnperf: adaptive round {r} (at most {schedule.most + schedule.own_rounds}): "
                f"{len(todo)} of {len(self.wanted)} undecided ({clock(elapsed)} elapsed) ..."
            )
        of = schedule.fixed if fixed else schedule.most
        what = "round" if fixed else "adaptive round"
        if self.start == "turns":
            how = f"in {len(order)} environments taking {WINDOW_S:g} s turns"
        elif self.start == "resident":
            how = f"in {', '.join(order)} (one resident process each)"
        else:
            how = f"in {', '.join(order)}"
        return (
            f"burnperf: {what} {r}/{of}: {len(todo)} benchmarks {how} "
            f"({clock(elapsed)} elapsed) ..."
        )

    def round(self, got: Measured, r: int, todo: list[str]) -> bool:
        """One round of ``todo`` in every side; whether a side's round failed."""
        schedule, labels = self.schedule, self.labels
        fixed = r <= schedule.fixed
        of = (schedule.fixed if fixed else schedule.most) + schedule.own_rounds
        # a group is measured in every side before the next one starts
        groups = [[n] for n in todo] if self.start == "turns" else [todo]
        first_order: list[str] | None = None
        for k, group in enumerate(groups):
            order = list(labels)
            self.rng.shuffle(order)
            if first_order is None:
                first_order = order
                self.write(self.announce(r, todo, order))
            outs = {x: self.tmp / f"round{r}-{k}-{labels.index(x)}.json" for x in labels}
            if self.start == "turns" and self.launch is None:
                results = _take_turns(self.servers, order, outs, group, self.rng)
            else:
                results = {}
                for label in order:
                    if self.launch is not None:
                        results[label] = self.launch(self.side(label), r, outs[label], group)
                    else:
                        results[label] = self.one_side(self.side(label), r, of, outs[label], group)
            docs: dict[str, dict[str, dict[str, object]]] = {}
            for label in order:
                code, output = results[label]
                problem = _problem(self.side(label), outs[label], code, output)
                if problem is None:
                    try:
                        docs[label] = read_round_file(outs[label])
                    except FileFormatError as exc:
                        problem = f"its samples file is unusable ({exc})"
                if problem is not None:
                    self.fail(got, r, self.side(label), problem, code, output)
                    got.orders.append(first_order)
                    return True
            for nodeid in group:
                recs = [docs[label].get(nodeid) for label in labels]
                if all(rec is not None for rec in recs):
                    for label, rec in zip(labels, recs, strict=True):
                        assert rec is not None
                        got.add(label, nodeid, rec)
        got.orders.append(first_order or list(labels))
        return False

    def fail(self, got: Measured, r: int, side: Side, problem: str, code: int, output: str) -> None:
        if self.one:
            how = _HOW.get(self.start, "a fresh process")
            if problem.startswith("its process failed"):
                got.problems.append(
                    f"round {r} in {how} failed (exit {code}); its samples are missing from the "
                    f"verdicts:\n{quoted(output)}"
                )
            else:
                got.problems.append(
                    f"round {r}: {problem}; its samples are left out of the verdicts"
                )
            return
        got.failures[side.label] = f"round {r} in {side.label} ({side.detail}): {problem}"

    def one_side(self, side: Side, r: int, of: int, out: Path, group: list[str]) -> tuple[int, str]:
        """One side's measurement of ``group`` in round ``r``: (exit status, output)."""
        started = time.monotonic()

        def say(done: int) -> None:
            now = time.monotonic()
            self.write(
                progress_line(
                    r,
                    of,
                    done,
                    len(group),
                    now - self.t0,
                    where="" if self.one else f" in {side.label}",
                    round_s=now - started,
                    last=escape(last_done(progress_path(out)) or ""),
                )
            )

        server = self.servers.get(side.label)
        if server is not None:

            def wait(running: Callable[[], bool]) -> None:
                watch(running, progress_path(out), group, say, wait=server.wait)

            try:
                # always the node ids: the server collected on its own, and may see a device
                # this process does not (a driver that cannot survive its fork, say)
                code, output = server.round(out, group, wait)
            except OSError as exc:  # its request or answer file (a full disk, a removed /tmp)
                code, output = 1, f"the round server could not be reached: {exc}"
        else:
            cmd = [side.python, *interpreter_args(), "-m", "pytest", *self.args, "-q"]
            cmd.append(f"--perf-round-process-out={out}")
            if len(group) < len(self.wanted):
                only = out.with_suffix(".only")
                only.write_text("\n".join(group) + "\n", encoding="utf-8")
                cmd.append(f"--perf-round-process-only={only}")
            code, output = run_process(
                cmd,
                cwd=self.cwd,
                out=out,
                todo=group,
                say=say,
                env=None if side.environ is None else dict(side.environ),
            )
        say(count_done(progress_path(out), group))
        return code, output


def _problem(side: Side, out: Path, code: int, output: str) -> str | None:
    """Why a side's round cannot be used, or None."""
    if not out.exists():
        return f"its process failed (exit {code}):\n{quoted(output)}"
    modules = out.with_name(out.name + ".modules")
    if side.overlay is not None and modules.exists():
        try:
            bad = json.loads(modules.read_text(encoding="utf-8"))
        except ValueError:
            bad = {}
        if bad:
            name, where = next(iter(bad.items()))
            return (
                f"it imported {name} from {where}, not from the installed reference (something "
                f"imported {name} before pytest-burnperf could put the reference first: a plugin "
                "loaded before it, or a sitecustomize); run with -p no:NAME for that plugin"
            )
    return None


def _take_turns(
    servers: Mapping[str, ForkServer],
    order: Sequence[str],
    outs: Mapping[str, Path],
    group: Collection[str],
    rng: random.Random,
    pin: bool = False,
) -> dict[str, tuple[int, str]]:
    """One benchmark measured by a child of every side's round server at once, the children
    taking turns (turns.py): the first turn of each (set-up, warm-up, calibration) in
    ``order``, then sampling windows in an order drawn per cycle; with ``pin``, both bound to
    one CPU drawn for the pair (where their benchmarks are single-threaded): a virtual CPU
    slower than another (a busy sibling thread on the host) then slows both sides alike. Off:
    on a busy host a bound side cannot leave a CPU another process holds (a fresh-clone CI run
    beside other work measured a 2x slowdown as +42% [-28%, +178%], inconclusive).
    Returns each side's (exit status, server output); a side the table lost is reported by
    its status."""
    name = table_address(rng)
    cpu = shared_cpu(rng) if pin else None
    table = Table(name, order)
    try:
        running: dict[str, Callable[[], bool]] = {}
        unreachable: dict[str, str] = {}
        for label in order:
            try:
                seat = Seat(name, label, cpu).as_json()
                running[label] = servers[label].start(outs[label], group, seat)
            except OSError as exc:
                unreachable[label] = f"its round server could not be reached: {exc}"
                running[label] = lambda: False
        problem = None
        try:
            table.run(lambda label: running[label](), rng, first=order)
        except TurnError as exc:
            problem = str(exc)
    finally:
        table.close()
    results = {}
    for label in order:
        if label in unreachable:
            results[label] = (1, unreachable[label])
            continue
        while running[label]():
            time.sleep(POLL_S)
        code, output = servers[label].result()
        if problem and code == 0 and not outs[label].exists():
            code, output = 1, f"{output}\nturn table: {problem}"
        results[label] = (code, output)
    return results
