"""What the hardware is, in the terms that change how fast code runs on it.

Two CPUs can report the same model name ("AMD EPYC" on most cloud VMs) and still run numpy, torch
and the BLAS through different kernels: one has AVX-512, the other stops at AVX2, and the libraries
pick their code paths at run time from what the CPU offers. A baseline from one is no yardstick for
the other. This module reads, cheaply and without importing any array library:

* the CPU's vendor, family, model and stepping, its x86-64 micro-architecture level (``x86-64-v3``:
  AVX2/FMA; ``x86-64-v4``: AVX-512) or, on Arm, its vector extension (NEON, SVE, SVE2), the SIMD
  features that matter for numeric code, cache sizes, physical and logical cores, SMT and the
  hypervisor (``cpu_identity``);
* the hardware class: a short slug of what must match (``x86-64-v3-f25m1``) that the default
  machine id ends with, so baselines of several classes sit side by side in ``baselines/``.

What each array library really dispatches to (numpy's dispatch target, torch's CPU capability,
OpenBLAS's core type) is read by the device backends, which have the library imported anyway
(``numpy_dispatch``, ``blas_core``), and goes into their fingerprints.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

#: Bumped when the identity gains facts that must match: baselines whose device fingerprint has an
#: older (or no) ``identity`` version are reported as such and never compared.
IDENTITY_VERSION = 2

#: x86-64 micro-architecture levels (the psABI's), as Linux names the CPU flags of each.
X86_LEVELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("x86-64-v2", ("cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3")),
    ("x86-64-v3", ("avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave")),
    ("x86-64-v4", ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")),
)

#: SIMD features numeric libraries dispatch on, beyond the level (noted when they differ).
SIMD_FEATURES: tuple[str, ...] = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512bw",
    "avx512dq",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "avx512_vbmi2",
    "avx512ifma",
    "avx_vnni",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
    # Arm
    "asimd",
    "asimdhp",
    "asimddp",
    "sve",
    "sve2",
    "sme",
    "bf16",
    "i8mm",
)

#: Keys of ``cpu_identity()`` that must be equal for two measurements to be compared.
CPU_MUST_MATCH: tuple[str, ...] = ("vendor", "family", "model", "level")
#: Keys that are shown when they differ, but do not stop a comparison.
CPU_NOTED: tuple[str, ...] = (
    "stepping",
    "microcode",
    "features",
    "cache",
    "cores",
    "logical",
    "smt",
    "hypervisor",
)

_CPUINFO = "/proc/cpuinfo"
_SYS_CPU = Path("/sys/devices/system/cpu")


def _read(path: str | Path) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(1 << 20).strip()
    except OSError:
        return None


def parse_cpuinfo(text: str) -> list[dict[str, str]]:
    """``/proc/cpuinfo`` as one dict per logical CPU (blank-line separated blocks)."""
    blocks: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if current:
                blocks.append(current)
                current = {}
            continue
        key, sep, value = line.partition(":")
        if sep:
            current[key.strip()] = value.strip()
    if current:
        blocks.append(current)
    return blocks


def x86_level(flags: set[str]) -> str:
    """The highest x86-64 level whose flags (and all lower levels' flags) are present."""
    level = "x86-64"
    for name, needed in X86_LEVELS:
        if not all(f in flags for f in needed):
            break
        level = name
    return level


def arm_level(flags: set[str]) -> str:
    for name in ("sve2", "sve", "asimd"):
        if name in flags:
            return "neon" if name == "asimd" else name
    return "armv8"


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text, 0)
    except ValueError:
        return None


def _size_bytes(text: str | None) -> int | None:
    if not text:
        return None
    m = re.fullmatch(r"(\d+)\s*([KMG]?)B?", text.strip(), re.IGNORECASE)
    if not m:
        return None
    return int(m.group(1)) * {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}[m.group(2).upper()]


def cache_sizes(sys_cpu: Path = _SYS_CPU) -> dict[str, int]:
    """Cache sizes of CPU 0 in bytes: ``{"l1d": ..., "l2": ..., "l3": ...}`` where sysfs tells."""
    out: dict[str, int] = {}
    base = sys_cpu / "cpu0" / "cache"
    try:
        entries = sorted(base.glob("index*"))
    except OSError:
        return out
    for idx in entries:
        level, kind, size = (_read(idx / f) for f in ("level", "type", "size"))
        nbytes = _size_bytes(size)
        if level is None or nbytes is None:
            continue
        if kind == "Instruction":
            continue
        name = f"l{level}d" if kind == "Data" else f"l{level}"
        out[name] = nbytes
    return out


def cpu_identity_from(
    cpuinfo: str,
    *,
    machine: str,
    logical: int,
    caches: dict[str, int] | None = None,
    smt: str | None = None,
    hypervisor: str | None = None,
) -> dict[str, object]:
    """The identity of the CPU described by ``cpuinfo`` text (for tests: any text will do)."""
    blocks = parse_cpuinfo(cpuinfo)
    first = blocks[0] if blocks else {}
    raw_flags = first.get("flags") or first.get("Features") or ""
    flags = set(raw_flags.split())
    arch = machine.lower()
    if arch in ("x86_64", "amd64", "i686", "i386"):
        vendor = first.get("vendor_id", "unknown")
        family = first.get("cpu family")
        model = first.get("model")
        level = x86_level(flags)
    elif arch in ("aarch64", "arm64"):
        vendor = first.get("CPU implementer", "unknown")
        family = first.get("CPU architecture")
        model = first.get("CPU part")
        level = arm_level(flags)
    else:
        vendor = first.get("vendor_id", first.get("CPU implementer", "unknown"))
        family = first.get("cpu family")
        model = first.get("model", first.get("CPU part"))
        level = arch or "unknown"
    cores = {(b.get("physical id", "0"), b.get("core id")) for b in blocks if b.get("core id")}
    ident: dict[str, object] = {
        "vendor": vendor,
        "family": family,
        "model": model,
        "level": level,
        "stepping": first.get("stepping", first.get("CPU revision")),
        "microcode": first.get("microcode"),
        "features": sorted(f for f in SIMD_FEATURES if f in flags),
        "cache": dict(caches or {}),
        "cores": len(cores) or None,
        "logical": logical,
        "smt": smt,
        "hypervisor": hypervisor if hypervisor else ("yes" if "hypervisor" in flags else None),
    }
    return ident


def _hypervisor() -> str | None:
    for path in ("/sys/hypervisor/type", "/sys/class/dmi/id/sys_vendor"):
        text = _read(path)
        if text:
            return text
    return None


@lru_cache(maxsize=1)
def cpu_identity() -> dict[str, object]:
    """This machine's CPU identity (see the module docstring). Cached: read once per process."""
    machine = platform.machine()
    text = _read(_CPUINFO) or ""
    if not text and sys.platform == "darwin":  # pragma: no cover - macOS: no /proc
        return {
            "vendor": "apple" if machine == "arm64" else "unknown",
            "family": None,
            "model": cpu_model(),
            "level": machine,
            "stepping": None,
            "microcode": None,
            "features": [],
            "cache": {},
            "cores": os.cpu_count(),
            "logical": cpu_count(),
            "smt": None,
            "hypervisor": None,
        }
    hyper = _hypervisor() if "hypervisor" in text else None
    return cpu_identity_from(
        text,
        machine=machine,
        logical=cpu_count(),
        caches=cache_sizes(),
        smt=_read(_SYS_CPU / "smt" / "active"),
        hypervisor=hyper,
    )


def slug(text: str) -> str:
    """``text`` lower-cased, every run of other characters than a-z and 0-9 one ``-``."""
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")


def hardware_class(ident: dict[str, object] | None = None) -> str:
    """The must-match part of the CPU identity as a short slug: ``x86-64-v3-f25m1`` (AMD family
    25 model 1 with AVX2 but no AVX-512), ``sve-i0x41-p0xd40`` on Arm."""
    ident = cpu_identity() if ident is None else ident
    level = slug(str(ident.get("level") or "unknown"))
    family, model = ident.get("family"), ident.get("model")
    if level in ("neon", "sve", "sve2", "armv8"):
        parts = [level]
        if family or model:
            parts.append(f"i{slug(str(ident.get('vendor')))}-p{slug(str(model))}")
        return "-".join(parts)
    if family is not None and model is not None:
        return f"{level}-f{slug(str(family))}m{slug(str(model))}"
    return level


def numpy_dispatch(np: Any) -> str | None:
    """The highest SIMD target numpy dispatches to on this CPU (``X86_V3``, ``AVX512_SKX``...),
    from numpy's own run-time CPU feature detection; None where numpy does not tell."""
    umath = None
    for name in ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath"):
        umath = sys.modules.get(name)
        if umath is not None:
            break
    if umath is None:
        return None
    features = getattr(umath, "__cpu_features__", None)
    dispatch = getattr(umath, "__cpu_dispatch__", None)
    baseline = getattr(umath, "__cpu_baseline__", None)
    if not isinstance(features, dict):
        return None
    found = [t for t in (dispatch or ()) if features.get(t)]
    if found:
        return str(found[-1])
    return str(baseline[-1]) if baseline else "baseline"


def blas_core() -> str | None:
    """The core type OpenBLAS (or BLIS) picked at run time, e.g. ``Haswell`` or ``SkylakeX``, from
    threadpoolctl; None where no loaded BLAS reports one (MKL does not)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover - a dependency
        return None
    cores = sorted({str(i["architecture"]) for i in threadpool_info() if i.get("architecture")})
    return ",".join(cores) if cores else None


def describe(ident: dict[str, object]) -> str:
    """One readable line: ``AuthenticAMD family 25 model 1, x86-64-v3 (no AVX-512), 2 logical
    CPUs on 2 cores, L2 512 KiB, L3 32 MiB, hypervisor``."""
    parts = [f"{ident.get('vendor')} family {ident.get('family')} model {ident.get('model')}"]
    level = str(ident.get("level"))
    if level.startswith("x86-64"):
        raw = ident.get("features")
        feats = {str(f) for f in raw} if isinstance(raw, list) else set()
        level += " (AVX-512)" if "avx512f" in feats else " (no AVX-512)"
    parts.append(level)
    cores = ident.get("cores")
    logical = ident.get("logical")
    parts.append(f"{logical} logical CPUs" + (f" on {cores} cores" if cores else ""))
    cache = ident.get("cache")
    for key in ("l2", "l3"):
        n = cache.get(key) if isinstance(cache, dict) else None
        if isinstance(n, int) and not isinstance(n, bool) and n > 0:
            parts.append(f"{key.upper()} {_kib(n)}")
    if ident.get("hypervisor"):
        parts.append(f"hypervisor {ident['hypervisor']}")
    return ", ".join(parts)


def _kib(n: int) -> str:
    return f"{n // 2**20} MiB" if n >= 2**20 and n % 2**20 == 0 else f"{n // 2**10} KiB"


@lru_cache(maxsize=1)
def cpu_model() -> str:
    """The CPU's model name, best effort, without reading anything slow."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if (
                    key.strip() in ("model name", "Model", "cpu model", "Hardware")
                    and value.strip()
                ):
                    return value.strip()
    except OSError:
        pass
    if sys.platform == "darwin":
        try:
            out = subprocess.run(
                ["sysctl", "-n", "machdep.cpu.brand_string"],
                capture_output=True,
                text=True,
                timeout=5,
                check=False,
            )
            if out.stdout.strip():
                return out.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or platform.machine() or "unknown-cpu"


def memory_bytes() -> int | None:
    """Physical memory of this machine, where the OS tells."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def cpu_count() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
