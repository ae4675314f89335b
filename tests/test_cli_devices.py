"""``burnperf devices``: what a user reads first on a new runner."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from pytest_burnperf import devices
from pytest_burnperf.cli import main
from pytest_burnperf.core.options.settings import LIBRARY_KINDS


class FakeGPU(devices.DeviceBase):
    id, kind, library, name = "torch-cuda0", "cuda", "torch", "Fake GPU 80GB"

    def unsupported(self, dtype: str) -> str | None:
        return "no f64 here" if dtype == "f64" else None

    def fingerprint(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "library": self.library,
            "name": self.name,
            "memory_bytes": 80 * 2**30,
            "compute_units": 132,
            "capability": "9.0",
            "runtime": "CUDA 12.9",
            "versions": {"torch": "2.13.0"},
        }


@pytest.fixture
def fake_probes(monkeypatch: pytest.MonkeyPatch) -> None:
    fakes = {
        "torch": lambda: devices.Probe("torch", devices=[FakeGPU()], absent={"rocm": "CUDA build"}),
        "opencl": lambda: devices.Probe("opencl", absent={"opencl": "pyopencl not installed"}),
    }
    monkeypatch.setattr(devices, "PROBES", fakes)


def test_devices_table_shows_model_memory_units_versions_clock_and_dtypes(
    fake_probes: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    for line in (
        "torch-cuda0  (cuda, torch)",
        "  model:         Fake GPU 80GB",
        "  memory:        80.0 GiB",
        "  compute units: 132",
        "  capability:    9.0",
        "  runtime:       CUDA 12.9",
        "  versions:      torch 2.13.0",
        "  clock:         host (wall time around sync)",
        "  dtypes:        f16, bf16, f32, i32, i64",
        "  graphs:        no",  # a DeviceBase has no graph capture
        "  torch rocm: CUDA build",
        "  opencl: pyopencl not installed",  # issue 41: not "opencl opencl"
    ):
        assert line in out.splitlines(), line
    assert "opencl opencl" not in out


def test_devices_json(fake_probes: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["devices", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (gpu,) = doc["devices"]
    assert gpu["id"] == "torch-cuda0" and gpu["compute_units"] == 132
    assert gpu["unsupported_dtypes"] == {"f64": "no f64 here"} and gpu["graphs"] is False
    assert doc["absent"] == {
        "torch": {"rocm": "CUDA build"},
        "opencl": {"opencl": "pyopencl not installed"},
    }


def test_devices_on_this_machine(capsys: pytest.CaptureFixture[str]) -> None:
    """Whatever is installed here is either listed or explained, never a crash."""
    assert main(["devices", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    ids = {d["id"] for d in doc["devices"]}
    assert "numpy-cpu" in ids
    for library, kinds in LIBRARY_KINDS.items():
        for kind in kinds:
            found = any(d["library"] == library and d["kind"] == kind for d in doc["devices"])
            assert found or kind in doc["absent"].get(library, {}), (library, kind)


def _runtime_dirs_while_probing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> list[str | None]:
    """``burnperf devices`` listed once, with the XDG_RUNTIME_DIR the torch probe saw."""
    seen: list[str | None] = []
    real_probe = devices.PROBES["torch"]
    monkeypatch.setitem(
        devices.PROBES,
        "torch",
        lambda: (seen.append(os.environ.get("XDG_RUNTIME_DIR")), real_probe())[1],
    )
    assert main(["devices"]) == 0
    capsys.readouterr()
    return seen


@pytest.mark.parametrize("runtime_dir", [None, "not-a-directory"])
def test_devices_leaves_no_runtime_dir_behind(
    fake_probes: None,
    runtime_dir: str | None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Mesa gets a private XDG_RUNTIME_DIR while the devices are probed; the listing removes it
    and restores the setting it found (each listing left a directory in the temp folder)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    if runtime_dir is None:
        monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    else:
        monkeypatch.setenv("XDG_RUNTIME_DIR", runtime_dir)
    seen = _runtime_dirs_while_probing(monkeypatch, capsys)
    (private,) = seen
    assert private is not None and Path(private).parent == tmp_path  # a private one while probing
    assert os.environ.get("XDG_RUNTIME_DIR") == runtime_dir
    assert list(tmp_path.iterdir()) == []


def test_devices_keeps_a_usable_runtime_dir(
    fake_probes: None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A private XDG_RUNTIME_DIR of the user's (mode 0700) is used as it is, and left there."""
    mine = tmp_path / "runtime"
    mine.mkdir(mode=0o700)
    mine.chmod(0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(mine))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    seen = _runtime_dirs_while_probing(monkeypatch, capsys)
    assert seen == [str(mine)] and os.environ["XDG_RUNTIME_DIR"] == str(mine)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runtime"]  # nothing made beside it
