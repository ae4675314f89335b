"""``asv continuous`` on the validation harness's 13 synthetic workloads: its false alarms, its
detection of planted slowdowns and its wall time, for the comparison issue 13 asks for.

asv compares commits, so the workloads live in a throw-away git repository as a package
(``synthwork``: a copy of validation/synthetic/workloads.py, whose work factors come from a
``knobs.json`` committed with it). Every session is a new branch off the ``base`` commit: an A/A
session changes nothing that runs (its knobs file only names the session, so the commit differs),
a planted session sets each workload's factor from the harness's rotation (+5/+10/+20/+50% or
-10% work: ``run.planted_knobs``). Each session runs ``asv continuous --factor 1.05 base
BRANCH`` (asv's defaults otherwise: 2 processes per commit, up to 10 repeats, its own
statistical test; factor 1.05 is the 5% threshold the other tools use) in a virtualenv asv
builds once (numpy, threadpoolctl, torch 2.13.0) and counts the benchmarks it reports worse.
The workloads run with one BLAS/torch thread, as in the harness.

``python -m validation.asv_compare --aa 8 --planted 5 --json docs/data/asv.json`` (about a minute a
session on 2 cores; asv must be installed: ``pip install asv virtualenv``).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from validation.common import SIZES, cp, log, machine, planted_knobs
from validation.synthetic.workloads import NAMES

HERE = Path(__file__).resolve().parent

PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "synthwork"
version = "0"

[tool.setuptools]
packages = ["synthwork"]

[tool.setuptools.package-data]
synthwork = ["knobs.json"]
"""

BENCHMARKS = """import os
import pathlib

import synthwork

os.environ["BURNPERF_VALIDATE_KNOBS"] = (
    pathlib.Path(synthwork.__file__).parent / "knobs.json"
).read_text()

from synthwork.workloads import NAMES, prepare  # noqa: E402


class Synthetic:
    params = list(NAMES)
    param_names = ["workload"]

    def setup(self, workload):
        from threadpoolctl import threadpool_limits

        self._limit = threadpool_limits(1)
        self.fn, self.args = prepare(workload)

    def time_synthetic(self, workload):
        self.fn(*self.args)
"""

CONF = {
    "version": 1,
    "project": "synthwork",
    "repo": ".",
    "branches": ["main"],
    "environment_type": "virtualenv",
    "pythons": [f"{sys.version_info.major}.{sys.version_info.minor}"],
    "matrix": {"req": {"numpy": [""], "threadpoolctl": [""], "torch": ["2.13.0"]}},
    "build_command": ["python -m pip wheel --no-deps -w {build_cache_dir} {build_dir}"],
    "benchmark_dir": "benchmarks",
    "env_dir": ".asv/env",
    "results_dir": ".asv/results",
    "html_dir": ".asv/html",
}

#: A row of asv's comparison table: its change mark and the workload.
ROW = re.compile(r"^\|\s*([+\-x!]?)\s*\|.*time_synthetic\('([^']+)'\)")


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=h@example.invalid", "-c", "user.name=harness", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def make_repo(work: Path) -> Path:
    repo = work / "synthwork-repo"
    if repo.exists():
        shutil.rmtree(repo)
    (repo / "synthwork").mkdir(parents=True)
    (repo / "benchmarks").mkdir()
    shutil.copy(HERE / "synthetic" / "workloads.py", repo / "synthwork" / "workloads.py")
    (repo / "synthwork" / "__init__.py").write_text("")
    (repo / "synthwork" / "knobs.json").write_text("{}\n")
    (repo / "pyproject.toml").write_text(PYPROJECT)
    (repo / "benchmarks" / "__init__.py").write_text("")
    (repo / "benchmarks" / "bench.py").write_text(BENCHMARKS)
    (repo / "asv.conf.json").write_text(json.dumps(CONF, indent=1) + "\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    git(repo, "tag", "base")
    return repo


def session(asv: str, repo: Path, tag: str, knobs: dict[str, Any]) -> dict[str, Any]:
    git(repo, "checkout", "-q", "-B", tag, "base")
    (repo / "synthwork" / "knobs.json").write_text(json.dumps(knobs, sort_keys=True) + "\n")
    git(repo, "commit", "-qam", tag)
    git(repo, "checkout", "-q", "main")
    t0 = time.monotonic()
    done = subprocess.run(
        [asv, "continuous", "--factor", "1.05", "--split", "base", tag],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - t0
    marks = {}
    for line in done.stdout.splitlines():
        m = ROW.match(line)
        if m:
            marks[m.group(2)] = m.group(1)
    if done.returncode not in (0, 1) or "Traceback" in done.stdout + done.stderr:
        raise SystemExit(f"asv failed in {tag}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return {"tag": tag, "knobs": knobs, "rc": done.returncode, "wall": wall, "marks": marks}


def find_asv() -> str:
    asv = shutil.which("asv") or str(Path(sys.executable).with_name("asv"))
    if not Path(asv).exists():
        raise SystemExit("asv is not installed here (pip install asv virtualenv)")
    return asv


def prepare(asv: str, repo: Path) -> None:
    """asv's machine file, and its environment built once with a quick run of the base."""
    subprocess.run([asv, "machine", "--yes"], cwd=repo, check=True, capture_output=True)
    log("building asv's environment (once) with a quick run")
    subprocess.run([asv, "run", "--quick", "base^!"], cwd=repo, check=True, capture_output=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--aa", type=int, default=8, help="A/A sessions")
    ap.add_argument("--planted", type=int, default=5, help="planted sessions")
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    asv = find_asv()
    work = args.work or Path(tempfile.mkdtemp(prefix="burnperf-asv-"))
    work.mkdir(parents=True, exist_ok=True)
    repo = make_repo(work)
    prepare(asv, repo)
    names = list(NAMES)
    # interleaved: each session at its fraction of its own kind's count
    plan = sorted(
        [("aa", i) for i in range(args.aa)] + [("planted", i) for i in range(args.planted)],
        key=lambda p: (p[1] + 0.5) / (args.aa if p[0] == "aa" else args.planted),
    )
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    sessions = []
    for kind, i in plan:
        knobs: dict[str, Any] = {"_session": f"aa{i}"} if kind == "aa" else planted_knobs(i, names)
        s = session(asv, repo, f"{kind}{i}", knobs)
        s["kind"] = kind
        sessions.append(s)
        worse = sorted(n for n, m in s["marks"].items() if m == "+")
        log(f"{kind}{i}: {s['wall']:.0f} s, worse: {worse or 'none'}")
    aa = [s for s in sessions if s["kind"] == "aa"]
    planted = [s for s in sessions if s["kind"] == "planted"]
    false_alarms = sum(m == "+" for s in aa for m in s["marks"].values())
    failed_sessions = sum(any(m == "+" for m in s["marks"].values()) for s in aa)
    rows = []
    for size in SIZES:
        hits = total = 0
        for s in planted:
            for name in names:
                if s["knobs"].get(name) == size:
                    total += 1
                    hits += s["marks"].get(name) == "+"
        rows.append((size, hits, total))
    walls = [s["wall"] for s in sessions]
    print(f"asv continuous --factor 1.05, {len(aa)} A/A and {len(planted)} planted sessions")
    print(f"machine: {machine()}; started {started}")
    print(f"A/A false alarms per benchmark: {cp(false_alarms, len(aa) * len(names))}")
    print(f"A/A sessions with a false alarm: {cp(failed_sessions, len(aa))}")
    for size, hits, total in rows:
        what = "failed" if size < 1 else "caught"
        print(f"planted x{size:.2f}: {what} {cp(hits, total)}")
    print(f"session wall time: median {statistics.median(walls):.1f} s (13 workloads, 2 commits)")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "started": started,
                    "machine": machine(),
                    "command": f"python -m validation.asv_compare --aa {args.aa} "
                    f"--planted {args.planted}",
                    "sessions": sessions,
                },
                indent=1,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
