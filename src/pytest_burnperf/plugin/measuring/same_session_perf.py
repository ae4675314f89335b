"""The ``perf`` fixture of the parent of a same-session comparison (``--perf-against``, ``--perf-
versions``): the body runs once here as a check, the round processes measure each side, and the
verdict is made from their samples."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest

from pytest_burnperf import json_fields as jf
from pytest_burnperf.core.clocks import SAMPLE_TIMERS, Sample
from pytest_burnperf.core.counting import counts
from pytest_burnperf.core.judging.assess import (
    note_paired_host,
)
from pytest_burnperf.core.judging.verdict import (
    Policy,
    Verdict,
    failure_message,
    judge,
)
from pytest_burnperf.core.options.pedantic_shape import PedanticShape
from pytest_burnperf.core.text import escape_strings
from pytest_burnperf.core.timing import Prepared
from pytest_burnperf.host.activity import Window
from pytest_burnperf.plugin.measuring import side_processes
from pytest_burnperf.plugin.measuring.counts import counting, counts_judging
from pytest_burnperf.plugin.measuring.perf_base import PerfBase, T, call_once
from pytest_burnperf.plugin.measuring.result_record import make_result, settle
from pytest_burnperf.plugin.session.perf_state import PerfState
from pytest_burnperf.runs.comparison.same_session import summaries

if TYPE_CHECKING:
    from pytest_burnperf.host.activity import Window


class ComparePerf(PerfBase):
    """The ``perf`` fixture of a same-session comparison (``--perf-against``,
    ``--perf-versions``): the rounds measured the benchmark in every environment before the
    tests ran, so here the function is called once, untimed (its result and the test's own
    checks still count), and the verdict judges the candidate's runs against the reference's,
    paired by round. A benchmark judged here by its stored counts baseline (auto) has its
    memory judged against that baseline's and is profiled in this process where the run
    profiles (PerfBase._finished); what is compared in the session is profiled and has its
    memory per call tracked in each environment instead (side_processes), the candidate's
    memory judged against the reference's."""

    def _call(self, fn: Callable[..., T], args: tuple[object, ...], kwargs: dict[str, object]) -> T:
        __tracebackhide__ = True
        self._take_stored_sides()
        result = call_once(self.device, fn, args, kwargs)
        self._judge()
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
        self._take_stored_sides()
        result = call_once(self.device, fn, args, kwargs, setup, teardown)
        self._judge()
        return result

    def _take_stored_sides(self) -> None:
        """A benchmark judged here by its stored counts baseline has its memory judged here
        too: its first calls are tracked before the call above (PerfBase._take_sides), as
        where that baseline was recorded."""
        __tracebackhide__ = True
        if counting.judged_by_stored_counts(self._state, self.device.kind, self._item.nodeid):
            self._take_sides()

    def _judge(self) -> None:
        __tracebackhide__ = True

        state = self._state
        plan, got = state.run.plan, state.findings.measured
        assert plan is not None
        node = self._item.nodeid
        if counting.judged_by_stored_counts(state, self.device.kind, node):
            # counted here, judged by its counts baseline (its memory by the baseline's)
            counts_judging.judge(self._benchmarked(), None, self._finished)
            return
        if counting.counts_only(state, self.device.kind, node):
            counts_judging.judge_pair(self._benchmarked(), None)
            return
        paired = time_verdict(state, self.settings, node)
        if paired is None:
            why = "; ".join(got.failures.values()) if got is not None else ""
            pytest.fail(
                f"{node}: not compared with {plan.reference}: "
                + (why or "no round measured it in every environment"),
                pytrace=False,
            )
        assert got is not None
        verdict, policy, ref, cur, left_out = paired
        windows = [
            w
            for label in plan.refs
            for d in got.host.get(label, {}).get(node, [])
            if (w := Window.from_dict(d)) is not None
        ]
        trust = state.run.trust_host
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
            loops=jf.integer(last.get("loops", 1)) or 1,
            warmup_calls=0,
            timer=str(last.get("timer")) if last.get("timer") in SAMPLE_TIMERS else "host",
            l2_flush=bool(last.get("l2_flush", False)),
        )
        result = make_result(
            self._benchmarked(),
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
        fallback = counting.fallback_note(state, node)
        if counting.by_counts(state, self.device.kind, node):  # --perf-measure both
            pair = counts_judging.counts_pair_verdict(state, self.settings, node)
            if pair is None or not counts.undecidable(pair):
                counts_judging.judge_pair(self._benchmarked(), result)
                return
            # counts cannot tell a change of the threshold's size apart: the session's time
            # rounds judge it, as under auto (session_counts.counted_in_session)
            fallback = f"counts not judged: {counts.undecided_text(pair)}; judged by time"
            counts_judging.keep_pair_left_to_clock(state, node, pair)
        if fallback is not None:
            seen = state.counting.undecided_counts.get(node) if state.counting else None
            result = replace(
                result,
                verdict=replace(verdict, notes=(*verdict.notes, fallback)),
                counts_not_judged=seen,
            )
        result = side_processes.attach(state, result)
        result = side_processes.attach_tracked(state, result, self.settings.chosen_threshold)
        verdict = result.verdict
        labels = (plan.reference, plan.candidate)
        settle(
            state,
            self._item,
            self._key,
            result,
            lambda: failure_message(self._key, verdict, policy, labels=labels),
        )


def time_verdict(
    state: PerfState, settings: Any, node: str
) -> tuple[Verdict, Policy, list[list[float]], list[list[float]], dict[int, str]] | None:
    """The time verdict of ``node`` in a same-session comparison, from the rounds measured so
    far: (verdict, policy, reference runs, candidate runs, rounds left out as busy with why),
    or None where an environment has no round of it."""
    plan, got = state.run.plan, state.findings.measured
    assert plan is not None
    ref = [] if got is None else got.of(plan.reference, node)
    cur = [] if got is None else got.of(plan.candidate, node)
    if not ref or not cur or got is None:
        return None
    policy = Policy(
        alpha=settings.alpha,
        threshold=settings.threshold,
        threshold_given=settings.threshold_given,
        comparisons=state.findings.comparisons,
        paired=True,
    ).for_noise(got.noise((plan.reference, plan.candidate), node))
    left_out: dict[int, str] = {}
    if not state.run.trust_host:
        ref, cur, left_out = got.clean_pairs(plan.reference, plan.candidate, node)
    return judge(ref, cur, policy), policy, ref, cur, left_out
