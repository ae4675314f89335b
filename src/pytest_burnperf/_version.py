"""The installed version of pytest-burnperf (a leaf: imports nothing of the package)."""

from __future__ import annotations

try:
    from importlib.metadata import PackageNotFoundError, version

    __version__ = version("pytest-burnperf")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"
