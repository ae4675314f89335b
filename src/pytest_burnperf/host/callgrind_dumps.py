"""Reading callgrind's dumps: their totals, each function's own cost and entry executions, and what a
counted call's counts are made of (what host/callgrind.py's counted processes dump).

A counted call's counts are the dump's totals less three costs that depend on where and when
the call ran, not on the code it ran:

- **waiting** (:data:`WAIT_FUNCTIONS`): what a thread executes while it only waits for
  another; how long a wait spins depends on the host's speed and valgrind's turns;
- **the allocators' paths** (:data:`ALLOCATOR_CALLS`, :data:`ALLOCATOR_INSIDE`): CPython's
  small-object allocator and glibc's malloc take more or fewer instructions per call with the
  addresses they hand out and the state of their free lists, that is with what ran before in
  the process (validation/counts_history.py: int arithmetic 1.0% apart between processes, all
  of it in ``_PyObject_Free``; a regular expression 5.6%, in glibc's ``_int_malloc``). Each
  allocator call counts a fixed cost instead: an allocation more still counts, a longer path
  through the allocator does not;
- **the type attribute cache's misses** (:data:`TYPE_CACHE_MISS`): CPython finds a type's
  attributes through a cache of 4,096 entries indexed by the type's version tag and the
  address of the name's string, so which of a call's lookups collide, and walk the class's MRO
  on every call, follows the process's memory layout (pint's ``test_base_units``: 46.9 k
  instructions a call in two processes, 49.9 k in a third, the 3.0 k all in the miss path).
  Each lookup counts a fixed cost, as if the cache had hit (:data:`TYPE_LOOKUP_CALLS`): a
  lookup more still counts, a miss does not;
- **the probes of dictionaries and sets** (:data:`HASH_PROBE_CALLS`): a key's slot follows its
  hash, and classes, functions and plain objects hash by their address, so which of their keys
  collide, and probe a slot more, follows the layout too (snecs's ``has_component``, a
  dictionary keyed by classes per entity: 0.85% apart between eight processes, most of it in
  ``_Py_dict_lookup``; docs/data/hash-probes-snecs.json). Each lookup counts a fixed cost, as
  if it had found its slot at the first probe: a lookup more still counts, and so does
  comparing keys whose hashes are equal (the comparison is a call of its own); a probe more
  does not. The same function called from the type cache's miss path is told apart by its
  callers (:data:`SEPARATED`) and left out with the miss;
- **the copy a reallocation makes when it moves** (:data:`REALLOC_MOVES`): glibc's ``realloc``
  grows a block where it lies when the memory after it is free, else moves it and copies
  (a list grown by appends: 1,334 or 188 instructions of copying a call, with the heap's
  state). The copy is left out; the call counts its fixed cost (:data:`ALLOCATOR_CALLS`).

A call's allocator and lookup calls are counted by the executions of each one's first instruction
(the dumps hold each instruction's cost), not by callgrind's call counts: those also count the
calls made while collection was off (the plugin's own work between two counted calls).

glibc's copy and fill functions (``memcpy``, ``memset``) would be a fourth such cost (which loop
they take depends on the host's cache sizes and on how the buffers sit to each other); a
counted process runs them with fixed tunables (runs/counted.GLIBC_TUNABLES), so the same copy
takes the same loop on every host."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pytest_burnperf.host.callgrind import EVENTS, SEPARATED_CALLERS

#: How counted calls are counted, as the counts key holds it (core/counting/counts_key.py): counts
#: taken by another rule do not compare.
RULE = (
    "waits left out; allocator calls at a fixed cost; glibc copies with fixed tunables; "
    "small calls counted once the interpreter settled; portable kernels (no FMA); "
    "each benchmark in a child of its own; fixed requests, settled with the calls; "
    "type lookups as cache hits; dict and set lookups at their first probe; "
    "realloc's moving copies left out; global random generators seeded for each benchmark"
)
#: What :data:`RULE` adds on CPython 3.13 and later, where ``_PyType_LookupRef`` counts as a
#: hit too (:data:`TYPE_LOOKUP_CALLS`): counts of 3.13 taken before read as another key.
RULE_313 = "; _PyType_LookupRef as a cache hit"


def rule(version: tuple[int, ...]) -> str:
    """The counting rule a counted process of this Python ``version`` counts by (the key's)."""
    return RULE + (RULE_313 if tuple(version[:2]) >= (3, 13) else "")


#: Functions whose own instructions are a thread waiting for another, left out of the counts.
#: OpenBLAS's threads synchronise by spinning (``sched_yield`` in a loop): its dispatcher
#: (``exec_blas``, ``exec_blas_async_wait``), the worker loop (``blas_thread_server``) and the
#: level-3 driver (``inner_thread``), whose own instructions are those loops and a little
#: bookkeeping (the kernels they call are counted). Measured (docs/gate.md, "Every thread"): a
#: 200x200 float64 matmul on 2 threads counted 7.31 M instructions a call quiet and 5.33 M beside
#: two busy processes (calls up to 57% apart); without these functions 4,119,306 and 4,119,314,
#: calls 0.03% apart. libgomp and Intel's OpenMP wait
#: without spinning in a counted process (``OMP_WAIT_POLICY=PASSIVE``, ``KMP_BLOCKTIME=0``).
WAIT_FUNCTIONS = frozenset(
    {"exec_blas", "exec_blas_async_wait", "blas_thread_server", "inner_thread", "sched_yield"}
)


#: The type attribute cache's miss path (CPython's ``Objects/typeobject.c``): the walk of the
#: MRO's dictionaries and the version tag a type is given for the cache, each left out with
#: everything it calls (a build that inlines them into ``_PyType_Lookup`` keeps its misses).
TYPE_CACHE_MISS = frozenset({"find_name_in_mro", "assign_version_tag"})
#: The type attribute lookup's entry points, each counted at this fixed cost per call, its own
#: instructions left out: on a miss it also stores the new entry and lets the old one go (about
#: 15 more a miss). ``_PyType_Lookup``'s own hit path in CPython 3.11: 2,211 instructions over
#: 67 calls. CPython 3.13 moved the lookup into ``_PyType_LookupRef`` (``_PyType_Lookup`` calls
#: it, and most callers call it directly): its own hit path there 41 a call (248,011 more
#: instructions over 6,000 more hits, CPython 3.13.0); with it counted as it ran, the lookups
#: reproducer still moved 0.55% between processes (docs/validation.md). 3.11 and 3.12 have no
#: such function, so their counts do not change with it.
TYPE_LOOKUP_CALLS: Mapping[str, int] = {"_PyType_Lookup": 33, "_PyType_LookupRef": 41}
#: The allocators' entry points, each counted at this fixed cost per call (near what a call
#: takes on its common path, measured with CPython 3.11 and glibc 2.36) in place of the
#: instructions it and :data:`ALLOCATOR_INSIDE` executed. ``_PyObject_*`` is CPython's
#: small-object allocator (every object the interpreter makes), the others glibc's malloc.
ALLOCATOR_CALLS: Mapping[str, int] = {
    "_PyObject_Malloc": 24,
    "_PyObject_Calloc": 30,
    "_PyObject_Realloc": 10,
    "_PyObject_Free": 36,
    "malloc": 60,
    "calloc": 80,
    "realloc": 60,
    "free": 40,
    "posix_memalign": 80,
    "aligned_alloc": 80,
    "memalign": 80,
}
#: Other names the same entry points have in some builds' symbols.
ALLOCATOR_ALIASES: Mapping[str, str] = {
    "__libc_malloc": "malloc",
    "__GI___libc_malloc": "malloc",
    "__libc_calloc": "calloc",
    "__libc_realloc": "realloc",
    "__libc_free": "free",
    "__GI___libc_free": "free",
    "cfree": "free",
    "__libc_memalign": "memalign",
    "__posix_memalign": "posix_memalign",
}
#: The allocators' inner functions: their own cost is part of the entry point's fixed cost, and
#: how often they run (a free list empty or not) depends on the allocator's state.
ALLOCATOR_INSIDE = frozenset(
    {
        "_int_malloc",
        "_int_free",
        "_int_realloc",
        "_int_memalign",
        "_mid_memalign",
        "unlink_chunk",
        "malloc_consolidate",
        "sysmalloc",
        "alloc_perturb",
        "tcache_init",
        "tcache_get",
        "tcache_put",
        "allocate_from_new_pool",
        "insert_to_usedpool",
        "insert_to_freepool",
        "new_arena",
        "pymalloc_alloc",
        "pymalloc_free",
        "pymalloc_realloc",
    }
)
#: The hash tables' probing functions (CPython's ``Objects/dictobject.c`` and
#: ``Objects/setobject.c``, the same names in 3.11, 3.12 and 3.13), each counted at this fixed
#: cost per call, its own instructions left out (what it calls still counts: comparing keys of
#: equal hashes, a Python ``__eq__``). Near each one's own path without a collision, CPython
#: 3.11.7 (a loop of 20,000 lookups of an int key under callgrind): ``_Py_dict_lookup`` 65 a
#: hit and 51 a miss (3.12: 57 and 46; 3.13: 47 and 44), ``set_lookkey`` 45, ``set_add_entry``
#: 46 for a key already there and 58 for a new one, ``find_empty_slot`` (a new key's slot) 16.
#: What stays counted as it ran: the rebuilding of a table that grows (``build_indices_*``,
#: ``set_table_resize``: their probes too, once per resize) and the lookups a deletion makes
#: inline (``lookdict_index``).
HASH_PROBE_CALLS: Mapping[str, int] = {
    "_Py_dict_lookup": 60,
    "find_empty_slot": 16,
    "set_lookkey": 45,
    "set_add_entry": 50,
}
#: The functions a counted process tells apart by their callers (host/callgrind.py): where the
#: type cache's miss path called one, that context is the miss's, left out with it
#: (:meth:`DumpCosts.type_cache_misses`), not a lookup at a fixed cost.
SEPARATED = frozenset(SEPARATED_CALLERS)
#: The functions whose calls to a copy (:func:`is_copy`) are a block moved by ``realloc``.
REALLOC_MOVES = frozenset({"_int_realloc"})
#: Every function counted by its calls at a fixed cost (:data:`ALLOCATOR_CALLS`,
#: :data:`TYPE_LOOKUP_CALLS`, :data:`HASH_PROBE_CALLS`).
FIXED_CALLS: Mapping[str, int] = {**ALLOCATOR_CALLS, **TYPE_LOOKUP_CALLS, **HASH_PROBE_CALLS}
#: The functions whose own cost is left out: the fixed-cost ones and what they run inside.
_FIXED = frozenset(FIXED_CALLS) | frozenset(ALLOCATOR_ALIASES) | ALLOCATOR_INSIDE
#: The functions whose entry executions a dump's reading keeps (the fixed-cost entry points).
_FIXED_ENTRIES = frozenset(FIXED_CALLS) | frozenset(ALLOCATOR_ALIASES)


def function_name(fn: str) -> str:
    """A dump's function name without what callgrind and compilers add: a recursion level
    (``f'2``), the callers of a separated context (``f'g'h``) and a clone suffix
    (``unlink_chunk.constprop.0``)."""
    return fn.split("'", 1)[0].split(".", 1)[0]


def in_type_cache_miss(fn: str) -> bool:
    """Whether ``fn`` is a context of a function called from the type cache's miss path: one of
    its callers (``_Py_dict_lookup'_PyDict_GetItem_KnownHash'find_name_in_mro``) is in
    :data:`TYPE_CACHE_MISS`."""
    return any(function_name(part) in TYPE_CACHE_MISS for part in fn.split("'")[1:])


def is_copy(fn: str) -> bool:
    """Whether ``fn`` is one of glibc's copy functions (``memcpy``, ``memmove`` and the variant
    its CPU dispatch picked: ``__memcpy_avx_unaligned_erms``)."""
    return function_name(fn).lstrip("_").startswith(("memcpy", "memmove", "mempcpy"))


@dataclass
class DumpCosts:
    """One dump read once: the events, each (function, object)'s own cost and each function's
    entry executions (how often it was called while collecting; callgrind's own call counts,
    ``calls=``, also count the calls made while collection was off, so they are not read)."""

    events: list[str] = field(default_factory=list)
    own: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    #: Each function's lowest instruction address with its own cost and that instruction's
    #: executions (where the dump holds each instruction: its entry, run once per call).
    entries: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: The inclusive events of the calls :data:`TYPE_CACHE_MISS`'s functions made.
    miss_calls: list[int] = field(default_factory=list)
    #: The inclusive events of the copies :data:`REALLOC_MOVES`'s functions called.
    moved_copies: list[int] = field(default_factory=list)

    def type_cache_misses(self) -> dict[str, int]:
        """The events of the type attribute cache's misses: :data:`TYPE_CACHE_MISS`'s own
        code and all it called."""
        got = self.own_cost(TYPE_CACHE_MISS)
        for name, value in zip(self.events, self.miss_calls, strict=False):
            got[name] = got.get(name, 0) + value
        return {n: v for n, v in got.items() if v}

    def moved(self) -> dict[str, int]:
        """The events of the copies ``realloc`` made where it moved a block."""
        return {n: v for n, v in zip(self.events, self.moved_copies, strict=False) if v}

    def own_cost(self, match: frozenset[str], *, outside_miss: bool = False) -> dict[str, int]:
        """The events executed in the own code of the functions ``match`` names (where
        ``outside_miss``, not in their contexts called from the type cache's miss path, which
        :meth:`type_cache_misses` holds)."""
        got = [0] * len(self.events)
        for (fn, _ob), values in self.own.items():
            if function_name(fn) in match and not (outside_miss and in_type_cache_miss(fn)):
                for i, v in enumerate(values[: len(got)]):
                    got[i] += v
        return {n: v for n, v in zip(self.events, got, strict=True) if v}

    def objects(self) -> set[str]:
        """The object files (``ob=``: executables and shared libraries) that executed
        instructions in this dump."""
        return {ob for (_fn, ob), values in self.own.items() if ob and values and values[0]}

    def fixed_calls(self) -> int:
        """The fixed instructions of the allocator, type lookup and hash table calls made while
        collecting (:data:`FIXED_CALLS` times the executions of each entry point's first
        instruction; not those the type cache's miss path made, which are left out with it)."""
        total = 0
        for fn, (_address, runs) in self.entries.items():
            name = function_name(fn)
            total += runs * FIXED_CALLS.get(ALLOCATOR_ALIASES.get(name, name), 0)
        return total


def costs(path: Path) -> DumpCosts:
    """Read ``path``'s own-cost lines and each function's entry executions (the inclusive cost of
    a call, the line after ``calls=``, is not an own cost: it is read only for the calls the
    type cache's miss path makes and the copies of a moving ``realloc``). Entries are kept for
    the fixed-cost functions only (:meth:`DumpCosts.fixed_calls` reads them). With one event
    (no cache simulation) a cost line's last field is all that is read: the parse runs inside
    the counted process, under valgrind, twice per counted benchmark."""
    out = DumpCosts()
    fns: dict[str, str] = {}
    obs: dict[str, str] = {}
    fn = ob = ""
    skip = False
    npos = 1
    single = False  # one event: Ir
    track = False  # the current function is counted at a fixed cost: its entry executions are read
    miss = False  # the current function is the type cache's miss path: its calls are read
    moves = False  # the current function is realloc's inside: its calls to copies are read
    into: list[int] | None = None  # where the inclusive cost of the current call goes
    mine: list[int] | None = None  # the own costs of (fn, ob), once a line has one
    with path.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            head = line[:1]
            if head.isdigit() or head in "+-*":
                if skip:
                    skip = False
                    if into is not None:  # a call's inclusive cost: the miss path's, a copy's
                        called = [int(v) for v in line.split()[npos:]]
                        into.extend([0] * (len(called) - len(into)))
                        for i, v in enumerate(called):
                            into[i] += v
                    continue
                if single and not track:
                    if line.count(" ") >= npos:  # else no cost on the line: zero
                        if mine is None:
                            mine = out.own.setdefault((fn, ob), [0])
                        mine[0] += int(line[line.rindex(" ") + 1 :])
                    continue
                fields = line.split()
                values = [int(v) for v in fields[npos:]]
                if values:
                    mine = out.own.setdefault((fn, ob), [])
                    mine.extend([0] * (len(values) - len(mine)))
                    for i, v in enumerate(values):
                        mine[i] += v
                    if track and npos > 1 and fields[0].startswith("0x"):
                        address = int(fields[0], 16)
                        seen = out.entries.get(fn)
                        if seen is None or address < seen[0]:
                            out.entries[fn] = (address, values[0])
                        elif address == seen[0]:
                            out.entries[fn] = (address, seen[1] + values[0])
            elif line.startswith("fn="):
                fn = _name(line[3:], fns)
                name = function_name(fn)
                track = name in _FIXED_ENTRIES and not (
                    name in SEPARATED and in_type_cache_miss(fn)
                )
                miss = name in TYPE_CACHE_MISS
                moves = name in REALLOC_MOVES
                into = out.miss_calls if miss else None
                mine = None
            elif line.startswith("cfn="):
                callee = _name(line[4:], fns)
                copy = moves and is_copy(callee)
                into = out.miss_calls if miss else (out.moved_copies if copy else None)
            elif line.startswith("ob="):
                ob = _name(line[3:], obs)
                mine = None
            elif line.startswith("cob="):
                _name(line[4:], obs)
            elif line.startswith("calls="):
                skip = True
            elif line.startswith("positions:"):
                npos = len(line.split()) - 1
            elif line.startswith("events:"):
                out.events = line.split()[1:]
                single = len(out.events) == 1
    return out


def counted_events(path: Path, objects: set[str] | None = None) -> dict[str, float]:
    """A counted call's events from its dump: the totals less the waiting functions' own cost,
    the type attribute cache's misses (:data:`TYPE_CACHE_MISS`, with all they called), the
    copies of a moving ``realloc`` and the own cost of the allocators, the type lookup and the
    hash tables' probing (their calls counted at :data:`FIXED_CALLS` instead), with
    ``interpreter``, the share of the instructions executed in the interpreter itself. The
    object files that ran are added to ``objects`` where given."""
    read = costs(path)
    if objects is not None:
        objects |= read.objects()
    events: dict[str, float] = dict(read_dump(path))
    drops = (
        read.own_cost(WAIT_FUNCTIONS),
        read.type_cache_misses(),
        read.moved(),
        read.own_cost(_FIXED, outside_miss=True),
    )
    for drop in drops:
        for name, value in drop.items():
            events[name] = max(0, events.get(name, 0) - value)
    events["Ir"] = events.get("Ir", 0) + read.fixed_calls()
    return {**events, "interpreter": _interpreter_share(read)}


def waiting(path: Path, functions: frozenset[str] = WAIT_FUNCTIONS) -> dict[str, int]:
    """The events a dump counts in ``functions``' own code (not what they call): threads
    waiting for each other. A name matches with a compiler suffix (``inner_thread.constprop.0``)
    and with callgrind's compressed names (``fn=(12) name``) alike."""
    return costs(path).own_cost(functions)


def interpreter_share(path: Path) -> float:
    """The share of a dump's instructions executed in the Python interpreter itself (the
    ``python`` executable or ``libpython``), from the self costs of its objects (``ob=``)."""
    return _interpreter_share(costs(path))


def _interpreter_share(read: DumpCosts) -> float:
    inside = total = 0
    for (_fn, ob), values in read.own.items():
        if values:
            total += values[0]
            if ob.rsplit("/", 1)[-1].startswith(("python", "libpython")):
                inside += values[0]
    return inside / total if total else 0.0


def read_dump(path: Path) -> dict[str, int]:
    """The event totals of one callgrind dump (``{"Ir": ..., "D1mr": ...}``): the events the
    dump lists (the cache misses only where the caches were simulated), in callgrind's order.
    Raises ``ValueError`` naming the file when it has none."""
    names: list[str] | None = None
    totals: list[int] | None = None
    with path.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("events:"):
                names = line.split()[1:]
            elif line.startswith("summary:") or (line.startswith("totals:") and totals is None):
                totals = [int(x) for x in line.split()[1:]]
                if line.startswith("summary:"):
                    break
    if names is None or totals is None:
        raise ValueError(f"callgrind dump {path}: no events and totals lines")
    got = dict(zip(names, totals + [0] * (len(names) - len(totals)), strict=True))
    order = (*(e for e in EVENTS if e in got), *(n for n in names if n not in EVENTS))
    return {e: int(got[e]) for e in order}


_TIMERANGE = re.compile(r"desc:\s*Timerange:\s*Basic block\s+(\d+)\s*-\s*(\d+)")


def executed_blocks(path: Path) -> int | None:
    """The basic blocks valgrind executed in one dump's window (every thread's, from the
    header's ``desc: Timerange: Basic block A - B``); None where the dump does not say."""
    with path.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            if m := _TIMERANGE.match(line):
                return max(0, int(m.group(2)) - int(m.group(1)))
            if line.startswith(("summary:", "totals:", "fn=")):
                return None
    return None


def _name(ref: str, labels: dict[str, str]) -> str:
    """A name field of a dump (``fn=``, ``ob=`` ...), also in callgrind's compressed form:
    ``(12) name`` defines label 12 in ``labels``, ``(12)`` refers to it."""
    ref = ref.strip()
    if not ref.startswith("("):
        return ref
    key, _, name = ref.partition(")")
    name = name.strip() or labels.get(key, "")
    labels[key] = name
    return name
