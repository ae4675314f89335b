"""The baselines committed in baselines/ never fail on a machine of another CPU kind: such a
machine looks in another directory, and forced into this one (--perf-machine) every entry is
another hardware class, never a regression."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_burnperf.core.judging.comparability import comparability
from pytest_burnperf.host import hardware
from pytest_burnperf.host.machine import default_machine_id

ROOT = Path(__file__).resolve().parents[3] / "baselines"
FILES = sorted(ROOT.rglob("*.json"))


def entries() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for f in FILES:
        for key, entry in json.loads(f.read_text())["benchmarks"].items():
            out.append((f"{f.relative_to(ROOT)}::{key}", entry))
    return out


def other_kind(ident: dict[str, Any]) -> dict[str, Any]:
    """The same CPU name on the other side of the AVX-512 line."""
    other = dict(ident)
    other["level"] = "x86-64-v3" if ident.get("level") == "x86-64-v4" else "x86-64-v4"
    return other


def test_there_are_committed_baselines_with_the_hardware_identity() -> None:
    assert FILES, "no committed baselines"
    for name, entry in entries():
        fp = entry["device"]
        assert fp.get("identity") == hardware.IDENTITY_VERSION, name
        if fp.get("kind") == "cpu":
            assert fp.get("cpu") and fp.get("dispatch"), name


def test_every_committed_entry_is_incomparable_on_the_other_kind_of_cpu() -> None:
    for name, entry in entries():
        fp = entry["device"]
        if "cpu" not in fp:
            continue
        current = copy.deepcopy(fp)
        current["cpu"] = other_kind(fp["cpu"])
        current["dispatch"] = {k: f"{v}-other" for k, v in fp["dispatch"].items()}
        reason, _ = comparability(fp, current)
        assert reason is not None and "CPU level" in reason, name
        assert comparability(fp, copy.deepcopy(fp))[0] is None, name  # same class: compared


def test_the_other_kind_of_cpu_has_another_baselines_directory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    committed = {p.name for p in ROOT.iterdir() if p.is_dir()}
    for d in committed:
        info = json.loads(next((ROOT / d).rglob("*.json")).read_text())["machine"]
        ident = info["cpu_identity"]
        monkeypatch.setattr(hardware, "cpu_identity", lambda ident=ident: ident)
        assert hardware.hardware_class() == info["hardware_class"]
        flipped = other_kind(ident)
        monkeypatch.setattr(hardware, "cpu_identity", lambda flipped=flipped: flipped)
        assert default_machine_id() not in committed


def test_committed_memory_is_of_another_key_on_a_cpu_of_other_code_paths() -> None:
    """The memory kept beside a committed counts baseline was tracked on one CPU; on a runner
    whose numpy or torch take other code paths (AVX-512) its key differs: said, never a
    regression, even where that runner's calls allocate twice as much. Where the paths are the
    same, it is judged."""
    from pytest_burnperf.core.memory.allocations import Allocations
    from pytest_burnperf.core.memory.memory_verdict import judge

    kept = [(name, entry["memory"]) for name, entry in entries() if "memory" in entry]
    assert kept, "no committed baseline keeps memory"
    for name, memory in kept:
        key = memory["key"]
        assert key.get("dispatch"), name  # the code paths are in the key
        base = Allocations.from_json(memory, name)
        grown = Allocations(allocated=2 * base.allocated, count=base.count, peak=2 * base.peak)
        other = {**key, "dispatch": {k: f"{v}-AVX512" for k, v in key["dispatch"].items()}}
        v = judge([grown], base, key=other, baseline_key=key, threshold=None)
        assert v.status == "incomparable", name
        assert judge([base], base, key=key, baseline_key=key, threshold=None).status == (
            "unchanged"
        ), name
