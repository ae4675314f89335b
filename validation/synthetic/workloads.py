"""Synthetic workloads of the validation harness: pure Python, numpy and BLAS at about 0.1 ms,
1 ms and 20 ms a call on a 2-core x86-64 machine, and at about 1 ms a numpy sort, an
allocation-heavy and a dict/str-hashing pure-Python workload, and a torch matmul.

``BURNPERF_VALIDATE_KNOBS`` (a JSON object ``{workload: factor}``) scales how much real work a
workload does: 1.10 = 10% more loop iterations, array elements or matrix columns; 0.90 = 10% less.
Nothing sleeps. The harness sets it per session; unset, every factor is 1.0.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import numpy as np

#: name -> (kind, base size). Python: loop iterations; numpy: array elements; BLAS: (n, k) of an
#: (n x k) @ (k x n) f64 product.
WORKLOADS: dict[str, tuple[str, Any]] = {
    "python-0.1ms": ("python", 2_800),
    "python-1ms": ("python", 24_000),
    "python-20ms": ("python", 500_000),
    "numpy-0.1ms": ("numpy", 64_000),
    "numpy-1ms": ("numpy", 660_000),
    "numpy-20ms": ("numpy", 11_800_000),
    "blas-0.1ms": ("blas", (96, 280)),
    "blas-1ms": ("blas", (192, 640)),
    "blas-20ms": ("blas", (480, 2300)),
    "sort-1ms": ("sort", 80_000),
    "alloc-1ms": ("alloc", 2_600),
    "dict-1ms": ("dict", 10_000),
    "torch-1ms": ("torch", (256, 700)),
}

NAMES = tuple(WORKLOADS)


def knob(name: str) -> float:
    raw = os.environ.get("BURNPERF_VALIDATE_KNOBS", "")
    factors = json.loads(raw) if raw else {}
    return float(factors.get(name, 1.0))


def python_loop(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i
    return total


def numpy_chain(a: np.ndarray, out: np.ndarray) -> np.ndarray:
    np.multiply(a, a, out=out)
    np.add(out, 1.0, out=out)
    np.sqrt(out, out=out)
    return out


def sort_copy(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    dst[:] = src
    dst.sort()
    return dst


def allocate(n: int) -> list[dict[str, object]]:
    return [{"a": i, "b": (i, i + 1), "c": [i]} for i in range(n)]


def hash_words(words: list[str]) -> int:
    d: dict[str, int] = {}
    for w in words:
        d[w] = len(d)
    return sum(d[w] for w in words[::3])


def prepare(name: str) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """The function and arguments of one workload, scaled by its knob."""
    kind, size = WORKLOADS[name]
    f = knob(name)
    rng = np.random.default_rng(0)
    if kind == "python":
        return python_loop, (round(size * f),)
    if kind == "numpy":
        a = rng.random(round(size * f))
        return numpy_chain, (a, np.empty_like(a))
    if kind == "sort":
        a = rng.random(round(size * f))
        return sort_copy, (a, np.empty_like(a))
    if kind == "alloc":
        return allocate, (round(size * f),)
    if kind == "dict":
        return hash_words, ([f"w{i:06d}" for i in range(round(size * f))],)
    if kind == "torch":
        import torch

        torch.set_num_threads(1)
        n, k = size
        k = round(k * f)
        gen = torch.Generator().manual_seed(0)
        return torch.matmul, (torch.rand(n, k, generator=gen), torch.rand(k, n, generator=gen))
    n, k = size
    k = round(k * f)
    return np.matmul, (rng.random((n, k)), rng.random((k, n)))
