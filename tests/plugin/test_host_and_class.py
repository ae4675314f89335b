"""Where users really run the gate, as they meet it: baselines from another CPU class behind the
same name, baselines from before the hardware identity, a busy host, a slower host.

The host state and the probe are faked (in-process pytester runs use the patched modules): the
tests check the logic, never how busy or fast this machine happens to be. The planted slowdowns
are busy-waits (``_helpers.LOOP_MODULE``), far beyond any noise.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_burnperf.host import activity, probe
from pytest_burnperf.host.hardware import hardware_class
from pytest_burnperf.host.machine import legacy_machine_id

from ._helpers import FAST, REAL_SPIN_MODULE

RECORD = ("--perf", "--perf-update", "--perf-rounds", "1", *FAST)
#: The real counters, for the one test of a real competing process.
REAL_SNAPSHOT = activity.snapshot


@pytest.fixture(autouse=True)
def _host_rules_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the host rules: let them change verdicts, from fake counters and a
    fake probe only (no descheduled samples, a probe that never moves), so this machine's own
    load cannot decide them."""
    monkeypatch.delenv("BURNPERF_TRUST_HOST", raising=False)
    monkeypatch.setattr(activity, "CPU_SHARE_MIN", 0.0)
    _fake_probe(monkeypatch, 1.0)
    # a quiet host unless a test says otherwise: a loaded CI machine's real pressure (PSI)
    # explained a probe test's slowdown as the host's before the probe could
    monkeypatch.setattr(activity, "snapshot", FakeHost(0.02))


def _file(project: pytest.Pytester) -> Path:
    (path,) = sorted((project.path / "baselines").rglob("*.json"))
    return path


def _edit(path: Path, change: Any) -> None:
    doc = json.loads(path.read_text())
    for entry in doc["benchmarks"].values():
        change(entry)
    path.write_text(json.dumps(doc))


def test_machine_id_names_the_hardware_class(loop_project: pytest.Pytester) -> None:
    loop_project.runpytest(*RECORD).assert_outcomes(passed=2)
    path = _file(loop_project)
    assert path.parent.name.endswith(hardware_class().replace("_", "-"))
    doc = json.loads(path.read_text())
    assert doc["machine"]["hardware_class"] == hardware_class()
    fp = doc["benchmarks"]["test_loop[numpy-cpu-f64]"]["device"]
    assert fp["identity"] == 2 and fp["cpu"]["level"] and fp["dispatch"]["numpy"]
    result = loop_project.runpytest("--perf", *FAST)
    result.stdout.fnmatch_lines(["burnperf: machine *cpu-* (* family *)"])
    # named once: the summary does not repeat it (issue 41)
    result.stdout.no_fnmatch_line("machine *: * family *")


def test_baseline_from_another_cpu_class_is_incomparable_not_regressed(
    loop_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The case that made the README's first command fail: baselines recorded on an AVX-512 CPU,
    a run on an AVX2 CPU of the same name. Forced into the same directory (--perf-machine), the
    fingerprints still keep them apart, and a planted slowdown is not blamed on the code."""
    loop_project.runpytest(*RECORD, "--perf-machine", "ci-runner").assert_outcomes(passed=2)

    # the other class relative to this machine's, whatever it is (AVX2 here, AVX-512 elsewhere)
    here = json.loads(_file(loop_project).read_text())["benchmarks"]["test_loop[numpy-cpu-f64]"]
    level = "x86-64-v2" if here["device"]["cpu"]["level"] == "x86-64-v4" else "x86-64-v4"
    numpy = "X86_V2" if here["device"]["dispatch"]["numpy"] == "AVX512_SKX" else "AVX512_SKX"

    def other_class(entry: dict[str, Any]) -> None:
        entry["device"]["cpu"]["level"] = level
        entry["device"]["dispatch"]["numpy"] = numpy

    _edit(_file(loop_project), other_class)
    monkeypatch.setenv("BURNPERF_TEST_WORK", "1.6")  # beyond the 1-vs-1 noise floor (+36%)
    result = loop_project.runpytest("--perf", "--perf-machine", "ci-runner", *FAST)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "test_loop[[]numpy-cpu-f64[]]: incomparable: baseline from * (numpy-cpu), this run "
            f"is on * (CPU level '{level}' -> *; baseline CPU dispatches numpy {numpy}, "
            "this CPU *): not compared; record a baseline for this hardware*",
            "perf: 2 incomparable",
        ]
    )


def test_baselines_from_before_the_hardware_identity_are_reported_with_the_fix(
    loop_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop_project.runpytest(*RECORD).assert_outcomes(passed=2)
    path = _file(loop_project)
    old_dir = loop_project.path / "baselines" / legacy_machine_id()
    shutil.move(str(path.parent), str(old_dir))

    def strip(entry: dict[str, Any]) -> None:
        for key in ("identity", "cpu", "dispatch"):
            entry["device"].pop(key)

    _edit(old_dir / path.name, strip)
    monkeypatch.setenv("BURNPERF_TEST_WORK", "1.6")  # beyond the 1-vs-1 noise floor (+36%)
    result = loop_project.runpytest("--perf", *FAST)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "test_loop[[]numpy-cpu-f64[]]: incomparable: baseline recorded without the hardware "
            "identity*",
            "perf: 2 incomparable",
        ]
    )
    # the prose wrapped at the terminal's width, the command on lines of its own
    flat = " ".join(result.stdout.str().split())
    assert (
        "2 baseline(s) were recorded before pytest-burnperf recorded the hardware class, so "
        "they were not compared; re-record them on this machine with: pytest --perf "
        "--perf-update " in flat
    )
    # the old file is left as it was; re-recording writes the new directory
    assert (old_dir / path.name).exists() and not path.exists()
    loop_project.runpytest(*RECORD).assert_outcomes(passed=2)
    assert path.exists()


class FakeHost:
    """Snapshots in which other processes take ``others`` CPUs while the benchmark takes one,
    and tasks wait for a CPU a share ``pressure`` of the time (PSI)."""

    def __init__(self, others: float, pressure: float = 0.0) -> None:
        self.t = 0.0
        self.others = others
        self.pressure = pressure

    def __call__(self) -> activity.Snapshot:
        self.t += 1.0
        return activity.Snapshot(
            wall=self.t,
            own_cpu=self.t,
            busy=self.t * (1.0 + self.others),
            pressure_us=self.t * self.pressure * 1e6,
            cpus=2,
        )


def test_busy_host_makes_a_slowdown_inconclusive_and_says_so(
    loop_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(activity, "snapshot", FakeHost(0.02))
    loop_project.runpytest(*RECORD).assert_outcomes(passed=2)
    # tasks waiting 30% of the time: the host can explain up to 1.5 / 0.7 = +114%
    monkeypatch.setattr(activity, "snapshot", FakeHost(0.95, pressure=0.3))
    monkeypatch.setenv("BURNPERF_TEST_WORK", "1.6")  # beyond the 1-vs-1 noise floor (+36%)
    result = loop_project.runpytest("--perf", "--perf-json", "r.json", *FAST)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "host BUSY during 2 of 2 benchmark(s) (worst: other processes used 0.95 of 2 CPUs;*",
            "test_loop[[]numpy-cpu-f64[]]: inconclusive: host busy while it ran: other processes "
            "used 0.95 of 2 CPUs; tasks waited for a CPU 30% of the time (PSI) (it can explain up "
            "to +114%); the +*% * change may be the host's, not the code's: not failed*",
        ]
    )
    doc = json.loads((loop_project.path / "r.json").read_text())
    r = {x["name"]: x for x in doc["results"]}["test_loop[numpy-cpu-f64]"]
    assert r["host_disturbed"] == (
        "other processes used 0.95 of 2 CPUs; tasks waited for a CPU 30% of the time (PSI)"
    )
    assert r["host"][0]["others_cpus"] == pytest.approx(0.95)
    # --perf-strict fails what a busy host left undecided (here both: the unchanged one too,
    # since its floor, raised by the busy host, would have let a slowdown through)
    strict = loop_project.runpytest("--perf", "--perf-strict", *FAST)
    strict.assert_outcomes(failed=2)
    strict.stdout.fnmatch_lines(["*test_loop*inconclusive (host busy while it ran*--perf-strict*"])


def test_a_baseline_recorded_on_a_busy_host_is_said_and_never_passes_what_it_could_hide(
    loop_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 72: baselines recorded beside other work made a planted +20% read `unchanged`. The
    recording says so; a later run on a quiet host does not call a change the baseline's slow
    rounds could hide unchanged (--perf-strict fails it)."""
    monkeypatch.setattr(activity, "snapshot", FakeHost(0.95))
    rec = loop_project.runpytest(*RECORD)
    rec.assert_outcomes(passed=2)
    rec.stdout.fnmatch_lines(
        [
            "baselines recorded on a busy host: 2 of 2 recorded benchmark(s) ran some rounds "
            "beside other work (other processes used 0.95 of 2 CPUs): test_bench.py::test_loop*",
        ]
    )
    monkeypatch.setattr(activity, "snapshot", FakeHost(0.02))
    # a 40% threshold: above the 1-vs-1 floor, so a quiet baseline would be judged unchanged
    loose = ("--perf-threshold", "40%", *FAST)
    result = loop_project.runpytest("--perf", *loose)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "test_loop[[]numpy-cpu-f64[]]: inconclusive: the baseline was recorded on a busy host "
            "(other processes used 0.95 of 2 CPUs): its rounds may have run up to +50.0% slow, so "
            "the *% measured against it could hide a slowdown of up to +*%; not called unchanged*",
        ]
    )
    strict = loop_project.runpytest("--perf", "--perf-strict", *loose)
    strict.assert_outcomes(failed=2)
    # the same baselines recorded on a quiet host: unchanged
    loop_project.runpytest(*RECORD).assert_outcomes(passed=2)
    quiet = loop_project.runpytest("--perf", "--perf-json", "r.json", *loose)
    quiet.assert_outcomes(passed=2)
    doc = json.loads((loop_project.path / "r.json").read_text())
    assert {r["verdict"]["status"] for r in doc["results"]} == {"unchanged"}


def test_a_slowdown_beyond_what_the_busy_host_explains_fails(
    loop_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """issue 41: a +122.7% regression passed as inconclusive because tasks waited for a CPU 13%
    of the time. Another process beside, no waiting: the host explains up to +50%."""
    monkeypatch.setattr(activity, "snapshot", FakeHost(0.02))
    loop_project.runpytest(*RECORD).assert_outcomes(passed=2)
    monkeypatch.setattr(activity, "snapshot", FakeHost(0.95))
    monkeypatch.setenv("BURNPERF_TEST_WORK", "3.0")
    result = loop_project.runpytest("--perf", *FAST)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "test_loop[[]numpy-cpu-f64[]]: * exceeds *; host busy while it ran: other processes "
            "used 0.95 of 2 CPUs; a host this busy can explain up to +50%, not the +*% [[]+*%, "
            "+*%] measured: failed all the same",
        ]
    )


def test_quiet_host_still_fails_the_planted_slowdown(
    loop_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(activity, "snapshot", FakeHost(0.02))
    loop_project.runpytest(*RECORD).assert_outcomes(passed=2)
    monkeypatch.setenv("BURNPERF_TEST_WORK", "1.6")
    result = loop_project.runpytest("--perf", *FAST)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["host quiet*"])


def _fake_probe(monkeypatch: pytest.MonkeyPatch, scale: float) -> None:
    monkeypatch.setattr(
        probe, "host_parts", lambda: {"python": 0.004 * scale, "copy": 0.001 * scale}
    )
    monkeypatch.setattr(probe, "device_matmul", lambda device: 0.0003 * scale)


def test_slower_host_explains_the_slowdown_it_covers(
    loop_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_probe(monkeypatch, 1.0)
    loop_project.runpytest(*RECORD).assert_outcomes(passed=2)
    entry = json.loads(_file(loop_project).read_text())["benchmarks"]["test_loop[numpy-cpu-f64]"]
    assert entry["host_probe"] == {"version": 2, "python": 0.004, "copy": 0.001, "matmul": 0.0003}

    _fake_probe(monkeypatch, 1.5)
    monkeypatch.setenv("BURNPERF_TEST_WORK", "1.5")
    result = loop_project.runpytest("--perf", *FAST)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*reference probe: this host runs the reference probe 50% slower than the baseline's "
            "host (copy +50%, matmul +50%, python +50%)",
            "test_loop[[]numpy-cpu-f64[]]: inconclusive: this host runs the reference probe 50% "
            "slower * which explains the +*% change: not failed",
        ]
    )


def test_a_real_competing_process_is_seen(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real counters, real load: CPU-bound processes spinning on half the CPUs take a whole CPU
    or more, far beyond any background noise, so the header must name the busy host."""
    import os
    import subprocess
    import sys
    import time

    monkeypatch.setattr(activity, "snapshot", REAL_SNAPSHOT)

    if not os.path.exists("/proc/stat"):
        pytest.skip("no /proc/stat here: other processes' CPU time cannot be read")
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if not cpus or cpus > 8:
        pytest.skip(f"{cpus} CPUs: half of them busy would not be one CPU's worth of load")
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(max(1, cpus // 2))
    ]
    try:
        time.sleep(0.5)
        # samples long enough that /proc/stat's 10 ms ticks can be read (window >= 0.25 s)
        slow = ("--perf-samples", "60", "--perf-min-time", "0.01", "--perf-warmup", "0.05")
        slow += ("--perf-quick",)  # this process alone, which the load is beside
        pytester.makepyfile(test_spin=REAL_SPIN_MODULE)
        result = pytester.runpytest("--perf", *slow)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["host BUSY during 1 of 1 benchmark(s) (worst: other processes used*"]
    )


@pytest.mark.parametrize(
    ("host", "probe_doc", "field"),
    [
        (5, "fast", ".host: must be a list of host-state windows"),
        (
            [{"others_cpus": "lots"}, "x", None],
            {"version": 2, "python": 0.1},
            ".host[[]0[]].others_cpus: must be a number, got the string 'lots'",
        ),
        (
            [{"seconds": 1}],
            {"version": 2, "python": "slow"},
            ".host_probe.python: must be a number",
        ),
        ([{"seconds": 1}], {"version": 2, "copy": -1}, ".host_probe.copy: must be between 1e-12"),
    ],
)
def test_bad_host_records_in_a_baseline_are_named_and_left_untouched(
    loop_project: pytest.Pytester, host: object, probe_doc: object, field: str
) -> None:
    loop_project.runpytest(*RECORD).assert_outcomes(passed=2)

    def spoil(entry: dict[str, Any]) -> None:
        entry["host"] = host
        entry["host_probe"] = probe_doc

    path = _file(loop_project)
    doc = json.loads(path.read_text())
    for entry in doc["benchmarks"].values():
        spoil(entry)
    path.write_text(json.dumps(doc))
    before = path.read_bytes()
    result = loop_project.runpytest("--perf", *FAST)
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines([f"*baseline file {path}: benchmarks[[]*[]]{field}*"])
    assert "Traceback" not in result.stdout.str() and "INTERNALERROR" not in result.stdout.str()
    assert path.read_bytes() == before
