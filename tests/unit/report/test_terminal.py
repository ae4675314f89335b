"""The notes under the table: reasons, version notes, and a device clock that saw no work."""

from __future__ import annotations

from dataclasses import replace

from pytest_burnperf.core.clocks import Sample
from pytest_burnperf.core.judging.abstention import Cause
from pytest_burnperf.core.judging.verdict import INCOMPARABLE, UNCHANGED, Verdict
from pytest_burnperf.core.options.settings import Settings
from pytest_burnperf.core.records.results import Result
from pytest_burnperf.core.records.roofline_figures import Peaks, Work
from pytest_burnperf.core.text import format_bytes
from pytest_burnperf.report.terminal import notes, row, speedups


def result(sample: Sample, verdict: Verdict) -> Result:
    return Result(
        nodeid="t.py::test_k[opencl-pocl-cpu0-f32]",
        module="t.py",
        key="test_k[opencl-pocl-cpu0-f32]",
        benchmark="test_k",
        device_id="opencl-pocl-cpu0",
        kind="opencl",
        library="opencl",
        dtype="f32",
        fingerprint={},
        settings=Settings(),
        sample=sample,
        verdict=verdict,
        baseline=None,
    )


def test_device_time_far_below_host_time_asks_whether_work_reached_the_device() -> None:
    # 1 us on the device clock while the host waited 1 ms: the work did not go to device.queue
    s = Sample(values=(1e-6,) * 3, loops=1, warmup_calls=1, timer="device", host_values=(1e-3,) * 3)
    (line,) = notes([result(s, Verdict(UNCHANGED, 1e-6))])
    assert line.startswith("test_k[opencl-pocl-cpu0-f32]: device time (1.00 us) is under 1% of")
    ok = Sample(
        values=(9e-4,) * 3, loops=1, warmup_calls=1, timer="device", host_values=(1e-3,) * 3
    )
    assert notes([result(ok, Verdict(UNCHANGED, 9e-4))]) == []


def test_host_time_several_times_device_time_is_called_launch_bound() -> None:
    # 243 us on the device, 1.5 ms on the host (a chain of 128 small kernels on an H100)
    s = Sample(
        values=(243e-6,) * 3, loops=4, warmup_calls=1, timer="device", host_values=(1.5e-3,) * 3
    )
    other = replace(result(s, Verdict(UNCHANGED, 243e-6)), key="test_j[torch-cuda0-f32]")
    (line,) = notes([result(s, Verdict(UNCHANGED, 243e-6)), other])  # one line for all
    assert (
        line.startswith("launch-bound, host time 3x device time or more") and "timer='host'" in line
    )
    assert line.endswith(": test_k[opencl-pocl-cpu0-f32] 6.2x, test_j[torch-cuda0-f32] 6.2x")
    near = replace(s, host_values=(700e-6,) * 3)  # 2.9x: not called launch-bound
    assert notes([result(near, Verdict(UNCHANGED, 243e-6))]) == []


def test_reasons_and_notes_are_listed() -> None:
    s = Sample(values=(1.0,), loops=1, warmup_calls=1)
    v = Verdict(
        INCOMPARABLE,
        1.0,
        reason="baseline from X",
        notes=("torch 1 -> 2 since the baseline",),
        cause=Cause.OTHER_MACHINE,
    )
    assert notes([result(s, v)]) == [
        "test_k[opencl-pocl-cpu0-f32]: incomparable: baseline from X",
        "test_k[opencl-pocl-cpu0-f32]: note: torch 1 -> 2 since the baseline",
    ]
    assert [format_bytes(n) for n in (None, 512, 2048, 3 * 2**20)] == [
        "-",
        "512 B",
        "2.0 KiB",
        "3.0 MiB",
    ]


def _torch_result(key: str, seconds: float, work: Work | None = None) -> Result:
    base = result(Sample(values=(seconds,) * 3, loops=1, warmup_calls=1), Verdict(UNCHANGED, 1.0))
    return replace(
        base,
        key=key,
        benchmark=key.split("[")[0],
        device_id="torch-cpu",
        library="torch",
        kind="cpu",
        work=work,
        peaks=Peaks(gflops=100.0, gbps=40.0, how="test"),
    )


def test_labels_speedups_and_roofline_cells() -> None:
    eager = _torch_result("test_gelu[torch-cpu-f32-custom-forward-eager]", 4e-4)
    compiled = _torch_result("test_gelu[torch-cpu-f32-custom-forward-compiled]", 2e-4)
    plain = _torch_result("test_resnet_blocks[torch-cpu-f32-eager]", 1e-3)
    plain_c = _torch_result("test_resnet_blocks[torch-cpu-f32-compiled]", 8e-4)
    assert eager.label == "test_gelu[custom-forward-eager]"
    assert speedups([eager, compiled, plain, plain_c]) == [
        "eager vs torch.compile (medians of this run):",
        "test_gelu[custom-forward] on torch-cpu f32: eager 400 us -> compiled 200 us (2.00x)",
        "test_resnet_blocks on torch-cpu f32: eager 1.00 ms -> compiled 800 us (1.25x)",
    ]
    # counted, with no time beside: instructions, never printed as seconds nor read as a
    # speed-up (issue 76); one timed and one counted: no line (their ratio means nothing)
    step_e = replace(_torch_result("test_step[torch-cpu-f32-eager]", 1.009e9), measure="counts")
    step_c = replace(_torch_result("test_step[torch-cpu-f32-compiled]", 1.022e9), measure="counts")
    assert speedups([step_e, step_c])[1:] == [
        "test_step on torch-cpu f32: eager 1.01 G -> compiled 1.02 G instructions, counted, not "
        "timed: no speed-up is read from counts (--perf-measure both times them)"
    ]
    assert speedups([step_e, replace(step_c, measure="time")]) == []
    # 2e9 flops and 1e9 bytes in 0.05 s: 40 GF/s of 100 (40%), 20 GB/s of 40 (50%)
    mm = _torch_result("test_mm[torch-cpu-f32]", 0.05, Work(flops=2e9, bytes=1e9))
    cells = row(mm)
    assert cells[0] == "test_mm" and cells[-3:] == ("40 GF/s 40%", "20 GB/s 50%", "unchanged")
    assert row(eager)[-3:-1] == ("-", "-")


def test_counted_results_show_the_rates_of_the_time_beside_them() -> None:
    """Under counts (the default) the GFLOP/s, GB/s and % of peak of the time measured beside
    the counts, never a rate made of instructions; nothing where nothing was timed (issue 76)."""
    timed = _torch_result("test_mm[torch-cpu-f32]", 0.05, Work(flops=2e9, bytes=1e9))
    counted_sample = Sample(values=(3e8,) * 3, loops=1, warmup_calls=1, timer="counts")
    counted = replace(timed, measure="counts", sample=counted_sample, work=None, time=timed)
    assert row(counted)[-3:] == ("40 GF/s 40%", "20 GB/s 50%", "unchanged")
    roof = counted.as_json()["roofline"]
    assert isinstance(roof, dict) and roof["flops"] == 2e9 and roof["gflops"] == 40.0
    alone = replace(timed, measure="counts", sample=counted_sample, time=None)
    assert row(alone)[-3:-1] == ("-", "-") and alone.as_json()["roofline"] is None


def test_brief_notes_fit_the_width_one_line_a_benchmark() -> None:
    from pytest_burnperf.report.terminal import DETAILS, brief

    long = "x" * 30
    assert (
        brief("a: inconclusive: first; second; third", 80)
        == "a: inconclusive: first; second; third"
    )
    assert (
        brief("a: inconclusive: first clause; second; third", 32)
        == "a: inconclusive: first clause …"
    )
    # a first clause too long for the width is cut at a word, never mid-word
    cut = brief(f"name: unchanged: looks 10.2% faster, but not significantly {long}", 60)
    assert cut == "name: unchanged: looks 10.2% faster, but not significantly …"
    s = Sample(values=(1.0,), loops=1, warmup_calls=1)
    v = Verdict(
        INCOMPARABLE,
        1.0,
        reason="baseline from X; more",
        notes=("a note",),
        cause=Cause.OTHER_MACHINE,
    )
    r = result(s, v)
    lines = notes([r], verbose=False, width=80)
    assert lines == [f"{r.key}: incomparable: baseline from X; more", DETAILS]
    assert notes([r], verbose=True) == [
        f"{r.key}: incomparable: baseline from X; more",
        f"{r.key}: note: a note",
    ]


def test_a_same_session_header_has_no_baselines_or_probe_line() -> None:
    # issue 41: a same-session run printed "baselines in ..." and "reference probe: ..." lines
    from pytest_burnperf.report.run_header import header

    s = Sample(values=(1.0,), loops=1, warmup_calls=1)
    rows = [result(s, Verdict(UNCHANGED, 1.0))]
    how = {"machine_id": "m", "baselines": "baselines/m", "size": "small", "rounds": 3}
    how.update({"threshold": 0.05, "alpha": 0.01, "comparisons": 1})
    stored = header(rows, **how)  # type: ignore[arg-type]
    assert any("reference probe" in line for line in stored)
    assert any(line.startswith("baselines in baselines/m") for line in stored)
    assert stored[0].startswith("machine m: ")
    same = header(
        rows, **how, same_session="same-session comparison: current vs main", machine_line=False
    )  # type: ignore[arg-type]
    assert not any("reference probe" in line or "baselines in" in line for line in same)
    assert not any(line.startswith("machine ") for line in same)
    assert any(
        line.startswith("same-session comparison: current vs main; size small") for line in same
    )


def test_the_header_says_the_time_beside_the_counts_apart_from_the_process_rounds() -> None:
    """auto's one round beside the counts is no process round: a run that timed nothing else
    said "3 process rounds (up to 8 for undecided benchmarks): 1 ran; threshold 5%"."""
    from pytest_burnperf.report.run_header import header

    s = Sample(values=(1.0,), loops=1, warmup_calls=1)
    rows = [result(s, Verdict(UNCHANGED, 1.0))]
    how = {"machine_id": "m", "baselines": "b/m", "size": "small", "rounds": 3, "max_rounds": 8}
    how.update({"threshold": 0.05, "alpha": 0.01, "comparisons": 2})
    (alone,) = [line for line in header(rows, **how, beside=2) if line.startswith("baselines")]  # type: ignore[arg-type]
    assert alone == (
        "baselines in b/m; size small; time beside the counts: one round in this process "
        "(2 counted); alpha 0.01 family-wise over 2 comparison(s)"
    )
    mixed = header(rows, **how, beside=1, rounds_per_result=[3, 5])  # type: ignore[arg-type]
    assert (
        "3 process rounds (up to 8 for undecided benchmarks): 3-5 ran; time beside the counts: "
        "one round in this process (1 counted); threshold 5%;" in " ".join(mixed)
    )


def test_every_table_shows_the_median_judged_not_the_last_rounds() -> None:
    """The rounds [256, 243, 305, 243, 254, 8449, 653, 140] us against a 259 us baseline: the
    table showed 140 us (the last round's sample); it shows the median the verdict compared,
    and so do the results file, Markdown, HTML and CSV built from it."""
    from pytest_burnperf.report.csv import results_csv
    from pytest_burnperf.report.html import _results_table
    from pytest_burnperf.report.markdown import _row
    from pytest_burnperf.report.table_row import judged_median

    last = Sample(values=(140e-6,), loops=1, warmup_calls=1)
    verdict = Verdict(
        INCOMPARABLE, 254e-6, baseline_median=259e-6, ratio=254 / 259, cause=Cause.OTHER_MACHINE
    )
    r = replace(result(last, verdict), runs=((256e-6,), (243e-6,), (140e-6,)))
    median = row(r)[6]
    assert median == "254 us"
    doc = r.as_json()
    assert doc["verdict"]["median"] == 254e-6 and doc["stats"]["median"] == 140e-6
    assert judged_median(doc) == 254e-6
    assert "254 us" in _row(doc, ["current"])
    assert "254 us" in _results_table([doc])
    assert "0.000254," in results_csv({"results": [doc]})


def test_the_header_names_the_threshold_each_verdict_was_judged_at() -> None:
    """Issue 72: a device-bound GPU kernel whose threshold nobody chose is judged at 1.5%; the
    header's "threshold 5%" alone would not be the figure judged."""
    from pytest_burnperf.report.run_header import header

    s = Sample(values=(1.0,), loops=1, warmup_calls=1)
    rows = [
        result(s, Verdict(UNCHANGED, 1.0, threshold=0.05)),
        result(s, Verdict(UNCHANGED, 1.0, threshold=0.015)),
        result(s, Verdict(UNCHANGED, 1.0, threshold=0.015)),
    ]
    how = {"machine_id": "m", "baselines": "b/m", "size": "small", "rounds": 3}
    how.update({"threshold": 0.05, "alpha": 0.01, "comparisons": 3})
    text = " ".join(header(rows, **how))  # type: ignore[arg-type]
    assert "threshold 5% (1.5% on 2 device-bound GPU kernels);" in text
    only = " ".join(header(rows[:1], **how))  # type: ignore[arg-type]
    assert "threshold 5%;" in only


def _as_bash_reads_it(lines: list[str]) -> list[str]:
    """The arguments bash reads from the printed command lines (after the lead)."""
    import shutil
    import subprocess

    bash = shutil.which("bash")
    assert bash is not None
    script = "\n".join(lines).replace("pytest", "printf '%s\\0'", 1)
    out = subprocess.run([bash, "-c", script], capture_output=True, text=True, check=True).stdout
    return out.split("\0")[:-1]


def test_a_command_to_copy_fits_80_columns_and_still_pastes_as_one_command() -> None:
    from pytest_burnperf.core.text import command_lines

    lead = "if the slowdown is intended, record it as the new baseline:"
    names = " or ".join(f"test_rgb_to_grayscale[float32-{s}]" for s in ("batch", "hw", "big"))
    argv = ["pytest", "--perf", "--update-baselines", "-p", "no:randomly", "-k", names]
    # it fits: one line, as shlex quotes it
    assert command_lines("with:", argv[:3], 80) == ["with: pytest --perf --update-baselines"]
    assert command_lines(lead, argv, None) == [
        f"{lead} pytest --perf --update-baselines -p no:randomly -k '{names}'"
    ]
    lines = command_lines(lead, argv, 80)
    assert lines[0] == lead and all(len(line) <= 80 for line in lines)
    assert all(line.endswith(" \\") for line in lines[1:-1])
    # the -k expression broken inside double quotes: bash reads the same expression back, the
    # continuation's indent as spaces, which -k reads as one
    read = _as_bash_reads_it(lines[1:])
    assert read[:5] == argv[1:6]
    assert read[5].split() == names.split()
    # what the shell would expand inside double quotes stays whole in single quotes
    odd = [*argv[:-1], names + " or $HOME"]
    lines = command_lines(lead, odd, 80)
    assert lines[-1].strip().startswith("'") and _as_bash_reads_it(lines[1:])[-1] == odd[-1]
    # a lead longer than the line wraps as prose, the command on lines of its own
    long_lead = "2 baseline(s) were recorded before the hardware class was, " * 2 + "with:"
    lines = command_lines(long_lead, argv[:3], 80)
    assert all(len(line) <= 80 for line in lines)
    assert lines[-1] == "    pytest --perf --update-baselines"
