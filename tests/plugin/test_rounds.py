"""Process rounds, multi-run baselines, --perf-strict and thread control, as a user meets them."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_burnperf.core.judging.stats import MIN_ROUND_SAMPLES

from ._helpers import FAST, FAST_ADAPTIVE, use_virtual_clock


def _baseline(project: pytest.Pytester) -> dict[str, dict[str, object]]:
    (path,) = sorted((project.path / "baselines").rglob("*.json"))
    return json.loads(path.read_text())["benchmarks"]  # type: ignore[no-any-return]


@pytest.mark.slow
@pytest.mark.parametrize("rounds", [1, 2])
def test_planted_slowdown_fails_with_rounds_and_a_rerun_passes(
    loop_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, rounds: int
) -> None:
    opts = ("--perf-rounds", str(rounds), *FAST)
    rec = loop_project.runpytest("--perf", "--perf-update", *opts)
    rec.assert_outcomes(passed=2)
    entry = _baseline(loop_project)["test_loop[numpy-cpu-f64]"]
    assert len(entry["runs"]) == rounds  # type: ignore[arg-type]
    # pooled rounds take their share of --perf-samples 15 each, the worker rounds as this one
    share = 15 if rounds == 1 else max(MIN_ROUND_SAMPLES, -(-15 // rounds))
    assert all(len(r) == share for r in entry["runs"])  # type: ignore[attr-defined]

    again = loop_project.runpytest("--perf", *opts)
    again.assert_outcomes(passed=2)
    plural = "s" if rounds > 1 else ""
    again.stdout.fnmatch_lines([f"baselines in *; {rounds} process round{plural}; *"])

    monkeypatch.setenv("BURNPERF_TEST_WORK", "2.0")  # far above the 1-vs-1 floor; rounds inherit it
    monkeypatch.setenv("COLUMNS", "80")  # the accept command at 80 columns, below
    slow = loop_project.runpytest("--perf", "-v", *opts)  # -v: every note
    slow.assert_outcomes(passed=1, failed=1)
    # every line within the 80 columns (the failure's line wrapped too), pytest's own aside
    ours = slow.stdout.lines[slow.stdout.lines.index("") :]  # from the first blank line
    assert all(len(line) <= 80 for line in ours if not line.startswith("FAILED ")), ours
    flat = " ".join(slow.stdout.str().split())
    assert re.search(
        r"test_loop\[numpy-cpu-f64\]: \S+ us -> \S+ us \(\+\S+% \[[^]]+\], p=\S+, n=\S+, "
        rf"runs={rounds}/{rounds}\) exceeds ",
        flat,
    ), flat
    # the command that accepts it, when the slowdown is intended: on lines of its own at 80
    # columns, one command with shell continuations
    slow.stdout.fnmatch_lines(
        [
            "if the slowdown is intended, record it as the new baseline:",
            "    pytest --perf --update-baselines * \\",
            "    * -k 'test_loop[[]numpy-cpu-f64[]]'",
        ]
    )
    if rounds == 1:
        assert "between-process noise is not measured, so the prior" in flat


@pytest.mark.slow
def test_adaptive_rounds_go_to_the_undecided_benchmarks_only(
    loop_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A planted +30% cannot be ruled out, so test_loop runs all 4 rounds and fails; the
    unchanged test_steady may stop earlier (how soon depends on the machine's noise, so its count
    is only bounded)."""
    opts = ("--perf-rounds", "2", *FAST_ADAPTIVE)
    loop_project.runpytest("--perf", "--perf-update", *opts).assert_outcomes(passed=2)
    monkeypatch.setenv("BURNPERF_TEST_WORK", "1.3")
    slow = loop_project.runpytest(
        "--perf", "--perf-max-rounds", "4", "--perf-json", "r.json", *opts
    )
    slow.assert_outcomes(passed=1, failed=1)
    slow.stdout.fnmatch_lines(
        [
            "burnperf: baselines *, 2 process rounds (up to 4 for undecided benchmarks), size *",
            "burnperf: adaptive round 2 (at most 4): * of 2 undecided (*",
            "burnperf: round 4/4 in this process (*",
            "test_loop[[]numpy-cpu-f64[]]: * runs=2/4) exceeds *",
            "baselines in *; 2 process rounds (up to 4 for undecided benchmarks): *4 ran; *",
        ]
    )
    doc = json.loads(Path(loop_project.path, "r.json").read_text())
    runs = {r["name"].split("[")[0]: len(r["runs"]) for r in doc["results"]}
    assert runs["test_loop"] == 4 and 2 <= runs["test_steady"] <= 4


def test_max_rounds_below_rounds_is_a_usage_error(loop_project: pytest.Pytester) -> None:
    result = loop_project.runpytest("--perf", "--perf-rounds", "3", "--perf-max-rounds", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--perf-max-rounds 2 is below --perf-rounds 3*"])


def test_the_command_line_wins_over_the_projects_round_settings(
    loop_project: pytest.Pytester,
) -> None:
    """max_rounds in benchmarks.toml does not block --perf-quick; errors name the file's key."""
    loop_project.makefile(".toml", benchmarks="[burnperf]\nmax_rounds = 2\n")
    quick = loop_project.runpytest("--perf", "--perf-quick", "-p", "no:randomly")
    assert quick.ret == 0, quick.stderr.str()
    assert "1 process round" in quick.stdout.str() or "round 1/1" in quick.stdout.str()
    bad = loop_project.runpytest("--perf", "-p", "no:randomly")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*max_rounds in *benchmarks.toml 2 is below the default rounds 3*"])


#: Every other process spins twice as long: process rounds far apart, whatever the machine does.
ALTERNATING_MODULE = """
import os
import time

import pytest

_seen = None


def spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_alternating(perf):
    global _seen
    if _seen != os.getpid():  # a forked round inherits the module, not the pid
        _seen = os.getpid()
        with open("processes.log", "a") as f:
            f.write(f"{_seen}\\n")
    with open("processes.log") as f:
        n = len(f.read().split())
    perf(spin, 200e-6 * (2 if n % 2 else 1))
"""


@pytest.mark.slow
def test_recording_a_noisy_baseline_runs_all_rounds_and_says_so(
    pytester: pytest.Pytester,
) -> None:
    """Recording runs the adaptive rounds for a benchmark still too noisy, and a baseline that
    stays too noisy for the threshold is named in the summary with its floor."""
    pytester.makepyfile(test_alt=ALTERNATING_MODULE)
    rec = pytester.runpytest(
        "--perf",
        "--perf-update",
        "--perf-rounds",
        "2",
        "--perf-max-rounds",
        "4",
        *FAST_ADAPTIVE,
    )
    rec.assert_outcomes(passed=1)
    rec.stdout.fnmatch_lines(
        [
            "burnperf: baselines *, 2 process rounds (up to 4 for undecided benchmarks), size *",
            "baselines updated: 1 benchmark(s) in 1 file(s) under *",
            "noisy baselines: 1 of 1 recorded benchmark(s) varied so much between their process*: "
            "test_alt.py::test_alternating[[]numpy-cpu-f64[]] (+*%); re-record them on a quieter "
            "host*",
        ]
    )
    (entry,) = _baseline(pytester).values()
    assert len(entry["runs"]) == 4  # type: ignore[arg-type]


@pytest.mark.slow
def test_a_steady_baseline_is_not_called_noisy(loop_project: pytest.Pytester) -> None:
    rec = loop_project.runpytest("--perf", "--perf-update", *FAST)
    rec.assert_outcomes(passed=2)
    assert "noisy baselines" not in rec.stdout.str()
    assert "single-round baselines" not in rec.stdout.str()  # --perf-quick records 3 rounds


def test_baselines_of_one_process_round_are_said(loop_project: pytest.Pytester) -> None:
    """A recording with --perf-rounds 1 is never silent about it: how far processes move was not
    measured (issue 72: a one-round GPU baseline kept its one host's launch times, 4.5x)."""
    rec = loop_project.runpytest("--perf", "--perf-update", "--perf-rounds", "1", *FAST)
    rec.assert_outcomes(passed=2)
    # a long note wraps at the terminal's width: its start, then its advice
    rec.stdout.fnmatch_lines(
        [
            "single-round baselines: 2 of 2 recorded benchmark(s) were timed in one process round*",
            "*--perf-rounds 1)",
        ]
    )


@pytest.mark.slow
@pytest.mark.parametrize("start", ["auto", "fresh"])
def test_rounds_print_progress_while_they_run(loop_project: pytest.Pytester, start: str) -> None:
    result = loop_project.runpytest(
        "--perf", "--perf-rounds", "3", "--perf-round-start", start, *FAST
    )
    result.assert_outcomes(passed=2)
    # auto forks on Linux for CPU benchmarks (forkserver.can_fork); elsewhere a fresh process
    how = "fresh" if start == "fresh" or not sys.platform.startswith("linux") else "forked"
    result.stdout.fnmatch_lines(
        [
            f"burnperf: round 1/3: 2 benchmarks in a {how} process (*:* elapsed) ...",
            "burnperf: round 1/3: 2/2 done, *:* elapsed",
            f"burnperf: round 2/3: 2 benchmarks in a {how} process (*",
            "burnperf: round 2/3: 2/2 done, *:* elapsed",
            "burnperf: round 3/3 in this process (*:* elapsed) ...",
        ]
    )


PID_MODULE = """
import os

import pytest

from virtual_clock import spin


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_pid(perf):
    with open("pids.txt", "a") as f:
        f.write(f"{os.getpid()}\\n")
    perf(spin, 200e-6)
"""


@pytest.mark.slow
def test_resident_rounds_run_in_one_process_that_lives_for_the_run(
    pytester: pytest.Pytester,
) -> None:
    """--perf-round-start resident (issue 72): the extra rounds are measured by one process
    that stays up between them (a GPU's context, an OpenCL or Vulkan driver set up once), not a
    new one per round; the round structure and the verdict are as with fresh rounds."""
    use_virtual_clock(pytester)
    pytester.makepyfile(test_pid=PID_MODULE)
    opts = ("--perf-rounds", "3", "--perf-round-start", "resident", *FAST)
    rec = pytester.runpytest("--perf", "--perf-update", *opts)
    rec.assert_outcomes(passed=1)
    rec.stdout.fnmatch_lines(
        [
            "burnperf: round 1/3: 1 benchmarks in the resident process (*",
            "burnperf: round 2/3: 1 benchmarks in the resident process (*",
            "burnperf: round 3/3 in this process (*",
        ]
    )
    pids = Path(pytester.path, "pids.txt").read_text().split()
    assert len(pids) == 3 and pids[0] == pids[1] != pids[2]
    (entry,) = _baseline(pytester).values()
    assert len(entry["runs"]) == 3  # type: ignore[arg-type]
    again = pytester.runpytest("--perf", "--perf-json", "r.json", *opts)
    again.assert_outcomes(passed=1)
    (r,) = json.loads(Path(pytester.path, "r.json").read_text())["results"]
    assert r["verdict"]["status"] == "unchanged" and len(r["runs"]) == 3


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_forked_rounds_pool_like_fresh_ones_and_adaptive_rounds_run_the_undecided_only(
    loop_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Forked rounds give the same record as fresh ones: every round's samples, adaptive rounds
    only for the benchmarks still undecided, and a planted slowdown fails."""
    opts = ("--perf-rounds", "2", "--perf-round-start", "fork", *FAST_ADAPTIVE)
    rec = loop_project.runpytest("--perf", "--perf-update", *opts)
    rec.assert_outcomes(passed=2)
    assert all(len(e["runs"]) == 2 for e in _baseline(loop_project).values())  # type: ignore[arg-type]
    monkeypatch.setenv("BURNPERF_TEST_WORK", "1.3")  # the server and its children inherit it
    slow = loop_project.runpytest(
        "--perf", "--perf-max-rounds", "4", "--perf-json", "r.json", *opts
    )
    slow.assert_outcomes(passed=1, failed=1)
    slow.stdout.fnmatch_lines(
        [
            "burnperf: round 1/2: 2 benchmarks in a forked process (*",
            "burnperf: adaptive round 2 (at most 4): * of 2 undecided (*",
            "test_loop[[]numpy-cpu-f64[]]: * runs=2/4) exceeds *",
        ]
    )
    doc = json.loads(Path(loop_project.path, "r.json").read_text())
    runs = {r["name"].split("[")[0]: r["runs"] for r in doc["results"]}
    assert len(runs["test_loop"]) == 4 and 2 <= len(runs["test_steady"]) <= 4
    # forked children take the 2 pooled rounds' share of 15 samples, as this process does
    assert all(len(run) == MIN_ROUND_SAMPLES for run in runs["test_loop"])


def test_only_the_measuring_process_meters_peak_memory(
    loop_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An extra round's process skips the metered call (its peak memory would be dropped, and
    tracemalloc slows pure Python many times over); the measuring process meters each benchmark
    once, or where its memory is tracked beside and the tracker is the device's meter, takes the
    peak from the tracked calls (one tracking, not two). Both run in this interpreter, so the
    patched meter sees every call."""
    from pytest_burnperf.devices.backends.numpy_backend import NumpyDevice

    metered: list[str] = []

    def meter(self: NumpyDevice, call: object) -> int:
        metered.append(self.id)
        call()  # type: ignore[operator]
        return 123

    monkeypatch.setattr(NumpyDevice, "peak_memory", meter)
    out = tmp_path / "round.json"
    loop_project.runpytest("--perf", f"--perf-round-process-out={out}", *FAST).assert_outcomes(
        passed=2
    )
    assert out.exists() and metered == []
    off = ("--perf-memory", "off")
    loop_project.runpytest("--perf", "--perf-json", "r.json", *off, *FAST).assert_outcomes(passed=2)
    assert metered == ["numpy-cpu", "numpy-cpu"]
    doc = json.loads(Path(loop_project.path, "r.json").read_text())
    assert [r["peak_memory_bytes"] for r in doc["results"]] == [123, 123]
    metered.clear()
    loop_project.runpytest("--perf", "--perf-json", "r.json", *FAST).assert_outcomes(passed=2)
    doc = json.loads(Path(loop_project.path, "r.json").read_text())
    assert metered == [], metered  # the peak of the calls tracked beside
    for r in doc["results"]:
        assert r["peak_memory_bytes"] == r["memory"]["figures"]["peak_bytes"], r["memory"]
    # where the tracking then finds it cannot track, one call under the meter gives the peak
    monkeypatch.setattr(NumpyDevice, "memory_per_call", lambda *_a, **_k: "not tracked (test)")
    loop_project.runpytest("--perf", "--perf-json", "r.json", *FAST).assert_outcomes(passed=2)
    doc = json.loads(Path(loop_project.path, "r.json").read_text())
    assert metered == ["numpy-cpu", "numpy-cpu"]
    assert [r["peak_memory_bytes"] for r in doc["results"]] == [123, 123]


@pytest.mark.slow
def test_results_json_keeps_every_round(loop_project: pytest.Pytester) -> None:
    loop_project.runpytest("--perf", "--perf-rounds", "3", "--perf-json", "r.json", *FAST)
    doc = json.loads(Path(loop_project.path, "r.json").read_text())
    for r in doc["results"]:
        assert len(r["runs"]) == 3 and r["runs"][-1] == r["samples"]


def test_strict_fails_no_baseline_and_default_does_not(loop_project: pytest.Pytester) -> None:
    loop_project.runpytest("--perf", *FAST).assert_outcomes(passed=2)
    strict = loop_project.runpytest("--perf", "--perf-strict", *FAST)
    strict.assert_outcomes(failed=2)
    strict.stdout.fnmatch_lines(
        ["test_loop[[]numpy-cpu-f64[]]: no-baseline (no baseline recorded); --perf-strict fails it"]
    )


def test_inconclusive_when_samples_are_too_few(loop_project: pytest.Pytester) -> None:
    few = ["--perf-samples", "3", "--perf-max-samples", "3", "--perf-warmup", "0.01"]
    few += ["--perf-min-time", "0.001"]
    update = ("--perf", "--perf-update", "--perf-rounds", "1")
    loop_project.runpytest(*update, *few).assert_outcomes(passed=2)
    result = loop_project.runpytest("--perf", "--perf-rounds", "1", *few)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*n=3/3 samples can reach p=0.05 at best, not below alpha=0.005*"])


@pytest.mark.slow
def test_threads_are_set_recorded_and_part_of_the_identity(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
        def test_mm(perf, device, dtype):
            a = device.random((64, 64), dtype)
            perf(device.xp.matmul, a, a)
        """
    )
    pytester.runpytest("--perf", "--perf-update", *FAST).assert_outcomes(passed=1)
    (path,) = sorted((pytester.path / "baselines").rglob("*.json"))
    entry = json.loads(path.read_text())["benchmarks"]["test_mm[numpy-cpu-f64]"]
    assert entry["device"]["threads"] == 1 and entry["settings"]["threads"] == 1
    other = pytester.runpytest("--perf", "--perf-threads", "2", *FAST)
    other.assert_outcomes(passed=1)
    other.stdout.fnmatch_lines(["*incomparable: baseline from * (threads 1 -> 2)*"])


def test_bad_rounds_and_threads_are_usage_errors(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--perf", "--perf-rounds", "0")
    result.stderr.fnmatch_lines(["*--perf-rounds: rounds must be between 1 and 50, got '0'"])
    result = pytester.runpytest("--perf", "--perf-threads", "many")
    result.stderr.fnmatch_lines(["*--perf-threads: threads must be a whole number*got 'many'"])


@pytest.mark.parametrize("start", ["fork", "fresh"])
def test_a_round_that_crashes_is_reported_and_the_run_goes_on(
    loop_project: pytest.Pytester, start: str
) -> None:
    if start == "fork" and not hasattr(os, "fork"):
        pytest.skip("needs fork()")
    # only the round processes (fresh ones, or the server the forked ones come from) see
    # --perf-round-process-out / --perf-round-process-serve on their command line
    use_virtual_clock(
        loop_project,
        """
        import sys

        if any(a.startswith(("--perf-round-process-out", "--perf-round-process-serve")) for a in sys.argv):
            raise SystemExit("round process refused to start")
        """,
    )
    result = loop_project.runpytest(
        "--perf", "--perf-rounds", "2", "--perf-round-start", start, *FAST
    )
    result.assert_outcomes(passed=2)
    how = "forked" if start == "fork" else "fresh"
    result.stdout.fnmatch_lines(
        [f"round 1 in a {how} process failed (exit *); its samples are missing from the verdicts:*"]
    )


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_a_forked_round_that_dies_is_reported_and_the_next_round_still_runs(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        """
        import os, sys
        import pytest

        @pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
        def test_dies_in_round_one(perf, device, dtype):
            if any(a.startswith("--perf-round-process-serve") for a in sys.argv):
                marker = os.path.join(os.environ["MARKER_DIR"], "died")
                if not os.path.exists(marker):  # the first forked round dies, the second not
                    open(marker, "w").close()
                    os._exit(3)
            a = device.random((32, 32), dtype)
            perf(device.xp.add, a, a)
        """
    )
    monkeypatch.setenv("MARKER_DIR", str(pytester.path))
    result = pytester.runpytest(
        "--perf", "--perf-rounds", "3", "--perf-round-start", "fork", "--perf-json", "r.json", *FAST
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["round 1 in a forked process failed (exit 3); its samples are missing from the verdicts:*"]
    )
    doc = json.loads(Path(pytester.path, "r.json").read_text())
    assert len(doc["results"][0]["runs"]) == 2  # round 2 (forked) and this process's


def test_fork_is_refused_where_there_is_no_fork(
    loop_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(os, "fork", raising=False)
    result = loop_project.runpytest("--perf", "--perf-round-start", "fork")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--perf-round-start fork: this platform has no fork()*"])


def test_bad_round_start_is_a_usage_error(loop_project: pytest.Pytester) -> None:
    result = loop_project.runpytest("--perf", "--perf-round-start", "spawn")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--perf-round-start*round start must be one of auto, fork, fresh*"]
    )


@pytest.mark.slow
def test_the_round_budget_stops_the_adaptive_rounds_and_says_so(
    loop_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A planted +30% wants every adaptive round; a budget every round outlasts (1 ms) leaves
    it the fixed ones, and the run names the budget and what buys more."""
    opts = ("--perf-rounds", "2", *FAST_ADAPTIVE)
    loop_project.runpytest("--perf", "--perf-update", *opts).assert_outcomes(passed=2)
    monkeypatch.setenv("BURNPERF_TEST_WORK", "1.3")
    slow = loop_project.runpytest(
        "--perf",
        "--perf-max-rounds",
        "4",
        "--perf-round-budget",
        "0.001",
        "--perf-json",
        "r.json",
        *opts,
    )
    slow.assert_outcomes(passed=1, failed=1)  # +30% with 2+2 rounds is far past the noise
    slow.stdout.fnmatch_lines(
        [
            "*adaptive rounds stopped: the round budget of 0.001 s was spent with * of 2 "
            "benchmark(s) still undecided*--perf-round-budget*"
        ]
    )
    assert "adaptive round 2" not in slow.stdout.str()
    doc = json.loads(Path(loop_project.path, "r.json").read_text())
    assert all(len(r["runs"]) == 2 for r in doc["results"])


@pytest.mark.slow
def test_defaults_take_three_rounds_and_quick_takes_one(loop_project: pytest.Pytester) -> None:
    loop_project.runpytest("--perf", "--perf-update", *FAST_ADAPTIVE).assert_outcomes(passed=2)
    default = loop_project.runpytest("--perf", *FAST_ADAPTIVE)
    default.assert_outcomes(passed=2)
    default.stdout.fnmatch_lines(
        ["burnperf: baselines *, 3 process rounds (up to 8 for undecided benchmarks), size *"]
    )
    quick = loop_project.runpytest("--perf", *FAST)  # FAST asks for --perf-quick
    quick.assert_outcomes(passed=2)
    quick.stdout.fnmatch_lines(["burnperf: baselines *, 1 process round, size *"])
    both = loop_project.runpytest("--perf", "--perf-quick", "--perf-max-rounds", "4")
    assert both.ret == pytest.ExitCode.USAGE_ERROR
    both.stderr.fnmatch_lines(["*--perf-quick runs no adaptive rounds*--perf-max-rounds 4*"])


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_a_round_server_runs_only_what_this_process_asked_for(
    loop_project: pytest.Pytester,
) -> None:
    """The round server collects on its own and may see a benchmark this process does not (a
    device present there but hidden here, whose driver a forked child then hangs in): it runs
    the node ids it is sent, never its own collection."""
    loop_project.makepyfile(
        test_server_only="""
        import sys

        import pytest

        if any(a.startswith("--perf-round-process-serve") for a in sys.argv):

            @pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
            def test_only_the_server_sees(perf):
                raise SystemExit("the round server ran a benchmark nobody asked for")
        """
    )
    result = loop_project.runpytest(
        "--perf", "--perf-rounds", "2", "--perf-round-start", "fork", *FAST
    )
    result.assert_outcomes(passed=2)
    assert "failed" not in result.stdout.str()


def test_the_accept_command_names_functions_and_the_option_that_is_ours() -> None:
    import types

    from pytest_burnperf.core.judging.verdict import REGRESSED, UNCHANGED
    from pytest_burnperf.plugin.output.reporter import accept_line

    def res(
        benchmark: str, status: str, params: str = "[numpy-cpu-f32]", memory: str | None = None
    ) -> Any:
        return types.SimpleNamespace(
            benchmark=benchmark,
            key=benchmark + params,
            verdict=types.SimpleNamespace(status=status),
            sides={} if memory is None else {"memory": types.SimpleNamespace(status=memory)},
        )

    from pytest_burnperf.core.options.run_mode import Mode

    state: Any = types.SimpleNamespace(
        run=types.SimpleNamespace(
            mode=Mode.JUDGE, invocation=("--perf", "-k", "old", "tests/", "-kx")
        )
    )
    rows = [res("TestK::test_m", REGRESSED), res("test_a", REGRESSED), res("test_b", UNCHANGED)]
    # a memory regression beside an unchanged time is accepted the same way, said as what it is;
    # a call over max_memory is not (recording does not move the ceiling)
    bigger = [
        res("test_b", UNCHANGED, memory=REGRESSED),
        res("test_c", UNCHANGED, memory="over-limit"),
    ]
    line = accept_line(state, bigger)
    assert line is not None and line.startswith("if the memory growth is intended, record it")
    assert "test_b[numpy-cpu-f32]" in line and "test_c" not in line
    # each regressed case exactly (not every case of its function), within the run's own -k
    assert accept_line(state, rows) == (
        "if the slowdown is intended, record it as the new baseline: pytest --perf "
        "--update-baselines tests/ -k '(x) and (test_a[numpy-cpu-f32] or "
        "test_m[numpy-cpu-f32])'"
    )
    # parameters -k cannot read: the function's name
    odd = [res("test_c", REGRESSED, "[a b=1]")]
    assert str(accept_line(state, odd)).endswith("-k '(x) and (test_c)'")
    # a conftest.py owns --update-baselines: the command says --perf-update
    assert "pytest --perf --perf-update tests/ -k" in str(accept_line(state, rows, ours=False))
    assert accept_line(state, rows[2:]) is None  # nothing regressed
    # --perf-against auto that took the stored baselines: the recording command drops what the
    # run compared with (--perf-base too, which a recording run has no use for)
    state.run.invocation = ("--perf", "--perf-against", "auto", "--perf-base", "v1", "tests/")
    assert accept_line(state, rows) == (
        "if the slowdown is intended, record it as the new baseline: pytest --perf "
        "--update-baselines tests/ -k 'test_a[numpy-cpu-f32] or test_m[numpy-cpu-f32]'"
    )
    # at 80 columns: the lead, then the command on lines of its own, each within the width
    narrow = str(accept_line(state, rows, width=60)).split("\n")
    assert narrow[0] == "if the slowdown is intended, record it as the new baseline:"
    assert narrow[1].startswith("    pytest --perf --update-baselines tests/")
    assert all(len(line) <= 60 for line in narrow) and narrow[1].endswith(" \\")
    state.run.mode = Mode.COMPARE  # a same-session comparison has no baseline to record
    assert accept_line(state, rows) is None


@pytest.mark.slow
def test_round_processes_probe_only_the_devices_they_time(pytester: pytest.Pytester) -> None:
    """A run that times numpy benchmarks only does not make its round processes import torch
    (probing it costs seconds a process), though the marker asks for it."""
    pytest.importorskip("torch")
    pytester.makepyfile(
        test_probe="""
        import os, sys
        import pytest

        @pytest.mark.perf(backends=["numpy", "torch"], dtypes=["f32"])
        def test_k(perf):
            with open("seen.txt", "a") as f:
                f.write(f"{os.getpid()} {'torch' in sys.modules}\\n")
            perf(sum, range(100))
        """
    )
    result = pytester.runpytest_subprocess(
        "--perf", "--perf-measure", "time", "--perf-rounds", "2", *FAST, "-k", "numpy"
    )
    result.assert_outcomes(passed=1)
    seen = dict(line.split() for line in (pytester.path / "seen.txt").read_text().splitlines())
    assert "False" in seen.values(), seen  # the other round's process never loaded torch


def test_a_round_process_imports_only_the_files_of_its_benchmarks(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """A round process given its node ids imports no other test module of the paths it was
    given (under valgrind, a module that imports torch costs tens of seconds), while every
    directory's conftest.py still loads as in the parent."""
    pytester.makeconftest("import os\nos.environ['BURNPERF_TEST_CONFTEST'] = 'loaded'\n")
    sub = pytester.mkpydir("sub")
    (sub / "conftest.py").write_text(
        "import pytest\n\n@pytest.fixture\ndef size():\n    return 8\n", encoding="utf-8"
    )
    (sub / "test_wanted.py").write_text(
        "import os\nimport pytest\n\n"
        "@pytest.mark.perf(backends=['numpy'], dtypes=['f64'])\n"
        "def test_sum(perf, device, dtype, size):\n"
        "    assert os.environ['BURNPERF_TEST_CONFTEST'] == 'loaded'\n"
        "    perf(device.xp.sum, device.random((size,), dtype))\n",
        encoding="utf-8",
    )
    for name in ("test_other.py", "test_heavy.py"):
        (sub / name).write_text("raise RuntimeError('imported a file of no wanted test')\n")
    (pytester.path / "test_top.py").write_text("raise RuntimeError('imported the top file')\n")
    only = tmp_path / "round.only"
    only.write_text("sub/test_wanted.py::test_sum[numpy-cpu-f64]\n", encoding="utf-8")
    out = tmp_path / "round.json"
    result = pytester.runpytest(
        "--perf", f"--perf-round-process-out={out}", f"--perf-round-process-only={only}", *FAST
    )
    result.assert_outcomes(passed=1)
    assert "imported" not in result.stdout.str()
    assert list(json.loads(out.read_text())) == ["sub/test_wanted.py::test_sum[numpy-cpu-f64]"]
    # without node ids (the parent, or a round over every benchmark) everything is collected
    assert pytester.runpytest("--perf", *FAST).ret == pytest.ExitCode.INTERRUPTED


@pytest.mark.slow
@pytest.mark.installed_plugins  # hypothesis's, as a user's environment has it
def test_round_processes_start_without_hypothesiss_plugin_unless_the_run_names_it(
    pytester: pytest.Pytester,
) -> None:
    """hypothesis's pytest plugin imports all of hypothesis in its terminal summary, in every
    process, whether a test used it or not: the round processes start without it, unless the
    run names one of its options (then a child without it would refuse the option)."""
    pytest.importorskip("_hypothesis_pytestplugin")
    seen = pytester.path / "seen"
    pytester.makepyfile(
        test_h=f"""
        import os
        import pathlib

        import pytest

        @pytest.mark.perf(backends=["numpy"], dtypes=["f32"])
        def test_k(perf, request):
            loaded = request.config.pluginmanager.has_plugin("hypothesispytest")
            folder = pathlib.Path({str(seen)!r})
            folder.mkdir(exist_ok=True)
            (folder / str(os.getpid())).write_text(str(loaded))
            perf(lambda: None)
        """
    )
    rounds = ("--perf", "--perf-update", "--perf-measure", "time", "--perf-rounds", "2")
    for extra, in_children in (((), "False"), (("--hypothesis-seed=3",), "True")):
        shutil.rmtree(seen, ignore_errors=True)
        pytester.runpytest(*rounds, *FAST_ADAPTIVE, *extra).assert_outcomes(passed=1)
        said = {p.name: p.read_text() for p in seen.iterdir()}
        assert said.pop(str(os.getpid())) == "True", said  # this process keeps it
        assert said and set(said.values()) == {in_children}, (extra, said)
