"""The CI workflow (.github/workflows/benchmarks.yml) and the action it uses
(.github/actions/burnperf/action.yml): triggers, that the workflow installs as the README says
and as .ci/run does, and that the workflow and the action agree on inputs, steps and outputs.
actionlint checks the workflow's syntax (nox -s lint); tests/plugin/test_github_action.py runs
the action's steps."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "benchmarks.yml"
ACTION = ROOT / ".github" / "actions" / "burnperf" / "action.yml"


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


def _action_step(flow: dict[Any, Any]) -> dict[Any, Any]:
    steps = flow["jobs"]["perf"]["steps"]
    [step] = [s for s in steps if s.get("uses") == "./.github/actions/burnperf"]
    return step


@pytest.fixture(scope="module")
def action() -> dict[Any, Any]:
    doc = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    return doc


def test_it_installs_with_the_readme_command_and_runs_the_perf_session(
    flow: dict[Any, Any],
) -> None:
    """nox -s perf = its environment (--install-only) + pytest --perf perf_tests --perf-against
    auto with the results and summary files, which is what the action runs."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = re.search(r"```bash\n# 1\..*?\n(.*?)\n", readme, re.S)
    assert first is not None
    assert f"{first.group(1).strip()} --install-only" in _runs(flow)
    given = _action_step(flow)["with"]
    assert given["paths"] == "perf_tests" and given["reference"] == "auto"
    assert given["python"] == ".nox/perf/bin/python"
    noxfile = (ROOT / "noxfile.py").read_text(encoding="utf-8")
    assert '"perf_tests",\n        "--perf-against",\n        "auto",' in noxfile


def test_the_workflow_gives_the_action_only_its_inputs(
    flow: dict[Any, Any], action: dict[Any, Any]
) -> None:
    assert set(_action_step(flow)["with"]) <= set(action["inputs"])
    assert {"backends", "benches", "dtypes", "reference", "require"} <= set(action["inputs"])


def test_the_action_refers_only_to_what_it_defines(action: dict[Any, Any]) -> None:
    steps = action["runs"]["steps"]
    ids = {s["id"] for s in steps if "id" in s}
    text = ACTION.read_text(encoding="utf-8")
    for name in re.findall(r"inputs\.([A-Za-z0-9_-]+)", text):
        assert name in action["inputs"], name
    for step_id in re.findall(r"steps\.([A-Za-z0-9_-]+)\.outputs", text):
        assert step_id in ids, step_id
    assert {"regressed", "improved", "judged", "not-judged", "total", "summary-path"} <= set(
        action["outputs"]
    )
    for step in steps:  # inputs reach scripts through the environment only
        assert "${{" not in step.get("run", ""), step.get("name")
        assert "shell" in step or "uses" in step  # a composite step must name its shell


def test_it_installs_what_ci_installs(flow: dict[Any, Any]) -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    packages = "pocl-opencl-icd ocl-icd-libopencl1 mesa-vulkan-drivers libvulkan1 g++"
    assert packages in ci and packages in _runs(flow)


def test_inputs_reach_scripts_only_through_the_environment(flow: dict[Any, Any]) -> None:
    for step in flow["jobs"]["perf"]["steps"]:
        assert "inputs." not in step.get("run", ""), step


def test_it_judges_against_the_base_of_the_change(flow: dict[Any, Any]) -> None:
    """--perf-against auto needs the history and the tags (a shallow clone has neither)."""
    steps = flow["jobs"]["perf"]["steps"]
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout"))
    assert checkout["with"]["fetch-depth"] == 0


def test_shards_cover_the_suite_once_and_are_merged_then_published(flow: dict[Any, Any]) -> None:
    perf = flow["jobs"]["perf"]
    shards = perf["strategy"]["matrix"]["shard"]
    given = _action_step(flow)["with"]
    assert given["shard"] == "${{ matrix.shard }}/" + str(len(shards))  # K/N with N = the list
    assert shards == list(range(1, len(shards) + 1))
    assert "${{ matrix.shard }}" in given["label"] and given["comment"] == "false"
    merge = flow["jobs"]["merge"]
    assert merge["needs"] == "perf" and "always()" in merge["if"]
    [step] = [s for s in merge["steps"] if s.get("uses") == "./.github/actions/burnperf"]
    assert "merge" in step["with"] and "comment" not in step["with"]  # the one comment
    types = {t["name"] for t in perf["strategy"]["matrix"]["type"]}
    assert set(merge["strategy"]["matrix"]["type"]) == types
    publish = flow["jobs"]["publish"]
    assert "schedule" in publish["if"] and publish["needs"] == "merge"
    assert "burnperf publish" in "\n".join(s.get("run", "") for s in publish["steps"])
