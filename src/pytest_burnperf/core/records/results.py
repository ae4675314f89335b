"""One benchmark's outcome, and how it is written into baselines and the JSON report."""

from __future__ import annotations

import json
import math
import platform
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pytest_burnperf._version import __version__
from pytest_burnperf.core import measures
from pytest_burnperf.core.clocks import Sample
from pytest_burnperf.core.counting.counts import Counted
from pytest_burnperf.core.judging.stats import median_halfwidth, precision_goal, summarize
from pytest_burnperf.core.judging.verdict import Verdict
from pytest_burnperf.core.options.settings import Settings
from pytest_burnperf.core.records.roofline_figures import achieved

if TYPE_CHECKING:
    from pytest_burnperf.core.options.pedantic_shape import PedanticShape
    from pytest_burnperf.core.records.profiles import ProfileRecord
    from pytest_burnperf.core.records.roofline_figures import Achieved, Peaks, Work
    from pytest_burnperf.core.records.stored_baseline import StoredBaseline
    from pytest_burnperf.core.records.versions import VersionSummary
    from pytest_burnperf.core.sides.side_kind import SideVerdict
    from pytest_burnperf.host.activity import Window

RESULTS_SCHEMA = "pytest-burnperf-results"
RESULTS_VERSION = 1


@dataclass(frozen=True)
class Result:
    nodeid: str
    module: str  # test file relative to the rootdir, '/'-separated
    key: str  # test name with parameters, e.g. test_matmul[numpy-cpu-f32]
    benchmark: str  # test name without parameters
    device_id: str
    kind: str
    library: str
    dtype: str
    fingerprint: dict[str, object]
    settings: Settings
    sample: Sample
    verdict: Verdict
    baseline: StoredBaseline | None
    #: Samples per process round (the last one is this process's).
    runs: tuple[tuple[float, ...], ...] = ()
    #: What one call computes and moves (``perf.work``), and the device's measured peaks.
    work: Work | None = None
    peaks: Peaks | None = None
    #: Host state during each process round (this process last), and the reference probe.
    host: tuple[Window, ...] = ()
    probe: dict[str, object] | None = None
    #: pytest-benchmark's ``benchmark.extra_info`` and group, for tests written for it.
    extra_info: dict[str, object] = field(default_factory=dict)
    group: str | None = None
    #: A same-session comparison: each environment's measurement (versions.VersionSummary),
    #: the label judged against and the one judged.
    versions: tuple[VersionSummary, ...] = ()
    #: The samples per process round of what this result was judged against (the stored
    #: baseline's runs, or the reference's rounds in a same-session comparison).
    baseline_runs: tuple[tuple[float, ...], ...] = ()
    reference: str | None = None
    candidate: str | None = None
    #: The fixed process rounds the session pooled (their samples and precision goal follow it).
    sampling_rounds: int = 1
    #: The test's parameters as pytest-benchmark reports them: name -> value (JSON-safe; a device
    #: by its id) and the parameter id, both None for a test without parameters of its own.
    params: dict[str, object] | None = None
    param: str | None = None
    #: What judged: "time" (the clock, or device time) or "counts" (``sample`` and ``verdict``
    #: are then estimated cycles on callgrind's simulated CPU); with counts, the counted calls,
    #: the key that decides whether counts compare, and with --perf-measure both the time
    #: result shown beside them (its own sample, runs and verdict).
    measure: measures.JudgedName = "time"
    counted: Counted | None = None
    counts_key: dict[str, object] | None = None
    time: Result | None = None
    #: Judged by time because counts could not decide (counts.undecidable): what they measured
    #: (core/counting/counts_left_to_clock.py), shown, not judged.
    counts_not_judged: Mapping[str, object] | None = None
    #: --perf-profile: the profile of this run's side (``tool``, ``file``, ``summary``), the
    #: side it was compared with (``against``, ``against_summary``) and the note of what grew.
    profile: ProfileRecord | None = None
    #: perf.pedantic's shape (comparability.PEDANTIC_KEYS): what one sample means; None for
    #: ``perf(fn)``.
    pedantic: PedanticShape | None = None
    #: The verdicts judged beside the time or counts verdict (core/sides/side_registry.SIDES), by
    #: their field: memory per call's (core/memory/memory_verdict.py) where it was tracked.
    sides: Mapping[str, SideVerdict] = field(default_factory=dict)
    #: The verdicts beside that could not be measured for it, by their field: why (memory per
    #: call on a device that does not tell, perf.pedantic with rounds=); --perf-memory off asks
    #: for none and leaves this empty.
    not_measured: Mapping[str, str] = field(default_factory=dict)

    def roofline(self) -> Achieved | None:
        """Achieved GFLOP/s and GB/s at this process's median, and their % of the peaks; where
        counts judged, those of the time measured beside them (never a rate from instructions),
        None where nothing was timed."""
        timed = self.timed()
        if timed is None or timed.work is None:
            return None
        return achieved(timed.work, summarize(timed.sample.values).median, timed.peaks)

    @property
    def label(self) -> str:
        """The benchmark with its own parameters, without the device and dtype (shown in their
        columns): ``test_matmul[square]`` for ``test_matmul[numpy-cpu-f32-square]``."""
        if "[" not in self.key:
            return self.benchmark
        inside = self.key[self.key.index("[") + 1 : -1]
        case = f"{self.device_id}-{self.dtype}"
        rest = (
            "-".join(p for p in inside.replace(case, "", 1).split("-") if p)
            if case in inside
            else inside
        )
        return f"{self.benchmark}[{rest}]" if rest else self.benchmark

    def timed(self) -> Result | None:
        """What the clock measured: this result where time judged it, the time result beside
        the counts with --perf-measure both, None for counts alone."""
        return self if not self.judged_by.counted else self.time

    @property
    def judged_by(self) -> measures.Judged:
        """The measure that judged this result (core/measures.py)."""
        return measures.judged(self.measure)

    @property
    def peak_memory(self) -> int | None:
        """Bytes one call of the benchmark allocated at its peak, where the device can tell."""
        return self.sample.peak_memory

    def settings_dict(self) -> dict[str, object]:
        s = self.settings
        return {
            "samples": s.samples,
            "warmup": s.warmup,
            "min_time": s.min_time,
            "alpha": s.alpha,
            "threshold": s.threshold,
            "timer": s.timer,
            "flush_l2": s.flush_l2,
            "threads": s.threads,
            "max_samples": s.max_samples,
            "max_time": s.max_time,
        }

    def baseline_entry(self, recorded: dict[str, object]) -> dict[str, object]:
        """What ``--perf-update`` stores for this benchmark (with counts: in the counts
        baselines, the counted calls and their key beside the estimated cycles)."""
        if self.counted is not None:
            gating = [float(v) for v in self.counted.values()]
            return {
                "samples": gating,
                "runs": [gating],
                "stats": summarize(gating).as_dict(),
                "loops": 1,
                "timer": self.sample.timer,
                "dtype": self.dtype,
                "device": self.fingerprint,
                "counts": {**self.counted.as_json(), "key": dict(self.counts_key or {})},
                "settings": {k: v for k, v in self.settings_dict().items() if k != "alpha"},
                "recorded": recorded,
                **self._profile_entry(),
            }
        runs = [list(r) for r in self.runs] or [list(self.sample.values)]
        pooled = [v for r in runs for v in r]
        return {
            "samples": pooled,
            "runs": runs,
            "stats": summarize(pooled).as_dict(),
            "loops": self.sample.loops,
            "timer": self.sample.timer,
            "l2_flush": self.sample.l2_flush,
            "mode": self.sample.mode,
            "peak_memory_bytes": self.peak_memory,
            "dtype": self.dtype,
            "device": self.fingerprint,
            "settings": {k: v for k, v in self.settings_dict().items() if k != "alpha"},
            "recorded": recorded,
            "host": [w.as_dict() for w in self.host],
            "host_probe": self.probe,
            **({} if self.pedantic is None else {"pedantic": self.pedantic.as_json()}),
            **self._profile_entry(),
        }

    def _profile_entry(self) -> dict[str, object]:
        """Recorded with --perf-profile: the profile summary, for later runs to compare with;
        and what each verdict judged beside keeps (memory per call where its calls agreed)."""
        entry: dict[str, object] = {}
        if self.profile is not None:
            entry["profile"] = self.profile.summary.as_json()
        for name, verdict in self.sides.items():
            kept = verdict.kept()
            if kept is not None:
                entry[name] = kept
        return entry

    def sampling(self) -> dict[str, object]:
        """How this process's sampling ended: why it stopped, how many samples, how precise."""
        half = median_halfwidth(self.sample.values)
        return {
            "stopped": self.sample.stopped,
            "n": len(self.sample.values),
            "median_ci95_halfwidth": half if math.isfinite(half) else None,
            "goal_halfwidth": precision_goal(self.settings.threshold, self.sampling_rounds),
        }

    def sampling_note(self) -> str | None:
        """A line for the report when adaptive sampling ran out of samples or time."""
        stopped, n = self.sample.stopped, len(self.sample.values)
        if stopped not in ("cap", "budget"):
            return None
        why = (
            f"the {n}-sample cap (max_samples)"
            if stopped == "cap"
            else f"the {self.settings.max_time:g} s budget (max_time), at {n} samples"
        )
        half = median_halfwidth(self.sample.values)
        known = f"+-{100 * math.expm1(half):.1f}%" if math.isfinite(half) else "unknown"
        goal = precision_goal(self.settings.threshold, self.sampling_rounds)
        return (
            f"sampling stopped at {why} with this process's median known to {known} "
            f"(goal +-{100 * math.expm1(goal):.1f}%)"
        )

    def host_disturbed(self) -> str | None:
        """Why the host was not quiet during one of this benchmark's rounds, or None."""
        for w in self.host:
            why = w.disturbed()
            if why:
                return why
        return None

    def _roofline_json(self) -> dict[str, object] | None:
        got, timed = self.roofline(), self.timed()
        if got is None or timed is None or timed.work is None:
            return None
        return {
            "flops": timed.work.flops,
            "bytes": timed.work.bytes,
            "shape": timed.work.shape,
            **got.as_dict(),
            "peaks": None if timed.peaks is None else timed.peaks.as_dict(),
        }

    def as_json(self) -> dict[str, object]:
        doc = self._as_json()
        doc["measure"] = self.measure
        if self.not_measured:
            doc["not_measured"] = dict(self.not_measured)
        if self.pedantic is not None:
            doc["pedantic"] = self.pedantic.as_json()
        if self.counted is not None:
            doc["counts"] = {**self.counted.as_json(), "key": self.counts_key}
        if self.counts_not_judged is not None:
            doc["counts_not_judged"] = dict(self.counts_not_judged)
        if self.time is not None:
            doc["time"] = self.time._as_json()
        if self.profile is not None:
            doc["profile"] = self.profile.as_json()
        for name, verdict in self.sides.items():
            doc[name] = verdict.as_json()
        return doc

    def _as_json(self) -> dict[str, object]:
        v = self.verdict
        base: dict[str, object] | None = None
        if self.baseline is not None:
            base = {
                "median": v.baseline_median,
                "n": v.n_baseline,
                "recorded": self.baseline.recorded,
                "runs": [list(r) for r in self.baseline_runs],
            }
        elif self.reference is not None:
            base = {
                "median": v.baseline_median,
                "n": v.n_baseline,
                "reference": self.reference,
                "runs": [list(r) for r in self.baseline_runs],
            }
        return {
            "test": self.nodeid,
            "module": self.module,
            "name": self.key,
            "benchmark": self.benchmark,
            "backend": self.library,
            "kind": self.kind,
            "device_id": self.device_id,
            "device": self.fingerprint,
            "dtype": self.dtype,
            "settings": self.settings_dict(),
            "timer": self.sample.timer,
            "l2_flush": self.sample.l2_flush,
            "mode": self.sample.mode,
            "loops": self.sample.loops,
            "warmup_calls": self.sample.warmup_calls,
            "sampling": self.sampling(),
            "samples": list(self.sample.values),
            "stats": summarize(self.sample.values).as_dict(),
            "runs": [list(r) for r in self.runs],
            "host_samples": None
            if self.sample.host_values is None
            else list(self.sample.host_values),
            "peak_memory_bytes": self.peak_memory,
            "cpu_share": None if self.sample.cpu_share is None else list(self.sample.cpu_share),
            "host": [w.as_dict() for w in self.host],
            "host_disturbed": self.host_disturbed(),
            "host_probe": self.probe,
            "roofline": self._roofline_json(),
            "group": self.group,
            # what JSON cannot hold is written as its str(), as pytest-benchmark users expect
            "extra_info": json.loads(json.dumps(self.extra_info, default=str)),
            "baseline": base,
            "versions": [s.as_json() for s in self.versions] or None,
            "candidate": self.candidate,
            "verdict": {
                "status": v.status,
                # the medians compared: of every sample judged (all rounds pooled, rounds set
                # aside as disturbed left out), what every table shows
                "median": v.current_median,
                "baseline_median": v.baseline_median,
                "ratio": v.ratio,
                "change_pct": v.change_pct,
                "p_slower": v.p_slower,
                "p_faster": v.p_faster,
                "ratio_ci95": None if v.ratio_low is None else [v.ratio_low, v.ratio_high],
                "alpha_each": v.alpha_each,
                "run_spread": v.run_spread,
                "run_spread_upper80": v.run_spread_upper,
                "spread": v.spread,
                "spread_dof": v.spread_dof,
                "spread_source": v.spread_source,
                "prior": v.prior,
                "p_runs_slower": v.p_runs_slower,
                "threshold": v.threshold,
                "min_effect": v.effect,
                "min_detectable_slowdown": v.min_detectable,
                "runs": [v.runs_baseline, v.runs_current],
                "runs_set_aside": [v.set_aside_baseline, v.set_aside_current],
                "reason": v.reason,
                # why it is not a verdict (core/judging/abstention.Cause; None for a verdict)
                "cause": None if v.cause is None else v.cause.value,
                "notes": list(v.notes),
            },
        }


def provenance(
    git: Mapping[str, object], libraries: Mapping[str, object], date: str
) -> dict[str, object]:
    return {
        "date": date,
        "git": git,
        "python": platform.python_version(),
        "pytest_burnperf": __version__,
        "libraries": libraries,
    }
