"""Which installed distribution a shared object belongs to: the counts key names the versions
of the compiled libraries a benchmark's counted calls ran in (scipy's special functions, a BLAS
shipped in ``numpy.libs``), found from the object files callgrind saw executing.

An object is looked up by its path alone: the site directory above it (the first folder that
holds ``*.dist-info`` folders) and the distribution whose ``RECORD`` lists the file. That reads
a few small files and never walks every installed distribution, so it stays cheap inside a
counted process, where every instruction runs under valgrind."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from functools import lru_cache

#: A distribution's folder name: ``scipy-1.17.1.dist-info``.
_DIST_INFO = re.compile(r"^(?P<name>.+?)-(?P<version>[^-]+)\.dist-info$")


def normalised(name: str) -> str:
    """A distribution's or import package's name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


@lru_cache(maxsize=256)
def _dist_infos(folder: str) -> tuple[str, ...]:
    try:
        return tuple(sorted(n for n in os.listdir(folder) if _DIST_INFO.match(n)))
    except OSError:
        return ()


@lru_cache(maxsize=256)
def _record(dist_info: str) -> frozenset[str]:
    """The file paths a distribution's RECORD lists (relative to its site directory)."""
    try:
        with open(os.path.join(dist_info, "RECORD"), encoding="utf-8", errors="replace") as f:
            return frozenset(os.path.normpath(line.split(",", 1)[0]) for line in f if line.strip())
    except OSError:
        return frozenset()


def site_of(path: str) -> str | None:
    """The site directory a file is installed in: the nearest folder above it holding
    ``*.dist-info`` folders (None: not under one, as the interpreter or a build tree)."""
    folder = os.path.dirname(path)
    while True:
        if _dist_infos(folder):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def distribution_of(path: str) -> tuple[str, str] | None:
    """``(name, version)`` of the installed distribution whose RECORD lists the file at ``path``
    (a symbolic link followed), or None. Distributions named like the file's top folder
    (``scipy`` for ``scipy/special/_ufuncs...so``, ``numpy`` for ``numpy.libs/...``) are read
    first."""
    real = os.path.realpath(path)
    site = site_of(real)
    if site is None:
        return None
    rel = os.path.normpath(os.path.relpath(real, site))
    top = normalised(rel.split(os.sep, 1)[0].removesuffix(".libs"))
    infos = _dist_infos(site)
    first = [n for n in infos if normalised(_DIST_INFO.match(n)["name"]) == top]  # type: ignore[index]
    for name in [*first, *(n for n in infos if n not in first)]:
        if rel in _record(os.path.join(site, name)):
            m = _DIST_INFO.match(name)
            assert m is not None
            return normalised(m["name"]), m["version"]
    return None


def from_a_checkout(version: str) -> bool:
    """Whether a version is a build from a working tree (a PEP 440 local label or a development
    release: ``1.3.dev4+g1a2b3c``): the code under test, not a library it runs on."""
    return "+" in version or ".dev" in version


def called_distributions(objects: Iterable[str], skip: Iterable[str] = ()) -> dict[str, str]:
    """The installed distributions (normalised name: version) that ``objects`` (shared object
    paths) belong to, less those named in ``skip`` and builds from a checkout."""
    left_out = {normalised(s) for s in skip}
    out: dict[str, str] = {}
    for obj in sorted(set(objects)):
        found = distribution_of(obj)
        if found is None:
            continue
        name, version = found
        if name not in left_out and not from_a_checkout(version):
            out[name] = version
    return dict(sorted(out.items()))
