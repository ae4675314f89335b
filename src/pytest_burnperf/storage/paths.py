"""Untrusted names as paths inside a given root, and the one rule for files a command writes.

A name that comes from a file or a test id (a pytest-benchmark ``fullname``, a test module) may be
``../../elsewhere/evil.py`` or empty: :func:`inside` turns it into a path under the root or
refuses it, so no writer can be talked into writing outside its directory. :func:`target_problem`
is the rule every output option follows: an existing file this tool did not write is never
replaced (a README given as ``--perf-markdown``), unless the user says so.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path

#: Names Windows reserves for devices, in any case and with any suffix.
RESERVED = frozenset(
    {"con", "prn", "aux", "nul"}
    | {f"com{i}" for i in range(1, 10)}
    | {f"lpt{i}" for i in range(1, 10)}
)
_BAD_CHARS = re.compile(r'[\x00-\x1f\x7f<>:"|?*\\]')


class UnsafeName(ValueError):
    """A name that cannot become a path inside the root; ``str()`` says why."""


def inside(root: Path, name: str, suffix: str | None = None) -> Path:
    """``root`` joined with the ``/``-separated parts of ``name`` (the last part's suffix
    replaced by ``suffix`` where given). Refuses an empty name or part, ``.`` and ``..``, an
    absolute name or a drive, a backslash, control characters, characters Windows forbids and
    its reserved device names, so the result always lies under ``root``."""
    if not name:
        raise UnsafeName("is empty")
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        raise UnsafeName(f"{name!r} is an absolute path; a path relative to the project is needed")
    parts = name.split("/")
    for part in parts:
        if part in ("", ".", ".."):
            raise UnsafeName(
                f"{name!r} has an empty, '.' or '..' part; a plain path inside the project is needed"
            )
        bad = _BAD_CHARS.search(part)
        if bad:
            raise UnsafeName(f"{name!r} contains {bad.group()!r}, which no file name may hold")
        if part.split(".", 1)[0].lower() in RESERVED or part.endswith((" ", ".")):
            raise UnsafeName(f"{name!r} has a part no file name may be: {part!r}")
    path = root.joinpath(*parts)
    if suffix is not None:
        path = path.with_suffix(suffix)
    base = os.path.normpath(os.path.abspath(root))
    if os.path.commonpath([base, os.path.normpath(os.path.abspath(path))]) != base:
        raise UnsafeName(f"{name!r} leads outside {root}")
    return path


def target_problem(path: Path, ours: Callable[[bytes], bool], *, force: bool = False) -> str | None:
    """Why an output must not be written to ``path``, or None: a directory, or an existing file
    whose first bytes ``ours`` does not recognise as this tool's (unless ``force``)."""
    if path.is_dir():
        return "is a directory"
    if not os.path.lexists(path) or force:
        return None
    if path.is_symlink() or not path.is_file():
        return "exists and is not a regular file; refusing to replace it"
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as exc:
        return f"exists and cannot be read ({exc.strerror or exc}); refusing to replace it"
    if ours(head):
        return None
    return (
        "exists and was not written by pytest-burnperf; refusing to replace it (delete it, "
        "choose another path, or give --force where the command has it)"
    )


def folder_problem(out: Path, mark: str, what: str) -> str | None:
    """Why files must not be written into the folder ``out``: it is a file, or it holds other
    things and no ``mark`` file (left by the writer of ``what`` the first time it wrote there).
    A new or empty folder, or one of ours, is fine: the one rule of every folder writer."""
    if out.exists() and not out.is_dir():
        return "is not a folder"
    try:
        foreign = out.is_dir() and any(out.iterdir()) and not (out / mark).is_file()
    except OSError as exc:
        return f"cannot be read: {exc}"
    if foreign:
        return (
            f"is a folder that holds other files and no earlier {what}; refusing to write into "
            "it (give an empty or new folder)"
        )
    return None


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """This tool's cache folder: ``$BURNPERF_CACHE_DIR``, else ``$XDG_CACHE_HOME/pytest-burnperf``
    (``~/.cache/pytest-burnperf``)."""
    env = os.environ if environ is None else environ
    base = env.get("BURNPERF_CACHE_DIR")
    if base:
        return Path(base)
    xdg = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "pytest-burnperf"
