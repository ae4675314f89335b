"""How a counted process counts a benchmark's calls (core/counting/counts.py judges what it counted):
one call uninstrumented, the first instrumented call's size against the count limit, the
interpreter settled before small calls, then calls counted until they agree or a rank test has
enough of them. Every rule here is about which calls are counted and how many, never about the
verdict."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pytest_burnperf.core.counting.counts import Counted, relative_spread
from pytest_burnperf.core.counting.estimated_cycles import estimated_cycles, simulated
from pytest_burnperf.core.judging import stats

#: Calls counted after the warm-up call: enough for Mann-Whitney to reach the run's
#: per-comparison alpha (:func:`calls_for`), never more than :data:`MAX_CALLS`.
MIN_CALLS = 5
MAX_CALLS = 12
#: Instrumented calls before the counted ones where the caches are simulated (they fill them;
#: counts dropped).
WARM_CALLS = 2
#: Calls counted first. Where their instructions agree within :data:`AGREE_SPREAD` (compiled
#: kernels agree to hundredths of a percent) no more are counted: the verdict then needs no rank
#: test (core/counting/counts.judge_counts decides such counts by their separation); where they spread, the
#: calls go on up to the number a rank test needs at the run's alpha (:func:`calls_for`).
FIRST_CALLS = 2
#: Per-call spread (max - min over the median) under which counts are taken as agreeing: a
#: quarter of core/counting/counts.COUNTS_FLOOR, so that the minimum effect stays the floor.
AGREE_SPREAD = 0.00125
#: Instructions a small benchmark runs uninstrumented before it is counted (:func:`settle_calls`):
#: CPython specialises bytecode in place, so code run once a call (a parametrised benchmark's
#: shared ``lambda``, the plugin's wrappers) costs more on some first calls and carries the state
#: the benchmarks before it left (a 61 k-instruction call: +0.8% under another ``-k``). The
#: settling calls are made exactly as the counted ones, requests included (instrumentation off):
#: settled by bare calls, the plugin's code around each call still specialised during the first
#: counted ones (pint's small calls: the first four 0.4-2.5% above the rest, every benchmark).
SETTLE_INSTRUCTIONS = 5_000_000
SETTLE_MAX_CALLS = 256
SETTLE_MIN_CALLS = 8
#: Calls up to this many instructions run at least :data:`SETTLE_MIN_CALLS` uninstrumented: the
#: unsettled interpreter still moves them by thousands of instructions (a numpy reduction of
#: 862 k counted 3.7 k more as a run's first benchmark than after the others: its wrappers'
#: bytecode not yet specialised; 8 settling calls brought it within 0.07%).
SETTLE_UP_TO = 20_000_000
#: A benchmark whose first calls take longer than this under valgrind uninstrumented is timed: a
#: guard far over what a call under the count limit takes there (the slowest code measured,
#: numpy's ``exp`` loop, 48 ns a basic block: 150 M in 7 s): the basic blocks decide.
COUNT_GUARD_S = 20.0
#: Uninstrumented calls at most after a first call during which a just-in-time compiler
#: compiled, while each compiles again (devices/compilations.py): the calls before the counted
#: ones are then the compiler's to decide, the same in every process, not its cache's speed.
COMPILE_SETTLE_CALLS = 12


class TooSlow(Exception):
    """A call ran ``blocks`` basic blocks under valgrind (over the count limit; ``instructions``
    its counted instructions), or took ``seconds`` uninstrumented there (over
    :data:`COUNT_GUARD_S`); ``result``: what the first call returned, which the test still gets."""

    def __init__(
        self,
        seconds: float | None,
        result: object = None,
        instructions: int | None = None,
        blocks: int | None = None,
    ) -> None:
        what = f"{blocks} basic blocks" if blocks is not None else f"{seconds} s"
        super().__init__(f"one call ran {what} under valgrind")
        self.seconds, self.result = seconds, result
        self.instructions, self.blocks = instructions, blocks


@dataclass(frozen=True)
class CallSize:
    """How large one instrumented call was, from its dump: its instructions and the basic blocks
    valgrind executed for it (every thread's, waits included). Blocks are what counting costs:
    valgrind's per-block work dominates (measured per block 21-48 ns, per instruction 0.8-9.5 ns
    across pure Python, BLAS, LAPACK, sorting and numpy's ``exp``: docs/validation.md)."""

    instructions: float
    blocks: float


def calls_for(alpha_each: float) -> int:
    """How many calls to count so that a complete shift reaches ``alpha_each``."""
    for n in range(MIN_CALLS, MAX_CALLS + 1):
        if stats.min_attainable_p(n, n) < alpha_each:
            return n
    return MAX_CALLS


class Counter(Protocol):
    """What counts calls: callgrind's client requests (host/callgrind.Requests) or a fake."""

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def zero(self) -> None: ...
    def toggle(self) -> None: ...
    def dump(self, label: str) -> Path: ...


def allocator_pad(index: int) -> list[object]:
    """Live small objects of several sizes, a different number for each ``index``.

    CPython's small-object allocator takes a few more instructions per allocation when a pool
    is exactly full (it unlinks and relinks the pool each time): a loop of int arithmetic
    measured 15.90 M, 16.07 M, 16.10 M and 16.45 M instructions a call in processes that had run
    other code before it (3.4% apart, each steady within its process). Counted calls meet the
    allocator in different states, so a benchmark's own per-call spread shows how much its
    counts depend on that state, and its minimum effect covers it."""
    n = (index * 7) % 23
    return [(i * 1_000_003, (i,), b"x" * (i % 64), [i]) for i in range(n)]


def count_calls(
    make_call: Callable[[], tuple[Callable[[], object], Callable[[], object] | None]],
    counter: Counter,
    read: Callable[[Path], Mapping[str, float]],
    *,
    calls: int,
    label: str,
    warm: int = WARM_CALLS,
    first_calls: int = FIRST_CALLS,
    limit: int | None = None,
    guard_s: float | None = COUNT_GUARD_S,
    clock: Callable[[], float] = time.monotonic,
    settle: Callable[[float], int] | None = None,
    size: Callable[[Path], CallSize] | None = None,
    compiled: Callable[[], int] = lambda: 0,
) -> tuple[Counted, object]:
    """Count ``first_calls`` calls, and where their instructions do not agree (:func:`agree`)
    more, up to ``calls`` in all (after one more warm-up call). Returns their counts and the
    first call's result. One call runs uninstrumented first; the first instrumented call's size
    (``size``: its instructions and basic blocks, default from ``read``) decides: over ``limit``
    basic blocks the benchmark is not counted (:class:`TooSlow`; so too where the first
    uninstrumented call took over ``guard_s``, and the next one too: the first may import; one
    over ten times the guard is not run again). A first call during which a just-in-time
    compiler compiled (``compiled``: its count of compiled frames, devices/compilations.py) is
    followed by uninstrumented calls whatever they took, until one compiles nothing (at most
    :data:`COMPILE_SETTLE_CALLS`; the guard judges that one's time, and stops a compilation over
    ten times it), so that every process makes the same calls before the counted ones (a
    compilation's time follows the compiler's cache: a kornia recording's first process,
    compiling cold, made the guard's second call and its others did not, so each of its calls
    drew what the others' next call drew). A small call
    then runs ``settle(instructions)`` times uninstrumented (default :func:`settle_calls`; each
    as a counted call is made, its requests included) and one instrumented warm-up call before
    it is counted; with the caches simulated, ``warm`` instrumented calls in all come first; a
    large call without them is counted from its first instrumented call, which is kept where
    the next agrees with it. ``make_call()`` gives each call and what runs after it (a pedantic
    teardown), both outside the counted span. Every thread collects while instrumentation is on
    (a thread pool's work counts); the calling thread switches its own collection on around
    each call only. Each call's counts are dumped and read with ``read``; the warm-up calls'
    dumps are dropped unread (the first window after the calls before it also holds the pool
    threads' costs of those: a 2-thread matmul's counted 1.7x its others). Each counted call's
    place among all the calls this made (1: the uninstrumented first) is kept
    (:attr:`Counted.positions`): calls at one place draw alike in every process
    (core/counting/paired_counts.py), whatever made one process call more before counting."""

    made = [0]  # calls made so far in this process: a counted call's position

    def once(counted: bool, index: int = 0) -> object:
        made[0] += 1
        call, after = make_call()
        pad = allocator_pad(index)  # each call meets the allocator in another state
        if counted:
            counter.zero()
            counter.toggle()
        try:
            out = call()
        finally:
            if counted:
                counter.toggle()
        del pad
        if after is not None:
            after()
        return out

    def settle_pass(n: int) -> None:
        # each call as a counted one is made (its requests and its allocator pad too), with
        # instrumentation off: the plugin's own code around the call settles with the call's
        for i in range(n):
            once(True, i + 1)

    def counted_pass(n: int, warm_up: int, done: int, warmed: int = 0) -> list[Mapping[str, float]]:
        dumps: list[Any] = []
        counter.start()
        counter.toggle()  # the calling thread: off, on around each call only
        try:
            for i in range(warm_up + n):
                k = done + i - warm_up + 1
                once(True, max(0, k))
                if k > done:
                    positions.append(made[0])
                name = f"{label} #{k}" if k > done else f"{label} warm-up {warmed + i + 1}"
                dumps.append(counter.dump(name))
        finally:
            counter.toggle()
            counter.stop()
        # read once instrumentation is off (parsing a dump under it runs 20-100x slower); the
        # warm-up calls' dumps are not read (their files go with the counted process's folder)
        return [read(d) for d in dumps[warm_up:]]

    positions: list[int] = []  # each counted call's, in the order counted
    frames = compiled()
    t0 = clock()
    first = once(False)  # lazy initialisation at near-native speed, nothing instrumented yet
    took = clock() - t0
    compiling = compiled() != frames
    far_over = guard_s is not None and took > 10 * guard_s  # not run again
    if not far_over and (compiling or (guard_s is not None and took > guard_s)):
        # the first call may have imported, built caches or compiled: the next one decides, and
        # calls follow while each compiles (a recompilation for the shapes a call drew)
        for _ in range(COMPILE_SETTLE_CALLS):
            frames = compiled()
            t0 = clock()
            once(False)
            took = clock() - t0
            if compiled() == frames:
                break  # it compiled nothing: its time is the call's own, which the guard judges
            if guard_s is not None and took > 10 * guard_s:
                break  # a compilation that long is not waited on
    if guard_s is not None and took > guard_s:
        raise TooSlow(took, first)
    start = max(1, min(first_calls, calls))
    # the first instrumented call says how large a call is (its dump's totals only)
    counter.start()
    counter.toggle()
    try:
        once(True, 0)
        probe_at = made[0]
        probe = counter.dump(f"{label} first call")
    finally:
        counter.toggle()
        counter.stop()
    read_probe: list[Mapping[str, float]] = []

    def probed() -> Mapping[str, float]:
        """The first instrumented call's counted events (its dump read once: reading removes it)."""
        if not read_probe:
            read_probe.append(read(probe))
        return read_probe[0]

    measured = size(probe) if size is not None else _size(probed())

    if limit and measured.blocks > limit:
        # its threads' waits left out, as counted: the blocks in the share of its instructions
        # counted (a spinning thread's blocks are host-dependent)
        got_ir = float(probed().get("Ir", 0))
        blocks = measured.blocks * got_ir / measured.instructions if measured.instructions else 0
        if blocks > limit:
            raise TooSlow(None, first, int(got_ir), int(blocks))
    # how many calls settle it follows from the first call's counted instructions (its
    # allocator calls at their fixed cost, its type lookups as hits: read from its dump), not
    # its raw ones: those follow the process's memory layout, and one process settling a call
    # once more than another moved where the interpreter's specialisation retries land
    small = measured.instructions <= SETTLE_UP_TO
    settling = (settle or settle_calls)(
        float(probed().get("Ir", 0)) if small else measured.instructions
    )
    if settling:
        # a small call, still met by the interpreter's specialising: run it on, uninstrumented,
        # until the interpreter has settled, then count it
        settle_pass(settling)
        per_call = counted_pass(start, 1, 0, warmed=1)
    elif simulated(probed()):
        # the simulated caches start cold: warm them before any call is counted
        per_call = counted_pass(start, max(0, warm - 1), 0, warmed=1)
    else:
        # a large call: the first instrumented call counts too where the next agrees with it
        # (its first run's translation is valgrind's, not the call's; what else the first run
        # did differently shows as disagreement, and then it is dropped)
        per_call = [probed(), *counted_pass(start - 1, 0, 1)]
        positions.insert(0, probe_at)
        if not agree([e.get("Ir", 0) for e in per_call]):
            per_call, positions = per_call[1:], positions[1:]
    if len(per_call) < calls and not agree([e.get("Ir", 0) for e in per_call]):
        per_call += counted_pass(calls - len(per_call), 1, len(per_call))
    cycles = tuple(estimated_cycles(e) for e in per_call if simulated(e))
    order = cycles or tuple(int(e.get("Ir", 0)) for e in per_call)
    middle = sorted(range(len(order)), key=lambda i: order[i])[len(order) // 2]
    events = dict(per_call[middle])
    share = float(events.pop("interpreter", 0.0))
    got = Counted(
        instructions=tuple(int(e.get("Ir", 0)) for e in per_call),
        cycles=cycles,
        events={k: int(v) for k, v in events.items()},
        interpreter=share,
        positions=tuple(positions),
    )
    return got, first


def _size(events: Mapping[str, float]) -> CallSize:
    """A call's size from its read events (``blocks`` where the reader gives them, else its
    instructions: a fake counter's one unit of work)."""
    ir = float(events.get("Ir", 0))
    return CallSize(ir, float(events.get("blocks", ir)))


def settle_calls(instructions: float) -> int:
    """How many uninstrumented calls settle a benchmark whose calls count ``instructions``:
    :data:`SETTLE_INSTRUCTIONS` worth of calls of the power of two at or under
    ``instructions`` (so that a call's size moving by a few instructions between processes
    does not change the number, unless it crosses a power of two), at most
    :data:`SETTLE_MAX_CALLS` and at least :data:`SETTLE_MIN_CALLS`; none over
    :data:`SETTLE_UP_TO` (where thousands of instructions are under a tenth of the counts'
    floor)."""
    if instructions < 1 or instructions > SETTLE_UP_TO:
        return 0
    size = 1 << (int(instructions).bit_length() - 1)
    return max(SETTLE_MIN_CALLS, min(SETTLE_MAX_CALLS, SETTLE_INSTRUCTIONS // size))


def agree(values: Sequence[float]) -> bool:
    """Whether these per-call counts agree so closely (:data:`AGREE_SPREAD`) that more calls
    would tell nothing: at least two, all above zero."""
    return len(values) >= 2 and min(values) > 0 and relative_spread(values) <= AGREE_SPREAD
