"""OpenCL (pyopencl) and Vulkan (wgpu) devices: discovery with fakes, and real runs where the
machine has them (CI installs PoCL and lavapipe, so there these run on the CPU for real)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from pytest_burnperf.core.timing import measure
from pytest_burnperf.devices.backends import opencl_backend, vulkan_backend

from ..._devices import real_device

# ---------------------------------------------------------------------------------------------
# discovery, with fakes


class FakeCLDevice:
    def __init__(self, name: str, type_: int, fp64: bool = True, ext: str = "") -> None:
        self.name, self.type = name, type_
        self.double_fp_config = 63 if fp64 else 0
        self.extensions = ext
        self.vendor, self.global_mem_size, self.max_compute_units = "Vendor", 2**30, 8
        self.max_clock_frequency, self.driver_version, self.version = 1000, "1.0", "OpenCL 3.0"


class FakePlatform:
    def __init__(self, name: str, devices: list[FakeCLDevice] | Exception) -> None:
        self.name = name
        self._devices = devices

    def get_devices(self) -> list[FakeCLDevice]:
        if isinstance(self._devices, Exception):
            raise self._devices
        return self._devices


def fake_cl(platforms: list[FakePlatform] | Exception) -> SimpleNamespace:
    def get_platforms() -> list[FakePlatform]:
        if isinstance(platforms, Exception):
            raise platforms
        return platforms

    return SimpleNamespace(
        VERSION_TEXT="2026.1",
        get_platforms=get_platforms,
        device_type=SimpleNamespace(
            CPU=2, GPU=4, ACCELERATOR=8, to_string=lambda t: {2: "CPU", 4: "GPU"}.get(t, "?")
        ),
    )


def test_opencl_without_an_icd_names_the_package_to_install() -> None:
    err = RuntimeError("clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR")
    p = opencl_backend.probe(fake_cl(err))
    assert p.devices == []
    assert p.absent["opencl"].startswith(
        "pyopencl 2026.1 is installed, but no OpenCL platform was found "
        "(clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR); install an OpenCL driver (ICD)"
    )
    assert "pocl-opencl-icd" in p.absent["opencl"]


def test_opencl_ids_per_platform_and_type_and_dtype_rules() -> None:
    cl = fake_cl(
        [
            FakePlatform("Portable Computing Language", [FakeCLDevice("pthread", 2)]),
            FakePlatform(
                "NVIDIA CUDA",
                [FakeCLDevice("H200", 4, ext="cl_khr_fp16"), FakeCLDevice("H200", 4, fp64=False)],
            ),
            FakePlatform("Broken", RuntimeError("DEVICE_NOT_FOUND")),
        ]
    )
    p = opencl_backend.probe(cl)
    ids = [d.id for d in p.devices]
    assert ids == ["opencl-pocl-cpu0", "opencl-nvidia-gpu0", "opencl-nvidia-gpu1"]
    pocl, gpu0, gpu1 = p.devices
    assert pocl.unsupported("f16") == "pthread has no half precision (no cl_khr_fp16)"
    assert gpu0.unsupported("f16") is None and gpu0.unsupported("f64") is None
    assert gpu1.unsupported("f64") == "H200 has no double precision (no cl_khr_fp64)"
    assert pocl.unsupported("bf16") == "OpenCL has no bf16 buffers in pyopencl"
    fp = gpu0.fingerprint()
    assert (fp["platform"], fp["device_type"], fp["compute_units"]) == ("NVIDIA CUDA", "GPU", 8)
    assert fp["memory_bytes"] == 2**30  # a GPU's memory is part of what it is
    # a CPU device's memory is host memory that PoCL reports as a share of what is free: noted,
    # never a reason to call a baseline incomparable
    cpu_fp = pocl.fingerprint()
    assert "memory_bytes" not in cpu_fp and cpu_fp["host_memory_bytes"] == 2**30


def test_opencl_device_has_no_array_namespace_and_says_what_to_use() -> None:
    dev = opencl_backend.probe(fake_cl([FakePlatform("pocl", [FakeCLDevice("x", 2)])])).devices[0]
    with pytest.raises(AttributeError, match="opencl-pocl-cpu0 has no array namespace"):
        dev.xp  # noqa: B018
    # nor a query of what a call allocated: its memory per call is said, not tracked
    said = dev.memory_per_call(lambda: (lambda: None, None))
    assert said == (
        "memory per call is not tracked on opencl-pocl-cpu0: its API does not say what a call "
        "allocated (tracked: numpy, torch and Python on the CPU, torch on CUDA and ROCm, cupy)"
    )


class FakeAdapter:
    def __init__(self, device: str, backend: str, features: tuple[str, ...] = ()) -> None:
        self.info = {"device": device, "backend_type": backend, "vendor": "v", "description": "d"}
        self.summary = f"{device} via {backend}"
        self.features = set(features)
        self.limits: dict[str, int] = {}


def fake_wgpu(adapters: list[FakeAdapter] | Exception) -> SimpleNamespace:
    def enumerate_adapters_sync() -> list[FakeAdapter]:
        if isinstance(adapters, Exception):
            raise adapters
        return adapters

    return SimpleNamespace(
        __version__="0.32.0", gpu=SimpleNamespace(enumerate_adapters_sync=enumerate_adapters_sync)
    )


def test_vulkan_only_vulkan_adapters_count_and_the_reason_names_the_driver_package() -> None:
    p = vulkan_backend.probe(fake_wgpu([FakeAdapter("llvmpipe (LLVM 15)", "OpenGL")]))
    assert p.devices == []
    assert p.absent["vulkan"] == (
        "wgpu 0.32.0 is installed, but found no Vulkan adapter; wgpu found only: "
        "llvmpipe (LLVM 15) via OpenGL; install a Vulkan driver, e.g. apt-get install "
        "mesa-vulkan-drivers libvulkan1 (lavapipe, on the CPU)"
    )
    err = vulkan_backend.probe(fake_wgpu(RuntimeError("loader: no ICD")))
    assert err.absent["vulkan"] == "wgpu 0.32.0 could not list adapters: loader: no ICD"


def test_vulkan_ids_and_dtypes() -> None:
    p = vulkan_backend.probe(
        fake_wgpu(
            [
                FakeAdapter("llvmpipe (LLVM 15.0.6, 256 bits)", "Vulkan"),
                FakeAdapter("NVIDIA H200", "Vulkan", ("shader-f16", *vulkan_backend._TIMESTAMPS)),
                FakeAdapter("NVIDIA H200", "Vulkan"),
            ]
        )
    )
    assert [d.id for d in p.devices] == [
        "vulkan-llvmpipe0",
        "vulkan-nvidia-h200-0",
        "vulkan-nvidia-h200-1",
    ]
    soft, gpu, _ = p.devices
    assert soft.unsupported("f16") == "llvmpipe (LLVM 15.0.6, 256 bits) has no shader-f16"
    assert gpu.unsupported("f16") is None and gpu.has_timestamps and not soft.has_timestamps
    assert soft.timer() is None  # no timestamp queries: the host clock gates
    assert "no f64 type" in (gpu.unsupported("f64") or "")


# ---------------------------------------------------------------------------------------------
# real devices, where present


@pytest.fixture(scope="module")
def cl_device() -> Any:
    return real_device("opencl")


@pytest.fixture(scope="module")
def vk_device() -> Any:
    return real_device("vulkan")


def test_opencl_real_kernel_with_profiling_clock(cl_device: Any) -> None:
    dev = cl_device
    src = "__kernel void twice(__global const float* a, __global float* b) {"
    src += " size_t i = get_global_id(0); b[i] = 2.0f * a[i]; }"
    kernel = dev.kernel(src, "twice")
    assert dev.kernel(src, "twice") is kernel  # built once
    a, b = dev.random((4096,), "f32"), dev.zeros((4096,), "f32")
    timer = dev.timer()
    assert timer.name == "device"
    _, sample = measure(
        lambda: kernel(dev.queue, (4096,), None, a.data, b.data),
        samples=5,
        warmup=0.01,
        min_time=0.001,
        sync=dev.sync,
        timer=timer,
    )
    dev.sync()
    np.testing.assert_allclose(dev.to_host(b), 2.0 * dev.to_host(a))
    assert sample.timer == "device" and sample.host_values is not None
    assert all(v > 0 for v in sample.values)
    # device time covers the kernels; the host span also includes enqueueing and the final wait
    assert np.median(sample.values) <= np.median(sample.host_values) * 1.5


def test_opencl_real_build_error_carries_the_compiler_log(cl_device: Any) -> None:
    with pytest.raises(Exception, match=r"(?i)build|compil"):
        cl_device.program("__kernel void broken(__global float* a) { a[0] = undefined_name; }")


def test_vulkan_real_shader_with_timestamp_clock(vk_device: Any) -> None:
    dev = vk_device
    src = """
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> b: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < arrayLength(&b)) { b[gid.x] = 2.0 * a[gid.x]; }
}
"""
    kernel = dev.kernel(src)
    assert dev.kernel(src) is kernel
    a, b = dev.random((4096,), "f32"), dev.zeros((4096,), "f32")
    timer = dev.timer() or pytest.skip(f"{dev.name} has no timestamp queries")
    _, sample = measure(
        lambda: kernel(a, b, workgroups=4096 // 64),
        samples=5,
        warmup=0.01,
        min_time=0.001,
        sync=dev.sync,
        timer=timer,
    )
    np.testing.assert_allclose(dev.to_host(b), 2.0 * dev.to_host(a))
    assert sample.timer == "device" and all(v > 0 for v in sample.values)
    assert dev.to_host(dev.asarray([[1, 2], [3, 4]], "i32")).tolist() == [[1, 2], [3, 4]]
    with pytest.raises(TypeError, match="VulkanArray"):
        kernel(np.zeros(4), b, workgroups=1)


@pytest.mark.parametrize("which", ["opencl", "vulkan"])
def test_peak_calibration_kernels_run_on_the_real_devices(
    which: str, request: pytest.FixtureRequest
) -> None:
    from pytest_burnperf.devices.peak_calibration import calibrate

    dev = request.getfixturevalue("cl_device" if which == "opencl" else "vk_device")
    peaks = calibrate(dev, "f32", repeats=2)
    assert peaks.gflops is not None and peaks.gflops > 0
    assert peaks.gbps is not None and peaks.gbps > 0
    assert "FMA chains" in peaks.how and "copy 64 MiB" in peaks.how
    if which == "vulkan":
        assert calibrate(dev, "f64").how == f"{dev.id} does not run f64"
