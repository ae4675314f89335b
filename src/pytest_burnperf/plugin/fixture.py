"""The ``perf`` fixture's objects: :class:`Perf` (time, judge, record) and :class:`SmokePerf` (run
once, untimed, without --perf), and what they hand to reports (JUnit properties)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import pytest

from pytest_burnperf.core.assess import (
    HostEvidence,
    assess,
    baseline_runs,
    note_paired_host,
    own_threads,
)
from pytest_burnperf.core.results import Result
from pytest_burnperf.core.roofline_figures import Work, WorkError
from pytest_burnperf.core.stats import median_halfwidth, precision_goal, round_sampling
from pytest_burnperf.core.text import escape, escape_strings
from pytest_burnperf.core.timing import (
    SAMPLE_TIMERS,
    GraphCaptureError,
    Sample,
    measure,
    measure_pedantic,
    settles,
)
from pytest_burnperf.core.verdict import (
    INCONCLUSIVE,
    NO_BASELINE,
    REGRESSED,
    Policy,
    failure_message,
    judge,
)
from pytest_burnperf.devices.base import DeviceBase, graph_unsupported, timer_messages
from pytest_burnperf.host import activity, threads
from pytest_burnperf.host import probe as _probe
from pytest_burnperf.host.activity import Window
from pytest_burnperf.plugin import counting
from pytest_burnperf.plugin.session import STATE, Case, PerfState
from pytest_burnperf.report.pytest_benchmark import legacy_keys
from pytest_burnperf.runs.same_session import summaries
from pytest_burnperf.storage.baselines import BaselineError

if TYPE_CHECKING:
    from pytest_burnperf.core.assess import HostEvidence
    from pytest_burnperf.core.results import Result
    from pytest_burnperf.core.roofline_figures import Work
    from pytest_burnperf.host.activity import Window

T = TypeVar("T")


def module_and_key(item: pytest.Item, rootpath: Path) -> tuple[str, str]:
    try:
        module = Path(os.path.relpath(item.path, rootpath)).as_posix()
    except ValueError:  # another drive on Windows
        module = item.path.name
    if module.startswith("../"):
        module = item.path.name
    key = item.nodeid.split("::", 1)[1] if "::" in item.nodeid else item.name
    return module, key


def checked_setup(setup: Callable[[], Any], where: str) -> Callable[[], Any]:
    """``setup`` whose result is None or ``(args, kwargs)``: anything else fails the test in one
    line naming the benchmark, not with a TypeError from inside the timing loop."""

    def run() -> Any:
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
            return prepared
        pytest.fail(
            f"{where}: setup must return None or (args, kwargs) -- a tuple of positional "
            f"arguments and a dict of keyword arguments -- got {type(prepared).__name__} "
            f"{escape(repr(prepared))[:80]}",
            pytrace=False,
        )

    return run


def start_once(perf: Any, fn: object, what: str) -> None:
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
        #: pytest-benchmark's ``extra_info`` and ``group`` (compat.py), kept in the results JSON.
        self.extra_info: dict[str, Any] = {}
        self.group: str | None = None

    def _start(self, fn: object, what: str) -> None:
        __tracebackhide__ = True
        start_once(self, fn, what)
        self._state.smoked.add(self._item.nodeid)

    def work(self, flops: Any = None, bytes: Any = None, shape: Any = None) -> None:
        """Accepted and ignored: nothing is timed in a smoke run."""

    def __call__(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        __tracebackhide__ = True
        self._start(fn, "perf()")
        result = fn(*args, **kwargs)
        self.device.sync()
        return result

    def pedantic(
        self,
        fn: Callable[..., T],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        *,
        setup: Callable[[], Any] | None = None,
        teardown: Callable[..., Any] | None = None,
        rounds: int | None = None,
        iterations: int = 1,
        warmup_rounds: int = 0,
    ) -> T:
        """One round: ``setup`` (if any), one call, ``teardown`` (if any)."""
        __tracebackhide__ = True
        del rounds, iterations, warmup_rounds
        self._start(fn, "perf.pedantic()")
        a, k = tuple(args), dict(kwargs or {})
        if setup is not None:
            prepared = checked_setup(setup, f"{self._item.nodeid}: perf.pedantic")()
            if prepared is not None:
                a, k = tuple(prepared[0]), dict(prepared[1])
        result = fn(*a, **k)
        self.device.sync()
        if teardown is not None:
            teardown(*a, **k)
        return result


#: What Perf._counted returns when the clock measures the benchmark.
_TIMED = object()


class Perf:
    """The ``perf`` fixture: call it once per test with the function to benchmark."""

    def __init__(
        self,
        state: PerfState,
        item: pytest.Item,
        case: Case,
        module: str,
        key: str,
        baseline: dict[str, Any] | None,
        legacy: bool = False,
    ) -> None:
        assert case.entry is not None and case.entry.device is not None
        self._state = state
        self._item = item
        self._case = case
        self._module = module
        self._key = key
        self._baseline = baseline
        #: The baseline comes from the directory of the machine id before hardware classes.
        self._legacy = legacy
        self._used = False
        self._work: Work | None = None
        #: Thread pools running more threads than the benchmark's limit (host/threads.py).
        self._pools: list[str] = []
        #: pytest-benchmark's ``extra_info`` and ``group`` (compat.py), kept in the results JSON.
        self.extra_info: dict[str, Any] = {}
        self.group: str | None = None
        self.device = case.entry.device
        self.dtype = case.dtype
        self.settings = state.settings_for(case.spec)

    def work(
        self,
        flops: float | Work | None = None,
        bytes: float | None = None,
        shape: str | None = None,
    ) -> None:
        """Declare what one call of the benchmarked function computes and moves: floating-point
        operations and bytes read or written in memory (or a ``Work`` from the helpers in
        ``pytest_burnperf.core.roofline_figures``), and optionally the shape to show. The report then shows
        the shape, GFLOP/s, GB/s and % of peak."""

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

    def _start(self, fn: object, what: str) -> None:
        __tracebackhide__ = True
        start_once(self, fn, what)

    def _clock(self) -> tuple[Any, Callable[[], None] | None, Any]:
        """The timer this benchmark's settings pick on this device, the L2 flush (or None), and
        with timer='graph' the device's graph capture (collection skipped the devices that
        have none)."""
        s = self.settings
        timer = self.device.timer() if s.timer in ("device", "graph") else None
        flush = self.device.l2_flusher() if s.flush_l2 else None
        capture = None
        if s.timer == "graph":
            capture = getattr(self.device, "graph_capture", lambda: None)()
            if capture is None or timer is None:
                pytest.skip(graph_unsupported(self.device) or f"{self.device.id} has no clock")
        return timer, flush, capture

    def __call__(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        __tracebackhide__ = True  # an error inside fn shows the user's frames, not the plugin's

        self._start(fn, "perf()")
        counted = self._counted(lambda: (lambda: fn(*args, **kwargs), None))
        if counted is not _TIMED:
            return cast(T, counted)
        s = self.settings
        pooled = self._state.sampling_rounds
        goal = precision_goal(s.threshold, pooled)
        first, most = round_sampling(s.samples, s.max_samples, pooled)
        return cast(
            T,
            self._measure(
                measure,
                fn,
                args,
                kwargs,
                samples=first,
                warmup=s.warmup,
                min_time=s.min_time,
                precise=lambda values: median_halfwidth(values) <= goal,
                max_samples=most,
                max_time=s.max_time,
                settle=settles(self.device.kind, s.warmup),
                turns=self._state.turn_side,
            ),
        )

    def _counted(self, make_call: Callable[[], tuple[Callable[[], Any], Any]]) -> Any:
        """Counts instead of the clock: in a counted process, count the calls; where counts
        alone judge this benchmark, call it once, untimed, and judge its counts. Else
        :data:`_TIMED` (the clock measures it)."""
        __tracebackhide__ = True
        state = self._state
        if state.count_dir is not None:
            return counting.count_here(
                state, self._item.nodeid, self.device, self.settings, make_call
            )
        if counting.counts_only(state, self.device.kind, self._item.nodeid):
            call, after = make_call()
            result = call()
            self.device.sync()
            if after is not None:
                after()
            counting.judge(self, None, make_result, junit_properties)
            return result
        return _TIMED

    def _measure(self, sampler: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``sampler`` (timing.measure or measure_pedantic) with this benchmark's threads,
        clock, L2 flush and memory meter, watching the host; judge the sample; return the
        function's result."""
        __tracebackhide__ = True
        import time

        probe = self._state.probe_for(self.device)
        single = self.device.kind == "cpu" and self.settings.threads == 1
        active = getattr(self.device, "active", contextlib.nullcontext)
        with self.device.threads(self.settings.threads), active():
            timer, flush, capture = self._clock()
            if capture is not None:
                kwargs["capture"] = capture
            marks: list[activity.Snapshot] = []
            gpu = getattr(self.device, "gpu_watch", lambda: None)()
            if gpu is not None and self._state.turn_side is not None:
                gpu.track_others = False  # the pair's other side computes on this GPU too

            def watch() -> None:
                marks.append(activity.snapshot())
                if gpu is not None:
                    gpu.mark()

            failed = ""
            try:
                result, sample = sampler(
                    *args,
                    **kwargs,
                    sync=self.device.sync,
                    timer=timer,
                    flush=flush,
                    # peak memory is the measuring process's; an extra round's would be dropped
                    meter=self.device.peak_memory if self._state.worker_out is None else None,
                    cpu_clock=time.process_time_ns,
                    watch=watch,
                )
            except GraphCaptureError as exc:
                failed = f"{self._key} on {self.device.id} (timer='graph'): {exc}"
            if failed:  # outside the except: the message alone, without chained tracebacks
                pytest.fail(failed, pytrace=False)
            host = activity.window(
                *activity.spans(marks),
                sample.cpu_share if single else None,
                # the watch read the slowdown reasons with the clocks; other devices say it here
                gpu_slowdown=self.device.gpu_slowdown() if gpu is None else None,
                gpu=None if gpu is None else gpu.fields(),
            )
            limit = self.settings.threads
            if (
                self.device.kind == "cpu"
                and limit
                and host.seconds >= activity.MIN_WINDOW_S
                and host.own_cpus > limit + threads.SLACK_CPUS
            ):
                self._pools = threads.pools(limit)  # inside the limit: the pools it missed

            fingerprint = escape_strings(self.device.fingerprint())  # as a baseline file holds it

        self._state.messages.extend(f"{self._item.nodeid}: {m}" for m in timer_messages(timer))
        self._judge(sample, fingerprint, host, probe)
        return result

    def pedantic(
        self,
        fn: Callable[..., T],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        *,
        setup: Callable[[], Any] | None = None,
        teardown: Callable[..., Any] | None = None,
        rounds: int | None = None,
        iterations: int = 1,
        warmup_rounds: int = 0,
    ) -> T:
        """Time ``rounds`` rounds of ``iterations`` calls, each round after an untimed ``setup``
        and before an untimed ``teardown`` (called with the round's arguments, as in
        pytest-benchmark).

        ``setup`` may return ``(args, kwargs)`` for that round. ``rounds`` defaults to the
        benchmark's ``samples`` setting; ``rounds=1`` is timed but cannot be judged (the verdict
        says so).
        """
        __tracebackhide__ = True

        where = f"{self._item.nodeid}: perf.pedantic"
        rounds = self.settings.samples if rounds is None else rounds
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
        if setup is not None:
            if not callable(setup):
                pytest.fail(f"{where}: setup must be callable, got {setup!r}", pytrace=False)
            setup = checked_setup(setup, where)
        if teardown is not None and not callable(teardown):
            pytest.fail(f"{where}: teardown must be callable, got {teardown!r}", pytrace=False)
        if setup is not None and iterations > 1:
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

        def make_call() -> tuple[Callable[[], Any], Callable[[], Any] | None]:
            a, k = tuple(args), dict(kwargs or {})
            if setup is not None:
                prepared = setup()
                if prepared is not None:
                    a, k = tuple(prepared[0]), dict(prepared[1])

            def call() -> Any:
                out = None
                for _ in range(iterations):
                    out = fn(*a, **k)
                return out

            return call, (None if teardown is None else lambda: teardown(*a, **k))

        counted = self._counted(make_call)
        if counted is not _TIMED:
            return cast(T, counted)
        result = self._measure(
            measure_pedantic,
            fn,
            args,
            kwargs,
            setup=setup,
            teardown=teardown,
            rounds=rounds,
            iterations=iterations,
            warmup_rounds=warmup_rounds,
        )
        return cast(T, result)

    def _judge(
        self,
        sample: Any,
        fingerprint: dict[str, Any],
        host: Window,
        probe: dict[str, Any] | None,
    ) -> None:

        state = self._state
        node = self._item.nodeid
        if state.worker_out is not None:  # an extra round: keep the samples for the parent
            state.worker_samples[node] = {
                "values": list(sample.values),
                "host": host.as_dict(),
                "probe": probe,
                "loops": sample.loops,
                "timer": sample.timer,
                "l2_flush": sample.l2_flush,
            }
            return
        s = self.settings
        policy = Policy(alpha=s.alpha, threshold=s.threshold, comparisons=state.comparisons)
        runs = [*state.worker_runs.get(node, []), list(sample.values)]
        evidence = _host_evidence(state, node, host, probe, self._baseline)
        verdict = assess(
            self._baseline,
            runs,
            fingerprint=fingerprint,
            timer=sample.timer,
            l2_flush=sample.l2_flush,
            policy=policy,
            legacy=self._legacy,
            host=None if state.trust_host else evidence,
        )
        if s.flush_l2 and not sample.l2_flush:
            verdict = replace(
                verdict, notes=(*verdict.notes, f"flush_l2: {self.device.id} has no L2 flush")
            )
        if self.device.kind == "cpu":
            verdict = own_threads(verdict, evidence.windows, s.threads, self._pools)
        result = make_result(
            self,
            fingerprint=fingerprint,
            sample=sample,
            verdict=verdict,
            runs=runs,
            baseline=self._baseline,
            baseline_runs=_as_runs(self._baseline),
            work=self._work,
            peaks=None
            if self._work is None
            else state.peaks_for(self.device, self._case.dtype, s.threads),
            host=tuple(evidence.windows),
            probe=None if evidence.probe is None else dict(evidence.probe),
        )
        if counting.by_counts(state, self.device.kind, node):  # --perf-measure both: counts judge
            counting.judge(self, result, make_result, junit_properties)
            return
        fallback = counting.fallback_note(state, node)
        if fallback is not None:  # too slow to count: the clock judges it
            verdict = replace(verdict, notes=(*verdict.notes, fallback))
            result = replace(result, verdict=verdict)
        state.results[node] = result
        self._item.user_properties.extend(junit_properties(result))
        if state.update:
            from pytest_burnperf.core.verdict import recording_floor

            # named only where its own rounds show the noise: with few rounds the prior alone
            # puts the floor above the threshold, which more rounds, not a quieter host, cure
            floor = recording_floor(runs, policy)
            own = recording_floor(runs, replace(policy, prior=None))
            if floor is not None and own is not None and min(floor, own) > policy.threshold:
                state.noisy_records[node] = floor
            return
        if verdict.status == REGRESSED:
            pytest.fail(failure_message(self._key, verdict, policy), pytrace=False)
        if state.strict and verdict.status in (INCONCLUSIVE, NO_BASELINE):
            pytest.fail(
                f"{self._key}: {verdict.status} ({verdict.reason}); --perf-strict fails it",
                pytrace=False,
            )


class ComparePerf(SmokePerf):
    """The ``perf`` fixture of a same-session comparison (``--perf-against``,
    ``--perf-versions``): the rounds measured the benchmark in every environment before the
    tests ran, so here the function is called once, untimed (its result and the test's own
    checks still count), and the verdict judges the candidate's runs against the reference's,
    paired by round."""

    def __init__(self, state: PerfState, item: pytest.Item, case: Case, module: str, key: str):
        super().__init__(state, item, case)
        self._case = case
        self._module = module
        self._key = key
        self.settings = state.settings_for(case.spec)

    def _start(self, fn: object, what: str) -> None:
        __tracebackhide__ = True
        start_once(self, fn, what)

    def __call__(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        __tracebackhide__ = True
        result = super().__call__(fn, *args, **kwargs)
        self._judge()
        return result

    def pedantic(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        __tracebackhide__ = True
        result = super().pedantic(fn, *args, **kwargs)
        self._judge()
        return result

    def _judge(self) -> None:
        __tracebackhide__ = True

        state = self._state
        plan, got = state.plan, state.measured
        assert plan is not None
        node = self._item.nodeid
        if counting.counts_only(state, self.device.kind, node):
            counting.judge_pair(self, None, make_result, junit_properties)
            return
        ref = [] if got is None else got.of(plan.reference, node)
        cur = [] if got is None else got.of(plan.candidate, node)
        if not ref or not cur:
            why = "; ".join(got.failures.values()) if got is not None else ""
            pytest.fail(
                f"{node}: not compared with {plan.reference}: "
                + (why or "no round measured it in every environment"),
                pytrace=False,
            )
        assert got is not None
        s = self.settings
        policy = Policy(
            alpha=s.alpha, threshold=s.threshold, comparisons=state.comparisons, paired=True
        )
        windows = [
            w
            for label in plan.refs
            for d in got.host.get(label, {}).get(node, [])
            if (w := Window.from_dict(d)) is not None
        ]
        trust = state.trust_host
        left_out: dict[int, str] = {}
        if not trust:
            ref, cur, left_out = got.clean_pairs(plan.reference, plan.candidate, node)
        verdict = judge(ref, cur, policy)
        if left_out:
            rounds = ", ".join(str(i + 1) for i in sorted(left_out))
            first = left_out[min(left_out)]
            verdict = replace(
                verdict,
                notes=(
                    *verdict.notes,
                    f"round(s) {rounds} left out of the verdict: host busy ({first})",
                ),
            )
        elif not trust:
            verdict = note_paired_host(
                verdict, got.busy_rounds((plan.reference, plan.candidate), node)
            )
        last = got.last.get(plan.candidate, {}).get(node, {})
        sample = Sample(
            values=tuple(v for r in cur for v in r),
            loops=int(last.get("loops", 1)),
            warmup_calls=0,
            timer=str(last.get("timer")) if last.get("timer") in SAMPLE_TIMERS else "host",
            l2_flush=bool(last.get("l2_flush", False)),
        )
        result = make_result(
            self,
            fingerprint=escape_strings(self.device.fingerprint()),
            sample=sample,
            verdict=verdict,
            runs=cur,
            baseline_runs=tuple(tuple(r) for r in ref),
            host=tuple(windows),
            versions=tuple(summaries(plan.refs, got, node)),
            reference=plan.reference,
            candidate=plan.candidate,
        )
        if counting.by_counts(state, self.device.kind, node):  # --perf-measure both
            counting.judge_pair(self, result, make_result, junit_properties)
            return
        fallback = counting.fallback_note(state, node)
        if fallback is not None:
            result = replace(result, verdict=replace(verdict, notes=(*verdict.notes, fallback)))
            verdict = result.verdict
        state.results[node] = result
        self._item.user_properties.extend(junit_properties(result))
        if verdict.status == REGRESSED:
            pytest.fail(
                failure_message(
                    self._key, verdict, policy, labels=(plan.reference, plan.candidate)
                ),
                pytrace=False,
            )
        if state.strict and verdict.status == INCONCLUSIVE:
            pytest.fail(
                f"{self._key}: {verdict.status} ({verdict.reason}); --perf-strict fails it",
                pytrace=False,
            )


def _as_runs(baseline: dict[str, Any] | None) -> tuple[tuple[float, ...], ...]:
    if baseline is None:
        return ()

    return tuple(tuple(r) for r in baseline_runs(baseline))


def make_result(perf: Perf | ComparePerf, **fields: Any) -> Result:
    """The :class:`Result` of ``perf``'s benchmark: its identity from the fixture object, the
    measurement and verdict from ``fields`` (``runs`` as lists, ``baseline`` None by default)."""

    case = perf._case
    assert case.entry is not None
    runs = fields.pop("runs")
    fields.setdefault("baseline", None)
    params, param = test_params(perf._item, case)
    return Result(
        nodeid=perf._item.nodeid,
        module=perf._module,
        key=perf._key,
        benchmark=perf._key.split("[", 1)[0],
        device_id=case.entry.id,
        kind=case.entry.kind,
        library=case.entry.library,
        dtype=case.dtype,
        settings=perf.settings,
        runs=tuple(tuple(r) for r in runs),
        extra_info=dict(perf.extra_info),
        group=perf.group,
        sampling_rounds=perf._state.sampling_rounds,
        params=params,
        param=param,
        **fields,
    )


def test_params(item: pytest.Item, case: Case) -> tuple[dict[str, Any] | None, str | None]:
    """The test's parameters and parameter id, as pytest-benchmark's JSON gives them: a
    ``@pytest.mark.perf`` test's device (by its id), dtype and own parameters; a test written for
    pytest-benchmark its own parameters only (its ``cpu`` case is this plugin's), None for one
    without. Values JSON cannot hold are given by ``repr``."""
    spec = getattr(item, "callspec", None)
    given = dict(spec.params) if spec is not None else {}
    given.pop("_burnperf_case", None)
    params: dict[str, Any] = {}
    if not case.benchmark_style:
        params = {"device": case.label, "dtype": case.dtype}
    for name, value in given.items():
        if isinstance(value, DeviceBase):
            params[name] = value.id
        elif value is None or isinstance(value, (str, int, float, bool)):
            params[name] = value
        else:
            params[name] = repr(value)
    param = spec.id if spec is not None else ""
    if not params:
        return None, None
    return params, param or None


def junit_properties(result: Result) -> list[tuple[str, object]]:
    """The verdict as JUnit XML ``<property>`` elements (what CI systems show per test)."""
    v = result.verdict
    props: list[tuple[str, object]] = [
        ("perf_verdict", v.status),
        ("perf_median_s", f"{v.current_median:.6g}"),
    ]
    if v.baseline_median is not None:
        props.append(("perf_baseline_median_s", f"{v.baseline_median:.6g}"))
    if v.change_pct is not None:
        props.append(("perf_change_pct", f"{v.change_pct:+.2f}"))
    if v.ratio_low is not None and v.ratio_high is not None:
        low, high = 100 * (v.ratio_low - 1), 100 * (v.ratio_high - 1)
        props.append(("perf_change_ci95_pct", f"{low:+.2f},{high:+.2f}"))
    if v.p_value is not None:
        props.append(("perf_p_value", f"{v.p_value:.3g}"))
    if v.min_detectable is not None:
        props.append(("perf_min_detectable_pct", f"{100 * v.min_detectable:.2f}"))
    if v.reason:
        props.append(("perf_reason", v.reason))
    return props


def _host_evidence(
    state: PerfState,
    node: str,
    host: Window,
    probe: dict[str, Any] | None,
    baseline: dict[str, Any] | None,
) -> HostEvidence:
    """This benchmark's host windows and probe over all rounds, and the baseline's."""

    windows = [w for d in state.worker_host.get(node, []) if (w := Window.from_dict(d)) is not None]
    windows.append(host)
    probes = [p for p in state.worker_probes.get(node, []) if p]
    if probe:
        probes.append(probe)
    old_windows: list[Window] = []
    old_probe = None
    if baseline is not None:
        recorded = baseline.get("host")
        for d in recorded if isinstance(recorded, list) else ():
            w = Window.from_dict(d)
            if w is not None:
                old_windows.append(w)
        old_probe = baseline.get("host_probe")
    return HostEvidence(
        windows=tuple(windows),
        baseline_windows=tuple(old_windows),
        probe=_probe.pooled(probes),
        baseline_probe=old_probe if isinstance(old_probe, dict) else None,
    )


def make_perf(request: pytest.FixtureRequest, case: Case) -> Perf | SmokePerf:
    """The ``perf`` object of one benchmark: timing and judging under ``--perf``, a single untimed
    call in smoke mode. Its baseline is loaded here; a bad baseline file fails this test only."""

    state = request.config.stash[STATE]
    assert case.entry is not None and case.entry.device is not None
    if not state.enabled:
        case.entry.device.reseed(0)
        return SmokePerf(state, request.node, case)
    module, key = module_and_key(request.node, state.rootpath)
    if state.plan is not None:  # same-session comparison: no baseline is read
        case.entry.device.reseed(0)
        return ComparePerf(state, request.node, case, module, key)
    legacy = False
    problem: BaselineError | None = None
    try:
        baseline = state.store.get(module, key)
        if baseline is None and case.benchmark_style:  # recorded when `[cpu]` was in its id
            for old in legacy_keys(key):
                baseline = state.store.get(module, old)
                if baseline is not None:
                    state.renamed_baselines.setdefault(module, {})[key] = old
                    break
        if baseline is None and state.legacy_store is not None:
            baseline = state.legacy_store.get(module, key)
            legacy = baseline is not None
    except BaselineError as exc:
        problem = exc
    if problem is not None:  # failed outside the except block: no chained exception shown
        pytest.fail(
            f"{request.node.nodeid}: {problem}. The file was left untouched; fix it, or delete it "
            "and record new baselines with --perf-update",
            pytrace=False,
        )
    case.entry.device.reseed(0)
    return Perf(state, request.node, case, module, key, baseline, legacy)
