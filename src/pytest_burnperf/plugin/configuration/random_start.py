"""The random state each benchmark starts from in a ``--perf`` run: the same in every process and
every run, so that a benchmark that draws its data from a global random generator measures the
same data in its rounds, its counted processes and its baseline's (devices/random_state.py).

- Each benchmark's global generators are seeded as its setup starts, before its fixtures: what
  its fixtures and body draw is the same wherever it runs. A fixture or body that seeds them
  itself still decides (it runs later).
- pytest-randomly reseeds every test with its own seed, drawn afresh in every process unless
  ``--randomly-seed`` is given: under ``--perf`` that seed is fixed (:data:`SEED`) where none
  was given, so its reseeding is the same in every process and run too. A seed given is kept.
"""

from __future__ import annotations

import pytest

from pytest_burnperf.devices.random_state import SEED, seed_global_generators
from pytest_burnperf.plugin.configuration.options import flag_value
from pytest_burnperf.plugin.session.perf_state import STATE

#: pytest-randomly's option: its seed, ``"default"`` until its own pytest_configure draws one.
RANDOMLY_SEED = "randomly_seed"


def fix_randomly_seed(config: pytest.Config) -> None:
    """Before any plugin is configured (pytest_cmdline_main): under ``--perf``, pytest-randomly's
    seed is :data:`SEED` where the command line gave none."""
    if not config.pluginmanager.hasplugin("randomly"):
        return
    if getattr(config.option, RANDOMLY_SEED, None) != "default":
        return  # a seed given (or ``last``): the user's
    if config.getoption("perf") or flag_value(config, "perf"):
        setattr(config.option, RANDOMLY_SEED, SEED)


def seed_benchmark(config: pytest.Config) -> None:
    """As a benchmark's setup starts: its global random generators seeded, in a process that
    measures (left alone in a plain pytest run or a smoke run)."""
    if STATE in config.stash and config.stash[STATE].run.mode.measures:
        seed_global_generators()
