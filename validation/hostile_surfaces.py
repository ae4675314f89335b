"""Hostile input on the surfaces added after the first reliability run (issue 31): pytest-benchmark
import, the results store, reports, same-session REFs and settings files, each case in a real
process where a user would meet it (``python -m validation.reliability --only surfaces``).

Counted for every case, from the files and outputs themselves: files written outside the project
(the whole work tree is listed before and after), tracebacks, secrets printed (a password planted
in a URL, looked for in every output and file written), user files overwritten (their bytes
before and after), partial runs stored in history (the store's run count after an interrupted
run), commands run that no one asked for (a marker file an executable would create), and whether
the outcome was a clear error naming the thing at fault.
"""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from validation.common import QUICK

SECRET = "S3cr3t-pw"
BENCH = (
    "import pytest\n\n"
    "@pytest.mark.perf(backends=['numpy'], dtypes=['f64'])\n"
    "def test_a(perf):\n    perf(sum, range(20))\n"
)


def _env() -> dict[str, str]:
    e = dict(os.environ, BURNPERF_TRUST_HOST="1", PYTHONDONTWRITEBYTECODE="1")
    for k in ("CI", "GITHUB_STEP_SUMMARY", "BURNPERF_STORE"):
        e.pop(k, None)
    return e


def _run(cwd: Path, cmd: list[str]) -> tuple[int, str]:
    proc = subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout + proc.stderr


def _pytest(cwd: Path, *args: str) -> tuple[int, str]:
    return _run(cwd, [sys.executable, "-m", "pytest", *QUICK, *args])


def _cli(cwd: Path, *args: str) -> tuple[int, str]:
    return _run(cwd, [sys.executable, "-m", "pytest_burnperf.cli", *args])


def _tree(root: Path) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for p in root.rglob("*"):
        if "__pycache__" in p.parts or ".pytest_cache" in p.parts:
            continue
        out[str(p)] = p.read_bytes() if p.is_file() and not p.is_symlink() else None
    return out


_numbers = itertools.count()


class Case:
    def __init__(self, work: Path, surface: str, name: str) -> None:
        self.surface, self.name = surface, name
        self.work = work / f"{surface}-{next(_numbers)}"
        self.project = self.work / "deep" / "er" / "project"
        self.project.mkdir(parents=True)
        (self.project / "pytest.ini").write_text("[pytest]\n")
        self.user_files: dict[Path, bytes] = {}

    def user_file(self, name: str, text: str = "the user's own file\n") -> Path:
        p = self.project / name
        p.write_text(text)
        self.user_files[p] = p.read_bytes()
        return p

    def measure(
        self, act: Callable[[Case], tuple[int, str]], names: list[str], *, must_fail: bool = True
    ) -> dict[str, Any]:
        before = _tree(self.work)
        rc, out = act(self)
        after = _tree(self.work)
        outside = [p for p in set(after) - set(before) if not Path(p).is_relative_to(self.project)]
        written = "".join(
            (v or b"").decode("utf-8", "replace") for k, v in after.items() if before.get(k) != v
        )
        overwritten = [  # replaced, or lost
            str(p) for p, b in self.user_files.items() if not p.is_file() or p.read_bytes() != b
        ]
        trace = "Traceback" in out or "INTERNALERROR" in out
        named = all(n in out for n in names)
        clear = (not must_fail or rc not in (0, 5)) and named and not trace and not overwritten
        return {
            "surface": self.surface,
            "case": self.name,
            "exit": rc,
            "outside_writes": len(outside),
            "traceback": trace,
            "secret_printed": SECRET in out or SECRET in written,
            "user_files_overwritten": len(overwritten),
            "clear": clear,
        }


def _saved_run(case: Case, fullnames: list[str]) -> Path:
    benches = [
        {"fullname": f, "name": "t", "stats": {"data": [1e-3, 1.1e-3, 1.2e-3], "iterations": 1}}
        for f in fullnames
    ]
    path = case.project / "saved.json"
    path.write_text(json.dumps({"machine_info": {}, "benchmarks": benches}))
    return path


IMPORT_NAMES = [
    "../../../../elsewhere/evil.py::test_a",
    "tests/../../outside.py::t",
    "::test_a",
    "/tmp/abs_evil.py::test_a",
    "C:/evil.py::test_a",
    "tests/nul.py::test_a",
    "a\x00b.py::test_a",
    "tests/./x.py::t",
]


def import_cases(work: Path) -> list[dict[str, Any]]:
    rows = []
    for name in IMPORT_NAMES:
        case = Case(work, "import", name)
        _saved_run(case, [name])
        rows.append(
            case.measure(
                lambda c: _cli(c.project, "import-pytest-benchmark", "saved.json"), ["fullname"]
            )
        )
    case = Case(work, "import", "a duplicate fullname")
    _saved_run(case, ["t.py::test_a", "t.py::test_a"])
    rows.append(
        case.measure(
            lambda c: _cli(c.project, "import-pytest-benchmark", "saved.json"), ["appears twice"]
        )
    )
    return rows


STORE_URLS = [
    f"postgresql+psycopg://alice:{SECRET}@127.0.0.1:1/db",
    f"postgresql://alice:{SECRET}@127.0.0.1:1/db",
    f"mysql://bob:{SECRET}@127.0.0.1:1/db",
    f"postgresql+psycopg://u:{SECRET}@[::1]:1/db?sslmode=disable",
]


def store_cases(work: Path) -> list[dict[str, Any]]:
    rows = []
    for url in STORE_URLS:
        case = Case(work, "store", url.replace(SECRET, "PASSWORD"))
        (case.project / "test_a.py").write_text(BENCH)
        rows.append(
            case.measure(
                lambda c, u=url: _pytest(
                    c.project, "--perf", "--perf-store", u, "--perf-json", "r.json",
                    "--perf-markdown", "s.md",
                ),
                ["--perf-store", "***@"],
            )
        )  # fmt: skip
    # a store whose schema version is not a number: named, and the Markdown still written
    case = Case(work, "store", "schema version not a number")
    (case.project / "test_a.py").write_text(BENCH)
    db = case.project / "h.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE burnperf_meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute("INSERT INTO burnperf_meta VALUES ('schema_version', 'two')")
    con.commit()
    con.close()
    row = case.measure(
        lambda c: _pytest(c.project, "--perf", "--perf-store", str(db), "--perf-markdown", "s.md"),
        ["schema version 'two' is not a number"],
    )
    row["clear"] = row["clear"] and (case.project / "s.md").exists()
    rows.append(row)
    # an interrupted run: nothing of it in the store's history
    case = Case(work, "store", "an interrupted run")
    (case.project / "test_a.py").write_text(
        BENCH
        + "\ndef test_b():\n    raise KeyboardInterrupt\n\n"
        + BENCH.replace("test_a", "test_c")
    )
    db = case.project / "runs.sqlite"
    row = case.measure(
        lambda c: _pytest(c.project, "--perf", "--perf-store", str(db), "--perf-json", "r.json"),
        ["this run was NOT recorded: it was interrupted"],
    )
    stored = 0
    if db.exists():
        con = sqlite3.connect(db)
        try:
            stored = con.execute("SELECT count(*) FROM burnperf_runs").fetchone()[0]
        except sqlite3.Error:
            stored = 0
        con.close()
    rc, _out = _cli(case.project, "import-results", "r.json", "--store", str(db))
    row["partial_runs_stored"] = stored + (1 if rc == 0 else 0)
    rows.append(row)
    return rows


def report_cases(work: Path) -> list[dict[str, Any]]:
    rows = []
    doc = {
        "schema": "pytest-burnperf-results",
        "version": 1,
        "created": "2026-11-24T00:00:00Z",
        "machine": {"id": "m"},
        "settings": {},
        "results": [{"test": "t.py::a", "name": "a", "samples": [0.1, 0.2]}],
    }
    for target in ("README.md", "index.html", "data.csv"):
        case = Case(work, "reports", f"burnperf report -o {target} (a user's file)")
        case.user_file(target)
        (case.project / "r.json").write_text(json.dumps(doc))
        rows.append(
            case.measure(
                lambda c, t=target: _cli(c.project, "report", "r.json", "-o", t),
                ["not written by pytest-burnperf"],
            )
        )
    case = Case(work, "reports", "--perf-markdown README.md (a user's file)")
    case.user_file("README.md")
    (case.project / "test_a.py").write_text(BENCH)
    rows.append(
        case.measure(
            lambda c: _pytest(c.project, "--perf", "--perf-markdown", "README.md"),
            ["not written by pytest-burnperf"],
        )
    )
    # names from test ids: no mention, link, line break or formula reaches Markdown or CSV
    hostile = "a[@alice https://evil.example a\\|b \x1b[2J =1+1\r\nperf: forged]"
    # (the reader refuses control characters in ``test`` itself: they go in the other fields)
    test = "=1+1 t.py::a[@alice https://evil.example www.evil.example]"
    bad = dict(doc, results=[{"test": test, "name": hostile, "backend": hostile, "samples": [0.1]}])
    for target, forbidden in (
        ("s.md", ["@alice", "https://evil", "\x1b", "\nperf: forged"]),
        ("s.csv", ["\r", "\x1b", "\n=1+1", "\nperf: forged"]),
        ("s.html", ["\x1b"]),
    ):
        case = Case(work, "reports", f"hostile names into {target}")
        (case.project / "r.json").write_text(json.dumps(bad))
        row = case.measure(
            lambda c, t=target: _cli(c.project, "report", "r.json", "-o", t),
            [],
            must_fail=False,
        )
        out = (case.project / target).read_text() if (case.project / target).exists() else ""
        row["clear"] = row["exit"] == 0 and not any(f in out for f in forbidden)
        rows.append(row)
    return rows


def ref_cases(work: Path) -> list[dict[str, Any]]:
    rows = []
    case = Case(work, "refs", "--perf-against main with an executable ./main")
    ran = case.work / "ran"
    main = case.project / "main"
    main.write_text(f"#!/bin/sh\ntouch {ran}\n")
    main.chmod(0o755)
    (case.project / "test_a.py").write_text(BENCH)
    row = case.measure(
        lambda c: _pytest(c.project, "--perf", "--perf-against", "main"), ["main", "git"]
    )
    row["commands_run"] = int(ran.exists())
    rows.append(row)
    for ref, words in (
        ("my branch", "no spaces"),
        ("main\x1b[2J", "no control characters"),
        ("x==0.1,<2", "name==version"),
    ):
        case = Case(work, "refs", f"--perf-against {ref!r}")
        (case.project / "test_a.py").write_text(BENCH)
        row = case.measure(
            lambda c, r=ref: _pytest(c.project, "--perf", "--perf-against", r),
            [words],
        )
        rows.append(row)
    return rows


CONFIG_CASES = [
    (
        "benchmarks.toml nested 5000 deep",
        "[burnperf]\nx = " + "[" * 5000 + "]" * 5000,
        "too deeply",
    ),
    ("timer = 'host\\n'", '[burnperf]\ntimer = "host\\n"\n', "timer must be one of"),
    ("[environment] with an escape", '[environment]\nrunner = "a\\u001b[2Jb"\n', None),
]
MARKERS = [
    ("samples='5'", "must be a whole number"),
    ("flush_l2='yes'", "must be True or False"),
    ("backends={'numpy': 1}", "must be a list of names"),
]


def config_cases(work: Path) -> list[dict[str, Any]]:
    rows = []
    for name, text, words in CONFIG_CASES:
        case = Case(work, "config", name)
        (case.project / "benchmarks.toml").write_text(text)
        (case.project / "test_a.py").write_text(BENCH)
        row = case.measure(
            lambda c: _pytest(c.project, "--perf", "--perf-json", "r.json"),
            [words] if words else [],
            must_fail=words is not None,
        )
        if words is None:  # accepted: the value is kept escaped in what the run writes
            r = case.project / "r.json"
            row["clear"] = (
                r.exists() and "\x1b" not in r.read_text() and "\\u001b" not in (r.read_text())
            )
        rows.append(row)
    for marker, words in MARKERS:
        case = Case(work, "config", f"marker {marker}")
        (case.project / "test_a.py").write_text(
            BENCH.replace("dtypes=['f64']", f"dtypes=['f64'], {marker}").replace(
                "backends=['numpy'], dtypes=['f64'], backends=", "dtypes=['f64'], backends="
            )
        )
        rows.append(case.measure(lambda c: _pytest(c.project, "--perf"), [words]))
    case = Case(work, "config", "--perf-store ''")
    (case.project / "test_a.py").write_text(BENCH)
    rows.append(
        case.measure(lambda c: _pytest(c.project, "--perf", "--perf-store", ""), ["empty store"])
    )
    return rows


def surface_cases(work: Path, log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for group in (import_cases, store_cases, report_cases, ref_cases, config_cases):
        got = group(work)
        for r in got:
            log(f"{r['surface']} {r['case']!r}: {'clear' if r['clear'] else 'NOT CLEAR'}")
        rows += got
    return rows


def totals(rows: list[dict[str, Any]]) -> dict[str, int]:
    return {
        "cases": len(rows),
        "outside_writes": sum(r["outside_writes"] for r in rows),
        "tracebacks": sum(bool(r["traceback"]) for r in rows),
        "secrets_printed": sum(bool(r["secret_printed"]) for r in rows),
        "user_files_overwritten": sum(r["user_files_overwritten"] for r in rows),
        "partial_runs_stored": sum(r.get("partial_runs_stored", 0) for r in rows),
        "commands_run": sum(r.get("commands_run", 0) for r in rows),
        "clear": sum(bool(r["clear"]) for r in rows),
    }
