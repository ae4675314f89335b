"""The GitHub Action (.github/actions/burnperf/action.yml) run here step by step, as the runner
would: its shell steps in bash with the inputs, outputs and files GitHub gives them, its ``uses``
steps stood in for (the artifact upload gives a URL; the comment step is checked for whether it
would run and what it would post). actionlint checks the file's syntax (nox -s lint)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ._helpers import FAST, LOOP_MODULE, use_virtual_clock

#: Real measurement: the slow tier (`nox -s tests -- -m slow`; .ci/run runs it).
pytestmark = pytest.mark.slow

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[2]
ACTION = ROOT / ".github" / "actions" / "burnperf" / "action.yml"
EXPR = re.compile(r"\$\{\{\s*([^}]*?)\s*\}\}")
ARTIFACT_URL = "https://github.invalid/artifacts/1"


class Ran:
    def __init__(self) -> None:
        self.outputs: dict[str, dict[str, str]] = {}
        self.failed: tuple[str, int] | None = None
        self.comment: str | None = None  # what the comment step would post; None: skipped


def run_action(cwd: Path, inputs: dict[str, str], env: dict[str, str]) -> Ran:
    """Every step of the action in order, stopping at the first that fails (as GitHub does)."""
    spec = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    given = {
        name: inputs.get(name, str(meta.get("default", "")))
        for name, meta in spec["inputs"].items()
    }
    unknown = set(inputs) - set(given)
    assert not unknown, f"not inputs of the action: {unknown}"
    ran = Ran()

    def value(expr: str) -> str:
        parts = expr.split(".")
        if parts[0] == "inputs":
            return given[parts[1]]
        if parts[0] == "steps" and parts[2] == "outputs":
            return ran.outputs.get(parts[1], {}).get(parts[3], "")
        raise AssertionError(f"an expression this test does not know: {expr}; extend it")

    def sub(text: str) -> str:
        return EXPR.sub(lambda m: value(m.group(1)), text)

    def condition(text: str) -> bool:
        m = re.fullmatch(r"(\S+)\s*==\s*'([^']*)'", text.strip())
        assert m, f"a condition this test does not know: {text}; extend it"
        return value(m.group(1)) == m.group(2)

    summary = cwd / "step-summary.md"
    for i, step in enumerate(spec["runs"]["steps"]):
        if "if" in step and not condition(step["if"]):
            continue
        sid = step.get("id", f"step{i}")
        uses = step.get("uses", "")
        if uses.startswith("actions/upload-artifact"):
            paths = [sub(p).strip() for p in step["with"]["path"].splitlines() if p.strip()]
            assert all(Path(cwd, p).name.startswith("perf-") for p in paths)
            ran.outputs[sid] = {"artifact-url": ARTIFACT_URL}
            continue
        if uses.startswith("actions/github-script"):
            assert step.get("continue-on-error") is True  # a refused comment fails nothing
            path = sub(step["env"]["BURNPERF_COMMENT_PATH"])
            ran.comment = Path(cwd, path).read_text(encoding="utf-8")
            continue
        assert not uses, f"a step this test cannot stand in for: {uses}"
        assert step["shell"] == "bash"
        out = cwd / f"output-{i}.txt"
        out.write_text("")
        step_env = {
            **os.environ,
            **env,
            **{k: sub(str(v)) for k, v in (step.get("env") or {}).items()},
            "GITHUB_OUTPUT": str(out),
            "GITHUB_STEP_SUMMARY": str(summary),
            "GITHUB_ACTION_PATH": str(ACTION.parent),
        }
        assert "${{" not in sub(step["run"]).replace(step["run"], ""), "inputs only via env"
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=cwd,
            env=step_env,
            capture_output=True,
            text=True,
        )
        ran.outputs[sid] = dict(
            line.split("=", 1) for line in out.read_text().splitlines() if "=" in line
        )
        ran.outputs[sid]["_stdout"] = proc.stdout + proc.stderr
        if proc.returncode != 0:
            ran.failed = (step.get("name", sid), proc.returncode)
            break
    return ran


def event(tmp: Path, head_repo: str) -> dict[str, str]:
    payload = {"pull_request": {"number": 7, "head": {"repo": {"full_name": head_repo}}}}
    path = tmp / "event.json"
    path.write_text(json.dumps(payload))
    return {
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(path),
        "GITHUB_REPOSITORY": "us/project",
        "CI": "true",
    }


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    use_virtual_clock(pytester)
    pytester.makepyfile(test_bench=LOOP_MODULE)
    pytester.runpytest("--perf", "--perf-update", *FAST).assert_outcomes(passed=2)
    return pytester.path


#: One process round on the virtual clock may leave unchanged code inconclusive (the prior
#: noise floor): --perf-min-judged 0 keeps the run's exit code to the verdicts.
INPUTS = {
    "python": sys.executable,
    "reference": "baselines",
    "label": "cpu",
    "args": " ".join((*FAST, "--perf-min-judged", "0")),
}


def test_unchanged_code_passes_with_outputs_summary_and_comment(project: Path) -> None:
    ran = run_action(project, INPUTS, event(project, "us/project"))
    assert ran.failed is None, ran.outputs["run"]["_stdout"][-3000:]
    run, publish = ran.outputs["run"], ran.outputs["publish"]
    assert run["exit-code"] == "0"
    assert publish["total"] == "2" and publish["regressed"] == "0"
    judged = int(publish["judged"])
    assert judged == int(publish["unchanged"]) + int(publish["improved"])
    assert judged + int(publish["not-judged"]) == 2 == judged + int(publish["inconclusive"])
    assert "--perf-against baselines" not in run["_stdout"]  # the header names no auto choice
    assert "--perf-against auto" not in run["_stdout"].split("perf: judged")[0]
    assert publish["results-path"] == "perf-cpu-results.json"
    assert (project / run["summary-path"]).read_text().startswith("## pytest-burnperf")
    # the job summary got the Markdown summary from --perf-markdown
    assert "## pytest-burnperf" in (project / "step-summary.md").read_text()
    assert ran.comment is not None
    assert ran.comment.startswith("<!-- burnperf:cpu -->\n**pytest-burnperf on cpu**")
    assert ARTIFACT_URL in ran.comment and f"Judged {judged} of 2" in ran.comment


def test_a_regression_fails_the_last_step_after_publishing(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BURNPERF_TEST_WORK", "1.5")
    ran = run_action(project, {**INPUTS, "benches": "test_loop"}, event(project, "us/project"))
    assert ran.failed == ("The verdict", 1)
    assert ran.outputs["publish"]["regressed"] == "1"
    assert ran.comment is not None and "Regressions (1)" in ran.comment
    assert "pytest --perf exited 1" in ran.outputs["verdict"]["_stdout"]


def test_a_fork_pull_request_runs_and_says_why_it_does_not_comment(project: Path) -> None:
    ran = run_action(project, INPUTS, event(project, "someone/fork"))
    assert ran.failed is None
    assert ran.comment is None and ran.outputs["publish"]["comment"] == "false"
    summary = (project / "step-summary.md").read_text()
    assert "No pull-request comment: a pull request from the fork someone/fork" in summary


def test_a_run_that_stops_early_is_published_with_its_output(project: Path) -> None:
    ran = run_action(project, {**INPUTS, "args": "--perf-rounds 0"}, event(project, "us/project"))
    assert ran.failed is not None and ran.failed[1] == 4  # pytest's usage error, passed on
    assert ran.outputs["publish"]["total"] == "0"
    assert ran.comment is not None and "No results to show" in ran.comment
    assert "--perf-rounds" in ran.comment
    assert "No results to show" in (project / "step-summary.md").read_text()


def test_a_label_that_cannot_name_files_is_refused(project: Path) -> None:
    ran = run_action(project, {**INPUTS, "label": "a/b"}, event(project, "us/project"))
    assert ran.failed == ("pytest --perf", 2)
    assert "input label must be letters, digits" in ran.outputs["run"]["_stdout"]


def test_shards_run_by_the_action_and_merged_by_it(project: Path) -> None:
    """Two shard jobs (no comment each), then a merge job over their results files: one
    summary, one comment, the merged counts as outputs."""
    shard_inputs = {**INPUTS, "comment": "false"}
    for k in (1, 2):
        ran = run_action(
            project, {**shard_inputs, "shard": f"{k}/2", "label": f"cpu-{k}"},
            event(project, "us/project"),
        )  # fmt: skip
        assert ran.failed is None, ran.outputs["run"]["_stdout"][-2000:]
        assert ran.comment is None and ran.outputs["publish"]["total"] == "1"
    merged = run_action(
        project,
        {**INPUTS, "merge": "perf-cpu-1-results.json perf-cpu-?-results.json", "label": "cpu"},
        event(project, "us/project"),
    )
    assert merged.failed is None, merged.outputs["run"]["_stdout"][-2000:]
    assert "merged 2 shard(s) into perf-cpu-results.json" in merged.outputs["run"]["_stdout"]
    assert merged.outputs["publish"]["total"] == "2"
    assert merged.comment is not None and "## pytest-burnperf" in merged.comment
