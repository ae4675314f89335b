"""Warm-up, loop calibration and sampling. Plain Python: no pytest, no array library.

A sample value is the time of one call of the benchmarked function, in seconds: the elapsed time of
``loops`` back-to-back calls, bracketed by ``sync()`` on both sides, divided by ``loops``. The garbage
collector is off while timing and back to its previous state afterwards, even on error.
"""

from __future__ import annotations

import contextlib
import gc
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

NS = 1e-9

#: Warm-up never runs more calls than this, however fast the function is.
MAX_WARMUP_CALLS = 1_000_000


@dataclass(frozen=True)
class Sample:
    """Raw timings of one benchmark on one device, immutable and checked on construction."""

    values: tuple[float, ...]
    loops: int
    warmup_calls: int
    timer: str = "host"
    mode: str = "auto"
    meta: tuple[tuple[str, Any], ...] = field(default=())

    def __post_init__(self) -> None:
        if len(self.values) < 1:
            raise ValueError("a Sample needs at least one value")
        for v in self.values:
            if not isinstance(v, float) or not math.isfinite(v) or v <= 0.0:
                raise ValueError(f"Sample values must be finite numbers > 0.0, got {v!r}")
        if self.loops < 1:
            raise ValueError(f"Sample loops must be >= 1, got {self.loops!r}")


def _noop() -> None:
    return None


@contextlib.contextmanager
def gc_off() -> Iterator[None]:
    """Garbage collector off inside, back to its previous state afterwards, even on error."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def calibrate_loops(per_call_s: float, min_time_s: float) -> int:
    """Inner loop count so that one sample lasts at least ``min_time_s``."""
    if min_time_s <= 0.0 or per_call_s >= min_time_s:
        return 1
    return max(1, math.ceil(min_time_s / max(per_call_s, 1e-9)))


def measure(
    fn: Callable[..., Any],
    args: Sequence[Any] = (),
    kwargs: dict[str, Any] | None = None,
    *,
    samples: int,
    warmup: float,
    min_time: float,
    sync: Callable[[], Any] = _noop,
    clock: Callable[[], int] = time.perf_counter_ns,
) -> tuple[Any, Sample]:
    """Warm ``fn`` up for ``warmup`` seconds (at least one call), calibrate, take ``samples``.

    Returns the result of the last call and the :class:`Sample`.
    """
    kw = kwargs or {}
    # Warm-up: at least one call; also the source of the per-call estimate for calibration.
    deadline = clock() + int(warmup / NS)
    calls = 0
    best = math.inf
    result: Any = None
    while True:
        sync()
        t0 = clock()
        result = fn(*args, **kw)
        sync()
        t1 = clock()
        calls += 1
        best = min(best, (t1 - t0) * NS)
        if t1 >= deadline or calls >= MAX_WARMUP_CALLS:
            break
    loops = calibrate_loops(best, min_time)

    values: list[float] = []
    with gc_off():
        for _ in range(samples):
            sync()
            t0 = clock()
            for _ in range(loops):
                result = fn(*args, **kw)
            sync()
            t1 = clock()
            values.append(max(t1 - t0, 1) * NS / loops)
    return result, Sample(values=tuple(values), loops=loops, warmup_calls=calls, mode="auto")


def measure_pedantic(
    fn: Callable[..., Any],
    args: Sequence[Any] = (),
    kwargs: dict[str, Any] | None = None,
    *,
    setup: Callable[[], Any] | None = None,
    rounds: int,
    iterations: int = 1,
    warmup_rounds: int = 0,
    sync: Callable[[], Any] = _noop,
    clock: Callable[[], int] = time.perf_counter_ns,
) -> tuple[Any, Sample]:
    """pytest-benchmark's ``pedantic`` shape: fresh inputs from ``setup`` for every round.

    ``setup`` (untimed) may return ``(args, kwargs)``, which then replace ``args``/``kwargs`` for
    that round. Each round times ``iterations`` calls; ``warmup_rounds`` rounds run untimed first.
    """
    result: Any = None

    def one_round(timed: bool) -> float:
        nonlocal result
        a, k = tuple(args), dict(kwargs or {})
        if setup is not None:
            prepared = setup()
            if prepared is not None:
                a, k = tuple(prepared[0]), dict(prepared[1])
        sync()
        t0 = clock()
        for _ in range(iterations):
            result = fn(*a, **k)
        sync()
        t1 = clock()
        return max(t1 - t0, 1) * NS / iterations if timed else 0.0

    for _ in range(warmup_rounds):
        one_round(False)
    with gc_off():
        values = [one_round(True) for _ in range(rounds)]
    return result, Sample(
        values=tuple(values), loops=iterations, warmup_calls=warmup_rounds, mode="pedantic"
    )
