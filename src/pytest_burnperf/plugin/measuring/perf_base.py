"""What every ``perf`` object is (:class:`PerfBase`): the benchmark it belongs to, called once
with a callable, ``perf.work`` and ``perf.pedantic``'s arguments checked the same way, the call
made ready again for a profile; and the smoke one (:class:`SmokePerf`, a run without
``--perf``): each benchmark body runs once, untimed, so a broken benchmark fails in the ordinary
test run. The measuring one is timed_perf.Perf, the comparing one same_session_perf.ComparePerf.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar

import pytest

from pytest_burnperf.core.options.pedantic_shape import PedanticShape
from pytest_burnperf.core.records.roofline_figures import Work, WorkError
from pytest_burnperf.core.text import escape
from pytest_burnperf.core.timing import Prepared
from pytest_burnperf.devices.array_device import call_place
from pytest_burnperf.devices.base import Device
from pytest_burnperf.instruments import registry
from pytest_burnperf.instruments.instrument import Prepare
from pytest_burnperf.plugin.measuring.instrument_choice import situation
from pytest_burnperf.plugin.measuring.profile_rerun import profiled
from pytest_burnperf.plugin.measuring.result_record import Benchmarked, keep_smoked
from pytest_burnperf.plugin.session.cases import Case
from pytest_burnperf.plugin.session.perf_state import PerfState

if TYPE_CHECKING:
    from pytest_burnperf.core.records.results import Result

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
            __tracebackhide__ = True
            out = None
            for _ in range(iterations):
                out = fn(*a, **k)
            return out

        return call, (None if teardown is None else lambda: teardown(*a, **k))

    return make_call


def call_once(
    device: Device,
    fn: Callable[..., T],
    args: tuple[object, ...],
    kwargs: Mapping[str, object] | None,
    setup: Callable[[], Prepared | None] | None = None,
    teardown: Callable[..., object] | None = None,
) -> T:
    """One untimed call, as a pedantic round makes it (``setup`` first, ``teardown`` after,
    with the round's arguments), the device synchronised before it returns."""
    __tracebackhide__ = True
    a, k = tuple(args), dict(kwargs or {})
    if setup is not None:
        prepared = setup()
        if prepared is not None:
            a, k = tuple(prepared[0]), dict(prepared[1])
    result = fn(*a, **k)
    device.sync()
    if teardown is not None:
        teardown(*a, **k)
    return result


class PerfBase:
    """What every ``perf`` object is and does before it measures: the benchmark's test, device,
    dtype and settings; called once, with a callable (``perf(fn, ...)`` or
    ``perf.pedantic(fn, ...)``, one signature, its arguments checked here); ``perf.work``
    checked and kept; the call made ready again for ``--perf-profile``. What each kind does
    with the call is :meth:`_call` and :meth:`_pedantic_call`."""

    def __init__(
        self, state: PerfState, item: pytest.Item, case: Case, module: str, key: str
    ) -> None:
        assert case.entry is not None and case.entry.device is not None
        self._state = state
        self._item = item
        self._case = case
        #: The baseline file (the test module's path under the rootdir) and key in it.
        self._module = module
        self._key = key
        self.device = case.entry.device
        self.dtype = case.dtype
        self.settings = state.run.settings_for(case.spec)
        self._used = False
        #: What one call computes and moves (``perf.work``), where the benchmark said.
        self._work: Work | None = None
        #: The one call made ready again (a profile of it after the verdict), and whether
        #: calls may repeat back to back (``perf(fn)``) or run once (a pedantic round).
        self._rerun: Prepare | None = None
        self._repeat = True
        #: perf.pedantic's shape (rounds given or None, iterations, warm-up rounds, setup):
        #: what a sample means, kept with the baseline and compared (core/judging/comparability.py).
        self._pedantic: PedanticShape | None = None
        #: The timed calls left their peak memory to the calls tracked beside them
        #: (:meth:`_peak_from_tracking`), which fill it in (:meth:`_with_sides`).
        self._peak_deferred = False
        #: What each instrument beside took of the benchmark's first calls (:meth:`_take_sides`),
        #: by its name, until :meth:`_with_sides` judges it.
        self._taken: dict[str, object] = {}
        #: pytest-benchmark's ``extra_info`` and ``group`` (compat.py), kept in the results JSON.
        self.extra_info: dict[str, object] = {}
        self.group: str | None = None

    def _start(self, fn: object, what: str) -> None:
        """Called once, with a callable: else the test fails in one line."""
        __tracebackhide__ = True
        node = self._item.nodeid
        if self._used:
            pytest.fail(
                f"{node}: {what} was called a second time; a benchmark times one function once "
                "(split it into separate tests)",
                pytrace=False,
            )
        if not callable(fn):
            pytest.fail(f"{node}: {what} needs a callable, got {fn!r}", pytrace=False)
        self._used = True

    def _take_place(
        self,
        fn: object,
        args: tuple[object, ...],
        kwargs: Mapping[str, object],
        setup: Callable[[], Prepared | None] | None = None,
        teardown: Callable[..., object] | None = None,
    ) -> None:
        """A test written for pytest-benchmark runs where the arrays it is called with live
        (devices/array_device.py): ``benchmark(fn, x)`` with a torch float32 tensor on
        ``cuda:0`` is a benchmark of torch-cuda0 in f32, synchronised and timed on that
        device's events, its baseline keyed by torch's version; a call without arrays stays on
        python-cpu. An array on a device this run cannot open fails the test, naming it.
        ``pedantic(fn, setup=...)`` whose arrays only its setup makes: the setup is called once
        more, as for one more round (its teardown after), and the arrays it made are read."""
        __tracebackhide__ = True
        if not self._case.benchmark_style:
            return
        place = call_place(fn, args, kwargs)
        if place is None and setup is not None:
            made = setup()
            if made is not None:
                place = call_place(fn, *made)
                if teardown is not None:
                    teardown(*made[0], **made[1])
        if place is None:
            return
        entry = self._state.registry.of_place(place)
        if isinstance(entry, str):
            pytest.fail(f"{self._item.nodeid}: {entry}", pytrace=False)
        assert entry.device is not None
        self._case = replace(self._case, entry=entry, dtype=place.dtype)
        self.device = entry.device
        self.dtype = place.dtype

    def work(
        self,
        flops: float | Work | None = None,
        bytes: float | None = None,
        shape: str | None = None,
    ) -> None:
        """Declare what one call of the benchmarked function computes and moves: floating-point
        operations and bytes read or written in memory (or a ``Work`` from the helpers in
        ``pytest_burnperf.core.records.roofline_figures``), and optionally the shape to show. The
        report then shows the shape, GFLOP/s, GB/s and % of peak (a run that measures)."""
        where = f"{self._item.nodeid}: perf.work"
        if shape is not None and not isinstance(shape, str):
            pytest.fail(
                f"{where}: shape must be a string such as '256x256', got {shape!r}", pytrace=False
            )
        if isinstance(flops, Work):
            if bytes is not None:
                pytest.fail(f"{where}: give a Work or flops=/bytes=, not both", pytrace=False)
            self._work = flops if shape is None else replace(flops, shape=shape)
            return
        try:
            self._work = Work(flops=flops, bytes=bytes, shape=shape)
        except WorkError as exc:
            pytest.fail(f"{where}: {exc}", pytrace=False)

    def __call__(self, fn: Callable[..., T], *args: object, **kwargs: object) -> T:
        __tracebackhide__ = True  # an error inside fn shows the user's frames, not the plugin's
        self._start(fn, "perf()")
        self._take_place(fn, args, kwargs)

        def again() -> T:
            __tracebackhide__ = True
            return fn(*args, **kwargs)

        self._rerun = lambda: (again, None)
        return self._call(fn, args, kwargs)

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
        """Time ``rounds`` rounds of ``iterations`` calls, each round after an untimed ``setup``
        and before an untimed ``teardown`` (called with the round's arguments, as in
        pytest-benchmark).

        ``setup`` may return ``(args, kwargs)`` for that round. Without ``rounds`` the
        benchmark is sampled: after one warm-up round (unless ``warmup_rounds`` is given), at
        least its ``samples`` setting's rounds, more for short calls (as many as fill
        ``samples`` x ``min_time``, up to ``max_samples``); given ``rounds`` are honoured as
        written (``rounds=1`` is timed but cannot be judged: the verdict says so). What a
        sample means (rounds given or not, iterations, warm-up, setup) is kept with the
        baseline: one recorded otherwise is not compared. Without ``--perf``: one round.
        """
        __tracebackhide__ = True
        where = f"{self._item.nodeid}: perf.pedantic"
        sampled = rounds is None
        rounds = self.settings.samples if rounds is None else rounds
        if warmup_rounds is None:
            warmup_rounds = 1 if sampled else 0
        for name, value, low in (
            ("rounds", rounds, 1),
            ("iterations", iterations, 1),
            ("warmup_rounds", warmup_rounds, 0),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                pytest.fail(
                    f"{where}({name}={value!r}): must be a whole number >= {low}", pytrace=False
                )
        if setup is not None and (args or kwargs):
            pytest.fail(
                f"{where}: give either setup (returning args, kwargs) or args/kwargs",
                pytrace=False,
            )
        checked = None
        if setup is not None:
            if not callable(setup):
                pytest.fail(f"{where}: setup must be callable, got {setup!r}", pytrace=False)
            checked = checked_setup(setup, where)
        if teardown is not None and not callable(teardown):
            pytest.fail(f"{where}: teardown must be callable, got {teardown!r}", pytrace=False)
        if checked is not None and iterations > 1:
            pytest.fail(
                f"{where}: iterations={iterations} with a setup function would reuse one "
                "round's inputs; use iterations=1",
                pytrace=False,
            )
        if self.settings.timer == "graph":
            pytest.fail(
                f"{where}: timer='graph' replays one captured sequence of calls on the same "
                "inputs, while pedantic rounds get their own setup and inputs; use perf(fn, "
                "*args) for graph timing, or timer='device' for pedantic rounds",
                pytrace=False,
            )
        self._start(fn, "perf.pedantic()")
        self._take_place(fn, args, kwargs or {}, checked, teardown)
        self._pedantic = PedanticShape(
            rounds=None if sampled else rounds,
            iterations=iterations,
            warmup_rounds=warmup_rounds,
            setup=checked is not None,
        )
        self._rerun = pedantic_call(fn, tuple(args), kwargs, checked, teardown, iterations)
        self._repeat = False
        return self._pedantic_call(fn, tuple(args), kwargs, checked, teardown, self._pedantic)

    def _call(self, fn: Callable[..., T], args: tuple[object, ...], kwargs: dict[str, object]) -> T:
        """What this kind does with ``perf(fn, *args, **kwargs)``: one untimed call."""
        __tracebackhide__ = True
        return call_once(self.device, fn, args, kwargs)

    def _pedantic_call(
        self,
        fn: Callable[..., T],
        args: tuple[object, ...],
        kwargs: dict[str, object] | None,
        setup: Callable[[], Prepared | None] | None,
        teardown: Callable[..., object] | None,
        shape: PedanticShape,
    ) -> T:
        """What this kind does with a checked ``perf.pedantic``: one untimed round."""
        __tracebackhide__ = True
        return call_once(self.device, fn, args, kwargs, setup, teardown)

    def _benchmarked(self) -> Benchmarked:
        """This benchmark as judging and recording read it, now (after the call chose its
        device, with the ``extra_info`` and ``group`` the test set)."""
        return Benchmarked(
            state=self._state,
            item=self._item,
            case=self._case,
            module=self._module,
            key=self._key,
            settings=self.settings,
            device=self.device,
            extra_info=dict(self.extra_info),
            group=self.group,
        )

    def _finished(self, result: Result) -> Result:
        """``result`` with what the instruments beside the judging one measured (memory per
        call, instruments/registry.BESIDE: of the first calls, judged now) and --perf-profile's
        profile: the calls are warm, the verdict of its time or counts made, the test not yet
        settled."""
        __tracebackhide__ = True
        return self._profiled(self._with_sides(result))

    def _memory_not_tracked(self) -> str:
        """Why this benchmark's memory per call is not tracked beside it, or empty."""
        if not self._state.run.memory:
            return "--perf-memory off"
        if self._pedantic is not None and self._pedantic.rounds:
            return f"perf.pedantic(rounds={self._pedantic.rounds}) makes no calls beyond its rounds"
        return ""

    def _peak_from_tracking(self) -> bool:
        """Whether the timed calls leave their peak memory to the calls tracked beside them:
        where memory is tracked and the device's peak meter is the tracker itself
        (Device.peak_is_tracked), one tracking of the benchmark instead of two."""
        tracked = getattr(self.device, "peak_is_tracked", None)
        self._peak_deferred = (
            not self._memory_not_tracked() and callable(tracked) and bool(tracked())
        )
        return self._peak_deferred

    def _take_sides(self) -> None:
        """Each instrument beside that measures this benchmark here (registry.BESIDE: memory
        per call) takes its first calls, before the judging instrument makes any: the calls it
        tracks are then the same calls of the benchmark's history in every run, whatever
        number of calls the clock needed on this host. Called where the judging process
        starts calling the benchmark; :meth:`_with_sides` judges what they took."""
        __tracebackhide__ = True
        if self._memory_not_tracked() or self._rerun is None:
            return
        where = situation(self._state, self.device, self.settings, self._item.nodeid)
        active = getattr(self.device, "active", contextlib.nullcontext)
        for instrument in registry.BESIDE:
            if instrument.applies(where) and instrument.name not in self._taken:
                with self.device.threads(self.settings.threads), active():
                    self._taken[instrument.name] = instrument.take(
                        self.device, self._rerun, threads=self.settings.threads
                    )

    def _with_sides(self, result: Result) -> Result:
        """``result`` with the verdict of each instrument beside that measures it here
        (registry.BESIDE: memory per call) on what it took of the first calls
        (:meth:`_take_sides`, taken now where nothing took them before): not for
        ``perf.pedantic`` with ``rounds`` given, whose calls are exactly the rounds asked; and
        with its peak memory where the timed calls left it to the tracked ones."""
        __tracebackhide__ = True
        why = self._memory_not_tracked()
        if why or self._rerun is None:
            gaps: dict[str, str] = {}
            for instrument in registry.BESIDE:
                said = instrument.unchecked(self.settings, why) if why else None
                if said is not None:
                    self._state.notes.append(f"{self._item.nodeid}: {said}")
                if why and self._state.run.memory:  # not when the user turned them off
                    gaps[instrument.side.field] = why
            return replace(result, not_measured=gaps) if gaps else result
        self._take_sides()
        peak: int | None = None
        where = situation(self._state, self.device, self.settings, self._item.nodeid)
        base = result.baseline
        for instrument in registry.BESIDE:
            if not instrument.applies(where):
                continue
            tracked = instrument.beside(
                self._taken.pop(instrument.name),
                fingerprint=result.fingerprint,
                kept=None if base is None else base.sides.get(instrument.side.field),
                settings=self.settings,
            )
            if isinstance(tracked, str):
                said = instrument.unchecked(self.settings, tracked)
                if said is not None:
                    self._state.notes.append(f"{self._item.nodeid}: {said}")
                result = replace(
                    result, not_measured={**result.not_measured, instrument.side.field: tracked}
                )
                continue
            result = replace(result, sides={**result.sides, instrument.side.field: tracked.verdict})
            if tracked.peak is not None:  # its tracker is the device's peak meter
                peak = tracked.peak
        return self._with_peak(result, peak) if self._peak_deferred else result

    def _with_peak(self, result: Result, peak: int | None) -> Result:
        """``result`` whose timed sample left its peak memory to the tracked calls, with the
        largest peak of those (``peak``), or where none was tracked one more call under the
        device's meter."""
        if peak is None and self._rerun is not None:
            call, after = self._rerun()
            with self.device.threads(self.settings.threads):
                peak = self.device.peak_memory(call)
            if after is not None:
                after()
        timed = result.time if result.time is not None else result
        sample = replace(timed.sample, peak_memory=peak)
        if result.time is not None:
            return replace(result, time=replace(result.time, sample=sample))
        return replace(result, sample=sample)

    def _profiled(self, result: Result) -> Result:
        """--perf-profile: ``result`` with its profile, where this run profiles it (once more
        under a profiler, after its samples or counts; profile_rerun.profiled)."""
        if self._rerun is None:
            return result
        return profiled(
            self._state,
            self.device,
            self.settings.threads,
            result,
            self._rerun,
            repeat=self._repeat,
        )


class SmokePerf(PerfBase):
    """The ``perf`` fixture without --perf: calls the function once, untimed, and returns its
    result, so the benchmark's own checks run (its arguments to ``perf``, ``perf.pedantic``
    and ``perf.work`` checked as a measuring run checks them); nothing is measured, judged or
    written."""

    def _start(self, fn: object, what: str) -> None:
        __tracebackhide__ = True
        super()._start(fn, what)
        keep_smoked(self._state, self._item.nodeid)
