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


#: The comment step's script run by node against a fake of github-script's ``github`` and
#: ``context``: which comment it updates, or that it creates one.
COMMENT_HARNESS = """
const fs = require("fs");
const comments = JSON.parse(process.env.FAKE_COMMENTS);
const done = [];
const github = {
  rest: {
    users: {
      getAuthenticated: async () => {
        if (process.env.FAKE_ME) return { data: { login: process.env.FAKE_ME } };
        throw new Error("Resource not accessible by integration");
      },
    },
    issues: {
      listComments: "list",
      updateComment: async (a) => done.push(["update", a.comment_id]),
      createComment: async () => done.push(["create"]),
    },
  },
  paginate: async () => comments,
};
const context = { repo: { owner: "o", repo: "r" }, issue: { number: 7 } };
(async () => { SCRIPT })().then(() => console.log(JSON.stringify(done)));
"""


@pytest.mark.parametrize(
    ("me", "comments", "expected"),
    [
        # the Actions token: its comments are github-actions[bot]'s; another user's quote of
        # the marker is never adopted (issue 42)
        (
            "",
            [
                {"id": 1, "user": {"login": "mallory"}, "body": "<!-- burnperf:cpu -->\nmine"},
                {
                    "id": 2,
                    "user": {"login": "github-actions[bot]"},
                    "body": "<!-- burnperf:cpu -->\nx",
                },
            ],
            [["update", 2]],
        ),
        (
            "",
            [{"id": 1, "user": {"login": "mallory"}, "body": "<!-- burnperf:cpu -->"}],
            [["create"]],
        ),
        # a personal token: its own login
        (
            "ci-bot",
            [{"id": 3, "user": {"login": "ci-bot"}, "body": "<!-- burnperf:cpu -->"}],
            [["update", 3]],
        ),
        # another label's comment is not this one's
        (
            "",
            [{"id": 4, "user": {"login": "github-actions[bot]"}, "body": "<!-- burnperf:gpu -->"}],
            [["create"]],
        ),
    ],
)
def test_the_comment_step_updates_only_its_own_comment(
    action: dict[Any, Any], tmp_path: Path, me: str, comments: list[Any], expected: list[Any]
) -> None:
    import json
    import os
    import shutil
    import subprocess

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (apt-get install nodejs)")
    [step] = [
        s for s in action["runs"]["steps"] if s.get("uses", "").startswith("actions/github-script")
    ]
    body = tmp_path / "comment.md"
    body.write_text("<!-- burnperf:cpu -->\n**pytest-burnperf on cpu**\n")
    script = tmp_path / "run.js"
    script.write_text(COMMENT_HARNESS.replace("SCRIPT", step["with"]["script"]))
    env = dict(os.environ, FAKE_COMMENTS=json.dumps(comments), FAKE_ME=me)
    env["BURNPERF_COMMENT_PATH"] = str(body)
    out = subprocess.run([node, str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == expected


def test_a_weekly_regression_is_bisected_to_its_commit(flow: dict[Any, Any]) -> None:
    """After the weekly run's merged verdict failed: the whole history, valgrind, the merged
    results of the runner type the script reads, and the script that tests/plugin/test_bisect.py
    runs against a local repository."""
    job = flow["jobs"]["bisect"]
    assert job["needs"] == "merge"
    assert "schedule" in job["if"] and "needs.merge.result == 'failure'" in job["if"]
    steps = job["steps"]
    assert steps[0]["uses"].startswith("actions/checkout") and steps[0]["with"]["fetch-depth"] == 0
    runs = "\n".join(s.get("run", "") for s in steps)
    assert "apt-get install" in runs and "valgrind" in runs
    [download] = [s for s in steps if s.get("uses", "").startswith("actions/download-artifact")]
    merged_label = flow["jobs"]["merge"]["strategy"]["matrix"]["type"][0]
    assert download["with"]["name"] == f"perf-results-{merged_label}"
    assert f".ci/bisect-weekly {download['with']['path']}/perf-{merged_label}-results.json" in runs
    assert (ROOT / ".ci" / "bisect-weekly").stat().st_mode & 0o111  # executable
