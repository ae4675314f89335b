"""The ``perf`` fixture of a measuring run: warm-up, calibration and samples on the device's clock
(or the counted measure in a counted process), then the verdict against the stored baselines with
the host's evidence."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

import pytest

from pytest_burnperf.core.clocks import GraphCaptureError, settles
from pytest_burnperf.core.judging.assess import HostEvidence, assess, own_threads
from pytest_burnperf.core.judging.between_runs import noise_source
from pytest_burnperf.core.judging.stats import median_halfwidth, precision_goal, round_sampling
from pytest_burnperf.core.judging.verdict import Policy, failure_message
from pytest_burnperf.core.options.pedantic_shape import PedanticShape
from pytest_burnperf.core.text import escape_strings
from pytest_burnperf.core.timing import Prepared, measure, measure_pedantic
from pytest_burnperf.devices.event_timer import timer_messages
from pytest_burnperf.host import activity, threads
from pytest_burnperf.host import probe as _probe
from pytest_burnperf.host.activity import Window
from pytest_burnperf.instruments.instrument import Clock
from pytest_burnperf.plugin.measuring import side_processes
from pytest_burnperf.plugin.measuring.counts import counting, counts_judging
from pytest_burnperf.plugin.measuring.instrument_choice import choose, open_clock
from pytest_burnperf.plugin.measuring.perf_base import PerfBase, T
from pytest_burnperf.plugin.measuring.profile_rerun import profile_here
from pytest_burnperf.plugin.measuring.result_record import (
    as_runs,
    keep_noisy,
    keep_round_record,
    keep_single_round,
    make_result,
    settle,
)
from pytest_burnperf.plugin.session.cases import Case
from pytest_burnperf.plugin.session.perf_state import PerfState

if TYPE_CHECKING:
    from pytest_burnperf.core.records.stored_baseline import StoredBaseline


class Perf(PerfBase):
    """The ``perf`` fixture of a run that measures: warm-up, calibration and samples on the
    benchmark's clock (or its counts, or its profile: the instrument that measures it), then
    the verdict against its stored baseline."""

    def __init__(
        self,
        state: PerfState,
        item: pytest.Item,
        case: Case,
        module: str,
        key: str,
        baseline: StoredBaseline | None,
        legacy: bool = False,
    ) -> None:
        super().__init__(state, item, case, module, key)
        self._baseline = baseline
        #: The baseline comes from the directory of the machine id before hardware classes.
        self._legacy = legacy
        #: Thread pools running more threads than the benchmark's limit (host/threads.py).
        self._pools: list[str] = []

    def _start(self, fn: object, what: str) -> None:
        __tracebackhide__ = True
        super()._start(fn, what)
        corrupt = counting.corrupt_failure(self._state, self._item.nodeid)
        if corrupt is not None:  # the same clear error whatever the measure
            pytest.fail(corrupt, pytrace=False)

    def _call(self, fn: Callable[..., T], args: tuple[object, ...], kwargs: dict[str, object]) -> T:
        __tracebackhide__ = True

        def time_calls(clock: Clock) -> object:
            __tracebackhide__ = True
            s = self.settings
            # timed only for the change beside its counts (auto): one round, no adaptive samples
            beside = counting.time_beside(self._state, self.device.kind, self._item.nodeid)
            pooled = 1 if beside else self._state.schedule.sampling_rounds
            goal = precision_goal(s.threshold, pooled)
            first, most = round_sampling(s.samples, s.max_samples, pooled)
            return self._measure(
                clock,
                measure,
                fn,
                args,
                kwargs,
                samples=first,
                warmup=s.warmup,
                min_time=s.min_time,
                precise=lambda values: median_halfwidth(values) <= goal,
                max_samples=first if beside else most,
                max_time=0.0 if beside else s.max_time,
                settle=settles(self.device.kind, s.warmup),
                turns=self._state.turn_side,
            )

        return cast(T, self._measured(time_calls))

    def _measured(self, time_calls: Callable[[Clock], object]) -> object:
        """The benchmark's calls measured by the instrument that measures them here
        (instrument_choice.choose), through this fixture's :class:`_Calls`; the call's result."""
        __tracebackhide__ = True
        if self._work is not None:  # its rates need a time: one round beside its counts
            counting.time_for_rates(self._state, self.device.kind, self._item.nodeid)
        instrument = choose(self._state, self.device, self.settings, self._item.nodeid)
        self._take_sides()  # memory's calls first: the same calls of its history in every run
        return instrument.measure(_Calls(self, time_calls))

    def _measure(
        self, instrument: Clock, sampler: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> Any:
        """Run ``sampler`` (timing.measure or measure_pedantic) with this benchmark's threads,
        clock (``instrument``, opened here), L2 flush and memory meter, watching the host; judge
        the sample; return the function's result."""
        __tracebackhide__ = True
        import time

        probe = self._state.probes.for_device(self.device)
        single = self.device.kind == "cpu" and self.settings.threads == 1
        active = getattr(self.device, "active", contextlib.nullcontext)
        with self.device.threads(self.settings.threads), active():
            clock = open_clock(instrument, self.device, self.settings)
            timer, flush, capture = clock.timer, clock.flush, clock.capture
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
                    # peak memory is the measuring process's (an extra round's would be
                    # dropped), from the calls tracked beside where the tracker is its meter
                    meter=None
                    if self._state.run.mode.in_round or self._peak_from_tracking()
                    else self.device.peak_memory,
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

        self._state.notes.extend(f"{self._item.nodeid}: {m}" for m in timer_messages(timer))
        self._judge(sample, fingerprint, host, probe)
        return result

    def _pedantic_call(
        self,
        fn: Callable[..., T],
        args: tuple[object, ...],
        kwargs: dict[str, object] | None,
        setup: Callable[[], Prepared | None] | None,
        teardown: Callable[..., object] | None,
        shape: PedanticShape,
    ) -> T:
        __tracebackhide__ = True
        assert self._rerun is not None
        s = self.settings
        sampled = shape.rounds is None
        rounds = s.samples if shape.rounds is None else shape.rounds

        def time_calls(clock: Clock) -> object:
            __tracebackhide__ = True
            return self._measure(
                clock,
                measure_pedantic,
                fn,
                args,
                kwargs,
                setup=setup,
                teardown=teardown,
                rounds=rounds,
                iterations=shape.iterations,
                warmup_rounds=shape.warmup_rounds,
                # not given: as many single-call rounds as fill the samples' time (at min_time
                # each, within max_time), between samples and max_samples
                sampled=(
                    rounds,
                    max(rounds, s.max_samples),
                    min(s.max_time, s.samples * s.min_time),
                )
                if sampled
                else None,
            )

        return cast(T, self._measured(time_calls))

    def _judge(
        self,
        sample: Any,
        fingerprint: dict[str, object],
        host: Window,
        probe: dict[str, object] | None,
    ) -> None:

        state = self._state
        node = self._item.nodeid
        # what sets this benchmark's between-process noise: the GPU for a device-bound kernel,
        # else the host (its prior: core/judging/between_runs.PRIORS)
        noise = noise_source(
            sample.timer,
            on_host="cpu" in fingerprint,
            values=sample.values,
            host_values=sample.host_values,
        )
        if state.run.mode.in_round:  # an extra round: keep the samples for the parent
            keep_round_record(
                state,
                node,
                {
                    "values": list(sample.values),
                    "host": host.as_dict(),
                    "probe": probe,
                    "loops": sample.loops,
                    "timer": sample.timer,
                    "l2_flush": sample.l2_flush,
                    "noise": noise,
                },
            )
            return
        s = self.settings
        policy = Policy(
            alpha=s.alpha,
            threshold=s.threshold,
            threshold_given=s.threshold_given,
            comparisons=state.findings.comparisons,
        ).for_noise(noise)
        runs = [*state.findings.round_runs.get(node, []), list(sample.values)]
        evidence = _host_evidence(state, node, host, probe, self._baseline, noise == "device")
        verdict = assess(
            self._baseline,
            runs,
            fingerprint=fingerprint,
            timer=sample.timer,
            l2_flush=sample.l2_flush,
            pedantic=self._pedantic,
            policy=policy,
            legacy=self._legacy,
            host=None if state.run.trust_host else evidence,
        )
        if s.flush_l2 and not sample.l2_flush:
            verdict = replace(
                verdict, notes=(*verdict.notes, f"flush_l2: {self.device.id} has no L2 flush")
            )
        if self.device.kind == "cpu":
            verdict = own_threads(verdict, evidence.windows, s.threads, self._pools)
        result = make_result(
            self._benchmarked(),
            fingerprint=fingerprint,
            sample=sample,
            verdict=verdict,
            runs=runs,
            baseline=self._baseline,
            baseline_runs=as_runs(self._baseline),
            work=self._work,
            peaks=None
            if self._work is None
            else state.peaks.for_device(self.device, self._case.dtype, s.threads),
            host=tuple(evidence.windows),
            probe=None if evidence.probe is None else dict(evidence.probe),
            pedantic=self._pedantic,
        )
        if counting.by_counts(state, self.device.kind, node):  # --perf-measure both: counts judge
            counts_judging.judge(self._benchmarked(), result, self._finished)
            return
        fallback = counting.fallback_note(state, node)
        if fallback is not None:  # too slow to count: the clock judges it
            verdict = replace(verdict, notes=(*verdict.notes, fallback))
            seen = state.counting.undecided_counts.get(node) if state.counting else None
            result = replace(result, verdict=verdict, counts_not_judged=seen)
        result = self._finished(result)
        verdict = result.verdict
        if state.run.mode.records:
            from pytest_burnperf.core.judging.more_rounds import recording_floor

            # named only where its own rounds show the noise: with few rounds the prior alone
            # puts the floor above the threshold, which more rounds, not a quieter host, cure
            floor = recording_floor(runs, policy)
            own = recording_floor(runs, replace(policy, prior=None))
            if floor is not None and own is not None and min(floor, own) > policy.threshold:
                keep_noisy(state, node, floor)
            if sum(1 for r in runs if r) == 1:  # never a single round silently
                keep_single_round(state, node, floor)
        settle(
            state,
            self._item,
            self._key,
            result,
            lambda: failure_message(self._key, verdict, policy),
        )


def _host_evidence(
    state: PerfState,
    node: str,
    host: Window,
    probe: dict[str, object] | None,
    baseline: StoredBaseline | None,
    device_bound: bool,
) -> HostEvidence:
    """This benchmark's host windows and probe over all rounds, and the baseline's."""

    windows = [
        w for d in state.findings.round_host.get(node, []) if (w := Window.from_dict(d)) is not None
    ]
    windows.append(host)
    probes = [p for p in state.findings.round_probes.get(node, []) if p]
    if probe:
        probes.append(probe)
    return HostEvidence(
        windows=tuple(windows),
        baseline_windows=() if baseline is None else baseline.host,
        probe=_probe.pooled(probes),
        baseline_probe=None if baseline is None else baseline.host_probe,
        device_bound=device_bound,
    )


class _Calls:
    """The :class:`~pytest_burnperf.instruments.instrument.Measurement` a :class:`Perf` hands
    the instrument that measures its benchmark: each step on the call ``perf`` or
    ``perf.pedantic`` was given (made ready again by ``perf._rerun``); ``time_calls`` is that
    entry's own sampling."""

    def __init__(self, perf: Perf, time_calls: Callable[[Clock], object]) -> None:
        assert perf._rerun is not None
        self._perf = perf
        self._make_call = perf._rerun
        self.time_calls = time_calls

    def call_once(self) -> object:
        __tracebackhide__ = True
        call, after = self._make_call()
        result = call()
        self._perf.device.sync()
        if after is not None:
            after()
        return result

    def count_calls(self) -> object:
        __tracebackhide__ = True
        p = self._perf
        return counting.count_here(p._state, p._item.nodeid, p.device, p.settings, self._make_call)

    def judge_counts(self) -> None:
        __tracebackhide__ = True
        counts_judging.judge(self._perf._benchmarked(), None, self._perf._finished)

    def profile_calls(self) -> object:
        __tracebackhide__ = True
        p = self._perf
        return profile_here(
            p._state,
            p._case,
            p._item.nodeid,
            self._make_call,
            threads=p.settings.threads,
            repeat=p._repeat,
        )

    def track_sides(self) -> object:
        __tracebackhide__ = True
        p = self._perf
        return side_processes.track_here(
            p._state, p.device, p._item.nodeid, self._make_call, threads=p.settings.threads
        )
