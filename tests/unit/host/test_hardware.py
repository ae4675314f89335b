"""Hardware identity from /proc/cpuinfo and sysfs text: two CPUs behind one name told apart."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from pytest_burnperf.host import hardware
from pytest_burnperf.host.hardware import (
    cache_sizes,
    cpu_identity_from,
    describe,
    hardware_class,
    numpy_dispatch,
    x86_level,
)

V2 = "fpu sse sse2 pni ssse3 cx16 sse4_1 sse4_2 popcnt lahf_lm"
V3 = V2 + " avx avx2 bmi1 bmi2 f16c fma abm movbe xsave"
V4 = V3 + " avx512f avx512bw avx512cd avx512dq avx512vl avx512_bf16 avx512_vnni"


def cpuinfo(flags: str, *, family: int, model: int, cpus: int = 2, stepping: int = 1) -> str:
    blocks = []
    for i in range(cpus):
        blocks.append(
            "\n".join(
                [
                    f"processor\t: {i}",
                    "vendor_id\t: AuthenticAMD",
                    f"cpu family\t: {family}",
                    f"model\t\t: {model}",
                    "model name\t: AMD EPYC",
                    f"stepping\t: {stepping}",
                    "microcode\t: 0x1000065",
                    "physical id\t: 0",
                    f"core id\t\t: {i}",
                    f"flags\t\t: {flags} hypervisor",
                ]
            )
        )
    return "\n\n".join(blocks) + "\n"


#: The two machines behind "AMD EPYC" that the gate confused: Zen 3 without AVX-512, Zen 4 with.
ZEN3 = cpuinfo(V3, family=25, model=1)
ZEN4 = cpuinfo(V4, family=25, model=17)


def test_levels_need_every_flag_of_every_lower_level() -> None:
    assert x86_level(set(V2.split())) == "x86-64-v2"
    assert x86_level(set(V3.split())) == "x86-64-v3"
    assert x86_level(set(V4.split())) == "x86-64-v4"
    # AVX-512 flags without the v3 set (a hypervisor masking AVX2) do not make a v4
    assert x86_level(set((V2 + " avx512f avx512bw avx512cd avx512dq avx512vl").split())) == (
        "x86-64-v2"
    )
    assert x86_level(set()) == "x86-64"


def test_same_model_name_different_class() -> None:
    a = cpu_identity_from(ZEN3, machine="x86_64", logical=2)
    b = cpu_identity_from(ZEN4, machine="x86_64", logical=2)
    assert (a["vendor"], a["family"], a["model"], a["level"]) == (
        "AuthenticAMD",
        "25",
        "1",
        "x86-64-v3",
    )
    assert b["level"] == "x86-64-v4" and "avx512_bf16" in b["features"]
    assert hardware_class(a) == "x86-64-v3-f25m1"
    assert hardware_class(b) == "x86-64-v4-f25m17"
    assert a["cores"] == 2 and a["logical"] == 2 and a["hypervisor"] == "yes"
    assert "no AVX-512" in describe(a) and "(AVX-512)" in describe(b)


def test_arm_identity_uses_implementer_part_and_vector_extension() -> None:
    text = (
        "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd sve sve2 bf16 i8mm\n"
        "CPU implementer\t: 0x41\nCPU architecture: 8\nCPU part\t: 0xd4f\nCPU revision\t: 1\n"
    )
    ident = cpu_identity_from(text, machine="aarch64", logical=4)
    assert ident["level"] == "sve2" and ident["vendor"] == "0x41" and ident["model"] == "0xd4f"
    assert hardware_class(ident) == "sve2-i0x41-p0xd4f"
    neon = cpu_identity_from(
        "processor\t: 0\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n",
        machine="aarch64",
        logical=1,
    )
    assert neon["level"] == "neon"


def test_cache_sizes_from_sysfs(tmp_path: Path) -> None:
    for i, (level, kind, size) in enumerate(
        [
            ("1", "Data", "32K"),
            ("1", "Instruction", "32K"),
            ("2", "Unified", "512K"),
            ("3", "Unified", "32768K"),
        ]
    ):
        d = tmp_path / "cpu0" / "cache" / f"index{i}"
        d.mkdir(parents=True)
        (d / "level").write_text(level + "\n")
        (d / "type").write_text(kind + "\n")
        (d / "size").write_text(size + "\n")
    assert cache_sizes(tmp_path) == {"l1d": 32768, "l2": 524288, "l3": 32 * 2**20}
    assert cache_sizes(tmp_path / "missing") == {}


def test_numpy_dispatch_reads_numpys_own_detection(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("numpy._core._multiarray_umath")
    fake.__cpu_baseline__ = ["SSE", "SSE2", "X86_V2"]  # type: ignore[attr-defined]
    fake.__cpu_dispatch__ = ["X86_V3", "X86_V4", "AVX512_ICL"]  # type: ignore[attr-defined]
    fake.__cpu_features__ = {"X86_V3": True, "X86_V4": True, "AVX512_ICL": False}  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "numpy._core._multiarray_umath", fake)
    assert numpy_dispatch(None) == "X86_V4"
    fake.__cpu_features__ = {"X86_V3": False}  # type: ignore[attr-defined]
    assert numpy_dispatch(None) == "X86_V2"  # nothing dispatched: the build's baseline


def test_identity_of_this_machine_is_cached_and_complete() -> None:
    ident = hardware.cpu_identity()
    assert ident is hardware.cpu_identity()
    for key in (*hardware.CPU_MUST_MATCH, *hardware.CPU_NOTED):
        assert key in ident
    assert hardware_class() == hardware_class(ident)


def test_describe_survives_an_identity_read_from_a_bad_file() -> None:
    text = describe({"level": "x86-64-v3", "features": 7, "cache": {"l3": "big"}, "logical": "2"})
    assert "x86-64-v3 (no AVX-512)" in text and "L3" not in text
