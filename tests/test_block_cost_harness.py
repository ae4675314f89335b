"""validation/block_cost.py, the harness behind --perf-count-limit's unit, on a small workload:
one call's instructions and basic blocks read from real callgrind dumps (the ``Timerange``
header host/callgrind_dumps.executed_blocks parses), and the figures made from them. Nothing
here depends on how fast the machine is: only counts and their ratios are checked (the seconds
are differences of two timed processes, which a slow spell can even make negative)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_burnperf.host import callgrind
from validation.block_cost import run_one

LOOP = "def f():\n    s = 0\n    for i in range(20_000):\n        s += i * i % 7\n    return s"


@pytest.mark.slow
def test_a_pure_python_call_runs_a_few_instructions_a_block(tmp_path: Path) -> None:
    valgrind = callgrind.find_valgrind()
    if valgrind is None or callgrind.unsupported_reason() is not None:
        pytest.skip("valgrind is not installed here (or this platform has none)")
    got = run_one("loop", LOOP, tmp_path, valgrind)
    # 20 k iterations of interpreted arithmetic: millions of instructions in hundreds of
    # thousands of blocks, 3-8 instructions a block (pure Python measured 4.1-4.9)
    assert 1e6 < got["instructions"] < 1e8
    assert 3.0 < got["instructions_per_block"] < 8.0
    assert set(got) >= {"seconds", "ns_per_block", "native_blocks_per_s"}  # timed: not checked


def test_without_valgrind_only_the_native_time_is_taken(tmp_path: Path) -> None:
    got = run_one("loop", LOOP, tmp_path, None)
    assert set(got) == {"native_s"}
