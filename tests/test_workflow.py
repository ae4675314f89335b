"""The CI workflow (.github/workflows/benchmarks.yml): its triggers, and that it runs what the
README documents and installs what .ci/run installs. actionlint checks the rest (nox -s lint)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "benchmarks.yml"


@pytest.fixture(scope="module")
def flow() -> dict[Any, Any]:
    doc = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    return doc


def _runs(flow: dict[Any, Any]) -> str:
    return "\n".join(s.get("run", "") for s in flow["jobs"]["perf"]["steps"])


def test_triggers(flow: dict[Any, Any]) -> None:
    on = flow[True]  # YAML 1.1 reads the key `on` as a boolean
    assert on["schedule"][0]["cron"]  # the weekly pre-release run
    assert {"labeled", "synchronize"} <= set(on["pull_request"]["types"])
    assert {"backends", "benches", "dtypes"} <= set(on["workflow_dispatch"]["inputs"])
    assert "ci:benchmarks" in flow["jobs"]["perf"]["if"]


def test_it_runs_the_readme_command(flow: dict[Any, Any]) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = re.search(r"```bash\n# 1\..*?\n(.*?)\n", readme, re.S)
    assert first is not None
    assert first.group(1).strip() in _runs(
        flow
    )  # python3 -m pip install nox && python3 -m nox -s perf


def test_it_installs_what_ci_installs(flow: dict[Any, Any]) -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    packages = "pocl-opencl-icd ocl-icd-libopencl1 mesa-vulkan-drivers libvulkan1 g++"
    assert packages in ci and packages in _runs(flow)


def test_inputs_reach_scripts_only_through_the_environment(flow: dict[Any, Any]) -> None:
    for step in flow["jobs"]["perf"]["steps"]:
        assert "inputs." not in step.get("run", ""), step


def test_results_uploaded_and_summary_written(flow: dict[Any, Any]) -> None:
    steps = flow["jobs"]["perf"]["steps"]
    uses = [s.get("uses", "") for s in steps]
    assert any(u.startswith("actions/upload-artifact") for u in uses)
    assert "GITHUB_STEP_SUMMARY" in _runs(flow)
    assert sum(u.startswith("actions/github-script") for u in uses) == 2  # started, then summary


def test_it_judges_against_the_base_of_the_change(flow: dict[Any, Any]) -> None:
    """--perf-against auto needs the history and the tags (a shallow clone has neither)."""
    steps = flow["jobs"]["perf"]["steps"]
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout"))
    assert checkout["with"]["fetch-depth"] == 0
    assert "args=(--perf-against auto)" in _runs(flow)
