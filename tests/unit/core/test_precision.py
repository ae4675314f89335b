"""Precision modes (precision.py): read from the real torch, named in the header, kept apart in
baselines and in the peak cache."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from pytest_burnperf.core.judging import precision
from pytest_burnperf.core.judging.comparability import blocker
from pytest_burnperf.core.records.stored_baseline import StoredBaseline
from pytest_burnperf.report.run_header import precision_lines

torch = pytest.importorskip("torch")


@pytest.fixture
def tf32() -> Iterator[None]:
    """TF32 for cuBLAS matmuls and the 'high' f32 matmul precision, restored afterwards (both
    switches exist, and can be set, in a CPU-only torch)."""
    old_tf32 = torch.backends.cuda.matmul.allow_tf32
    old_prec = torch.get_float32_matmul_precision()
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.set_float32_matmul_precision("high")
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old_tf32
        torch.set_float32_matmul_precision(old_prec)


def test_the_real_torch_at_its_defaults() -> None:
    cpu = precision.torch_modes(torch, "cpu")
    gpu = precision.torch_modes(torch, "cuda")
    assert cpu["float32_matmul_precision"] == "highest"
    assert cpu["deterministic_algorithms"] is False
    assert "cudnn.benchmark" in gpu and "cuda.matmul.allow_tf32" in gpu
    assert "cudnn.benchmark" not in cpu  # GPU switches only for GPU kinds
    assert precision.describe(cpu) is None and precision.describe(gpu) is None
    assert precision.key_part(gpu) == ""  # peak caches written before this stay valid


def test_modes_a_benchmark_set_are_seen(tf32: None) -> None:
    gpu = precision.torch_modes(torch, "cuda")
    assert gpu["cuda.matmul.allow_tf32"] is True
    text = precision.describe(gpu)
    assert text == "cuda.matmul.allow_tf32=True, float32_matmul_precision=high"
    assert precision.key_part(gpu) == f"|precision={text}"


def test_a_switch_this_torch_lacks_is_left_out() -> None:
    fake = SimpleNamespace(
        get_float32_matmul_precision=lambda: "highest",
        backends=SimpleNamespace(cuda=SimpleNamespace(matmul=SimpleNamespace(allow_tf32=True))),
    )
    assert precision.torch_modes(fake, "cuda") == {
        "float32_matmul_precision": "highest",
        "cuda.matmul.allow_tf32": True,
    }


def test_cupy_reads_its_environment() -> None:
    assert precision.cupy_modes({}) == {"CUPY_TF32": "0"}
    assert precision.describe(precision.cupy_modes({"CUPY_TF32": "1"})) == "CUPY_TF32=1"


def test_a_baseline_in_other_modes_is_not_compared() -> None:
    fp = {"id": "torch-cuda0", "kind": "cuda", "precision": {"cuda.matmul.allow_tf32": True}}
    old = {"device": dict(fp, precision={"cuda.matmul.allow_tf32": False}), "timer": "device"}
    why, _, _ = blocker(StoredBaseline.from_entry(old), fp, "device", False)
    assert why is not None
    assert "precision modes (cuda.matmul.allow_tf32 False -> True)" in why
    # a baseline recorded before the modes were kept is not held against
    legacy = {"device": {"id": "torch-cuda0", "kind": "cuda"}, "timer": "device"}
    assert blocker(StoredBaseline.from_entry(legacy), fp, "device", False)[0] is None
    same = {"device": fp, "timer": "device"}
    assert blocker(StoredBaseline.from_entry(same), fp, "device", False)[0] is None


def test_the_header_names_non_default_modes() -> None:
    def result(device: str, modes: dict[str, object]) -> SimpleNamespace:
        return SimpleNamespace(device_id=device, fingerprint={"precision": modes})

    lines = precision_lines(
        [
            result("torch-cpu", {"float32_matmul_precision": "highest"}),
            result("torch-cuda0", {"cudnn.benchmark": True}),
            result("torch-cuda0", {"cudnn.benchmark": True}),
        ]
    )
    assert lines == [
        "precision modes on torch-cuda0 (not the library defaults): cudnn.benchmark=True"
    ]


def test_the_header_names_each_gpus_class() -> None:
    from pytest_burnperf.report.run_header import device_lines

    h100 = {
        "kind": "cuda",
        "name": "NVIDIA H100 80GB HBM3",
        "compute_units": 132,
        "memory_bytes": 85_029_158_912,
        "capability": "9.0",
        "runtime": "CUDA 12.8",
        "nvml_driver": "570.124.06",
        "max_sm_clock_mhz": 1980,
    }
    cpu = {"kind": "cpu", "name": "AMD EPYC", "cpu": {"vendor": "AuthenticAMD"}}
    pocl = {"kind": "opencl", "name": "pthread-AMD EPYC", "cpu": {"vendor": "AuthenticAMD"}}

    def result(device: str, fp: dict[str, object]) -> SimpleNamespace:
        return SimpleNamespace(device_id=device, fingerprint=fp)

    lines = device_lines(
        [
            result("torch-cuda0", h100),
            result("torch-cuda0", h100),
            result("numpy-cpu", cpu),
            result("opencl-pocl-cpu0", pocl),  # computes on the host CPU: the machine line
        ]
    )
    assert lines == [
        "device torch-cuda0: NVIDIA H100 80GB HBM3, 132 compute units, 79.2 GiB, capability "
        "9.0 (CUDA 12.8, driver 570.124.06, max SM clock 1980 MHz)"
    ]
