from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from pytest_burnperf.devices import Entry, Probe, Registry, matches
from pytest_burnperf.devices.backends import numpy_backend, torch_backend


class FakeDevice:
    def __init__(self, id: str, kind: str, library: str) -> None:
        self.id, self.kind, self.library, self.name = id, kind, library, "fake"

    def unsupported(self, dtype: str) -> str | None:
        return None


def fake_registry() -> tuple[Registry, list[str]]:
    probed: list[str] = []

    def torch() -> Probe:
        probed.append("torch")
        return Probe(
            "torch",
            devices=[
                FakeDevice("torch-cpu", "cpu", "torch"),
                FakeDevice("torch-cuda0", "cuda", "torch"),
                FakeDevice("torch-cuda1", "cuda", "torch"),
            ],
            absent={"rocm": "not a ROCm build", "metal": "no MPS"},
        )

    def numpy() -> Probe:
        probed.append("numpy")
        return Probe("numpy", devices=[FakeDevice("numpy-cpu", "cpu", "numpy")])

    def cupy() -> Probe:
        probed.append("cupy")
        return Probe("cupy", absent={"cuda": "cupy not installed", "rocm": "cupy not installed"})

    return Registry({"numpy": numpy, "torch": torch, "cupy": cupy}), probed


def test_kind_matches_every_library_serving_it_and_absent_ones_carry_reasons() -> None:
    reg, probed = fake_registry()
    cuda = reg.resolve("cuda")
    assert [(e.id, e.reason) for e in cuda] == [
        ("torch-cuda0", None),
        ("torch-cuda1", None),
        ("cupy-cuda", "cupy not installed"),
    ]
    assert probed == ["torch", "cupy"]  # numpy cannot serve cuda, so it was not probed


def test_library_id_and_prefix_names() -> None:
    reg, probed = fake_registry()
    assert [e.id for e in reg.resolve("torch")] == [
        "torch-cpu",
        "torch-cuda0",
        "torch-cuda1",
        "torch-rocm",
        "torch-metal",
    ]
    assert [e.id for e in reg.resolve("torch-cuda")] == ["torch-cuda0", "torch-cuda1"]
    assert [e.id for e in reg.resolve("torch-cuda1")] == ["torch-cuda1"]
    missing = reg.resolve("torch-cuda7")
    assert missing[0].device is None and "no device torch-cuda7" in (missing[0].reason or "")
    assert reg.resolve("torch-rocm0")[0].reason == "not a ROCm build"
    assert [e.id for e in reg.resolve_all(["cpu", "numpy"])] == ["numpy-cpu", "torch-cpu"]
    assert probed == ["torch", "numpy"]


def test_matches() -> None:
    e = Entry("torch-cuda1", "cuda", "torch")
    assert all(matches(n, e) for n in ("cuda", "torch", "torch-cuda", "torch-cuda1"))
    assert not any(matches(n, e) for n in ("cpu", "numpy", "torch-cuda0", "torch-c"))


def fake_torch(*, cuda: str | None, hip: str | None, count: int, mps: bool) -> SimpleNamespace:
    return SimpleNamespace(
        __version__="9.9.9",
        version=SimpleNamespace(cuda=cuda, hip=hip),
        device=lambda *a: a,
        cuda=SimpleNamespace(
            is_available=lambda: count > 0,
            device_count=lambda: count,
            get_device_name=lambda i: f"Fake GPU {i}",
        ),
        backends=SimpleNamespace(mps=SimpleNamespace(is_available=lambda: mps)),
    )


def test_torch_probe_cuda_build_with_two_gpus() -> None:
    p = torch_backend.probe(fake_torch(cuda="12.8", hip=None, count=2, mps=False))
    assert [d.id for d in p.devices] == ["torch-cpu", "torch-cuda0", "torch-cuda1"]
    assert p.devices[2].name == "Fake GPU 1"
    assert "CUDA build, not a ROCm" in p.absent["rocm"]
    assert "no Metal (MPS) device" in p.absent["metal"]


def test_torch_probe_cuda_build_without_gpu() -> None:
    p = torch_backend.probe(fake_torch(cuda="12.8", hip=None, count=0, mps=False))
    assert [d.id for d in p.devices] == ["torch-cpu"]
    assert p.absent["cuda"] == "no CUDA device found (torch.cuda.is_available() is False)"


def test_torch_probe_rocm_build_and_mps() -> None:
    p = torch_backend.probe(fake_torch(cuda=None, hip="6.2", count=1, mps=True))
    assert [d.id for d in p.devices] == ["torch-cpu", "torch-rocm0", "torch-metal"]
    assert "ROCm build" in p.absent["cuda"]
    metal = p.devices[2]
    assert metal.unsupported("f64") == "Metal (MPS) has no float64"
    assert metal.unsupported("bf16") is None


def test_torch_probe_cpu_only_build() -> None:
    p = torch_backend.probe(fake_torch(cuda=None, hip=None, count=0, mps=False))
    assert p.absent["cuda"] == "torch 9.9.9 is built without CUDA (a CPU-only build)"


def test_numpy_device_is_seeded_and_knows_its_dtypes() -> None:
    d = numpy_backend.NumpyDevice()
    assert d.unsupported("bf16") == "numpy has no bfloat16 dtype"
    d.reseed(0)
    a, b = d.random((3, 4), "f32"), d.random((3, 4), "f32")
    assert a.dtype == np.float32 and not np.array_equal(a, b)
    d.reseed(0)
    assert np.array_equal(d.random((3, 4), "f32"), a)
    ints = d.random((100,), "i64")
    assert ints.dtype == np.int64 and ints.min() >= 0 and ints.max() < 100
    assert d.random((2,), "f16").dtype == np.float16
    assert d.zeros((2, 2), "f64").sum() == 0
    with pytest.raises(ValueError, match="numpy-cpu: numpy has no bfloat16"):
        d.zeros((2,), "bf16")
    assert d.fingerprint()["versions"]["numpy"] == np.__version__


def test_torch_cpu_device_when_installed() -> None:
    torch = pytest.importorskip("torch")
    p = torch_backend.probe()
    cpu = next(d for d in p.devices if d.id == "torch-cpu")
    x = cpu.random((4, 4), "bf16")
    assert x.dtype == torch.bfloat16
    assert cpu.to_host(x).dtype == np.float32
    assert cpu.xp.sum(cpu.asarray([[1.0, 2.0], [3.0, 4.0]], "f64"), axis=0).tolist() == [4.0, 6.0]
    cpu.reseed(3)
    first = cpu.random((5,), "f32")
    cpu.reseed(3)
    assert torch.equal(cpu.random((5,), "f32"), first)


def test_a_backend_filter_leaves_libraries_it_cannot_pick_unprobed() -> None:
    """``--perf-backends numpy``: a marker's ``cpu`` resolves numpy's device and a placeholder
    for torch's, never importing torch (a counted process pays seconds under valgrind for it)."""
    base, probed = fake_registry()
    reg = Registry(dict(base._probes), only=("numpy",))
    entries = reg.resolve("cpu")
    assert [(e.id, e.device is not None) for e in entries] == [
        ("numpy-cpu", True),
        ("torch-cpu", False),
    ]
    assert probed == ["numpy"]  # torch was never probed
    assert not any(matches("numpy", e) for e in entries if e.device is None)
    # a device id or a kind picks its library's devices as before
    for only, wanted in ((("torch-cuda0",), "torch-cuda0"), (("cuda",), "torch-cuda0")):
        reg = Registry(dict(fake_registry()[0]._probes), only=only)
        assert wanted in [e.id for e in reg.resolve("torch") if e.device is not None]
