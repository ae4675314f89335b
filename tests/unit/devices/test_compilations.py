"""torch.compile's count of compiled frames (devices/compilations.py): read where TorchDynamo is
loaded, 0 where it is not or its counters are not where torch 2.x keeps them; and with the real
torch, a call that compiles moves it and a call that runs what was compiled does not."""

from __future__ import annotations

import sys
import types
from collections import Counter, defaultdict

import pytest

from pytest_burnperf.devices.compilations import compiled_frames


def test_read_from_dynamos_frame_counters_and_0_where_it_is_not_loaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = types.ModuleType("torch._dynamo.utils")
    counters: defaultdict[str, Counter[str]] = defaultdict(Counter)
    fake.counters = counters  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch._dynamo.utils", fake)
    assert compiled_frames() == 0
    counters["frames"]["total"] += 3
    counters["frames"]["ok"] += 2
    assert compiled_frames() == 3
    fake.counters = {"frames": {"total": "3"}}  # type: ignore[attr-defined]
    assert compiled_frames() == 0  # not a count: nothing is made of it
    fake.counters = None  # type: ignore[attr-defined]
    assert compiled_frames() == 0
    monkeypatch.delitem(sys.modules, "torch._dynamo.utils")
    assert compiled_frames() == 0


def test_a_call_that_compiles_moves_the_count_and_a_cached_one_does_not() -> None:
    torch = pytest.importorskip("torch")

    @torch.compile(backend="eager")  # TorchDynamo's frames without inductor's code generation
    def scaled(x: object, k: float) -> object:
        return x * k + 1  # type: ignore[operator]

    x = torch.ones(8)
    moved = []
    for k in (1.0, 2.0, 3.0, 4.0, 5.0):  # a new float: compiled again once, then symbolic
        before = compiled_frames()
        scaled(x, k)
        moved.append(compiled_frames() - before)
    assert moved[0] >= 1, moved
    assert moved[-2:] == [0, 0], moved
