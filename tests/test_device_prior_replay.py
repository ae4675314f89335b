"""validation/device_prior.py on the committed raw rounds of the H100 runs: the rule they ran
under gives their verdicts back, and each clock's prior keeps them with lower floors on the
device-bound benchmarks (a replay of stored data: nothing is timed)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from validation.device_prior import main, workload


def test_result_names_give_the_workload_and_device() -> None:
    assert workload("test_gpu[torch-cuda0-f32-matmul]") == ("matmul", "torch-cuda0")
    assert workload("test_gpu_graph[cupy-cuda0-f32]") == ("chain-graph", "cupy-cuda0")


def test_the_replay_gives_the_recorded_verdicts_back_and_lowers_device_floors(
    tmp_path: Path,
) -> None:
    out = tmp_path / "replay.json"
    assert main(["--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    same, measured = doc["replayed_as_recorded"]
    assert measured == 22 and same == measured
    assert doc["clock_prior_as_recorded"] == [22, 22]
    aa = [r for r in doc["rows"] if r["session"] == 0 and r["factor"] == 1.0]
    device = [r for r in aa if r["source"] == "device"]
    host = [r for r in aa if r["source"] == "host"]
    # the launch-bound chains keep the host's prior, the device-bound kernels get the device's
    assert len(device) == 9 and {r["name"] for r in host} == {
        "test_gpu[torch-cuda0-f32-chain]",
        "test_gpu[cupy-cuda0-f32-chain]",
    }
    assert all(r["clock prior, 1%"]["status"] != "regressed" for r in aa)
    host_floor = statistics.median(r["host prior, 1%"]["mds"] for r in device)
    device_floor = statistics.median(r["clock prior, 1%"]["mds"] for r in device)
    assert host_floor > 0.1 and device_floor < 0.03
    for r in host:  # the host-paced ones are judged exactly as before
        assert r["clock prior, 1%"] == r["host prior, 1%"]
