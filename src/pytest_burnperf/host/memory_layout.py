"""A counted process's memory layout, drawn at random as it starts, before any test module is
imported: so that the counted processes of one benchmark are independent draws of what its
counts may be in any process.

CPython (3.11 measured) indexes its type attribute cache by the class's version tag and the
address of the attribute name's string: lookups that collide there walk the class's MRO on every
call, and which ones collide follows where memory landed and how many classes were looked up
before. Under valgrind, the processes one run starts count alike (their start is the same, and
valgrind lays memory out the same way each time), while another run, or another selection,
counts otherwise: 280 lookups through 40 mixins counted 462 k instructions a call in all three
processes of one run and 666 k in another (docs/gate.md, "Counts that follow the process's
memory layout"). So runs/counted.py gives each counted process a seed (:data:`SEED_ENV`), and
the process, as the plugin loads, takes a random number of version tags and keeps a random
number of small objects of each size class (:func:`draw`): the classes and names the tests
define after it land elsewhere. Nothing here is counted: counting is around the benchmark's
calls only."""

from __future__ import annotations

import os
import random

#: The environment variable that gives a counted process its layout's seed; taken out of the
#: environment as it is read, so that no process it starts draws again.
SEED_ENV = "BURNPERF_LAYOUT_SEED"
#: Version tags taken: up to the type cache's size (4,096 entries in 3.11), so that the low
#: bits of the tags the tests' classes get are random.
MAX_TAGS = 4096
#: The small objects kept: up to this many of each size class pymalloc serves strings from (8
#: bytes apart, up to 512), so that the names the tests define land at random places in
#: their pools.
MAX_PER_CLASS = 64

#: What the draw keeps alive for the process's life (freed, its places would be taken again).
_kept: list[object] = []


def seed_from(environ: dict[str, str] | os._Environ[str]) -> int | None:
    """The seed :data:`SEED_ENV` gives, taken out of ``environ``; None where there is none or
    it is no number."""
    text = environ.pop(SEED_ENV, None)
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        return None


def draw(seed: int) -> tuple[int, int]:
    """Shift this process's layout by ``seed``'s draw: (version tags taken, objects kept)."""
    rng = random.Random(seed)
    tags = rng.randrange(MAX_TAGS)
    for i in range(tags):
        cls = type(f"_LayoutShift{i}", (), {})
        _kept.append(cls.__doc__)  # a lookup through the cache gives the class a version tag
        _kept.append(cls)
    kept = 0
    for size in range(1, 480, 8):  # strings whose objects fill pymalloc's classes one by one
        for _ in range(rng.randrange(MAX_PER_CLASS)):
            _kept.append("x" * size + str(kept))
            kept += 1
    return tags, kept


def draw_if_asked() -> None:
    """In a counted process started with :data:`SEED_ENV`: :func:`draw` its layout."""
    seed = seed_from(os.environ)
    if seed is not None:
        draw(seed)
