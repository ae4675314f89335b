"""Sessions: ``tests`` (the test suite), ``lint`` (ruff + mypy), ``perf`` (the shipped benchmarks),
``validate`` (the validation harness behind docs/validation.md; about 35 minutes on 2 cores).

Every session that needs torch installs the pinned CPU wheel first, so pip never resolves a
multi-GB CUDA build for the ``torch>=2.3`` extra. Override the pin with BURNPERF_TORCH_SPEC.
``nox -s perf -- -k matmul`` forwards arguments to pytest.

The ``opencl`` and ``vulkan`` extras (pyopencl, wgpu) are installed everywhere; they find devices
only where a driver is present (on a CPU-only Debian machine: ``apt-get install pocl-opencl-icd
ocl-icd-libopencl1 mesa-vulkan-drivers libvulkan1``, which ``.ci/run`` does). cupy is not
installed here: without a GPU it has nothing to run, and its CUDA paths are tested with fakes.
"""

from __future__ import annotations

import os

import nox

nox.options.sessions = ["tests", "lint"]
nox.options.reuse_existing_virtualenvs = True

TORCH = os.environ.get("BURNPERF_TORCH_SPEC", "torch==2.13.0")
#: The lint tools, pinned in one place: pyproject.toml's [dependency-groups] lint.
LINT_TOOLS = nox.project.dependency_groups(nox.project.load_toml("pyproject.toml"), "lint")


def install(session: nox.Session, extras: str) -> None:
    session.install(TORCH)
    session.install("-e", f".[{extras}]")


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite: unit tests, pytester tests of the plugin, CLI and import-cost tests."""
    install(session, "torch,opencl,vulkan,nvml,dev")
    session.run("pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff (lint and format check) and mypy --strict on src/."""
    install(session, "torch,opencl,vulkan,dev")
    session.install(*LINT_TOOLS)
    paths = ("src", "tests", "perf_tests", "validation", "conftest.py", "noxfile.py")
    session.run("ruff", "check", *paths)
    session.run("ruff", "format", "--check", *paths)
    session.run("mypy")


@nox.session
def perf(session: nox.Session) -> None:
    """The shipped benchmarks on every device found, in 3 process rounds, judged against baselines/."""
    install(session, "torch,opencl,vulkan")
    session.run(
        "pytest",
        "--perf",
        "perf_tests",
        "--perf-rounds",
        "3",
        "--perf-json",
        "perf-results.json",
        *session.posargs,
    )


@nox.session
def validate(session: nox.Session) -> None:
    """False-alarm and detection rates of the gate, and pytest-benchmark's rule side by side.

    Runs 20 A/A and 15 planted-regression sessions (each: the shipped CPU suite and nine synthetic
    workloads at the CI settings, then the synthetic workloads under pytest-benchmark) and writes
    docs/validation.md and docs/validation.json. Run it on an otherwise idle machine.
    ``nox -s validate -- --aa-sessions 5 --planted-sessions 5`` for a shorter run.
    """
    install(session, "torch,validate")
    session.run(
        "python",
        "validation/run.py",
        "--out",
        "docs/validation.md",
        "--command",
        "nox -s validate",
        *session.posargs,
    )
