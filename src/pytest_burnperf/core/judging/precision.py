"""Precision modes: the library switches that change what a float32 (or float16) kernel computes
and how fast, read when a benchmark has run.

An f32 GEMM on an Ampere-or-later GPU runs several times faster with TF32 allowed than without,
and cudnn.benchmark picks other convolution algorithms; a baseline measured in one mode and a
run in another time different work. So the modes are part of the device fingerprint
(``precision``; a baseline whose modes differ is not compared, see comparability.py), of the key
of the cached device peaks (% of peak is against the peak of the same mode), and the run's
header names every mode that is not the library's default.

Plain functions of the library module (tests pass fakes built from the real classes).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import ModuleType

#: torch's switches that every kind reads: ``name -> (attribute path under torch.backends, or a
#: function name on torch; the default)``.
TORCH_ALL: dict[str, tuple[str, bool | str]] = {
    "float32_matmul_precision": ("get_float32_matmul_precision()", "highest"),
    "deterministic_algorithms": ("are_deterministic_algorithms_enabled()", False),
}
#: torch's CUDA/ROCm switches (cuBLAS/hipBLAS and cuDNN/MIOpen).
TORCH_GPU: dict[str, tuple[str, bool | str]] = {
    "cuda.matmul.allow_tf32": ("backends.cuda.matmul.allow_tf32", False),
    "cuda.matmul.allow_fp16_reduced_precision_reduction": (
        "backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
        True,
    ),
    "cuda.matmul.allow_bf16_reduced_precision_reduction": (
        "backends.cuda.matmul.allow_bf16_reduced_precision_reduction",
        True,
    ),
    "cudnn.allow_tf32": ("backends.cudnn.allow_tf32", True),
    "cudnn.benchmark": ("backends.cudnn.benchmark", False),
    "cudnn.deterministic": ("backends.cudnn.deterministic", False),
}
#: torch's oneDNN switch on the CPU (bf16 or tf32 for f32 matmuls on CPUs that have them).
TORCH_CPU: dict[str, tuple[str, bool | str]] = {
    "mkldnn.matmul.fp32_precision": ("backends.mkldnn.matmul.fp32_precision", "none"),
}
#: cupy reads ``CUPY_TF32`` (TF32 for f32 matmuls and convolutions) from the environment.
CUPY: dict[str, tuple[str, bool | str]] = {"CUPY_TF32": ("env", "0")}

DEFAULTS: dict[str, object] = {
    name: default
    for table in (TORCH_ALL, TORCH_GPU, TORCH_CPU, CUPY)
    for name, (_p, default) in table.items()
}


def _read(torch: ModuleType, path: str) -> bool | int | float | str:
    """The value at ``path`` (``a.b.c`` attributes, or ``f()`` a call) under ``torch``; raises
    AttributeError where this torch has no such switch."""
    obj: object = torch
    for part in path.split("."):
        call = part.endswith("()")
        obj = getattr(obj, part.removesuffix("()"))
        if call:
            if not callable(obj):
                raise TypeError(f"{path}: {part} is not a function")
            obj = obj()
    if isinstance(obj, (bool, int, float, str)):
        return obj
    return str(obj)


def torch_modes(torch: ModuleType, kind: str) -> dict[str, object]:
    """torch's precision modes for a device of ``kind`` (``cpu``, ``cuda``, ``rocm``, ``metal``);
    a switch this torch lacks is left out."""
    tables = [TORCH_ALL]
    if kind in ("cuda", "rocm"):
        tables.append(TORCH_GPU)
    elif kind == "cpu":
        tables.append(TORCH_CPU)
    out: dict[str, object] = {}
    for table in tables:
        for name, (path, _default) in table.items():
            try:
                out[name] = _read(torch, path)
            except (AttributeError, RuntimeError, TypeError):
                continue
    return out


def cupy_modes(env: Mapping[str, str] | None = None) -> dict[str, object]:
    """cupy's precision modes (from the environment it reads them from)."""
    env = os.environ if env is None else env
    return {"CUPY_TF32": str(env.get("CUPY_TF32", "0"))}


def non_default(modes: Mapping[str, object]) -> dict[str, object]:
    """The modes whose value is not the library's default."""
    return {k: v for k, v in modes.items() if k in DEFAULTS and v != DEFAULTS[k]}


def describe(modes: Mapping[str, object]) -> str | None:
    """``cuda.matmul.allow_tf32=True, cudnn.benchmark=True`` for the non-default modes, or None."""
    odd = non_default(modes)
    return ", ".join(f"{k}={v}" for k, v in sorted(odd.items())) or None


def key_part(modes: Mapping[str, object]) -> str:
    """What the peak cache's key adds for these modes: nothing at the defaults (so caches from
    before this existed stay valid), else ``|precision=...``."""
    text = describe(modes)
    return "" if text is None else f"|precision={text}"


def difference(old: object, new: object) -> str | None:
    """Why a baseline measured in other precision modes cannot be compared, or None. Modes known
    on one side only are not held against it (a baseline recorded before they were kept)."""
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return None
    diffs = [
        f"{k} {old[k]!r} -> {new[k]!r}" for k in sorted(set(old) & set(new)) if old[k] != new[k]
    ]
    if not diffs:
        return None
    return (
        f"baseline measured in other precision modes ({'; '.join(diffs)}): not compared; set "
        "the same modes, or record a new baseline with --perf-update"
    )
