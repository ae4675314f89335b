"""Where a call's arrays live (devices/array_device.py), read without importing an array library,
and the registry's device for them."""

from __future__ import annotations

import functools

import numpy as np

from pytest_burnperf.devices import Registry
from pytest_burnperf.devices.array_device import ArrayPlace, call_place, place_of

from .test_registry import fake_registry


def _fake_tensor(device_type: str, index: int | None, dtype: str) -> object:
    """An object shaped like a torch tensor, of a class whose module is torch's."""
    device = type("device", (), {"type": device_type, "index": index})()
    cls = type("Tensor", (), {"__module__": "torch", "device": device, "dtype": f"torch.{dtype}"})
    return cls()


def _fake_module(param: object) -> object:
    """An object shaped like a torch.nn.Module holding one parameter."""
    cls = type("Linear", (), {"__module__": "torch.nn.modules.linear"})
    module = cls()
    module.parameters = lambda: iter([param])
    return module


def test_a_tensor_on_a_gpu_names_its_device_index_and_dtype() -> None:
    assert place_of(_fake_tensor("cuda", 1, "bfloat16")) == ArrayPlace("torch", "cuda", 1, "bf16")
    assert place_of(_fake_tensor("cpu", None, "float32")) == ArrayPlace("torch", "cpu", None, "f32")
    assert place_of(np.ones(3, dtype=np.float64)) == ArrayPlace("numpy", "cpu", None, "f64")
    assert place_of(np.ones(3, dtype=np.uint8)).dtype == "uint8"  # type: ignore[union-attr]
    assert place_of([1.0, 2.0]) is None and place_of("torch") is None


def test_the_device_array_wins_and_a_floating_one_names_the_dtype() -> None:
    index = _fake_tensor("cpu", None, "int64")
    mask = _fake_tensor("cuda", 0, "int32")
    data = _fake_tensor("cuda", 0, "float16")
    place = call_place(lambda *a: None, (index, mask), {"w": data})
    assert place == ArrayPlace("torch", "cuda", 0, "f16")
    assert call_place(sorted, ([3, 1, 2],), {}) is None  # pure Python: no array


def test_arrays_held_by_the_function_are_found() -> None:
    x = _fake_tensor("cuda", 0, "float32")
    assert call_place(lambda: x, (), {}) == ArrayPlace("torch", "cuda", 0, "f32")  # closure
    part = functools.partial(lambda a, b: None, np.ones(2, dtype=np.float32))
    assert call_place(part, (), {}) == ArrayPlace("numpy", "cpu", None, "f32")
    model = _fake_module(_fake_tensor("mps", 0, "float16"))
    assert call_place(model, (), {}) == ArrayPlace("torch", "mps", 0, "f16")
    assert call_place(lambda: model, (), {}) == ArrayPlace("torch", "mps", 0, "f16")


def test_a_long_list_is_looked_at_within_a_budget() -> None:
    many = [object() for _ in range(100_000)] + [np.ones(1)]
    assert call_place(len, (many,), {}) is None  # not a million checks before the call


def test_the_registry_gives_the_arrays_device_whatever_the_backend_filter() -> None:
    reg, _ = fake_registry()
    entry = reg.of_place(ArrayPlace("torch", "cuda", 1, "f32"))
    assert not isinstance(entry, str) and entry.id == "torch-cuda1" and entry.kind == "cuda"
    missing = reg.of_place(ArrayPlace("torch", "cuda", 7, "f32"))
    assert isinstance(missing, str)
    assert "torch f32 on cuda:7" in missing and "torch-cuda0, torch-cuda1" in missing
    assert "pytest-burnperf has no jax backend" in str(
        reg.of_place(ArrayPlace("jax", "cpu", None, "f32"))
    )
    filtered = Registry(reg._probes, only=("numpy",))
    found = filtered.of_place(ArrayPlace("torch", "cpu", None, "f32"))
    assert not isinstance(found, str) and found.id == "torch-cpu"
