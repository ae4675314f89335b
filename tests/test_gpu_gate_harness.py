"""validation/gpu_gate.py, the GPU gate harness, checked without a GPU: its plants, its reading
of results and its figures from injected verdicts, and one dry run on the CPU devices (the
harness's plumbing, not the gate: nothing here depends on how fast the machine is)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from validation.gpu_gate import NAMES, PLANTS, analyse, knobs_for, report, workload_of

REPO = Path(__file__).resolve().parents[1]


def test_sessions_alternate_aa_and_plants_rotating_over_every_workload() -> None:
    assert knobs_for(0) == {} and knobs_for(2) == {}
    planted = [knobs_for(i) for i in range(1, 2 * len(NAMES), 2)]
    assert all(sorted(k.values()) == sorted(PLANTS) for k in planted)
    for name in NAMES:  # every workload gets every size over a rotation
        assert {k[name] for k in planted if name in k} == set(PLANTS)


def test_result_names_give_the_workload() -> None:
    assert workload_of({"name": "test_gpu[torch-cuda0-f32-matmul]"}) == "matmul"
    assert workload_of({"name": "test_gpu[cupy-cuda0-f32-reduce]"}) == "reduce"
    assert workload_of({"name": "test_gpu_graph[torch-cuda0-f32]"}) == "chain-graph"


def verdict(workload: str, factor: float, status: str, mds: float = 0.02) -> dict[str, object]:
    return {
        "workload": workload,
        "device": "torch-cuda0",
        "factor": factor,
        "status": status,
        "ratio": factor,
        "mds": mds,
        "reason": "",
        "timer": "device",
        "device_median": 2e-6,
        "host_median": 2e-5 if workload == "chain" else None,
    }


def test_the_figures_count_false_alarms_and_detection_by_kind() -> None:
    sessions = [
        {"verdicts": [verdict("matmul", 1.0, "unchanged"), verdict("chain", 1.0, "regressed")]},
        {
            "verdicts": [
                verdict("matmul", 1.1, "regressed"),
                verdict("axpy", 1.1, "unchanged"),
                verdict("chain", 1.2, "regressed", mds=0.08),
            ]
        },
    ]
    a = analyse(sessions)
    assert a["aa"] == [1, 2]
    assert a["detect"]["device-bound"] == {"1.10": [1, 1]}
    assert a["detect"]["memory-bound"] == {"1.10": [0, 1]}
    assert a["detect"]["launch-bound"] == {"1.20": [1, 1]}
    assert a["clocks_us"]["chain (torch-cuda0)"] == [2.0, 20.0]
    text = report(a, "stored", "2026-11-24 09:00", "python -m validation.gpu_gate")
    assert "| unchanged comparisons failed (false alarms) | 1/2 = 50.0%" in text
    assert "| +10% caught, device-bound | 1/1 = 100.0%" in text
    assert "| chain (torch-cuda0) | 5.0% | 2.0 / 20.0 |" in text


@pytest.mark.slow
def test_a_dry_run_on_the_cpu_writes_its_report(tmp_path: Path) -> None:
    pytest.importorskip("torch")  # its model workload is written with torch.nn
    out = tmp_path / "gate.md"
    cmd = [sys.executable, "-m", "validation.gpu_gate", "--backend", "cpu", "--size", "tiny"]
    cmd += ["--first", "1", "--sessions", "1", "--quick", "--work", str(tmp_path / "w")]
    # issue 72's settings (validation/gpu_issue72.sh): passed to every session's pytest
    cmd += ["--threshold", "1%", "--round-start", "resident"]
    proc = subprocess.run([*cmd, "--out", str(out)], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    raw = json.loads(out.with_suffix(".json").read_text())
    assert "--threshold 1% --round-start resident" in raw["command"]
    (session,) = raw["sessions"]
    assert session["i"] == 1 and session["knobs"] == knobs_for(1)  # --first 1: a planted one
    seen = {(v["workload"], v["device"]) for v in session["verdicts"]}
    assert {v["measure"] for v in session["verdicts"]} == {"time"}  # timed, as on a GPU
    # every CPU workload on numpy and torch, the model on torch only; the graph one skips
    for name in ("matmul", "axpy", "reduce", "chain"):
        assert {(name, "numpy-cpu"), (name, "torch-cpu")} <= seen
    assert ("model", "torch-cpu") in seen and ("model", "numpy-cpu") not in seen
    planted = {v["workload"]: v["factor"] for v in session["verdicts"] if v["factor"] != 1.0}
    assert planted == knobs_for(1)
    assert "## The gate on a GPU: stored" in out.read_text()


def test_a_spent_budget_starts_no_session_and_still_writes_the_report(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "gate.md"
    cmd = [sys.executable, "-m", "validation.gpu_gate", "--backend", "cpu", "--size", "tiny"]
    cmd += ["--sessions", "3", "--quick", "--minutes", "0", "--work", str(tmp_path / "w")]
    cmd += ["--keep-baselines"]  # nothing recorded: the budget, not the measuring, is tested
    proc = subprocess.run([*cmd, "--out", str(out)], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "stopping after 0 sessions" in proc.stdout + proc.stderr
    raw = json.loads(out.with_suffix(".json").read_text())
    assert raw["sessions"] == [] and raw["analysis"]["sessions"] == 0
    assert "| sessions | 0 |" in out.read_text()


def test_plant_puts_one_factor_on_every_workload_of_the_planted_sessions() -> None:
    assert knobs_for(0, 1.03) == {} and knobs_for(2, 1.03) == {}
    assert knobs_for(1, 1.03) == {name: 1.03 for name in NAMES}


def test_the_h200_sessions_judged_again_keep_their_verdicts_and_lose_both_faults() -> None:
    """validation/gpu_rejudge.py on the raw H200 rounds (docs/data/gpu-gate-h200.json): the +3%
    plants a slower host "explained" are caught, the shared GPU's false `regressed` is an
    abstention naming the other process, and every other verdict is the one the run gave."""
    from validation.gpu_rejudge import rejudge

    data = json.loads((REPO / "docs/data/gpu-gate-h200.json").read_text())
    baselines = data["run1"]["baselines"]["benchmarks"]
    excused = rejudge(baselines, data["run1"]["raw_stored"]["s3.json"])
    assert [r["then"]["status"] for r in excused] == ["inconclusive"] * 4
    assert [r["now"]["status"] for r in excused] == ["regressed"] * 4
    shared = {r["name"]: r for r in rejudge(baselines, data["run2"]["raw"]["s0.json"])}
    reduce = shared["test_gpu[torch-cuda0-f32-reduce]"]
    assert (reduce["then"]["status"], reduce["now"]["status"]) == ("regressed", "inconclusive")
    assert "other processes computed on the GPU" in reduce["now"]["reason"]
    assert all(r["now"]["status"] != "regressed" for r in shared.values())
    for name in ("s2.json", "s3.json", "s4.json"):
        rows = rejudge(baselines, data["run2"]["raw"][name])
        assert [r["now"]["status"] for r in rows] == [r["then"]["status"] for r in rows]
        assert all(r["now"]["threshold"] == 0.015 for r in rows)
