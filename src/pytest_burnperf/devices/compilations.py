"""How many frames a just-in-time compiler has compiled in this process so far: torch.compile's
(TorchDynamo's frame counters, every frame it converted or failed to). A call during which the
count grows compiled something: what it allocated and ran was the compiler's, whose work
follows its caches (the in-process graph cache, inductor's cache on disk) and the calls before
it, not only the call's own code. The memory instrument leaves such calls unjudged
(instruments/memory_tracking.py).

Nothing here imports torch: a process that never loaded TorchDynamo has compiled nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping


def compiled_frames() -> int:
    """The frames TorchDynamo has compiled (or tried to) in this process; 0 where it is not
    loaded or its counters are not where torch 2.x keeps them."""
    utils = sys.modules.get("torch._dynamo.utils")
    counters = getattr(utils, "counters", None)
    if not isinstance(counters, Mapping):
        return 0
    frames = counters.get("frames")
    if not isinstance(frames, Mapping):
        return 0
    total = frames.get("total")
    return total if isinstance(total, int) and not isinstance(total, bool) else 0
