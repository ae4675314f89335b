"""Hostile, broken and concurrent input on the fleet's surfaces (issue 42): ``burnperf publish``,
``merge``, ``merge-baselines``, ``github`` and the plugin's shard and step-summary output, each
case in a real process as a careful user would meet it (``python -m validation.reliability
--only fleet``), counted like :mod:`validation.hostile_surfaces` (files written outside the
project, tracebacks, user files replaced, a clear error or a sensible result), plus:

* **concurrent trials**: two publishes into one site, two merges into one file and two
  merge-baselines into one folder, started together ``trials`` times each; counted: a run that
  failed, a traceback, a site with a page missing that its index links, a merged file or a
  baseline file that does not read back whole.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from validation.hostile_surfaces import BENCH, Case, _env, _pytest

TWO = BENCH + "\n" + BENCH.replace("test_a", "test_b")


def _cli_env(cwd: Path, extra: dict[str, str], *args: str) -> tuple[int, str]:
    """``burnperf ARGS`` with ``extra`` in its environment; a run that hangs (as a merge of a
    shard claiming 10**8 shards did) is stopped after a minute and counted as such."""
    env = dict(_env(), **extra)
    cmd = [sys.executable, "-m", "pytest_burnperf.cli", *args]
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return 124, "hung: stopped after 60 s"
    return proc.returncode, proc.stdout + proc.stderr


def _cli(cwd: Path, *args: str) -> tuple[int, str]:
    return _cli_env(cwd, {}, *args)


def _shards(work: Path) -> dict[str, Path]:
    """Two shards' --perf-json, their recorded baselines and a store with one run, made once."""
    src = work / "fleet-source"
    src.mkdir(parents=True, exist_ok=True)
    (src / "pytest.ini").write_text("[pytest]\n")
    (src / "test_two.py").write_text(TWO)
    for k in (1, 2):
        _pytest(src, "--perf", "--perf-shard", f"{k}/2", "--perf-json", f"s{k}.json")
        _pytest(
            src, "--perf", "--perf-update", "--perf-shard", f"{k}/2", f"--perf-baselines-dir=b{k}"
        )
    _cli(src, "import-results", "s1.json", "s2.json", "--store", "h.sqlite")
    return {
        "s1": src / "s1.json",
        "s2": src / "s2.json",
        "b1": src / "b1",
        "b2": src / "b2",
        "store": src / "h.sqlite",
    }


def _copy(case: Case, files: dict[str, Path], *names: str) -> None:
    for n in names:
        src = files[n]
        if src.is_dir():
            shutil.copytree(src, case.project / src.name)
        else:
            shutil.copy2(src, case.project / src.name)


def _site(case: Case, files: dict[str, Path]) -> Path:
    _copy(case, files, "store")
    _cli(case.project, "publish", "-o", "site", "--store", "h.sqlite")
    return case.project / "site"


def whole_site(site: Path) -> bool:
    """Every page the site's index links is there."""
    try:
        index = (site / "index.html").read_text()
    except OSError:
        return False
    pages = re.findall(r'href="(b/[^"]+\.html)"', index)
    return bool(pages) and all((site / p).is_file() for p in pages)


def publish_cases(work: Path, files: dict[str, Path]) -> list[dict[str, Any]]:
    rows = []
    for name, args, extra in (
        ("publish --store typo.sqlite over a site", ["--store", "typo.sqlite"], {}),
        ("publish with no store at the default path", [], {}),
    ):
        case = Case(work, "publish", name)
        site = _site(case, files)
        for p in site.rglob("*"):  # the site's pages must not be lost
            if p.is_file():
                case.user_files[p] = p.read_bytes()
        row = case.measure(
            lambda c, a=args, e=extra: _cli_env(c.project, e, "publish", "-o", "site", *a),
            ["no results store at", "nothing was written"],
        )
        row["clear"] = row["clear"] and not (case.project / "typo.sqlite").exists()
        rows.append(row)
    case = Case(work, "publish", "publish onto a site with a CNAME and a folder of the user's")
    site = _site(case, files)
    case.user_files[site / "CNAME"] = b"bench.example.org\n"
    (site / "CNAME").write_bytes(b"bench.example.org\n")
    (site / "extra").mkdir()
    case.user_files[site / "extra" / "notes.md"] = b"mine\n"
    (site / "extra" / "notes.md").write_bytes(b"mine\n")
    row = case.measure(
        lambda c: _cli(c.project, "publish", "-o", "site", "--store", "h.sqlite"),
        ["published"],
        must_fail=False,
    )
    row["clear"] = row["clear"] and row["exit"] == 0 and whole_site(site)
    rows.append(row)
    return rows


EDITS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "shard count 10**8": (
        lambda d: d["settings"]["shard"].update(count=10**8),
        "settings.shard.count",
    ),
    "shard count null": (lambda d: d["settings"]["shard"].update(count=None), "not a whole"),
    "shard 3 of 2": (lambda d: d["settings"]["shard"].update(index=3), "settings.shard.index"),
    "a verdict 'x'": (
        lambda d: d["results"][0]["verdict"].update(status="x"),
        "verdict.status",
    ),
    "created: 5": (lambda d: d.update(created=5), "not a date"),
    "coverage.min_share 'most'": (
        lambda d: d.setdefault("coverage", {}).update(min_share="most"),
        "coverage.min_share",
    ),
    "a test of another selection": (
        lambda d: d["results"].append(dict(d["results"][0], test="other.py::test_z")),
        "selection they claim",
    ),
}


def merge_cases(work: Path, files: dict[str, Path]) -> list[dict[str, Any]]:
    rows = []
    case = Case(work, "merge", "merge -o same.json --junit same.json")
    _copy(case, files, "s1", "s2")
    rows.append(
        case.measure(
            lambda c: _cli(
                c.project, "merge", "s1.json", "s2.json", "-o", "same.json", "--junit", "same.json"
            ),
            ["--junit same.json: is also -o's path"],
        )
    )
    for what, (edit, named) in EDITS.items():
        case = Case(work, "merge", f"hand-edited shard: {what}")
        _copy(case, files, "s1", "s2")
        doc = json.loads((case.project / "s2.json").read_text())
        edit(doc)
        (case.project / "s2.json").write_text(json.dumps(doc))
        rows.append(
            case.measure(
                lambda c: _cli(c.project, "merge", "s1.json", "s2.json", "-o", "m.json"), [named]
            )
        )
    case = Case(work, "merge", "merge missing.json")
    _copy(case, files, "s1")
    rows.append(
        case.measure(
            lambda c: _cli(c.project, "merge", "s1.json", "missing.json", "-o", "m.json"),
            ["missing.json: no such file"],
        )
    )
    case = Case(work, "merge", "merge-baselines into a file")
    _copy(case, files, "b1", "b2")
    case.user_file("afile")
    rows.append(
        case.measure(
            lambda c: _cli(c.project, "merge-baselines", "b1", "b2", "--baselines", "afile"),
            ["is a file, not a baselines folder"],
        )
    )
    return rows


def github_cases(work: Path, files: dict[str, Path]) -> list[dict[str, Any]]:
    rows = []
    gh = ["github", "--results", "s1.json", "--exit-code", "0"]
    case = Case(work, "github", "--comment-file the results file")
    _copy(case, files, "s1")
    case.user_files[case.project / "s1.json"] = (case.project / "s1.json").read_bytes()
    rows.append(
        case.measure(
            lambda c: _cli(c.project, *gh, "--comment-file", "s1.json"), ["--comment-file"]
        )
    )
    case = Case(work, "github", "--comment-file a user's file")
    _copy(case, files, "s1")
    case.user_file("notes.md")
    rows.append(
        case.measure(
            lambda c: _cli(c.project, *gh, "--comment-file", "notes.md"),
            ["not written by pytest-burnperf"],
        )
    )
    for name, var, value in (
        ("$GITHUB_OUTPUT a folder", "GITHUB_OUTPUT", "."),
        ("$GITHUB_OUTPUT in a missing folder", "GITHUB_OUTPUT", "no/such/out"),
        ("$GITHUB_STEP_SUMMARY a folder", "GITHUB_STEP_SUMMARY", "."),
    ):
        case = Case(work, "github", name)
        _copy(case, files, "s1")
        extra = {var: value, "GITHUB_EVENT_NAME": "push"}
        rows.append(
            case.measure(
                lambda c, e=extra: _cli_env(c.project, e, *gh), [var, "cannot append to it"]
            )
        )
    for payload in ('{"pull_request": "x"}', "[1, 2]"):
        case = Case(work, "github", f"an event payload {payload}")
        _copy(case, files, "s1")
        (case.project / "event.json").write_text(payload)
        extra = {
            "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_EVENT_PATH": str(case.project / "event.json"),
        }
        row = case.measure(
            lambda c, e=extra: _cli_env(c.project, e, *gh),
            ["the event names no pull request head"],
            must_fail=False,
        )
        row["clear"] = row["clear"] and row["exit"] == 0
        rows.append(row)
    case = Case(work, "github", "--limit 10")
    _copy(case, files, "s1")
    rows.append(case.measure(lambda c: _cli(c.project, *gh, "--limit", "10"), ["at least 2000"]))
    return rows


def plugin_cases(work: Path) -> list[dict[str, Any]]:
    rows = []
    case = Case(work, "plugin", "$GITHUB_STEP_SUMMARY unwritable under --perf-markdown")
    (case.project / "test_two.py").write_text(TWO)

    def step_summary(c: Case) -> tuple[int, str]:
        env = dict(_env(), GITHUB_STEP_SUMMARY=str(c.project))  # a folder
        from validation.common import QUICK

        cmd = [sys.executable, "-m", "pytest", *QUICK, "--perf", "--perf-markdown", "s.md"]
        proc = subprocess.run(cmd, cwd=c.project, env=env, capture_output=True, text=True)
        return proc.returncode, proc.stdout + proc.stderr

    row = case.measure(
        step_summary,
        ["NOT appended to the job summary", "$GITHUB_STEP_SUMMARY"],
        must_fail=False,  # the run itself passes: only the job summary could not be appended to
    )
    row["clear"] = row["clear"] and row["exit"] == 0 and (case.project / "s.md").is_file()
    rows.append(row)
    case = Case(work, "plugin", "--perf-shard 50/100 on 2 benchmarks")
    (case.project / "test_two.py").write_text(TWO)
    row = case.measure(
        lambda c: _pytest(c.project, "--perf", "--perf-shard", "50/100", "--perf-json", "s.json"),
        ["shard 50/100 holds none of the selection's 2 benchmark(s)"],
        must_fail=False,
    )
    row["clear"] = row["clear"] and row["exit"] == 0
    rows.append(row)
    return rows


def fleet_cases(work: Path, log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    files = _shards(work)
    rows: list[dict[str, Any]] = []
    for group in (publish_cases, merge_cases, github_cases):
        rows += group(work, files)
    rows += plugin_cases(work)
    for r in rows:
        log(f"{r['surface']} {r['case']!r}: {'clear' if r['clear'] else 'NOT CLEAR'}")
    return rows


def _together(cwd: Path, cmds: list[list[str]]) -> list[tuple[int, str]]:
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "pytest_burnperf.cli", *cmd],
            cwd=cwd,
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for cmd in cmds
    ]
    out = []
    for p in procs:
        with p:  # its pipe closed, whatever happens
            text, _ = p.communicate(timeout=600)
            out.append((p.returncode, text or ""))
    return out


def concurrent(work: Path, trials: int, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Two publishes, two merges and two merge-baselines at once, ``trials`` times each."""
    files = _shards(work)
    out: dict[str, Any] = {}
    place = work / "concurrent"
    place.mkdir(parents=True, exist_ok=True)
    for n in ("s1", "s2", "store", "b1", "b2"):
        src = files[n]
        if src.is_dir():
            shutil.copytree(src, place / src.name, dirs_exist_ok=True)
        else:
            shutil.copy2(src, place / src.name)
    kinds: dict[str, tuple[list[list[str]], Callable[[], bool]]] = {
        "publish": (
            [["publish", "-o", "site", "--store", "h.sqlite"]] * 2,
            lambda: whole_site(place / "site"),
        ),
        "merge": (
            [["merge", "s1.json", "s2.json", "-o", "m.json"]] * 2,
            lambda: len(json.loads((place / "m.json").read_text())["results"]) == 2,
        ),
        "merge-baselines": (
            [["merge-baselines", "b1", "b2", "--baselines", "merged"]] * 2,
            # every store merged (the timed one, and the counts one where the shards were
            # counted too) holds both shards' benchmarks
            lambda: (
                bool(merged := list((place / "merged").rglob("*.json")))
                and all(len(json.loads(p.read_text())["benchmarks"]) == 2 for p in merged)
            ),
        ),
    }
    for kind, (cmds, whole) in kinds.items():
        failed = tracebacks = broken = 0
        for _ in range(trials):
            for rc, text in _together(place, cmds):
                failed += rc not in (0, 1)  # merge exits 1 for a regression: a verdict
                tracebacks += "Traceback" in text
            try:
                broken += not whole()
            except (OSError, ValueError, KeyError):
                broken += 1
        out[kind] = {
            "trials": trials,
            "runs": 2 * trials,
            "failed": failed,
            "tracebacks": tracebacks,
            "not_whole": broken,
        }
        log(f"{kind}: {out[kind]}")
    return out


if __name__ == "__main__":  # pragma: no cover - the harness entry is validation.reliability
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        rows = fleet_cases(Path(tmp))
        print(sum(r["clear"] for r in rows), "of", len(rows), "clear")
        print(json.dumps(concurrent(Path(tmp) / "c", int(os.environ.get("TRIALS", "2")))))
