"""The run's configuration, made once in configure.py and read-only afterwards: what the user
asked for (:class:`RunConfig`), how its rounds are scheduled (:class:`RoundSchedule`) and what
it writes and shows (:class:`OutputConfig`). What the run finds out goes into
findings.Findings; the objects it works with are PerfState's (session/perf_state.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_burnperf.core.options.run_mode import Mode
from pytest_burnperf.core.options.run_options import DEFAULT_COUNT_LIMIT, Profile
from pytest_burnperf.core.options.settings import PerfSpec, Settings

if TYPE_CHECKING:
    from pytest_burnperf.runs.comparison.reference import Choice
    from pytest_burnperf.runs.comparison.same_session import Plan


@dataclass(frozen=True)
class CountOptions:
    """How benchmarks are counted: in a counted process (runs/counted.py) the directory of its
    callgrind dumps, the calls to count and the benchmarks counted whatever the limit (their
    counts baselines say so: instruments/instruction_counts.selection); --perf-count-limit, the
    instructions a call may run before the benchmark is timed instead (0: no limit);
    --perf-count-jobs, how many counted processes share the benchmarks; --perf-count-cycles,
    whether the caches are simulated for estimated cycles."""

    dir: Path | None = None
    calls: int | None = None
    limit: int = DEFAULT_COUNT_LIMIT
    always: frozenset[str] = frozenset()
    #: Counted processes side by side (--perf-count-jobs; 0: one per usable CPU).
    jobs: int = 0
    #: --perf-count-cycles: simulate the caches and estimate cycles beside the instructions.
    cycles: bool = False

    @classmethod
    def of(
        cls,
        count_dir: str | None,
        calls: int | None,
        limit: int | None,
        always: str | None = None,
        jobs: int | None = None,
        cycles: bool = False,
    ) -> CountOptions:
        """From the hidden options of a counted process, --perf-count-limit (None: the default) and
        --perf-count-jobs (None: one per usable CPU)."""
        return cls(
            dir=Path(count_dir) if count_dir else None,
            calls=calls,
            limit=DEFAULT_COUNT_LIMIT if limit is None else int(limit),
            jobs=0 if jobs is None else int(jobs),
            cycles=cycles,
            always=frozenset(Path(always).read_text(encoding="utf-8").splitlines())
            if always
            else frozenset(),
        )


@dataclass(frozen=True)
class RunConfig:
    """What the user asked for: the mode, the settings, which devices, which baselines."""

    #: What kind of run this process is (core/options/run_mode.py).
    mode: Mode
    #: Settings from the ini file and the project file, and those the command line overrides.
    base: Settings
    cmdline: dict[str, object]
    backends_filter: tuple[str, ...] | None
    dtypes_filter: tuple[str, ...] | None
    #: Devices that must be present (--perf-require), or None.
    require: tuple[str, ...] | None
    baselines_root: Path
    machine_id: str
    rootpath: Path
    invocation: tuple[str, ...]
    #: ``-p no:NAME`` for the installed plugins the measuring child processes start without
    #: (core/options/command_args.left_out_of_children: hypothesis's, where the run names none
    #: of its options).
    child_plugins_off: tuple[str, ...] = ()
    #: The machine id came from --perf-machine or the ini file, not from this host.
    machine_explicit: bool = False
    size: str = "small"
    strict: bool = False
    #: BURNPERF_TRUST_HOST=1 (read once, in configure.py): the host state and the reference
    #: probe are measured and reported but change no verdict and no round.
    trust_host: bool = False
    #: --perf-memory: memory per call judged beside time and counts (instruments/memory_tracking.py).
    memory: bool = True
    recalibrate: bool = False
    count: CountOptions = field(default_factory=lambda: CountOptions())
    #: From the configuration file (project_config.py): test functions to run, free
    #: environment facts, and the file itself.
    benches: tuple[str, ...] | None = None
    environment: dict[str, object] = field(default_factory=dict)
    config_file: Path | None = None
    #: A same-session comparison (--perf-against, --perf-versions), and what --perf-against auto
    #: chose and why (reference.Choice).
    plan: Plan | None = None
    reference: Choice | None = None
    #: --perf-shard K/N.
    shard: tuple[int, int] | None = None
    #: In a round process: the node ids to run (an adaptive round of undecided benchmarks).
    round_only: frozenset[str] | None = None

    def settings_for(self, spec: PerfSpec) -> Settings:
        """One benchmark's settings: ini and project file, then its marker, then the command
        line."""
        return self.base.merged(spec.overrides).merged(self.cmdline)


@dataclass(frozen=True)
class RoundSchedule:
    """How the run's process rounds are scheduled, and a round process's own files."""

    rounds: int = 1
    #: The fixed process rounds the session pools per benchmark (a round's own process is told
    #: by --perf-round-process-rounds): sets each round's samples and precision goal (stats.round_samples).
    sampling_rounds: int = 1
    #: Rounds an undecided benchmark may get in all (adaptive rounds; == rounds: off).
    max_rounds: int = 1
    #: Seconds after the first round started past which no adaptive round starts (0: no limit).
    round_budget: float = 0.0
    #: How extra rounds start: run_options.ROUND_STARTS.
    round_start: str = "auto"
    #: In a round process: where to write its raw samples (each forked round of a round server
    #: gets its own: dataclasses.replace).
    round_out: Path | None = None
    #: In a round server (forkserver.py): the directory its requests come through.
    serve_dir: Path | None = None


@dataclass(frozen=True)
class OutputConfig:
    """What the run writes and how its table looks."""

    json_path: Path | None = None
    #: Format of the --perf-json file (run_options.JSON_FORMATS).
    json_format: str = "burnperf"
    #: --perf-markdown: the Markdown summary to write (markdown.py).
    markdown_path: Path | None = None
    #: --perf-store: where to record this run (a URL, a SQLite path or "local"), or None.
    store_value: str | None = None
    #: Results table: columns, sort key and grouping (None: the defaults).
    columns: tuple[str, ...] | None = None
    sort: str | None = None
    group_by: str | None = None
    #: --perf-min-judged: the share of benchmarks that must get a verdict (0: shown only).
    min_judged: float = 0.0
    #: --perf-profile: which benchmarks are rerun under a profiler, and where profiles go.
    profile: Profile = "off"
    profile_dir: Path = Path("perf-profiles")
    #: In a profiled process of a same-session comparison (runs/profiled.py): the label of the
    #: environment whose profiles it writes (its benchmarks are profiled, not measured).
    profile_side: str | None = None
    #: ``--update-baselines`` is this plugin's option (a conftest.py may own that name; then
    #: the line on accepting a slowdown says --perf-update).
    update_alias: bool = True
