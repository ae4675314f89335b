"""The results table: essential columns fitted to the terminal, -v or --perf-columns for more,
sorting and grouping; long notes wrapped."""

from __future__ import annotations

from typing import Any

from pytest_burnperf.core.clocks import Sample
from pytest_burnperf.core.judging.abstention import BY_STATUS
from pytest_burnperf.core.judging.verdict import IMPROVED, REGRESSED, UNCHANGED, Verdict
from pytest_burnperf.core.options.run_options import COLUMN_KEYS
from pytest_burnperf.core.options.settings import Settings
from pytest_burnperf.core.records.results import Result
from pytest_burnperf.core.text import quoted
from pytest_burnperf.report.terminal import ESSENTIAL, HEADERS, table_rows, wrap


def table(results: list[Any], **how: Any) -> list[str]:
    """The table's text lines, without each row's verdict."""
    return [line for line, _ in table_rows(results, **how)]


def result(name: str, device: str, dtype: str, median: float, status: str, ratio: float) -> Result:
    library = device.split("-")[0]
    return Result(
        nodeid=f"perf_tests/test_ops.py::{name}[{device}-{dtype}]",
        module="perf_tests/test_ops.py",
        key=f"{name}[{device}-{dtype}]",
        benchmark=name,
        device_id=device,
        kind="cpu",
        library=library,
        dtype=dtype,
        fingerprint={},
        settings=Settings(),
        sample=Sample(values=(median,) * 5, loops=1, warmup_calls=1),
        verdict=Verdict(
            status,
            median,
            baseline_median=median / ratio,
            ratio=ratio,
            ratio_low=ratio - 0.01,
            ratio_high=ratio + 0.01,
            min_detectable=0.06,
            cause=BY_STATUS.get(status),
        ),
        baseline=None,
    )


RESULTS = [
    result(
        "test_a_rather_long_benchmark_name_with_parameters",
        "numpy-cpu",
        "f32",
        2e-3,
        UNCHANGED,
        1.0,
    ),
    result("test_b", "torch-cpu", "f64", 1e-3, REGRESSED, 1.3),
    result("test_c", "numpy-cpu", "f64", 3e-3, IMPROVED, 0.8),
]


def header_cells(lines: list[str]) -> list[str]:
    return lines[0].split()


def test_default_shows_the_essential_columns_and_fits_80_columns() -> None:
    wide = table(RESULTS, width=400)
    assert [h for h in HEADERS.values() if h.split()[0] in header_cells(wide)]
    assert "shape" not in wide[0] and "IQR %" not in wide[0] and "arith" not in wide[0]
    assert all(HEADERS[c].split()[0] in wide[0] for c in ESSENTIAL)
    narrow = table(RESULTS, width=80)
    assert all(len(line) <= 80 for line in narrow), [len(x) for x in narrow]
    for kept in ("benchmark", "dtype", "median", "change", "verdict"):
        assert HEADERS[kept].split()[0] in narrow[0]
    assert any("…" in line for line in narrow)  # the long name was shortened, not the verdict
    assert narrow[3].rstrip().endswith("regressed")


def test_verbose_and_explicit_columns_show_what_is_asked() -> None:
    everything = table(RESULTS, width=400, verbose=True)
    assert "IQR %" in everything[0] and "arith" in everything[0]  # -v: all where they fit
    assert "time change" not in everything[0]  # no --perf-measure both here
    narrow = table(RESULTS, width=80, verbose=True)  # -v respects COLUMNS
    assert all(len(line) <= 80 for line in narrow) and "verdict" in narrow[0]
    chosen = table(RESULTS, width=80, columns=("verdict", "benchmark"))
    assert chosen[0].split() == ["verdict", "benchmark"]
    assert len(COLUMN_KEYS) == len(HEADERS)


def test_sort_and_group() -> None:
    by_change = table(RESULTS, width=400, sort="change")
    assert [line.split()[0] for line in by_change[2:]] == [
        "test_b",
        "test_a_rather_long_benchmark_name_with_parameters",
        "test_c",
    ]
    by_verdict = table(RESULTS, width=400, sort="verdict")
    assert by_verdict[2].split()[0] == "test_b"  # regressed first
    grouped = table(RESULTS, width=400, group_by="device")
    titles = [line for line in grouped if line.startswith("device ")]
    assert titles == ["device numpy-cpu:", "device torch-cpu:"]
    assert sum(1 for line in grouped if line.startswith("test_")) == 3


def test_wrap_keeps_short_lines_and_folds_long_ones() -> None:
    long = "test_x[numpy-cpu-f32]: note: " + "word " * 40
    out = wrap(["short", long], 60)
    assert out[0] == "short" and all(len(x) <= 60 for x in out)
    assert out[2].startswith("    ")
    assert wrap([long], None) == [long]
    # a process's output quoted in a note stays quoted where it folds
    note = "the counted process failed:\n" + quoted(
        "=" * 30 + " short test summary info " + "=" * 30
    )
    folded = wrap([note], 60)
    assert folded[0] == "the counted process failed:"
    assert len(folded) == 3 and all(line.startswith("    | ") for line in folded[1:])


def _pb(params: str, device: str = "numpy-cpu", status: str = UNCHANGED) -> Result:
    """A test written for pytest-benchmark: its id is its own parameters (issue 41)."""
    r = result("test_kernels", device, "f64", 1e-3, status, 1.0)
    key = f"test_kernels[{params}]"
    return Result(**{**r.__dict__, "key": key, "nodeid": f"perf_tests/test_ops.py::{key}"})


def test_80_columns_keep_what_tells_rows_apart() -> None:
    # issue 41: names cut to `test_kernels[…` made five rows look the same
    kernels = [_pb(f"{op}-shape{i}-mylib") for i, op in enumerate(("nansum", "nanmax", "nanmin"))]
    lines = table(kernels, width=80)
    assert all(len(line) <= 80 for line in lines), [len(x) for x in lines]
    # each id whole, on a line of its own: cut to fit beside the figures, the name would keep
    # less of itself than its parameters (issue 76)
    names = [line for line in lines if line.startswith("test_kernels[")]
    assert names == [r.label for r in kernels]


def test_80_columns_never_drop_the_backend_of_two_rows_of_one_test() -> None:
    # the numpy-cpu and torch-cpu rows of one test differ only in their backend
    rows = [
        result(
            "test_a_rather_long_benchmark_name_with_params",
            "numpy-cpu",
            "f64",
            1e-3,
            UNCHANGED,
            1.0,
        ),
        result(
            "test_a_rather_long_benchmark_name_with_params",
            "torch-cpu",
            "f64",
            1e-3,
            UNCHANGED,
            1.0,
        ),
    ]
    lines = table(rows, width=80)
    assert all(len(line) <= 80 for line in lines)
    assert "backend" in lines[0]
    assert len({line for line in lines[2:]}) == 2
    assert "numpy" in lines[2] and "torch" in lines[3]


def test_where_neither_tells_rows_apart_the_library_is_kept_over_the_device() -> None:
    # numpy-only rows too wide for 80 columns: `numpy` says more than `cpu`
    long = "test_a_rather_long_benchmark_name_with_params"
    rows = [result(long, "numpy-cpu", d, 1e-3, UNCHANGED, 1.0) for d in ("f32", "f64")]
    whole = max(len(line) for line in table(rows))
    # room for all but the baseline's median, the detectable change and one of the two
    width = whole - len("  baseline") - len("  detects") - len("  device")
    lines = table(rows, width=width)
    assert all(len(line) <= width for line in lines)
    assert "backend" in header_cells(lines) and "device" not in header_cells(lines)
    assert all(" numpy " in line for line in lines[2:])
    # where the device tells them apart (torch on the CPU and on a GPU), the device stays
    torch = [result(long, d, "f32", 1e-3, UNCHANGED, 1.0) for d in ("torch-cpu", "torch-cuda0")]
    lines = table(torch, width=width)
    assert "device" in header_cells(lines)


def test_names_that_would_read_the_same_go_on_a_line_of_their_own() -> None:
    long = "x" * 30
    rows = [_pb(f"{long}-{i}-{long}") for i in range(3)]
    lines = table(rows, width=80)
    assert all(len(line) <= 80 for line in lines[3::2]), [len(x) for x in lines]
    assert lines[0] == "benchmark (its figures on the line below)"
    # each full id, then its figures indented
    assert [lines[3 + 2 * i] for i in range(3)] == [r.label for r in rows]
    assert all(lines[4 + 2 * i].startswith("  ") for i in range(3))
    assert "benchmark" not in lines[1]


def test_an_id_whose_parameters_do_not_fit_its_column_goes_on_a_line_of_its_own() -> None:
    """Few rows, long parameters: cut to the column, the id kept neither its name nor its
    parameters (`test_rgb…at32--128-128-3-1]`, issue 76); whole on a line of its own it reads
    within 80 columns."""
    rows = [_pb(f"torch-cpu-float32-{i}-128-128-3-1-channels-last-contiguous") for i in range(2)]
    lines = table(rows, width=80)
    assert lines[0] == "benchmark (its figures on the line below)"
    assert [lines[3], lines[5]] == [r.label for r in rows]
    assert all(len(line) <= 80 for line in lines) and not any("…" in line for line in lines)


def test_both_shows_the_time_change_beside_the_counts_at_80_columns() -> None:
    """--perf-measure both: counts judge, and the clock's change is a column of the default
    table (it showed only with -v), kept when the table is fitted to 80 columns."""
    from dataclasses import replace

    counted = [
        replace(
            r,
            measure="counts",
            sample=Sample(values=(1.2e6,) * 5, loops=1, warmup_calls=1, timer="counts"),
            verdict=replace(r.verdict, current_median=1.2e6, baseline_median=1.2e6),
            time=r,
        )
        for r in RESULTS
    ]
    lines = table(counted, width=80)
    assert "time change" in lines[0] and all(len(line) <= 80 for line in lines)
    head = lines[0].split("  ")
    # counted rows show no interval: the change column says so, and is only as wide as its figures
    assert [h.strip() for h in head if h.strip()][-3:] == ["change", "time change", "verdict"]
    assert "+30.0%" in lines[3] and "+30.00%" in lines[3]  # time +30.0%, counts +30.00%


def test_a_short_name_is_never_widened_to_fit() -> None:
    """Names are shortened to fit the width, never below 16 characters; one already shorter
    keeps its own width (a 11-character name made the table wider than 80 columns)."""
    short = [
        result("test_matmul", "numpy-cpu", "f32", 1e-3, UNCHANGED, 1.0),
        result("test_matmul", "torch-cpu", "f32", 1e-3, REGRESSED, 1.3),
    ]
    lines = table(short, width=60)
    assert lines[1].split("  ")[0] == "-" * len("test_matmul"), lines


def test_an_id_cut_to_its_parameters_alone_goes_on_a_line_of_its_own() -> None:
    """Parameters that fit the column but leave the test's name four characters
    (`test…[float32-hw]`, issue 76): the id goes whole on a line of its own."""
    names = ["test_rgb_to_grayscale[float32-hw]", "test_rgb_to_grayscale[float32-batch]"]
    base = result("test_rgb_to_grayscale", "torch-cpu", "f32", 1e-3, UNCHANGED, 1.0)
    rows = [Result(**{**base.__dict__, "key": n, "nodeid": f"t.py::{n}"}) for n in names]
    lines = table(rows, width=64)
    assert lines[0] == "benchmark (its figures on the line below)", lines
    assert names[0] in lines and names[1] in lines
    assert all(len(line) <= 64 for line in lines) and not any("…[" in x for x in lines)


def test_verbose_at_80_columns_keeps_the_rates_under_the_names_of_their_own() -> None:
    """-v of counted benchmarks with their time beside (issue 76): at 80 columns the rates
    (GFLOP/s, GB/s, % of peak) are dropped after the baseline and the detectable change, and
    where the names go on lines of their own, what was dropped to fit comes back while it fits."""
    from dataclasses import replace

    from pytest_burnperf.core.records.roofline_figures import Peaks, Work

    def matmul(shape: str) -> Result:
        r = result("test_matmul", "numpy-cpu", "f32", 1e-3, UNCHANGED, 1.0)
        name = f"test_matmul[{shape}]"
        timed = replace(
            r,
            key=name,
            nodeid=f"t.py::{name}",
            work=Work(flops=2e7, bytes=1e6, shape="256x256 @ 256x256"),
            peaks=Peaks(gflops=100.0, gbps=40.0, how="test"),
        )
        counts = Sample(values=(7.06e6,) * 3, loops=1, warmup_calls=1, timer="counts")
        verdict = replace(r.verdict, current_median=7.06e6, baseline_median=7.06e6)
        return replace(
            timed, measure="counts", sample=counts, verdict=verdict, work=None, time=timed
        )

    rows = [matmul(s) for s in ("square", "batched", "matvec", "vecmat", "inner", "outer")]
    lines = table(rows, width=80, verbose=True)
    assert all(len(line) <= 80 for line in lines), [len(x) for x in lines]
    assert lines[0] == "benchmark (its figures on the line below)", lines
    assert "arith" in lines[1] and "mem" in lines[1], lines[1]
    assert "test_matmul[square]" in lines and "20 GF/s 20%" in lines[4], lines
    # the default table (no -v) has no rates to keep
    assert "arith" not in "".join(table(rows, width=80))
