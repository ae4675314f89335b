"""Which device and dtype a benchmark's call runs on, read from the arrays it is called with.

A test written for pytest-benchmark (``benchmark(fn, x, w)``) names no device: its own fixtures
made its data. The arrays it hands to the call say where the work runs: a torch tensor on
``cuda:0`` is torch's first CUDA device, a cupy array its device, a numpy array numpy's CPU.
This module reads that from the call's arguments, from the function's closure and
``functools.partial`` arguments, and from a torch module's parameters, without importing any
array library (an object is recognised by its type's module; a library that made it is
imported already). What it finds is an :class:`ArrayPlace`: the library, the device type and
index as the library names them, and the dtype in this plugin's names (``f32``, ``bf16``) or
the library's own where it has none of ours (``uint8``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

#: The libraries' dtype names, as this plugin names them (core/options/settings.DTYPES).
DTYPE_NAMES: dict[str, str] = {
    "float16": "f16",
    "half": "f16",
    "bfloat16": "bf16",
    "float32": "f32",
    "float": "f32",
    "float64": "f64",
    "double": "f64",
    "int32": "i32",
    "int": "i32",
    "int64": "i64",
    "long": "i64",
}

#: How deep containers of arguments are searched (a list of tensors in a tuple: 2).
_DEPTH = 2
#: How many objects are looked at in all: a call with a list of a million floats stays cheap.
_BUDGET = 64


@dataclass(frozen=True)
class ArrayPlace:
    """Where one array lives: ``library`` (torch, cupy, numpy), ``device_type`` as the library
    names it (``cpu``, ``cuda``, ``mps``), ``index`` (None on the CPU) and ``dtype``."""

    library: str
    device_type: str
    index: int | None
    dtype: str

    @property
    def on_host(self) -> bool:
        return self.device_type == "cpu"

    def candidate_ids(self) -> tuple[str, ...]:
        """The plugin's device ids this place can be (devices/backends/*: ``torch-cuda0``, or
        ``torch-rocm0`` where torch is built for HIP and calls its devices ``cuda``)."""
        i = self.index or 0
        if self.device_type == "cpu":
            return (f"{self.library}-cpu",)
        if self.device_type == "mps":
            return (f"{self.library}-metal",)
        if self.device_type in ("cuda", "hip", "rocm"):
            return (f"{self.library}-cuda{i}", f"{self.library}-rocm{i}")
        return (f"{self.library}-{self.device_type}{i}",)

    def text(self) -> str:
        where = self.device_type if self.index is None else f"{self.device_type}:{self.index}"
        return f"{self.library} {self.dtype} on {where}"


def dtype_name(raw: object) -> str:
    """A library's dtype (``torch.float32``, ``dtype('float64')``) in this plugin's names."""
    name = str(getattr(raw, "name", None) or raw)
    name = name.rsplit(".", 1)[-1]
    return DTYPE_NAMES.get(name, name)


def place_of(obj: object) -> ArrayPlace | None:
    """Where ``obj`` lives, if it is a torch tensor, a cupy or a numpy array; else None."""
    module = type(obj).__module__.split(".", 1)[0]
    if module == "torch" and hasattr(obj, "device") and hasattr(obj, "dtype"):
        device = obj.device
        device_type = str(getattr(device, "type", device))
        index = getattr(device, "index", None)
        return ArrayPlace(
            "torch",
            device_type,
            None if device_type == "cpu" else (index if isinstance(index, int) else 0),
            dtype_name(obj.dtype),
        )
    if module == "cupy" and hasattr(obj, "dtype") and hasattr(obj, "device"):
        index = getattr(obj.device, "id", 0)
        return ArrayPlace(
            "cupy", "cuda", index if isinstance(index, int) else 0, dtype_name(obj.dtype)
        )
    if module == "numpy" and hasattr(obj, "dtype") and hasattr(obj, "shape"):
        return ArrayPlace("numpy", "cpu", None, dtype_name(obj.dtype))
    return None


def _torch_module_parameters(obj: object) -> Iterator[object]:
    """A torch module's first parameter (its device and dtype are the module's)."""
    if type(obj).__module__.split(".", 1)[0] != "torch" and not any(
        c.__module__.startswith("torch.nn") for c in type(obj).__mro__
    ):
        return
    parameters = getattr(obj, "parameters", None)
    if not callable(parameters):
        return
    try:
        for p in parameters():
            yield p
            return
    except Exception:  # a module that cannot list its parameters says nothing of its device
        return


def _inside(obj: object) -> Iterable[object]:
    """What a function or container passes on: a closure's cells, the module globals a
    function names, a partial's arguments, a bound method's object, a container's items, a
    torch module's parameters."""
    if isinstance(obj, functools.partial):
        return [obj.func, *obj.args, *obj.keywords.values()]
    if isinstance(obj, (list, tuple)):
        return obj
    if isinstance(obj, Mapping):
        return list(obj.values())
    out: list[object] = []
    owner = getattr(obj, "__self__", None)
    if owner is not None and not isinstance(owner, type):
        out.append(owner)
    closure = getattr(obj, "__closure__", None)
    if isinstance(closure, tuple):
        for cell in closure:
            try:
                out.append(cell.cell_contents)
            except ValueError:  # an empty cell
                continue
    code, names = getattr(obj, "__code__", None), getattr(obj, "__globals__", None)
    if isinstance(names, dict) and code is not None:  # the module's arrays the function names
        out.extend(names[n] for n in getattr(code, "co_names", ()) if n in names)
    out.extend(_torch_module_parameters(obj))
    return out


def places(values: Iterable[object]) -> list[ArrayPlace]:
    """Where the arrays among ``values`` (and inside them, :data:`_DEPTH` deep) live, in order."""
    found: list[ArrayPlace] = []
    seen: set[int] = set()
    budget = _BUDGET
    level = list(values)
    for _ in range(_DEPTH + 1):
        below: list[object] = []
        for obj in level:
            if budget <= 0:
                return found
            if id(obj) in seen or obj is None or isinstance(obj, (str, bytes, int, float)):
                continue
            seen.add(id(obj))
            budget -= 1
            place = place_of(obj)
            if place is not None:
                found.append(place)
            else:
                below.extend(_inside(obj))
        level = below
    return found


def call_place(
    fn: object, args: Iterable[object], kwargs: Mapping[str, object]
) -> ArrayPlace | None:
    """Where a call of ``fn(*args, **kwargs)`` runs: its arguments' arrays first, then those the
    function holds (closure, partial, a module's parameters). An array on a device wins over
    host arrays (the index tensor beside CUDA data); of those, a floating-point one names the
    dtype. None: no array, a pure-Python call."""
    found = places([*args, *kwargs.values()]) or places([fn])
    if not found:
        return None
    on_device = [p for p in found if not p.on_host]
    pool = on_device or found
    floating = [p for p in pool if p.dtype in ("f16", "bf16", "f32", "f64")]
    first = (floating or pool)[0]
    return first
