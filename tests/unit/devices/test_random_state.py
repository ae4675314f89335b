"""The global random generators each benchmark starts from: seeded alike every time, those of
libraries not imported left alone (nothing imported for them)."""

from __future__ import annotations

import random
import subprocess
import sys

import numpy as np
import pytest

from pytest_burnperf.devices.random_state import SEED, seed_global_generators


def _draws() -> tuple[float, float, float]:
    import torch

    return random.random(), float(np.random.rand()), float(torch.rand(1).item())


def test_each_seeding_gives_the_same_draws_from_every_imported_generator() -> None:
    import torch  # imported: its generator is seeded too

    assert seed_global_generators() == ("random", "numpy.random", "torch")
    first = _draws()
    _draws()  # the generators move on ...
    random.seed(12345)  # ... or are seeded by someone else
    np.random.seed(12345)
    torch.manual_seed(12345)
    seed_global_generators()
    assert _draws() == first  # ... and start from the same state again
    # the state is the one SEED gives, not only the same as before
    assert first[0] == random.Random(SEED).random()
    assert first[1] == np.random.RandomState(SEED).rand()


def test_another_seed_gives_other_draws() -> None:
    seed_global_generators(1)
    one = _draws()
    seed_global_generators(2)
    assert _draws() != one


def test_libraries_not_imported_are_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "numpy")
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert seed_global_generators() == ("random",)
    assert "numpy" not in sys.modules and "torch" not in sys.modules


def test_seeding_imports_no_array_library() -> None:
    code = (
        "import sys\n"
        "from pytest_burnperf.devices.random_state import seed_global_generators\n"
        "seed_global_generators()\n"
        "print(sorted(m for m in ('numpy', 'torch', 'cupy') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
