from __future__ import annotations

import importlib.util

import numpy  # noqa: F401
import pytest
import scipy.stats  # noqa: F401

from ._helpers import LOOP_MODULE

# pytester's in-process runs restore sys.modules afterwards, and numpy or torch cannot be imported
# twice in one process; importing them here, before any run, keeps them loaded across runs.
if importlib.util.find_spec("torch") is not None:
    import array_api_compat.torch  # noqa: F401
    import torch  # noqa: F401


@pytest.fixture
def loop_project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_bench=LOOP_MODULE)
    return pytester
