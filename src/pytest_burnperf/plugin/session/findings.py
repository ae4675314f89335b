"""What a run finds out as it goes, each part written by its owner alone (tests/unit/
test_layers.py holds it): the selection by collection.py; each test's outcome, a GPU
fault, wall times and an interrupt by session/outcome_watch.py; what each benchmark leaves
behind (its result, its round record, a smoke call, a noisy recording) by
measuring/result_record.py; what the rounds measured by rounds/round_control.py; what the run
judged (coverage) by output/run_files.py. The reports read it; the summary's own lines are
``PerfState.notes``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_burnperf.core.judging.coverage import Coverage
    from pytest_burnperf.core.records.results import Result
    from pytest_burnperf.plugin.session.cases import Case
    from pytest_burnperf.runs.scheduler import Measured


@dataclass
class Findings:
    results: dict[str, Result] = field(default_factory=dict)
    #: Benchmarks whose call passed: the only ones whose baselines may change.
    passed: set[str] = field(default_factory=set)
    #: Smoke-run benchmarks that called perf (node ids).
    smoked: set[str] = field(default_factory=set)
    #: Seconds each benchmark took in this process, setup to teardown (what a baseline keeps as
    #: ``seconds`` for --perf-shard's split).
    durations: dict[str, float] = field(default_factory=dict)
    #: Raw samples of the extra rounds, per node id: one list of values per round process.
    round_runs: dict[str, list[list[float]]] = field(default_factory=dict)
    round_records: dict[str, dict[str, object]] = field(default_factory=dict)
    #: Host windows (activity.Window as dicts) and reference probes of the extra rounds, per node.
    round_host: dict[str, list[dict[str, object]]] = field(default_factory=dict)
    round_probes: dict[str, list[dict[str, object]]] = field(default_factory=dict)
    #: What a same-session comparison's rounds measured.
    measured: Measured | None = None
    #: Recording: the benchmarks whose runs are too noisy for their threshold, with the noise
    #: floor a comparison with as many rounds would have (recording_floor).
    noisy_records: dict[str, float] = field(default_factory=dict)
    #: Recording: the benchmarks timed in one process round only, with the floor a comparison
    #: against them would have from the prior alone (None without a prior).
    single_round_records: dict[str, float | None] = field(default_factory=dict)
    #: Benchmarks whose test failed before they left a result (an error before or in perf(),
    #: a crash of the process counting them): a miss in the coverage, ``{node id: when}``.
    unmeasured: dict[str, str] = field(default_factory=dict)
    interrupted: bool = False
    #: The run stopped with a usage error after the session began: no summary.
    aborted: bool = False
    #: GPUs that faulted in this process: ``{device id: what failed where}``; their remaining
    #: benchmarks are skipped with that reason (a CUDA fault is sticky).
    bad_devices: dict[str, str] = field(default_factory=dict)
    #: Node ids of @pytest.mark.perf benchmarks that -k and the other deselections left out.
    deselected_benchmarks: list[str] = field(default_factory=list)
    #: Perf comparisons in this session (for the family-wise correction); in a shard, those of
    #: the whole selection.
    comparisons: int = 1
    #: What the shard kept (core/options/shards.py): ``index``, ``count``, ``selection`` (the whole
    #: selection's fingerprint), ``comparisons`` (the whole selection's), ``benchmarks`` (this
    #: shard's), ``expected_s`` (each shard's expected seconds).
    shard_info: dict[str, object] | None = None
    #: Tests using pytest-benchmark's ``benchmark`` fixture: their one CPU case each, by the test
    #: function's node id (their ids stay unchanged).
    benchmark_cases: dict[str, Case] = field(default_factory=dict)
    #: How many of them run in this session (after -k and every other deselection).
    benchmark_fixture_tests: int = 0
    #: Their baselines found under the name they had with ``[cpu]`` in the id:
    #: ``{module: {key: old key}}``; --perf-update writes the key and drops the old one.
    renamed_baselines: dict[str, dict[str, str]] = field(default_factory=dict)
    #: What the run judged (coverage.Coverage), the advice lines, its JSON, and the failure
    #: message when it judged less than min_judged; set at session finish.
    coverage: Coverage | None = None
    coverage_advice: list[str] = field(default_factory=list)
    coverage_json: dict[str, object] | None = None
    shortfall: str | None = None
