"""A CPU benchmark's thread count held for its run: the BLAS pools (threadpoolctl), torch's intra-op
pool and numba's, set on entry and put back on exit."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass


def blas_threads() -> int | None:
    """Threads of the BLAS/OpenMP pools loaded in this process (the smallest, if they differ)."""
    from threadpoolctl import threadpool_info

    counts = [int(i["num_threads"]) for i in threadpool_info() if i.get("num_threads")]
    return min(counts) if counts else None


@contextlib.contextmanager
def cpu_threads(n: int, torch: Any = None) -> Iterator[None]:
    """Limit BLAS/OpenMP pools (threadpoolctl), torch's intra-op pool and, where numba is
    imported, numba's parallel pool to ``n`` threads."""
    if n == 0:
        yield
        return
    from threadpoolctl import threadpool_limits

    old = int(torch.get_num_threads()) if torch is not None else None
    with threadpool_limits(limits=n), _numba_threads(n):
        if torch is not None:
            torch.set_num_threads(n)
        try:
            yield
        finally:
            if torch is not None and old is not None:
                torch.set_num_threads(old)


@contextlib.contextmanager
def _numba_threads(n: int) -> Iterator[None]:
    """numba's parallel threads limited to ``n`` (thread-local in numba: this thread's calls),
    where numba is already imported; nothing is imported here."""
    numba = sys.modules.get("numba")
    old: int | None = None
    if numba is not None:
        try:
            old = int(numba.get_num_threads())
            numba.set_num_threads(max(1, min(n, int(numba.config.NUMBA_NUM_THREADS))))
        except Exception:
            old = None
    try:
        yield
    finally:
        if numba is not None and old is not None:
            with contextlib.suppress(Exception):
                numba.set_num_threads(old)
