"""host/callgrind_dumps.py on made-up dumps: totals, own costs and calls, what waits left
out of a counted call's counts, the copy tunables and the counting rule in the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_burnperf.core.counting import counts_key
from pytest_burnperf.host import callgrind, callgrind_dumps
from pytest_burnperf.runs import counted

DUMP = """# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 4242
cmd:  python -m pytest
part: 3

desc: I1 cache: 32768 B, 64 B, 8-way associative
positions: line
events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
summary: 1511834 316722 299268 1055 13278 2732 2 1 0

fl=(1) x.c
fn=(1) f
0 1511834 316722 299268 1055 13278 2732 2 1 0

totals: 1524666 310000 290000 1055 13278 2732 2 1 0
"""


def test_read_dump_takes_the_summary(tmp_path: Path) -> None:
    path = tmp_path / "callgrind.4242.1"
    path.write_text(DUMP, encoding="utf-8")
    got = callgrind_dumps.read_dump(path)
    assert got["Ir"] == 1511834 and got["D1mr"] == 13278 and got["DLmw"] == 0


def test_executed_blocks_come_from_the_dumps_time_range(tmp_path: Path) -> None:
    """What counting a call costs: the basic blocks in its dump's window (callgrind 3.19's
    header, the window after an earlier dump of the same process)."""
    path = tmp_path / "callgrind.4242.2"
    head = "desc: Timerange: Basic block 122883047 - 245669100\ndesc: Trigger: Client Request\n"
    path.write_text(DUMP.replace("desc: I1 cache", head + "desc: I1 cache"), encoding="utf-8")
    assert callgrind_dumps.executed_blocks(path) == 122786053
    assert callgrind_dumps.read_dump(path)["Ir"] == 1511834  # the totals read as before
    plain = tmp_path / "callgrind.4242.1"  # a dump that does not say: None, not a guess
    plain.write_text(DUMP, encoding="utf-8")
    assert callgrind_dumps.executed_blocks(plain) is None


def test_read_dump_pads_short_totals_and_refuses_junk(tmp_path: Path) -> None:
    short = tmp_path / "short"
    short.write_text("events: Ir Dr\ntotals: 12\n", encoding="utf-8")
    assert callgrind_dumps.read_dump(short)["Ir"] == 12
    assert callgrind_dumps.read_dump(short)["Dr"] == 0
    # without the cache simulation a dump lists its instructions only: no misses are made up
    plain = tmp_path / "plain"
    plain.write_text("events: Ir\nsummary: 77\n", encoding="utf-8")
    assert callgrind_dumps.read_dump(plain) == {"Ir": 77}
    junk = tmp_path / "junk"
    junk.write_text("nothing here\n", encoding="utf-8")
    with pytest.raises(ValueError, match="junk: no events and totals"):
        callgrind_dumps.read_dump(junk)


def test_interpreter_share_counts_self_costs_not_calls(tmp_path: Path) -> None:
    dump = tmp_path / "d"
    dump.write_text(
        "events: Ir\n"
        "ob=(1) /usr/bin/python3.11\nfn=(1) _PyEval_EvalFrameDefault\n0 600\n"
        "cob=(2) /site-packages/numpy/_core/_multiarray_umath.so\ncfn=(2) sort\ncalls=1 0\n0 400\n"
        "ob=(2)\nfn=(2)\n0 400\n"
        "ob=(3) /lib/libpython3.11.so.1.0\nfn=(3) PyObject_Free\n0 100\n",
        encoding="utf-8",
    )
    assert callgrind_dumps.interpreter_share(dump) == pytest.approx(700 / 1100)


def test_waiting_is_the_own_cost_of_the_wait_functions_however_named(tmp_path: Path) -> None:
    dump = tmp_path / "d"
    dump.write_text(
        "positions: line\nevents: Ir D1mr\n"
        # the level-3 driver spins (own cost) and calls the kernel (not waiting)
        "fn=(1) inner_thread\n0 3000 7\ncfn=(2) dgemm_kernel_HASWELL\ncalls=4 0\n0 9000 50\n"
        "fn=(2)\n0 9000 50\n"
        # a compiler's suffix, a name given first in a call line, a short cost line
        "fn=(3) exec_blas.constprop.0\n0 500\ncfn=(4) sched_yield\ncalls=10 0\n0 200\n"
        "fn=(4)\n0 200 1\n"
        "fn=(5) exec_blas_helper\n0 40\n",
        encoding="utf-8",
    )
    assert callgrind_dumps.waiting(dump) == {"Ir": 3700, "D1mr": 8}
    assert callgrind_dumps.waiting(dump, frozenset({"nothing"})) == {}


def test_counted_events_leave_out_waiting_and_name_the_interpreter_share(tmp_path: Path) -> None:
    dump = tmp_path / "d"
    dump.write_text(
        "positions: line\nevents: Ir Dr\n"
        "ob=(1) /usr/lib/libpython3.11.so.1.0\nfn=(1) f\n0 5000 900\n"
        "ob=(2) /usr/lib/libopenblas.so\nfn=(2) sched_yield\n0 700 10\n"
        "fn=(3) dgemm_kernel\n0 5000 100\n"
        "totals: 10700 1010\n",
        encoding="utf-8",
    )
    got = callgrind_dumps.counted_events(dump)
    assert got["Ir"] == 10000 and got["Dr"] == 1000
    assert got["interpreter"] == pytest.approx(5000 / 10700)


def test_the_objects_a_call_ran_in_are_those_with_own_instructions(tmp_path: Path) -> None:
    """An object only called into (its cost inclusive in the caller's lines) or without
    instructions is not one the call ran in; compressed names resolve."""
    dump = tmp_path / "d"
    dump.write_text(
        "events: Ir\n"
        "ob=(1) /usr/bin/python3.11\nfn=(1) f\n0 600\n"
        "cob=(2) /site/scipy/special/_ufuncs.so\ncfn=(2) ndtr\ncalls=1 0\n0 400\n"
        "ob=(2)\nfn=(2)\n0 400\n"
        "ob=(3) /site/idle.so\nfn=(3) g\n0 0\ntotals: 1000\n",
        encoding="utf-8",
    )
    seen: set[str] = {"/earlier/call.so"}
    callgrind_dumps.counted_events(dump, seen)
    assert seen == {"/earlier/call.so", "/usr/bin/python3.11", "/site/scipy/special/_ufuncs.so"}


def test_names_with_recursion_levels_and_clone_suffixes() -> None:
    assert callgrind_dumps.function_name("_Py_Dealloc'2") == "_Py_Dealloc"
    assert callgrind_dumps.function_name("unlink_chunk.constprop.0") == "unlink_chunk"


def _alloc_dump(free_path: int, inner: int, leaked_calls: int = 0, frees: int = 10) -> str:
    """A call (``f``: 5000 instructions) that frees ``frees`` blocks through CPython's allocator and
    mallocs twice, dumped per instruction as a counted process dumps it. Only the allocators'
    paths vary (``free_path`` instructions a free after its entry, ``inner`` in _int_malloc);
    ``leaked_calls`` are calls made while collection was off, which callgrind's call counts
    hold and no instruction does."""
    return (
        "positions: instr line\nevents: Ir Dr\n"
        "ob=(1) /usr/lib/libpython3.11.so.1.0\n"
        "fn=(1) f\n0x1000 1 5000 900\n"
        f"cfn=(2) _PyObject_Free\ncalls={frees + leaked_calls} 0x2000 0\n"
        f"0x1004 1 {frees * (1 + free_path)}\n"
        "cob=(2) /lib/x86_64-linux-gnu/libc.so.6\ncfn=(3) malloc\ncalls=2 0x3000 0\n"
        f"0x1008 1 {40 + inner}\n"
        # _PyObject_Free: its entry runs once a call, the rest of its path a varying length
        f"fn=(2)\n0x2000 1 {frees} 10\n0x2010 1 {frees * free_path} 30\n"
        "ob=(2)\nfn=(3)\n0x3000 1 2 1\n0x3004 1 38 4\n"
        f"cfn=(4) _int_malloc.constprop.0\ncalls=1 0x4000 0\n0x3008 1 {inner}\n"
        f"fn=(4)\n0x4000 1 {inner} 3\n"
        f"totals: {5000 + frees * (1 + free_path) + 40 + inner} 948\n"
    )


def test_allocator_calls_count_at_a_fixed_cost_whatever_their_path(tmp_path: Path) -> None:
    cheap, dear = tmp_path / "cheap", tmp_path / "dear"
    cheap.write_text(_alloc_dump(free_path=29, inner=60), encoding="utf-8")
    dear.write_text(_alloc_dump(free_path=41, inner=95, leaked_calls=37), encoding="utf-8")
    assert callgrind_dumps.read_dump(cheap)["Ir"] != callgrind_dumps.read_dump(dear)["Ir"]
    fixed = 10 * callgrind_dumps.ALLOCATOR_CALLS["_PyObject_Free"]
    fixed += 2 * callgrind_dumps.ALLOCATOR_CALLS["malloc"]
    for path in (cheap, dear):
        got = callgrind_dumps.counted_events(path)
        # the code's own, and each allocator call (counted by its entry) at its fixed cost;
        # the calls made while collection was off do not count
        assert got["Ir"] == 5000 + fixed
        assert got["Dr"] == 900  # the allocators' data accesses left out too
        assert got["interpreter"] > 0


def test_an_allocation_more_still_counts(tmp_path: Path) -> None:
    one = tmp_path / "one"
    one.write_text(_alloc_dump(29, 60), encoding="utf-8")
    more = tmp_path / "more"
    more.write_text(_alloc_dump(29, 60, frees=11), encoding="utf-8")
    grew = callgrind_dumps.counted_events(more)["Ir"] - callgrind_dumps.counted_events(one)["Ir"]
    assert grew == callgrind_dumps.ALLOCATOR_CALLS["_PyObject_Free"]


def _lookup_dump(misses: int, lookups: int = 20, entry: str = "_PyType_Lookup") -> str:
    """A call of ``lookups`` attribute lookups through the type cache, ``misses`` of which
    missed and walked the MRO (as pint's counted in one process of three), in callgrind's
    format with two events and instruction positions: the lookup's entry instruction (run once
    a call) and its other own lines (a few more on a miss), the miss path's own lines and its
    calls to the dictionaries' lookup (their inclusive cost after ``calls=``), which the
    interpreter also calls elsewhere: that function is told apart by its callers
    (``--separate-callers``), its entry instruction run once a call in each context."""
    lookup_own = (lookups + lookups * 14 + misses * 5, lookups + lookups * 4)
    dict_in_miss = (misses * 3 * 40, misses * 3 * 12)  # 3 dictionaries a walk, 40 each
    get_in_miss = (misses * 3 * 10, misses * 3)  # the function between the walk and the lookup
    dict_else = (7 * 30, 7 * 10)
    miss_here = misses * 35
    lines = [
        "positions: instr line",
        "events: Ir Dr",
        "ob=(1) /lib/libpython3.11.so.1.0",
        "fn=(1) _PyEval_EvalFrameDefault",
        "0x100 10 4000 900",
        f"cfn=(2) {entry}",
        f"calls={lookups} 0x200 20",
        f"0x104 10 {lookup_own[0] + misses * 35 + get_in_miss[0] + dict_in_miss[0]} "
        f"{lookup_own[1] + misses * 10 + get_in_miss[1] + dict_in_miss[1]}",
        "cfn=(4) _Py_dict_lookup'_PyEval_EvalFrameDefault",
        "calls=7 0x400 40",
        f"0x108 10 {dict_else[0]} {dict_else[1]}",
        "fn=(2)",
        f"0x200 20 {lookups} {lookups}",
        f"+4 * {lookups * 14 + misses * 5} {lookups * 4}",
        "fn=(4)",
        "0x400 40 7 7",
        f"+2 * {dict_else[0] - 7} {dict_else[1] - 7}",
    ]
    if misses:
        lines += [
            "fn=(2)",
            "cfn=(3) find_name_in_mro",
            f"calls={misses} 0x300 30",
            f"0x208 21 {miss_here + get_in_miss[0] + dict_in_miss[0]} "
            f"{misses * 10 + get_in_miss[1] + dict_in_miss[1]}",
            "fn=(3)",
            f"0x300 30 {miss_here} {misses * 10}",
            "cfn=(5) _PyDict_GetItem_KnownHash",
            f"calls={misses * 3} 0x500 50",
            f"+8 * {get_in_miss[0] + dict_in_miss[0]} {get_in_miss[1] + dict_in_miss[1]}",
            "fn=(5)",
            f"0x500 50 {get_in_miss[0]} {get_in_miss[1]}",
            "cfn=(6) _Py_dict_lookup'_PyDict_GetItem_KnownHash'find_name_in_mro",
            f"calls={misses * 3} 0x400 40",
            f"+4 * {dict_in_miss[0]} {dict_in_miss[1]}",
            "fn=(6)",
            f"0x400 40 {misses * 3} {misses * 3}",
            f"+2 * {dict_in_miss[0] - misses * 3} {dict_in_miss[1] - misses * 3}",
        ]
    ir = 4000 + lookup_own[0] + miss_here + get_in_miss[0] + dict_in_miss[0] + dict_else[0]
    dr = 900 + lookup_own[1] + misses * 10 + get_in_miss[1] + dict_in_miss[1] + dict_else[1]
    return "\n".join([*lines, f"totals: {ir} {dr}", ""])


def test_a_lookup_counts_as_a_cache_hit_whether_the_cache_missed(tmp_path: Path) -> None:
    """Which lookups collide in CPython's type cache follows the process's memory layout: the
    miss path (the MRO walk, with the dictionary lookups it calls) is left out, each lookup
    counted at a fixed cost; the same dictionary function called from elsewhere counts its
    own fixed cost a call, and none of the miss path's calls of it counts."""
    # CPython 3.11 and 3.12 look up through _PyType_Lookup, 3.13 mostly through _PyType_LookupRef
    for entry in ("_PyType_Lookup", "_PyType_LookupRef"):
        hits, misses = tmp_path / f"hits-{entry}", tmp_path / f"misses-{entry}"
        hits.write_text(_lookup_dump(0, entry=entry), encoding="utf-8")
        misses.write_text(_lookup_dump(12, entry=entry), encoding="utf-8")
        raw = callgrind_dumps.read_dump(misses)["Ir"]
        assert raw == callgrind_dumps.read_dump(hits)["Ir"] + 12 * (5 + 35 + 30 + 120)
        read = callgrind_dumps.costs(misses)
        assert read.type_cache_misses() == {"Ir": 12 * (35 + 30 + 120), "Dr": 12 * (10 + 3 + 36)}
        assert callgrind_dumps.costs(hits).type_cache_misses() == {}
        got, base = (callgrind_dumps.counted_events(p) for p in (misses, hits))
        lookup = callgrind_dumps.TYPE_LOOKUP_CALLS[entry]
        dict_lookup = callgrind_dumps.HASH_PROBE_CALLS["_Py_dict_lookup"]
        assert got["Ir"] == base["Ir"] == 4000 + 20 * lookup + 7 * dict_lookup
        assert got["Dr"] == base["Dr"] == 900  # the fixed-cost functions' accesses left out
        more = tmp_path / f"more-{entry}"  # a lookup more still counts
        more.write_text(_lookup_dump(0, lookups=21, entry=entry), encoding="utf-8")
        assert callgrind_dumps.counted_events(more)["Ir"] - base["Ir"] == lookup


def _probe_dump(lookups: int, extra_probes: int, adds: int = 5) -> str:
    """A call of ``lookups`` dictionary lookups and ``adds`` set additions whose keys hash by
    their address: ``extra_probes`` of the lookups collide and probe a slot more (9
    instructions each), and the additions find their slots at once; one-event dump."""
    return "\n".join(
        [
            "positions: instr line",
            "events: Ir",
            "ob=(1) /lib/libpython3.11.so.1.0",
            "fn=(1) _PyEval_EvalFrameDefault",
            "0x100 10 3000",
            "cfn=(2) _Py_dict_lookup'_PyEval_EvalFrameDefault",
            f"calls={lookups} 0x400 40",
            f"0x104 10 {lookups * 50 + extra_probes * 9}",
            "cfn=(3) set_add_entry'set_add_impl'method_vectorcall_O",
            f"calls={adds} 0x600 60",
            f"0x108 10 {adds * 46}",
            "fn=(2)",
            f"0x400 40 {lookups}",
            f"+2 * {lookups * 49 + extra_probes * 9}",
            "fn=(3)",
            f"0x600 60 {adds}",
            f"+3 * {adds * 45}",
            f"totals: {3000 + lookups * 50 + extra_probes * 9 + adds * 46}",
            "",
        ]
    )


def test_dict_and_set_lookups_count_at_their_first_probe(tmp_path: Path) -> None:
    """A dictionary keyed by classes collides in one process and not in another (the keys hash
    by address): both count alike; a lookup more still counts its fixed cost."""
    paths = {}
    for name, lookups, extra in (("calm", 100, 0), ("collided", 100, 37), ("more", 101, 0)):
        paths[name] = tmp_path / name
        paths[name].write_text(_probe_dump(lookups, extra), encoding="utf-8")
    calm, collided, more = (callgrind_dumps.counted_events(paths[n])["Ir"] for n in paths)
    fixed = callgrind_dumps.HASH_PROBE_CALLS
    assert calm == collided == 3000 + 100 * fixed["_Py_dict_lookup"] + 5 * fixed["set_add_entry"]
    assert more - calm == fixed["_Py_dict_lookup"]
    raw = {n: callgrind_dumps.read_dump(p)["Ir"] for n, p in paths.items()}
    assert raw["collided"] - raw["calm"] == 37 * 9


def _realloc_dump(moved: bool, copy_elsewhere: int = 400) -> str:
    """A call that grows a list by ``realloc`` once (in place, or moved with a copy of 1,200
    instructions) and copies 400 instructions' worth itself; one-event dump."""
    copy = 1200 if moved else 0
    lines = [
        "positions: instr line",
        "events: Ir",
        "ob=(1) /lib/libpython3.11.so.1.0",
        "fn=(1) list_resize",
        "0x100 10 2000",
        "cfn=(2) realloc",
        "calls=1 0x200 20",
        f"0x104 10 {80 + copy}",
        "cfn=(4) __memcpy_avx_unaligned_erms",
        "calls=1 0x400 40",
        f"0x108 10 {copy_elsewhere}",
        "ob=(2) /lib/libc.so.6",
        "fn=(2)",
        "0x200 20 1",
        "+1 * 9",
        "cfn=(3) _int_realloc",
        "calls=1 0x300 30",
        f"+2 * {70 + copy}",
        "fn=(3)",
        "0x300 30 70",
    ]
    if moved:
        lines += ["cfn=(4)", "calls=1 0x400 40", f"+5 * {copy}"]
    lines += ["fn=(4)", f"0x400 40 {copy_elsewhere + copy}"]
    total = 2000 + 80 + copy + copy_elsewhere
    return "\n".join([*lines, f"totals: {total}", ""])


def test_a_moving_realloc_counts_as_one_in_place(tmp_path: Path) -> None:
    """glibc's realloc grows a block in place or moves and copies it, with the heap's state:
    the copy it makes is left out, a copy the code makes itself still counts."""
    still, moved = tmp_path / "still", tmp_path / "moved"
    still.write_text(_realloc_dump(False), encoding="utf-8")
    moved.write_text(_realloc_dump(True), encoding="utf-8")
    assert callgrind_dumps.read_dump(moved)["Ir"] - callgrind_dumps.read_dump(still)["Ir"] == 1200
    a, b = (callgrind_dumps.counted_events(p)["Ir"] for p in (still, moved))
    assert a == b == 2000 + 400 + callgrind_dumps.ALLOCATOR_CALLS["realloc"]
    assert callgrind_dumps.costs(moved).moved() == {"Ir": 1200}
    bigger = tmp_path / "bigger"  # the code's own copy grew: it counts
    bigger.write_text(_realloc_dump(True, copy_elsewhere=900), encoding="utf-8")
    assert callgrind_dumps.counted_events(bigger)["Ir"] - b == 500


def test_counted_processes_tell_the_hash_lookups_apart_by_their_callers() -> None:
    cmd = callgrind.command("valgrind", Path("dumps"))
    # every lookup at a fixed cost is told apart by its callers, and only those
    assert set(callgrind_dumps.HASH_PROBE_CALLS) == callgrind_dumps.SEPARATED
    for name in callgrind_dumps.HASH_PROBE_CALLS:
        assert f"--separate-callers3={name}" in cmd
    assert len([a for a in cmd if a.startswith("--separate-callers")]) == 4
    assert callgrind_dumps.in_type_cache_miss(
        "_Py_dict_lookup'_PyDict_GetItem_KnownHash'find_name_in_mro"
    )
    assert not callgrind_dumps.in_type_cache_miss("_Py_dict_lookup'PyDict_GetItemWithError")
    assert not callgrind_dumps.in_type_cache_miss("find_name_in_mro")
    assert callgrind_dumps.is_copy("__memcpy_avx_unaligned_erms")
    assert callgrind_dumps.is_copy("memmove") and not callgrind_dumps.is_copy("memset")


def test_an_entry_is_the_lowest_address_however_the_lines_come() -> None:
    costs = callgrind_dumps.DumpCosts(events=["Ir"])
    costs.entries.update({"cfree": (0x10, 3), "__libc_malloc'2": (0x20, 2), "f": (0x30, 9)})
    fixed = callgrind_dumps.ALLOCATOR_CALLS
    assert costs.fixed_calls() == 3 * fixed["free"] + 2 * fixed["malloc"]


def test_counted_processes_run_glibcs_copies_the_same_way_everywhere() -> None:
    env = counted.environment({"GLIBC_TUNABLES": "glibc.malloc.check=3", "PATH": "/bin"})
    assert env["GLIBC_TUNABLES"] == counted.GLIBC_TUNABLES
    assert "x86_rep_movsb_threshold" in env["GLIBC_TUNABLES"]
    note = counted.left_out({"GLIBC_TUNABLES": "glibc.malloc.check=3"})
    assert note is not None and "GLIBC_TUNABLES=glibc.malloc.check=3" in note
    assert counted.left_out({"GLIBC_TUNABLES": counted.GLIBC_TUNABLES}) is None


def test_counts_taken_by_the_older_rule_are_another_key() -> None:
    now = {name: "same" for name in counts_key.KEY_FIELDS} | {"libraries": {}}
    now["counting"] = callgrind_dumps.RULE
    older = {k: v for k, v in now.items() if k != "counting"}
    why = counts_key.key_difference(older, now)
    assert why is not None and "older rule" in why
    assert counts_key.key_difference(dict(now), now) is None

    def older(parts: int) -> dict[str, object]:
        """The key of counts taken before the rule's last ``parts`` parts."""
        return {**now, "counting": callgrind_dumps.RULE.rsplit("; ", parts)[0]}

    # counts taken one benchmark after another in one process (before children): another key,
    # not a comparison (small interpreted calls moved by a few percent between the two)
    why = counts_key.key_difference(older(6), now)
    assert why is not None and "each benchmark in a child of its own" in why
    # counts taken with the requests built per call in Python (15.8 k instructions of their own
    # around each call, small calls' first ones 0.4-2.5% higher): another key, not a change
    why = counts_key.key_difference(older(5), now)
    assert why is not None and "fixed requests, settled with the calls" in why
    # counts with the type cache's misses in them (6% between processes): another key
    why = counts_key.key_difference(older(4), now)
    assert why is not None and "type lookups as cache hits" in why
    assert not older(4)["counting"].endswith("type lookups as cache hits")  # type: ignore[union-attr]
    # counts with the hash tables' collisions and realloc's moves in them: another key
    why = counts_key.key_difference(older(3), now)
    assert why is not None and "dict and set lookups at their first probe" in why
    assert older(3)["counting"].endswith("type lookups as cache hits")  # type: ignore[union-attr]
    # counts of data drawn afresh from the global random generators in every process (a sort
    # of 20,000 random doubles counted 1.6% apart by two processes): another key
    why = counts_key.key_difference(older(1), now)
    assert why is not None and "global random generators seeded for each benchmark" in why
    assert older(1)["counting"].endswith("realloc's moving copies left out")  # type: ignore[union-attr]
    # CPython 3.13 counts _PyType_LookupRef as a hit too: its counts taken before, another key;
    # 3.11's and 3.12's rule (and their counts: they have no such function) unchanged
    assert callgrind_dumps.rule((3, 11, 7)) == callgrind_dumps.rule((3, 12)) == callgrind_dumps.RULE
    on_313 = {**now, "counting": callgrind_dumps.rule((3, 13, 0))}
    why = counts_key.key_difference(now, on_313)
    assert why is not None and "_PyType_LookupRef as a cache hit" in why


def test_a_one_event_dump_reads_as_the_same_dump_with_more_events(tmp_path: Path) -> None:
    """Without the cache simulation a dump has one event, and its cost lines are read by their
    last field only (the allocators' entries still by address): the counts are those of the
    same dump with more events, and a line that holds no cost adds nothing."""
    two = _alloc_dump(29, 60)
    one_lines = []
    for line in two.splitlines():
        fields = line.split()
        if line.startswith("events:"):
            line = "events: Ir"
        elif line.startswith("totals:"):
            line = f"totals: {fields[1]}"
        elif line[:1].isdigit() and len(fields) == 4:
            line = " ".join(fields[:3])
        one_lines.append(line)
    one_lines.insert(one_lines.index("fn=(1) f") + 1, "0x0ffc 1")  # no cost on it
    multi, single = tmp_path / "two", tmp_path / "one"
    multi.write_text(two, encoding="utf-8")
    single.write_text("\n".join(one_lines) + "\n", encoding="utf-8")
    a, b = callgrind_dumps.counted_events(multi), callgrind_dumps.counted_events(single)
    assert b["Ir"] == a["Ir"] and b["interpreter"] == a["interpreter"]
    assert callgrind_dumps.costs(single).fixed_calls() == (
        callgrind_dumps.costs(multi).fixed_calls()
    )
    assert callgrind_dumps.costs(single).objects() == callgrind_dumps.costs(multi).objects()
