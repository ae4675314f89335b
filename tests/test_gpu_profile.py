"""--perf-profile's device profilers on a real GPU: CUPTI for cupy, torch.profiler's device time
for torch. They skip where there is no GPU (CI has none); on a CUDA machine they are the check
that the profilers' real bindings behave as the fakes in tests/unit/runs/test_profiling.py do.
Call counts are compared, never times."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_burnperf import devices
from pytest_burnperf.core.records.profiles import what_grew
from pytest_burnperf.runs import profiling


def _cuda(library: str) -> Any:
    """The first CUDA device ``library`` finds here; skip where there is none."""
    probe = devices.PROBES[library]()
    for device in probe.devices:
        if device.kind == "cuda":
            return device
    pytest.skip(f"no CUDA device for {library}: {'; '.join(probe.absent.values()) or 'none'}")


def test_cupy_kernels_are_profiled_with_cupti(tmp_path: Path) -> None:
    device = _cuda("cupy")
    pytest.importorskip("cupti.cupti", reason="cupti-python is not installed")
    import cupy

    with device.active():
        x = cupy.arange(1 << 20, dtype=cupy.float32)

        def chain() -> None:
            cupy.sqrt(x * 2)

        def chain_extra() -> None:
            cupy.sqrt(x * 2) + 1

        run: dict[str, Any] = dict(library="cupy", kind="cuda", calls=4, out_dir=tmp_path)
        profiling.profile(chain, device.sync, stem="warm", **run)
        a, _ = profiling.profile(chain, device.sync, stem="a", **run)
        b, path = profiling.profile(chain_extra, device.sync, stem="b", **run)
    assert a.tool == "cupti" and path.name == "b.trace.json"
    kernels_a = {e.name: e.calls for e in a.entries}
    kernels_b = {e.name: e.calls for e in b.entries}
    added = [name for name in kernels_b if name not in kernels_a]
    assert len(added) == 1 and "add" in added[0], (kernels_a, kernels_b)
    assert kernels_b[added[0]] == pytest.approx(1)
    assert added[0] in [g.name for g in what_grew(a, b, top=10)]


def test_torch_kernels_are_profiled_with_their_device_time(tmp_path: Path) -> None:
    device = _cuda("torch")
    import torch

    x = torch.rand(1 << 20, device=device.torch_device)

    def chain() -> None:
        torch.sqrt(x * 2)

    run: dict[str, Any] = dict(library="torch", kind="cuda", calls=4, out_dir=tmp_path)
    profiling.profile(chain, device.sync, stem="warm", **run)
    a, path = profiling.profile(chain, device.sync, stem="a", **run)
    assert a.tool == "torch.profiler" and path.stat().st_size > 0
    assert {e.name: e.calls for e in a.entries}["aten::mul"] == pytest.approx(1)
    assert a.total_s > 0
