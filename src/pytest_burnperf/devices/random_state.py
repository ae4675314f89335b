"""Each benchmark starts from the same state of the global random generators, in every process
of a ``--perf`` run: Python's ``random``, numpy's legacy global generator (``np.random.rand``,
``np.random.seed``) and torch's default generators (``torch.rand``; CUDA's too, seeded as torch
initialises it).

Without it a benchmark that draws its data from them measured other data in every process: a
forked round or counted process reseeds Python's ``random`` from the OS as it starts, numpy's
global generator is seeded from the OS when numpy is imported, and torch's follows whatever ran
before. What a call costs can follow its data (a sort, ``np.unique``, a search, anything with a
data-dependent branch), so two processes of unchanged code counted a sort of 20,000 random
doubles 1.6% apart and failed it as a regression (docs/gate.md, "The same random data in every
process").

Only generators whose library is already imported are seeded (a benchmark's module imports its
libraries before its tests are set up); nothing here imports one. Generators a benchmark makes
itself (``np.random.default_rng()`` without a seed, ``torch.Generator()``) are its own: seed
them in the benchmark. cupy's global generator is left alone: seeding it creates a CUDA context.
"""

from __future__ import annotations

import random
import sys

#: The seed every benchmark's global generators start from.
SEED = 0


def seed_global_generators(seed: int = SEED) -> tuple[str, ...]:
    """Seed the global random generators of Python and of the array libraries already imported
    with ``seed``; returns the ones seeded, by name."""
    random.seed(seed)
    seeded = ["random"]
    numpy = sys.modules.get("numpy")
    if numpy is not None and hasattr(numpy, "random"):
        numpy.random.seed(seed)
        seeded.append("numpy.random")
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "manual_seed"):
        torch.manual_seed(seed)  # CUDA's generators too, lazily: no CUDA context is made
        seeded.append("torch")
    return tuple(seeded)
