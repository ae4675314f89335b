"""A newcomer's first day, automated: this package built as a wheel and installed into a clean
virtual environment in a project that is not this repository, the README's first benchmark
written into it, and the README's commands for a project run there exactly, checking what the
README says happens.

The README's install lines are run as written with two substitutions: the PyTorch CPU index
(not reachable where only package registries are) gives way to the same pinned CPU wheel the nox
sessions install (``BURNPERF_TORCH_SPEC``, default ``torch==2.13.0``), and the package name to
the wheel just built. Verdicts are not asserted beyond what holds on any host: an unchanged
benchmark may come out ``inconclusive`` on a busy machine, and at the gate's alpha a false alarm
is possible, so the last run must pass or fail only with a ``regressed`` verdict it prints.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

#: A wheel built and a fresh environment installed from it, for real: the slow tier.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
TORCH = os.environ.get("BURNPERF_TORCH_SPEC", "torch==2.13.0")


def block(after: str, lang: str, index: int = 0) -> str:
    """The ``index``-th fenced ``lang`` block after the heading ``after``."""
    section = README.split(after, 1)[1]
    found = re.findall(rf"```{lang}\n(.*?)```", section, re.S)
    assert len(found) > index, f"no ```{lang} block {index} after {after!r} in the README"
    return str(found[index])


def commands(text: str) -> list[str]:
    """The commands of a bash block, without their comments."""
    out = []
    for line in text.splitlines():
        cmd = line.split("  #", 1)[0].strip()
        if cmd and not cmd.startswith("#"):
            out.append(cmd)
    return out


def run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: int = 900) -> str:
    proc = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{shlex.join(cmd)} exited {proc.returncode}:\n{out[-4000:]}"
    return out


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT)],
        ROOT,
        dict(os.environ),
    )
    [built] = dist.glob("pytest_burnperf-*.whl")
    return built


def test_the_wheel_holds_every_module_and_the_entry_points(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    src = ROOT / "src"
    modules = {p.relative_to(src).as_posix() for p in src.rglob("*.py")}
    assert modules and modules <= names, sorted(modules - names)
    assert "pytest_burnperf/py.typed" in names
    [entry] = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    text = zipfile.ZipFile(wheel).read(entry).decode()
    assert "burnperf = pytest_burnperf.plugin.hooks" in text
    assert "burnperf = pytest_burnperf.cli:main" in text


def newcomer_env(venv: Path) -> dict[str, str]:
    """A shell with the project's venv activated (as ``. .venv/bin/activate`` leaves it) and
    nothing of this repository's test run: not CI, no plugin switches, no PYTHONPATH."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("BURNPERF_", "PYTEST_", "GITHUB_"))
        and k not in ("CI", "PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "COV_CORE_SOURCE")
    }
    env["VIRTUAL_ENV"] = str(venv)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def test_a_newcomer_installs_writes_the_first_benchmark_and_runs_the_readme_commands(
    wheel: Path, tmp_path: Path
) -> None:
    project = tmp_path / "myproject"
    project.mkdir()
    assert not (project / "pyproject.toml").exists()

    # Install in your own project: a venv first, torch's CPU build, then the plugin
    install = commands(block("## Install in your own project", "bash"))
    assert install[0].startswith("python3 -m venv .venv")
    run([sys.executable, "-m", "venv", ".venv"], project, dict(os.environ))
    venv = project / ".venv"
    env = newcomer_env(venv)
    pips = [c for c in install[1:] if c.startswith("pip install")]
    assert len(pips) == 2 and "torch" in pips[0] and "--index-url" in pips[0], install
    assert pips[1] == 'pip install "pytest-burnperf[torch]"', pips[1]
    run(["pip", "install", "-q", TORCH], project, env)
    run(["pip", "install", "-q", f"pytest-burnperf[torch] @ {wheel.as_uri()}"], project, env)

    # A first benchmark, where the README's comment line says it goes
    code = block("## A first benchmark", "python")
    first = code.splitlines()[0]
    assert first.startswith("# ")
    target = project / first[2:].strip()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(code, encoding="utf-8")

    smoke, record, judge = commands(block("## A first benchmark", "bash"))
    assert (smoke, record, judge) == ("pytest", "pytest --perf --update-baselines", "pytest --perf")

    # `pytest`: every benchmark once, untimed; the CUDA cases absent here are skips with a reason
    out = run(shlex.split(smoke), project, env)
    assert re.search(r"\b2 passed, \d+ skipped\b", out), out
    shown = run([*shlex.split(smoke), "-rs", "-q"], project, env)
    assert re.search(r"SKIPPED \[\d+\] .*cuda", shown, re.I), shown

    # `pytest --perf --update-baselines`: baselines under baselines/, one file per test module
    out = run(shlex.split(record), project, env)
    assert "baselines updated: 2 benchmark(s) in 1 file(s)" in out, out
    stored = {p.parent.parent.name: p for p in (project / "baselines").rglob("test_perf.json")}
    [timed] = [p for folder, p in stored.items() if not folder.startswith("counts-")]
    benchmarks = json.loads(timed.read_text())["benchmarks"]
    assert set(benchmarks) == {"test_matmul[numpy-cpu-f32]", "test_matmul[torch-cpu-f32]"}
    # where valgrind runs, the README's "records counts beside time": a counts folder beside
    if shutil.which("valgrind"):
        assert any(folder.startswith("counts-") for folder in stored), stored

    # `pytest --perf`: timed, compared with them, a verdict per benchmark and the count judged
    proc = subprocess.run(
        shlex.split(judge), cwd=project, env=env, capture_output=True, text=True, timeout=900
    )
    out = proc.stdout + proc.stderr
    rows = [ln for ln in out.splitlines() if ln.startswith("test_matmul  ")]
    assert len(rows) == 2, out
    verdicts = {ln.split()[-1] for ln in rows}
    assert verdicts <= {"unchanged", "improved", "inconclusive", "regressed"}, out
    assert re.search(r"perf: judged \d of 2 benchmarks", out), out
    # timed against the machine's baselines, or (valgrind here) counted against the counts ones
    flat = " ".join(out.split())  # the summary wraps its lines at the terminal's width
    timed_header = "machine linux-" in flat and "baselines in baselines/" in flat
    assert timed_header or "in baselines/counts-linux-" in flat, out
    if proc.returncode != 0:  # only a verdict may fail it (a false alarm at the gate's alpha)
        assert proc.returncode == 1 and "regressed" in verdicts, out
