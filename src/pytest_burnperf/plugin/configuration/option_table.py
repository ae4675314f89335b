"""Every option of the plugin in one table: its command-line name, ini key (and benchmarks.toml
key), the parser that checks its value and its help text; the flags likewise. plugin/configuration/options.py
adds them to pytest and reads them back."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pytest_burnperf.core.options import run_options, settings
from pytest_burnperf.core.options.run_options import DEFAULT_ROUND_BUDGET_S, check_time_machine_id
from pytest_burnperf.core.options.settings import Settings
from pytest_burnperf.core.options.shards import parse_shard
from pytest_burnperf.runs.comparison.environments import check_ref, parse_refs

if TYPE_CHECKING:
    pass


def ref_arg(value: str, option: str) -> str:

    return check_ref(value, option)


def refs_arg(value: str, option: str) -> tuple[str, ...]:

    return parse_refs(value, option)


def _machine_arg(value: str, where: str) -> str:

    return check_time_machine_id(value, where)


DEFAULTS = Settings()


#: Options that may be given without a value, and what that means (``--perf-profile``: all).
ALONE: dict[str, str] = {"--perf-profile": "all"}

VALUE_OPTIONS: tuple[tuple[str, str, Callable[[str, str], Any], str], ...] = (
    (
        "--perf-backends",
        "perf_backends",
        settings.parse_backends,
        "only run these backends: comma-separated kinds (cpu, cuda, ...), libraries (numpy, "
        "torch, ...) or device ids (torch-cuda0). Default: every backend a benchmark asks for.",
    ),
    (
        "--perf-require",
        "perf_require",
        settings.parse_backends,
        "fail the run when one of these devices is absent: comma-separated kinds (cuda, opencl, "
        "...), libraries or device ids, as for --perf-backends (for a GPU CI job that must not "
        "go green by skipping on a runner that lost its GPU). Default: none",
    ),
    (
        "--perf-dtypes",
        "perf_dtypes",
        settings.parse_dtypes,
        f"only run these dtypes, comma-separated ({', '.join(settings.DTYPES)}). Default: every "
        "dtype a benchmark asks for.",
    ),
    (
        "--perf-baselines-dir",
        "perf_baselines_dir",
        run_options.parse_path,
        "directory of baseline files, relative to the rootdir. Default: baselines",
    ),
    (
        "--perf-machine",
        "perf_machine",
        _machine_arg,
        "machine id that groups baselines. Default: derived from OS, architecture, CPU model and "
        "CPU count, e.g. linux-x86_64-amd-epyc-7b13-2cpu",
    ),
    (
        "--perf-alpha",
        "perf_alpha",
        settings.parse_alpha,
        f"significance level of the one-sided Mann-Whitney test (0.01, or 1%%). Default: "
        f"{DEFAULTS.alpha}",
    ),
    (
        "--perf-threshold",
        "perf_threshold",
        settings.parse_threshold,
        "minimum slowdown of the median that fails a benchmark, as a fraction or percentage "
        f"(0.05 or 5%%). Default: {DEFAULTS.threshold}",
    ),
    (
        "--perf-samples",
        "perf_samples",
        settings.parse_samples,
        "timed samples per benchmark and process; with N process rounds each round takes "
        f"samples/N, at least 10. Default: {DEFAULTS.samples}",
    ),
    (
        "--perf-warmup",
        "perf_warmup",
        settings.parse_warmup,
        "warm-up time per benchmark in seconds (at least one call); on CPU devices the default "
        "ends after a quarter of it once the calls have settled, a value you set runs in full. "
        f"Default: {DEFAULTS.warmup}",
    ),
    (
        "--perf-min-time",
        "perf_min_time",
        settings.parse_min_time,
        "shortest time of one sample in seconds; fast functions loop until they reach it. "
        f"Default: {DEFAULTS.min_time}",
    ),
    (
        "--perf-max-samples",
        "perf_max_samples",
        settings.parse_max_samples,
        "adaptive sampling cap: after --perf-samples, keep sampling in batches while the median "
        "of this process is not known to +-1/4 of the threshold, up to this many samples "
        f"(at or below --perf-samples: off). Default: {DEFAULTS.max_samples}",
    ),
    (
        "--perf-max-time",
        "perf_max_time",
        settings.parse_max_time,
        "adaptive sampling time budget per benchmark and process, in seconds of sampling "
        f"(the first --perf-samples samples are always taken). Default: {DEFAULTS.max_time}",
    ),
    (
        "--perf-timer",
        "perf_timer",
        settings.parse_timer,
        "clock that gates: 'device' (the device's own events: CUDA/HIP events, OpenCL "
        "profiling, Vulkan timestamps; the host clock where a device has none), 'host' (wall "
        "time bracketed by device.sync()) or 'graph' (the calls captured into a CUDA graph, "
        "timed by device events around its replay; devices without graphs skip). Default: "
        f"{DEFAULTS.timer}",
    ),
    (
        "--perf-rounds",
        "perf_rounds",
        run_options.parse_rounds,
        "measure every selected benchmark in this many processes (this one and N-1 forked or "
        "fresh ones, run one after another before the tests) and pool their samples; with "
        "--perf-update the baseline keeps every run, so it carries the between-process "
        "noise the gate needs. Given alone, exactly N rounds (no adaptive ones). Default: 3, "
        "and up to 8 for the undecided benchmarks (--perf-quick: 1, 3 when recording)",
    ),
    (
        "--perf-max-rounds",
        "perf_max_rounds",
        run_options.parse_rounds,
        "adaptive rounds: after --perf-rounds, more fresh processes run only the benchmarks "
        "still undecided (comparing: the change may still exceed the threshold; recording: the "
        "runs are too noisy for a threshold-sized slowdown to show), up to this many rounds in "
        "all, while --perf-round-budget lasts. Default: 8 (with --perf-rounds N given alone, or "
        "--perf-quick: N, no adaptive rounds)",
    ),
    (
        "--perf-round-budget",
        "perf_round_budget",
        run_options.parse_round_budget,
        "seconds after the first process round started past which no further adaptive round "
        "starts (the fixed rounds always run); the benchmarks still undecided then stay "
        f"inconclusive, and the run says so. 0: no limit. Default: {DEFAULT_ROUND_BUDGET_S:g}",
    ),
    (
        "--perf-round-start",
        "perf_round_start",
        run_options.parse_round_start,
        "how the extra process rounds start: 'fork' (each round a child forked from one process "
        "that collected the tests and imported their modules once: no interpreter start-up, "
        "collection or torch import per round), 'fresh' (a new interpreter per round), "
        "'resident' (one process per environment measures every round itself: its GPU "
        "context, OpenCL or Vulkan driver and imports set up once, where a fork cannot keep "
        "them; its rounds do not sample what moves between processes) or 'auto' "
        "(fork on Linux when every selected benchmark runs on a CPU device; fresh elsewhere, "
        "since GPU runtimes do not survive a fork). In a same-session comparison, 'fork' keeps "
        "a round server per environment and measures each benchmark in all of them at once, "
        "the processes taking turns in 0.25 s sampling windows; 'auto' and 'fresh' "
        "run whole interleaved rounds in fresh processes. Default: auto",
    ),
    (
        "--perf-threads",
        "perf_threads",
        settings.parse_threads,
        "host threads for CPU benchmarks (BLAS/OpenMP pools and torch's), recorded in the "
        f"fingerprint; 0 = the libraries' default. Default: {DEFAULTS.threads}",
    ),
    (
        "--perf-measure",
        "perf_measure",
        run_options.parse_measure,
        "what judges CPU benchmarks: time (the clock), counts (instructions on valgrind's "
        "simulated CPU, counted around the benchmark's calls: no host can "
        "disturb them, and their baselines judge on any x86-64 Linux machine; needs valgrind), "
        "or both (counts judge, time is shown beside them); auto: a CPU benchmark with a counts "
        "baseline is counted and judged by counts where valgrind runs, the rest, and what counts "
        "cannot decide (calls under ~30 k interpreted instructions), by time (in a "
        "same-session comparison --perf-against REF counts every CPU benchmark in every "
        "environment, under --perf-count-limit where it has no counts baseline; "
        "--perf-versions is timed). Device benchmarks "
        "are judged by device time. Default: auto",
    ),
    (
        "--perf-count-limit",
        "perf_count_limit",
        run_options.parse_count_limit,
        "where CPU benchmarks are counted: one whose calls run more basic blocks under valgrind "
        "than this (k, M, G: 150M, 1G) is timed instead of counted; the call's own blocks "
        "decide, the same on every host (a counted call of 150 M blocks takes about 3-7 s "
        "there: a 100 ms BLAS matmul runs 125 M, pure Python 150 M in 0.05-0.1 s). Against "
        "stored baselines, a benchmark with a counts baseline is counted whatever the limit. "
        "0 counts every benchmark, however long. Default: 150M",
    ),
    (
        "--perf-count-jobs",
        "perf_count_jobs",
        run_options.parse_count_jobs,
        "with --perf-measure counts or both: how many counted processes share the CPU "
        "benchmarks, side by side (counts do not depend on the host's load); 0: one per CPU "
        f"this process may use, at most {run_options.MAX_AUTO_COUNT_JOBS}. Default: 0",
    ),
    (
        "--perf-size",
        "perf_size",
        settings.parse_size,
        "size preset the benchmarks pick their shapes from (the perf_size fixture): tiny "
        "(correctness runs), small, medium or full (GPU-sized). Baselines of each size other than "
        f"small live in their own directory (<machine>-<size>). Default: {settings.DEFAULT_SIZE}",
    ),
    (
        "--perf-columns",
        "perf_columns",
        run_options.parse_columns,
        "results-table columns, comma-separated (or 'all'): "
        + ", ".join(run_options.COLUMN_KEYS)
        + ". Default: the essential ones, fitted to the terminal; all with -v",
    ),
    (
        "--perf-sort",
        "perf_sort",
        run_options.parse_sort,
        f"order of the table's rows: {', '.join(run_options.SORT_KEYS)}. Default: test order",
    ),
    (
        "--perf-group-by",
        "perf_group_by",
        run_options.parse_group_by,
        f"one table per {', '.join(run_options.GROUP_KEYS)}. Default: one table",
    ),
    (
        "--perf-min-judged",
        "perf_min_judged",
        run_options.parse_share,
        "fail the run when fewer than this share of its benchmarks got a verdict (regressed, "
        "unchanged or improved) rather than no-baseline, incomparable or inconclusive: a "
        "benchmark that was not judged is a miss, not a pass. A fraction (0.9) or a percentage "
        "(90%%). Default: 0.9 where $CI is set, else 0 (the share is shown, not enforced)",
    ),
    (
        "--perf-base",
        "perf_base",
        run_options.parse_git_ref,
        "the git revision --perf-against auto compares with on the default branch (not a pull "
        "request, not another branch), where it measures in the session (no baselines for this "
        "hardware class, or baselines from a host unlike this one or recorded too noisily): a "
        "branch, a tag, HEAD~1. Default: the last release tag before HEAD",
    ),
    (
        "--perf-shard",
        "perf_shard",
        parse_shard,
        "run shard K of N (K/N, e.g. 2/4) of the selected benchmarks, for N CI jobs of one runner "
        "type that together run the selection once: whole benchmarks dealt out by their recorded "
        "durations (by count where none is recorded), the same split in every job; each judges "
        "with the alpha of the whole selection, and `burnperf merge` combines their --perf-json "
        "files. Tests that are not benchmarks run in shard 1. Default: the whole selection",
    ),
    (
        "--perf-profile",
        "perf_profile",
        run_options.parse_profile,
        "after measuring, rerun benchmarks once more under a profiler (cProfile; torch.profiler "
        "for torch), outside the measurement, write each profile to --perf-profile-dir and name "
        "what grew in a regressed benchmark's note; recorded with --perf-update, a profile "
        "summary is kept beside each baseline for later runs to compare. Alone: every "
        "benchmark; 'regressed': only those that regressed (no cost where none did); 'off'. "
        "Default: off",
    ),
    (
        "--perf-memory",
        "perf_memory",
        run_options.parse_memory,
        "judge each benchmark's memory per call (bytes allocated and peak, tracked through the "
        "allocator on the CPU's numpy, torch and Python) beside its time or counts, against "
        "the memory its baseline recorded: on or off. Default: on",
    ),
    (
        "--perf-profile-dir",
        "perf_profile_dir",
        run_options.parse_path,
        "where --perf-profile writes its profiles (one file per benchmark and side: .pstats "
        "for cProfile, .trace.json for torch.profiler and cupy's CUPTI). Default: perf-profiles",
    ),
    (
        "--perf-json-format",
        "perf_json_format",
        run_options.parse_json_format,
        "format of the --perf-json file: burnperf (every field, raw samples per round) or "
        "pytest-benchmark (its JSON, for the tools that read it; verdicts in extra_info). "
        "Default: burnperf",
    ),
    (
        "--perf-json",
        "perf_json",
        run_options.parse_path,
        "write every result, with raw samples, to this JSON file (refused when the file exists "
        "and is not such a results file, or lies in the baselines directory). Default: none",
    ),
    (
        "--perf-markdown",
        "perf_markdown",
        run_options.parse_path,
        "write a Markdown summary (regressions first, then improvements, then the full table "
        "folded) to this .md file, for a pull-request comment; where $GITHUB_STEP_SUMMARY is set "
        "it is appended there too. Default: none",
    ),
)


FLAG_OPTIONS: tuple[tuple[str, str, str, str], ...] = (
    (
        "--perf",
        "perf",
        "run the benchmarks marked @pytest.mark.perf; without it they are skipped. Default: off",
        "same as --perf. Default: false",
    ),
    (
        "--perf-update",
        "perf_update_baselines",
        "record the results of the benchmarks that ran and passed as their new baselines "
        "(atomic writes; other baselines are kept). Also spelled --update-baselines, where no "
        "other plugin or conftest.py defines that option. Default: off",
        "same as --perf-update (for a dedicated recording job). Default: false",
    ),
    (
        "--perf-recalibrate",
        "perf_recalibrate",
        "measure the devices' peak GFLOP/s and GB/s again instead of using the cached figures "
        "(the cache is in $BURNPERF_CACHE_DIR, else $XDG_CACHE_HOME/pytest-burnperf). "
        "Default: off",
        "same as --perf-recalibrate. Default: false",
    ),
    (
        "--perf-quick",
        "perf_quick",
        "a quick look: one process round (3 when recording) and no adaptive rounds (the shipped "
        "CPU suite: 117 s against the default's 452 s, docs/validation.md); it gates only large "
        "slowdowns (each verdict's 'detects' column says how far it sees). Default: off",
        "same as --perf-quick. Default: false",
    ),
    (
        "--perf-count-cycles",
        "perf_count_cycles",
        "where CPU benchmarks are counted: also simulate the caches (32 KiB L1, 8 MiB last "
        "level) and report estimated cycles beside the instructions that judge, with a note "
        "where they move and the instructions do not; each counted call then runs 2.5-8x "
        "slower under valgrind. Default: off (instructions only)",
        "same as --perf-count-cycles. Default: false",
    ),
    (
        "--perf-strict",
        "perf_strict",
        "also fail benchmarks whose verdict is inconclusive or that have no baseline. "
        "Default: off (only regressed fails)",
        "same as --perf-strict. Default: false",
    ),
)
