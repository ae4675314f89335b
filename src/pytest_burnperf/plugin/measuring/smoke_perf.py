"""The ``perf`` fixture of a run without ``--perf`` (smoke mode): each benchmark body runs once,
untimed, so a broken benchmark fails in the ordinary test run; and the checks every perf object
makes of how it is called."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol, TypeVar

import pytest

from pytest_burnperf.core.records.roofline_figures import Work
from pytest_burnperf.core.text import escape
from pytest_burnperf.core.timing import Prepared
from pytest_burnperf.instruments.instrument import Prepare
from pytest_burnperf.plugin.measuring.result_record import keep_smoked
from pytest_burnperf.plugin.session.cases import Case
from pytest_burnperf.plugin.session.perf_state import PerfState

T = TypeVar("T")


def checked_setup(setup: Callable[[], object], where: str) -> Callable[[], Prepared | None]:
    """``setup`` whose result is None or ``(args, kwargs)``: anything else fails the test in one
    line naming the benchmark, not with a TypeError from inside the timing loop."""

    def run() -> Prepared | None:
        __tracebackhide__ = True
        prepared = setup()
        if prepared is None:
            return None
        if (
            isinstance(prepared, (tuple, list))
            and len(prepared) == 2
            and isinstance(prepared[0], (tuple, list))
            and isinstance(prepared[1], Mapping)
        ):
            return tuple(prepared[0]), dict(prepared[1])
        pytest.fail(
            f"{where}: setup must return None or (args, kwargs) -- a tuple of positional "
            f"arguments and a dict of keyword arguments -- got {type(prepared).__name__} "
            f"{escape(repr(prepared))[:80]}",
            pytrace=False,
        )

    return run


def pedantic_call(
    fn: Callable[..., object],
    args: tuple[object, ...],
    kwargs: Mapping[str, object] | None,
    setup: Callable[[], Prepared | None] | None,
    teardown: Callable[..., object] | None,
    iterations: int,
) -> Callable[[], tuple[Callable[[], object], Callable[[], object] | None]]:
    """One pedantic round made ready to run again (for --perf-profile, a counted call): its
    ``setup`` (already checked_setup's), then (the round's ``iterations`` calls, its
    ``teardown``)."""

    def make_call() -> tuple[Callable[[], object], Callable[[], object] | None]:
        a, k = tuple(args), dict(kwargs or {})
        if setup is not None:
            prepared = setup()
            if prepared is not None:
                a, k = tuple(prepared[0]), dict(prepared[1])

        def call() -> object:
            out = None
            for _ in range(iterations):
                out = fn(*a, **k)
            return out

        return call, (None if teardown is None else lambda: teardown(*a, **k))

    return make_call


class _Started(Protocol):
    """What :func:`start_once` keeps on a perf object: its test, and whether it was called."""

    _item: pytest.Item
    _used: bool


def start_once(perf: _Started, fn: object, what: str) -> None:
    """A benchmark calls ``perf`` (or ``perf.pedantic``) once, with a callable: else one line."""
    __tracebackhide__ = True
    node = perf._item.nodeid
    if perf._used:
        pytest.fail(
            f"{node}: {what} was called a second time; a benchmark times one function once "
            "(split it into separate tests)",
            pytrace=False,
        )
    if not callable(fn):
        pytest.fail(f"{node}: {what} needs a callable, got {fn!r}", pytrace=False)
    perf._used = True


class SmokePerf:
    """The ``perf`` fixture without --perf: calls the function once, untimed, and returns its
    result, so the benchmark's own checks run; nothing is measured, judged or written."""

    def __init__(self, state: PerfState, item: pytest.Item, case: Case) -> None:
        assert case.entry is not None and case.entry.device is not None
        self._state = state
        self._item = item
        self.device = case.entry.device
        self.dtype = case.dtype
        self._used = False
        #: The one call made ready again (a profile of it after the verdict: ComparePerf), and
        #: whether calls may repeat back to back (``perf(fn)``) or run once (a pedantic round).
        self._rerun: Prepare | None = None
        self._repeat = True
        #: pytest-benchmark's ``extra_info`` and ``group`` (compat.py), kept in the results JSON.
        self.extra_info: dict[str, object] = {}
        self.group: str | None = None

    def _start(self, fn: object, what: str) -> None:
        __tracebackhide__ = True
        start_once(self, fn, what)
        keep_smoked(self._state, self._item.nodeid)

    def work(
        self,
        flops: float | Work | None = None,
        bytes: float | None = None,
        shape: str | None = None,
    ) -> None:
        """Accepted and ignored: nothing is timed in a smoke run."""

    def __call__(self, fn: Callable[..., T], *args: object, **kwargs: object) -> T:
        __tracebackhide__ = True
        self._start(fn, "perf()")
        self._rerun = lambda: (lambda: fn(*args, **kwargs), None)
        result = fn(*args, **kwargs)
        self.device.sync()
        return result

    def pedantic(
        self,
        fn: Callable[..., T],
        args: tuple[object, ...] = (),
        kwargs: dict[str, object] | None = None,
        *,
        setup: Callable[[], object] | None = None,
        teardown: Callable[..., object] | None = None,
        rounds: int | None = None,
        iterations: int = 1,
        warmup_rounds: int | None = None,
    ) -> T:
        """One round: ``setup`` (if any), one call, ``teardown`` (if any)."""
        __tracebackhide__ = True
        del rounds, warmup_rounds
        self._start(fn, "perf.pedantic()")
        checked = (
            None if setup is None else checked_setup(setup, f"{self._item.nodeid}: perf.pedantic")
        )
        self._rerun = pedantic_call(fn, tuple(args), kwargs, checked, teardown, iterations)
        self._repeat = False
        a, k = tuple(args), dict(kwargs or {})
        if checked is not None:
            prepared = checked()
            if prepared is not None:
                a, k = tuple(prepared[0]), dict(prepared[1])
        result = fn(*a, **k)
        self.device.sync()
        if teardown is not None:
            teardown(*a, **k)
        return result
