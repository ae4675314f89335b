"""Same-session comparisons (``--perf-against REF``, ``--perf-versions A,B,C``): every selected
benchmark measured in every environment, in fresh processes, round after round with the order of
the environments drawn at random in each round, on one machine in one session; then judged
current vs reference with the paired between-run model (run ``i`` of each side shares round
``i``). No baseline file is read or written. No pytest in the summaries and tables here; the
round loop reports through the terminal writer it is given.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_burnperf.core.assess import MIN_CLEAN_ROUNDS, busy_rounds, leave_out_busy
from pytest_burnperf.core.text import clock, tail
from pytest_burnperf.core.versions import VersionSummary, level
from pytest_burnperf.host.state import Window
from pytest_burnperf.runs.environments import CURRENT, Env
from pytest_burnperf.runs.forkserver import POLL_S, ForkServer
from pytest_burnperf.runs.overlay import OVERLAY_ENV, top_level_names
from pytest_burnperf.runs.rounds import (
    budget_spent,
    count_done,
    progress_path,
    read_round_file,
    run_process,
    worker_args,
)
from pytest_burnperf.runs.turns import WINDOW_S, Seat, Table, TurnError, shared_cpu, table_address
from pytest_burnperf.storage.jsonfile import FileFormatError


@dataclass(frozen=True)
class Plan:
    """Which environments a same-session run measures and which two it judges."""

    refs: tuple[str, ...]
    #: The label the verdict compares against, and the one it judges.
    reference: str
    candidate: str
    #: The option that asked for it, for messages.
    option: str = "--perf-versions"

    @classmethod
    def against(cls, ref: str) -> Plan:
        return cls((ref, CURRENT), ref, CURRENT, "--perf-against")

    @classmethod
    def versions(cls, refs: Sequence[str], reference: str | None) -> Plan:
        """``--perf-versions``: the reference is the first unless ``reference`` names another;
        the judged one is ``current`` where it is listed, else the last."""
        refs = tuple(refs)
        ref = refs[0] if reference is None else reference
        if ref not in refs:
            raise ValueError(
                f"--perf-reference {ref!r} is not one of --perf-versions {','.join(refs)}"
            )
        others = [r for r in refs if r != ref]
        cand = CURRENT if CURRENT in others else others[-1]
        return cls(refs, ref, cand)


@dataclass
class Measured:
    """What the rounds measured, per environment label and benchmark node id."""

    envs: dict[str, Env] = field(default_factory=dict)
    runs: dict[str, dict[str, list[list[float]]]] = field(default_factory=dict)
    host: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)
    #: The last record of each benchmark per environment (loops, timer...), for the report.
    last: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    #: Why an environment has no (or too few) measurements: its failing round's message.
    failures: dict[str, str] = field(default_factory=dict)
    #: The order of the environments in each round, as run.
    orders: list[list[str]] = field(default_factory=list)
    #: Benchmarks still undecided when the round budget stopped the adaptive rounds (0: it did
    #: not).
    budget_stopped: int = 0

    def add(self, label: str, nodeid: str, rec: Mapping[str, Any]) -> None:
        self.runs.setdefault(label, {}).setdefault(nodeid, []).append(list(rec["values"]))
        self.host.setdefault(label, {}).setdefault(nodeid, []).append(dict(rec.get("host") or {}))
        self.last.setdefault(label, {})[nodeid] = {
            k: rec[k] for k in ("loops", "timer", "l2_flush") if k in rec
        }

    def of(self, label: str, nodeid: str) -> list[list[float]]:
        return self.runs.get(label, {}).get(nodeid, [])

    def busy_rounds(self, labels: Sequence[str], nodeid: str) -> dict[int, str]:
        """``{round index: why}`` of the rounds in which the host was busy while one of
        ``labels`` measured ``nodeid`` (core.assess.busy_rounds)."""
        out: dict[int, str] = {}
        for label in labels:
            windows = [Window.from_dict(d) for d in self.host.get(label, {}).get(nodeid, [])]
            for i, why in busy_rounds(windows).items():
                out.setdefault(i, why)
        return out

    def clean_pairs(
        self, reference: str, candidate: str, nodeid: str, *, least: int = MIN_CLEAN_ROUNDS
    ) -> tuple[list[list[float]], list[list[float]], dict[int, str]]:
        """The paired rounds of ``nodeid`` without those measured on a busy host, when at least
        ``least`` remain (a busy round measures the host as much as the code, and pairing
        cancels only what hit both sides); else all of them. Returns (reference runs,
        candidate runs, the rounds left out with why)."""
        ref, cur = self.of(reference, nodeid), self.of(candidate, nodeid)
        pairs = min(len(ref), len(cur))
        left = leave_out_busy(pairs, self.busy_rounds((reference, candidate), nodeid), least=least)
        if not left:
            return ref, cur, {}
        keep = [i for i in range(pairs) if i not in left]
        return [ref[i] for i in keep], [cur[i] for i in keep], left


def shadowed_modules(overlay: str, modules: Mapping[str, Any]) -> dict[str, str]:
    """In a round's process of an installed reference: the modules of the overlay's top-level
    packages that were imported from somewhere else (the current checkout on ``sys.path``
    before the overlay: a flat layout run from its root, or a ``pythonpath`` ini setting), as
    ``{name: file}``. Such a round measures the current code under the reference's name."""
    root = Path(overlay)
    tops = top_level_names(root)
    bad: dict[str, str] = {}
    real = str(root.resolve())
    for name in sorted(tops):
        mod = modules.get(name)
        where = getattr(mod, "__file__", None) if mod is not None else None
        if where and not str(Path(where).resolve()).startswith(real):
            bad[name] = str(where)
    return bad


def run_env_rounds(
    *,
    plan: Plan,
    envs: Mapping[str, Env],
    invocation: Sequence[str],
    cwd: Path,
    wanted: Sequence[str],
    rounds: int,
    max_rounds: int,
    more: Callable[[str, Measured], bool],
    write: Callable[[str], None],
    rng: random.Random | None = None,
    alternate: bool = False,
    budget_s: float = 0.0,
) -> Measured:
    """``rounds`` rounds of every benchmark in every environment, then adaptive rounds of those
    ``more`` calls undecided, up to ``max_rounds``; each round runs every environment once, in
    an order drawn at random. A benchmark keeps a round only when every environment measured
    it (the rounds stay paired). The first round an environment fails ends the rounds.

    Without ``alternate`` each environment measures a round's benchmarks in one fresh process.
    With it (``--perf-round-start fork``, CPU benchmarks), each environment keeps one round
    server (forkserver.py) alive and a round measures benchmark after benchmark, each in every
    environment at once: a forked child per benchmark and environment, the children taking
    turns in short sampling windows (turns.py), so the host's slow spells fall on every side
    alike instead of on whichever side ran at the time.
    No adaptive round starts once ``budget_s`` seconds (0: no limit) have passed since the first
    round started (``Measured.budget_stopped``)."""

    rng = rng or random.Random()
    got = Measured(envs=dict(envs))
    labels = list(plan.refs)
    args = worker_args(invocation)
    t0 = time.monotonic()

    def wait(running: Callable[[], bool]) -> None:
        while running():
            time.sleep(POLL_S)

    with tempfile.TemporaryDirectory(prefix="burnperf-versions-") as tmp:
        servers: dict[str, ForkServer] = {}

        def measure(r: int, label: str, out: Path, group: list[str]) -> tuple[int, str]:
            """One environment's measurement of ``group`` in round ``r``."""
            env = envs[label]
            cmd = [env.python, "-m", "pytest", *args, "-q", f"--perf-worker-out={out}"]
            if len(group) < len(wanted):
                only = out.with_suffix(".only")
                only.write_text("\n".join(group) + "\n", encoding="utf-8")
                cmd.append(f"--perf-worker-only={only}")

            def say(done: int) -> None:
                write(
                    f"pytest-burnperf: round {r} in {label}: {done}/{len(group)} benchmarks, "
                    f"{clock(time.monotonic() - t0)} elapsed"
                )

            code, output = run_process(
                cmd, cwd=cwd, out=out, todo=group, say=say, env=_env_environ(env)
            )
            say(count_done(progress_path(out), group))
            return code, output

        try:
            if alternate:
                for label in labels:
                    env = envs[label]
                    servers[label] = ForkServer(
                        [env.python, "-m", "pytest", *args, "-q"],
                        cwd=cwd,
                        tmp=Path(tmp),
                        env=_env_environ(env),
                    )
            for r in range(1, max_rounds + 1):
                todo = list(wanted) if r <= rounds else [n for n in wanted if more(n, got)]
                if not todo:
                    break
                if r > rounds and budget_spent(time.monotonic() - t0, budget_s):
                    got.budget_stopped = len(todo)
                    break
                of = rounds if r <= rounds else max_rounds
                what = "round" if r <= rounds else "adaptive round"
                how = (
                    f"each in {len(labels)} environments at once, taking turns in "
                    f"{WINDOW_S:g} s windows"
                    if alternate
                    else f"in {len(labels)} environments"
                )
                # a group is measured in every environment before the next one starts
                groups = [[n] for n in todo] if alternate else [todo]
                orders = []
                for k, group in enumerate(groups):
                    order = labels[:]
                    rng.shuffle(order)
                    orders.append(order)
                    if k == 0:
                        write(
                            f"pytest-burnperf: {what} {r}/{of} of {len(todo)} benchmarks {how}"
                            + ("" if alternate else f", in the order {', '.join(order)}")
                            + f" ({clock(time.monotonic() - t0)} elapsed) ..."
                        )
                    docs: dict[str, dict[str, dict[str, Any]]] = {}
                    outs = {x: Path(tmp, f"round{r}-{k}-{labels.index(x)}.json") for x in labels}
                    turned = (
                        _take_turns(servers, order, outs, group, rng, wait) if alternate else None
                    )
                    for label in order:
                        env = envs[label]
                        out = outs[label]
                        if turned is not None:
                            code, output = turned[label]
                        else:
                            code, output = measure(r, label, out, group)
                        problem = _round_problem(env, out, code, output, tail)
                        if problem is None:
                            try:
                                docs[label] = read_round_file(out)
                            except FileFormatError as exc:
                                problem = f"its samples file is unusable ({exc})"
                        if problem is not None:
                            got.failures[label] = f"round {r} in {label} ({env.detail}): {problem}"
                            break
                    if got.failures:
                        break
                    for nodeid in group:
                        recs = [docs[label].get(nodeid) for label in labels]
                        if all(rec is not None for rec in recs):
                            for label, rec in zip(labels, recs, strict=True):
                                assert rec is not None
                                got.add(label, nodeid, rec)
                got.orders.append(orders[0] if orders else labels)
                if got.failures:
                    break
        finally:
            for server in servers.values():
                server.close()
    return got


def _take_turns(
    servers: Mapping[str, Any],
    order: Sequence[str],
    outs: Mapping[str, Path],
    group: Sequence[str],
    rng: random.Random,
    wait: Callable[[Callable[[], bool]], None],
    pin: bool = False,
) -> dict[str, tuple[int, str]]:
    """One benchmark measured by a child of every environment's round server at once, the
    children taking turns (turns.py): the first turn of each (set-up, warm-up, calibration) in
    ``order``, then sampling windows in an order drawn per cycle; with ``pin``, both bound to
    one CPU drawn for the pair (where their benchmarks are single-threaded): a virtual CPU
    slower than another (a busy sibling thread on the host) then slows both sides alike. Off:
    on a busy host a bound side cannot leave a CPU another process holds (a fresh-clone CI run
    beside other work measured a 2x slowdown as +42% [-28%, +178%], inconclusive).
    Returns each environment's (exit status, server output); a side the table lost is
    reported by its status."""

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
        wait(running[label])
        code, output = servers[label].result()
        if problem and code == 0 and not outs[label].exists():
            code, output = 1, f"{output}\nturn table: {problem}"
        results[label] = (code, output)
    return results


def _env_environ(env: Env) -> dict[str, str]:
    environ = env.environ()
    if env.overlay is not None:
        environ[OVERLAY_ENV] = env.overlay
        # a module inside a flat layout's package is the reference's copy (overlay.py)
        environ["PY_IGNORE_IMPORTMISMATCH"] = "1"
    return environ


def _round_problem(
    env: Env, out: Path, code: int, output: str, tail: Callable[[str], str]
) -> str | None:
    if not out.exists():
        return f"its process failed (exit {code}):\n{tail(output)}"
    modules = out.with_name(out.name + ".modules")
    if env.overlay is not None and modules.exists():
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


# --------------------------------------------------------------------------------------------
# summaries and the table


def summaries(labels: Sequence[str], got: Measured, nodeid: str) -> list[VersionSummary]:
    out: list[VersionSummary] = []
    first: float | None = None
    for label in labels:
        runs = got.of(label, nodeid)
        if not runs:
            continue
        med, low, high = level(runs)
        if first is None:
            first = med
        out.append(VersionSummary(label, med, low, high, len(runs), first / med))
    return out
