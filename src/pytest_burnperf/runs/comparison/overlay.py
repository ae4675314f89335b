"""The reference's packages first, whatever ``sys.path`` says: flat layouts in same-session runs.

A reference environment (environments.py) is the project installed into an overlay directory
that comes first on ``PYTHONPATH``. In a flat layout (the package at the repository's root, as
in most numeric projects) that is not enough: ``python -m pytest`` puts the working directory
first on ``sys.path``, and pytest inserts the rootdir itself when it imports a root
``conftest.py`` or a test file inside the package, so ``import mypkg`` would find the current
checkout and a round "of the reference" would measure the current code.

In a round's process of such an environment (``$BURNPERF_OVERLAY`` set), :func:`install` puts a
finder at the front of ``sys.meta_path`` that resolves the overlay's top-level packages from the
overlay only, and imports those the checkout also has at once, before pytest collects anything.
Their submodules follow the package's ``__path__``: the overlay's directory, then the
checkout's. So inside the package everything the reference ships is the reference's, benchmark
modules and test helpers included (they match its code: ``from .. import x``, a helper the
current code added), and what it does not ship (tests are often left out of wheels) comes from
the checkout. Benchmark files outside the package come from the checkout, as always. pytest's
check that a module it imported is the file it collected is answered for such modules: under
``--import-mode=importlib`` the finder loads the reference's copy under the collected file's
name; under the default import mode the round's process runs with ``PY_IGNORE_IMPORTMISMATCH``.
The round's parent still checks, after the round, that no top-level package came from
elsewhere (versions.shadowed_modules).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

#: Environment variable a round's process reads: the overlay directory its project comes from.
OVERLAY_ENV = "BURNPERF_OVERLAY"


def top_level_names(overlay: Path) -> frozenset[str]:
    """The importable top-level names an overlay directory holds (packages and modules)."""
    try:
        entries = list(overlay.iterdir())
    except OSError:
        return frozenset()
    return frozenset(
        p.name.removesuffix(".py")
        for p in entries
        if not p.name.endswith((".dist-info", ".egg-info", ".pth", ".data"))
        and p.name not in ("bin", "__pycache__")
        and p.name.removesuffix(".py").isidentifier()
        and (p.is_dir() or p.suffix == ".py")
    )


class OverlayFirst(importlib.abc.MetaPathFinder):
    """Finds the overlay's top-level names in the overlay alone; a package found there also
    searches ``fallback`` (the checkout) for submodules the overlay lacks."""

    def __init__(self, overlay: Path, names: Iterable[str], fallback: Sequence[Path]) -> None:
        self.overlay = overlay
        self.names = frozenset(names)
        self.fallback = tuple(fallback)

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname in self.names:
            return self._package(fullname)
        if fullname.split(".", 1)[0] in self.names and path:
            return self._collected(fullname, Path(path[0]))
        return None

    def _package(self, fullname: str) -> importlib.machinery.ModuleSpec | None:
        spec = importlib.machinery.PathFinder.find_spec(fullname, [str(self.overlay)])
        if spec is None:
            return None
        locations = spec.submodule_search_locations
        if locations is not None:
            for root in self.fallback:
                extra = root / fullname
                if extra.is_dir() and str(extra) not in locations:
                    locations.append(str(extra))
        return spec

    def _collected(self, fullname: str, where: Path) -> importlib.machinery.ModuleSpec | None:
        """pytest's importlib import mode asks for a module it collected with the checkout's
        directory as the path, and accepts only a spec whose origin is the collected file. Where
        the reference ships that module, it is loaded from the reference's copy (its helpers and
        relative imports match its code) under the collected file's name."""
        import importlib.util

        parts = fullname.split(".")
        for root in self.fallback:
            if where.resolve() != root.resolve().joinpath(*parts[:-1]):
                continue
            mine = self.overlay.joinpath(*parts)
            if (mine / "__init__.py").is_file():
                spec = importlib.util.spec_from_file_location(
                    fullname,
                    mine / "__init__.py",
                    submodule_search_locations=[str(mine), str(where / parts[-1])],
                )
                collected = where / parts[-1] / "__init__.py"
            elif mine.with_suffix(".py").is_file():
                spec = importlib.util.spec_from_file_location(fullname, mine.with_suffix(".py"))
                collected = where / f"{parts[-1]}.py"
            else:
                return None
            if spec is not None:
                spec.origin = str(collected)
            return spec
        return None

    def invalidate_caches(self) -> None:
        pass


#: The overlay this process's round runs from ($BURNPERF_OVERLAY, read once by :func:`install`
#: as the plugin loads), or None.
_installed_from: str | None = None


def installed_from() -> str | None:
    """The overlay directory this process's round runs from, or None (not a reference's
    round). Read from ``$BURNPERF_OVERLAY`` once, when the plugin loaded."""
    return _installed_from


def install(
    environ: Any = None, meta_path: list[Any] | None = None, cwd: Path | None = None
) -> OverlayFirst | None:
    """In a round's process of an installed reference, the overlay-first finder at the front
    of ``meta_path`` (``sys.meta_path``); None elsewhere. Call it before the project is imported
    (the plugin does, on load)."""
    global _installed_from
    env = os.environ if environ is None else environ
    where = env.get(OVERLAY_ENV)
    if environ is None:
        _installed_from = where or None
    if not where:
        return None
    overlay = Path(where)
    names = top_level_names(overlay)
    if not names:
        return None
    here = cwd if cwd is not None else Path.cwd()
    finder = OverlayFirst(overlay, names, [here])
    target = sys.meta_path if meta_path is None else meta_path
    target.insert(0, finder)
    if meta_path is None:
        _import_shadowed(names, here)
    return finder


def _import_shadowed(names: Iterable[str], checkout: Path) -> None:
    """Import now the overlay packages the checkout also has: pytest's ``importlib`` import mode
    loads a test module's parent packages from the file it collected unless they are already in
    ``sys.modules``, so they must be there, from the overlay, before collection."""
    import importlib

    for name in sorted(names):
        if name in sys.modules:
            continue
        if (checkout / name / "__init__.py").is_file() or (checkout / f"{name}.py").is_file():
            try:
                importlib.import_module(name)
            except Exception:
                sys.modules.pop(name, None)
