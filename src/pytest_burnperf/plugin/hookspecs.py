"""Hooks a project can implement in its conftest.py (as pytest-benchmark offers its own):

* ``pytest_burnperf_update_machine_info(config, machine_info)``: add facts to the ``machine``
  object written into results JSON and baseline files (a runner label, a driver setting);
* ``pytest_burnperf_update_json(config, document)``: change the ``--perf-json`` document before it
  is written (add fields, drop raw samples to keep files small).

Both are called with keyword arguments and may modify the dict in place; their return values are
ignored.
"""

from __future__ import annotations

import pytest


@pytest.hookspec
def pytest_burnperf_update_machine_info(
    config: pytest.Config, machine_info: dict[str, object]
) -> None:
    """Add to (or change) ``machine_info`` before it is written into results and baselines."""


@pytest.hookspec
def pytest_burnperf_update_json(config: pytest.Config, document: dict[str, object]) -> None:
    """Change the ``--perf-json`` document in place before it is written."""
