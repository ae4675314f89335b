from __future__ import annotations

import pytest

from pytest_burnperf.core.options.settings import (
    PerfSpec,
    Settings,
    SettingsError,
    parse_alpha,
    parse_backends,
    parse_dtypes,
    parse_marker,
    parse_samples,
    parse_threshold,
)


def test_marker_defaults_and_overrides() -> None:
    assert parse_marker("t", (), {}) == PerfSpec()
    spec = parse_marker("t", (), {"backends": "cpu", "dtypes": ["f64", "f32"], "samples": 7})
    assert spec.backends == ("cpu",)
    assert spec.dtypes == ("f64", "f32")
    assert dict(spec.overrides) == {"samples": 7}


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"sample": 3}, "unknown keyword 'sample'; allowed: backends, dtypes, samples"),
        ({"backends": ["gpu"]}, "unknown backend 'gpu'; expected a device kind (cpu, cuda"),
        ({"backends": ["torch-opencl"]}, "unknown backend 'torch-opencl'"),
        (
            {"dtypes": ["float32"]},
            "unknown dtype 'float32'; allowed: f16, bf16, f32, f64, i32, i64",
        ),
        ({"dtypes": []}, "dtypes must name at least one entry"),
        ({"samples": 1}, "samples must be between 2 and 100000"),
        ({"threshold": "lots"}, "threshold must be a number, got 'lots'"),
        ({"alpha": 0.9}, "alpha must be in (0, 0.5]"),
        ({"warmup": -1}, "warmup must be seconds in [0, 3600]"),
    ],
)
def test_marker_errors_name_the_test_and_the_allowed_values(kwargs: dict, fragment: str) -> None:
    with pytest.raises(SettingsError) as info:
        parse_marker("perf_tests/test_x.py::test_mm", (), kwargs)
    assert str(info.value).startswith("perf_tests/test_x.py::test_mm: @pytest.mark.perf")
    assert fragment in str(info.value)


def test_positional_marker_arguments_are_refused() -> None:
    with pytest.raises(SettingsError, match="keyword arguments only"):
        parse_marker("t", ("cpu",), {})


def test_backend_names() -> None:
    names = "cpu,cuda,torch,numpy-cpu,torch-cuda0,torch-rocm,cupy-cuda1,opencl-pocl-cpu0,vulkan"
    assert parse_backends(names, "x") == tuple(names.split(","))
    assert parse_dtypes("f32, f32 ,bf16", "x") == ("f32", "bf16")


def test_numbers_accept_percentages_and_refuse_nonsense() -> None:
    assert parse_threshold("5%", "x") == pytest.approx(0.05)
    assert parse_threshold(0.1, "x") == 0.1
    assert parse_alpha("0.05", "x") == 0.05
    assert parse_samples("12", "x") == 12
    for bad in ("nan", "inf", "", True):
        with pytest.raises(SettingsError, match="--perf-threshold"):
            parse_threshold(bad, "--perf-threshold")
    with pytest.raises(SettingsError, match="whole number"):
        parse_samples("2.5", "x")


def test_settings_merge_ignores_unset() -> None:
    s = Settings().merged({"samples": 5, "alpha": None})
    assert s.samples == 5 and s.alpha == Settings().alpha


def test_a_suggested_command_keeps_what_selects_and_configures_benchmarks() -> None:
    """-v, output files, profiles, pytest's temporary folder and the comparison itself are this
    run's business, not the suggested command's; test paths, -k, -m and --perf-* settings stay."""
    from pytest_burnperf.core.options.command_args import suggested_args

    run = [
        "--perf",
        "-v",
        "-rA",
        "tests/bench",
        "--perf-json",
        "r.json",
        "--perf-markdown=s.md",
        "--perf-profile",
        "regressed",
        "-k",
        "matmul or sum",
        "--perf-samples",
        "15",
        "--tb=short",
        "--basetemp=/tmp/x",
        "-m",
        "slow",
        "--perf-against",
        "main",
        "-p",
        "no:randomly",
        "--perf-backends=numpy",
        "-x",
    ]
    assert suggested_args(run) == [
        "tests/bench",
        "-k",
        "matmul or sum",
        "--perf-samples",
        "15",
        "-m",
        "slow",
        "-p",
        "no:randomly",
        "--perf-backends=numpy",
    ]
    assert suggested_args(["--perf-profile=all", "-qq", "t.py"]) == ["t.py"]


def test_a_recording_command_leaves_out_what_the_run_compared_with() -> None:
    """--perf-update goes with no --perf-against, --perf-versions, --perf-reference or
    --perf-base: a suggested recording command that repeated them would be refused."""
    from pytest_burnperf.core.options.command_args import recording_args

    run = ["t.py", "--perf-against", "auto", "--perf-base=v1.0", "-k", "a", "-v"]
    assert recording_args(run) == ["t.py", "-k", "a"]
    run = ["--perf-versions", "a,b", "--perf-reference", "a", "--perf-against=main", "t.py"]
    assert recording_args(run) == ["t.py"]
