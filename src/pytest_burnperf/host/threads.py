"""The benchmark's own threads: which thread pools are loaded in this process, how many threads
each runs, and the variable that pins each one.

A CPU benchmark is timed on ``--perf-threads`` threads (1 by default): the plugin limits the
BLAS and OpenMP pools threadpoolctl knows, torch's intra-op pool (on torch devices) and numba's
(where numba is imported). Call :func:`pools` inside that limit: a pool it does not
limit (a library's own, or one loaded after the limit was set) still runs its threads: on a
busy host they wait for each other, and the noise that makes looks like the host's. Where a
benchmark used more CPUs than its threads allow, :func:`note` names the pools and how to pin
them. Only modules already imported are asked (nothing heavy is loaded here).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from types import ModuleType

#: CPUs a benchmark may use beyond its thread limit before its own threads are named: the
#: plugin's bookkeeping and a library's helper thread take a little.
SLACK_CPUS = 0.5

#: threadpoolctl's ``internal_api`` -> the variable that pins that pool.
THREADPOOL_VARIABLES = {
    "openblas": "OPENBLAS_NUM_THREADS",
    "mkl": "MKL_NUM_THREADS",
    "blis": "BLIS_NUM_THREADS",
    "openmp": "OMP_NUM_THREADS",
    "flexiblas": "FLEXIBLAS_NUM_THREADS",
}


def _threadpools() -> list[tuple[str, int, str]]:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover - a dependency of the plugin
        return []
    out = []
    for info in threadpool_info():
        api = str(info.get("internal_api") or info.get("user_api") or "")
        n = info.get("num_threads")
        if isinstance(n, int) and api:
            prefix = str(info.get("prefix") or api)
            out.append((f"{api} ({prefix})", n, THREADPOOL_VARIABLES.get(api, "OMP_NUM_THREADS")))
    return out


def _module_pools(modules: Mapping[str, ModuleType]) -> list[tuple[str, int, str]]:
    out = []
    numba = modules.get("numba")
    if numba is not None:
        try:
            n = int(numba.get_num_threads())
        except Exception:
            n = int(getattr(getattr(numba, "config", None), "NUMBA_NUM_THREADS", 0) or 0)
        if n:
            out.append(("numba", n, "NUMBA_NUM_THREADS (or numba.set_num_threads)"))
    numexpr = modules.get("numexpr")
    if numexpr is not None:
        count = getattr(numexpr, "nthreads", None) or getattr(numexpr, "ncores", None)
        if isinstance(count, int):
            out.append(("numexpr", count, "NUMEXPR_NUM_THREADS"))
    return out


def pools(limit: int, modules: Mapping[str, ModuleType] | None = None) -> list[str]:
    """The thread pools loaded here that run more than ``limit`` threads, each with the variable
    (or call) that pins it: ``numba (4 threads; NUMBA_NUM_THREADS (or numba.set_num_threads))``."""
    found = _module_pools(dict(sys.modules) if modules is None else modules)
    if modules is None:
        found += _threadpools()
    return [f"{name} ({n} threads; {how})" for name, n, how in found if n > limit]


def note(own_cpus: float, limit: int, found: list[str]) -> str | None:
    """What to say when a benchmark used ``own_cpus`` CPUs on average under a limit of ``limit``
    threads (None where it kept to it)."""
    if limit <= 0 or own_cpus <= limit + SLACK_CPUS:
        return None
    which = (
        f"pools running more threads: {', '.join(found)}"
        if found
        else "no pool the plugin knows runs more: a library's own threads"
    )
    return (
        f"the benchmark ran on {own_cpus:.1f} CPUs of its own threads although --perf-threads is "
        f"{limit} ({which}); on a busy host its threads wait for each other and make it noisy: "
        "pin them to the limit"
    )
