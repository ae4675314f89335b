"""The benchmark's own threads (host/threads.py): the pools named with what pins them, the note
when a benchmark used more CPUs than its limit, and numba's pool limited with the others."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from pytest_burnperf.core.judging.abstention import Cause
from pytest_burnperf.core.judging.assess import own_threads
from pytest_burnperf.core.judging.verdict import INCONCLUSIVE, UNCHANGED, Verdict
from pytest_burnperf.devices.thread_limits import cpu_threads
from pytest_burnperf.host import threads
from pytest_burnperf.host.activity import Window


class FakeNumba(types.ModuleType):
    """numba's thread API as numba 0.60 has it: get/set_num_threads and config.NUMBA_NUM_THREADS."""

    def __init__(self, n: int = 4) -> None:
        super().__init__("numba")
        self.config = types.SimpleNamespace(NUMBA_NUM_THREADS=n)
        self.n = n
        self.calls: list[int] = []

    def get_num_threads(self) -> int:
        return self.n

    def set_num_threads(self, n: int) -> None:
        if not 1 <= n <= self.config.NUMBA_NUM_THREADS:
            raise ValueError(n)
        self.calls.append(n)
        self.n = n


def test_pools_name_what_runs_more_threads_and_the_variable_that_pins_it() -> None:
    modules: dict[str, Any] = {"numba": FakeNumba(4), "numexpr": types.SimpleNamespace(nthreads=2)}
    assert threads.pools(1, modules) == [
        "numba (4 threads; NUMBA_NUM_THREADS (or numba.set_num_threads))",
        "numexpr (2 threads; NUMEXPR_NUM_THREADS)",
    ]
    assert threads.pools(4, modules) == []  # none runs more than the limit
    assert threads.pools(1, {}) == []


def test_the_note_appears_only_beyond_the_limit() -> None:
    assert threads.note(1.3, 1, ["numba (4 threads; X)"]) is None
    assert threads.note(5.0, 0, []) is None  # no limit: the benchmark's threads are its own
    text = threads.note(1.9, 1, ["numba (4 threads; NUMBA_NUM_THREADS)"])
    assert text is not None
    assert text.startswith("the benchmark ran on 1.9 CPUs of its own threads although ")
    assert "--perf-threads is 1 (pools running more threads: numba (4 threads; NUMBA" in text
    unknown = threads.note(1.9, 1, [])
    assert unknown is not None and "a library's own threads" in unknown


def _w(own: float) -> Window:
    return Window(seconds=1.0, cpus=2, own_cpus=own)


def test_an_undecided_verdict_names_the_benchmarks_own_threads_first() -> None:
    # issue 41: numba's threads on a busy host made noise floors of +5,000%, blamed on the host
    v = Verdict(
        INCONCLUSIVE,
        1.0,
        reason="host busy while it ran: other processes used 1.9",
        cause=Cause.NOISE,
    )
    got = own_threads(v, [_w(1.0), _w(1.95)], 1, ["numba (2 threads; NUMBA_NUM_THREADS)"])
    assert got.reason.startswith("the benchmark ran on 1.9 CPUs of its own threads")
    assert got.reason.endswith("; host busy while it ran: other processes used 1.9")
    assert got.cause is Cause.HOST  # its threads wait for each other on a busy host
    judged = own_threads(Verdict(UNCHANGED, 1.0), [_w(1.9)], 1, [])
    assert judged.status == UNCHANGED and judged.notes[0].startswith("the benchmark ran on 1.9")
    kept = Verdict(UNCHANGED, 1.0)
    assert own_threads(kept, [_w(1.02)], 1, []) is kept
    # a window too short to tell (30 ms: a few ms of other work read as a CPU's worth)
    short = Window(seconds=0.03, cpus=2, own_cpus=1.72)
    assert own_threads(kept, [short], 1, []) is kept


def test_cpu_threads_limits_numba_where_it_is_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("threadpoolctl")
    numba = FakeNumba(4)
    monkeypatch.setitem(sys.modules, "numba", numba)
    with cpu_threads(1):
        assert numba.get_num_threads() == 1
    assert numba.calls == [1, 4]  # limited, then given back
    with cpu_threads(8):  # never above numba's own maximum
        assert numba.get_num_threads() == 4
    monkeypatch.delitem(sys.modules, "numba")
    with cpu_threads(1):  # nothing imported, nothing asked
        pass
